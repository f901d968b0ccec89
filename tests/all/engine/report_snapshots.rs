//! What people read, as committed snapshots (`insta`): the checklist comment, the job summary, the
//! mermaid graph and every kind of notice, rendered from a real scripted cycle with a revision.
//! A change to any of them shows up as a diff of `snapshots/*.snap` in review; in CI (`CI=true`)
//! a mismatch or a missing snapshot fails the test. Accept a deliberate change with
//! `cargo insta review` or `INSTA_UPDATE=always cargo test`.

use super::decisions::partial_replan_run;
use super::fixtures::*;
use replan::history::entry::RunStatus;
use replan::plan::{Phase, ReplanDecision, ReplanType};
use replan::report::checklist::{self, ChecklistContext};
use replan::report::{Notice, mermaid, notice, summary};

/// A thread whose plan was revised once (partial replan on task_2) and then completed.
pub(super) async fn revised_thread() -> Thread {
    let (thread, status, plan_version) = partial_replan_run(0.9).await;
    assert_eq!((status, plan_version), (RunStatus::Completed, 2));
    thread
}

/// Token and call counts follow the prompt templates and the number of model calls, which change
/// for their own reasons; the snapshots keep the line's shape, not its numbers.
macro_rules! assert_rendered {
    ($text:expr) => {
        insta::with_settings!({filters => vec![
            (r"LLM: \d+ calls, \d+ tokens \(\d+ in / \d+ out\)", "LLM: [calls], [tokens]"),
        ]}, {
            insta::assert_snapshot!($text);
        })
    };
}

fn context() -> ChecklistContext {
    ChecklistContext {
        per_thread: Default::default(),
        run_url: Some("https://github.com/o/r/actions/runs/42".into()),
        model: Some("openai/gpt-4o".into()),
    }
}

#[tokio::test]
async fn checklist_of_a_revised_plan() {
    let thread = revised_thread().await;
    assert_rendered!(checklist::render(&thread.state(), &context()));
}

#[tokio::test]
async fn checklist_while_planning() {
    let thread = Thread::new();
    assert_rendered!(checklist::render(&thread.state(), &context()));
}

#[tokio::test]
async fn job_summary_of_a_completed_run() {
    let thread = revised_thread().await;
    assert_rendered!(summary::job_summary(
        &thread.state(),
        RunStatus::Completed,
        &context()
    ));
}

#[tokio::test]
async fn mermaid_graph_of_the_revised_plan() {
    let thread = revised_thread().await;
    let state = thread.state();
    assert_rendered!(mermaid::render(state.plan.as_ref().unwrap(), &state));
}

#[tokio::test]
async fn notices_of_a_run_as_posted() {
    let thread = revised_thread().await;
    let posted: Vec<String> = thread
        .reporter
        .notices()
        .iter()
        .map(|n| notice::render(n, t0()))
        .collect();
    assert_rendered!(posted.join("\n---\n"));
}

#[test]
fn every_kind_of_notice() {
    let decision = ReplanDecision {
        replan_needed: true,
        confidence: 0.85,
        reasoning: "The second note names the wrong file.".into(),
        replan_type: ReplanType::PartialReplan,
        issues_found: vec!["wrong file".into()],
        recommended_actions: vec!["write notes/two.md".into()],
        ..Default::default()
    };
    let notices = [
        Notice::Decision {
            phase: Phase::Execution,
            decision: Box::new(decision),
        },
        Notice::Clarification {
            questions: vec!["Which directory?".into(), "Markdown or text?".into()],
            context: "The issue names no location.".into(),
            assumptions: vec!["notes/ at the repository root".into()],
        },
        Notice::ApprovalRequest {
            summary: "Replan task_2 (partial replan): the second note names the wrong file.".into(),
            confidence: 0.4,
        },
        Notice::Override {
            phase: Phase::Reflection,
            reason: "the limit of 3 partial replans has been reached".into(),
        },
        Notice::HumanNeeded {
            reason: "Every alternative for task_2 failed.".into(),
            recommendations: vec!["Check the repository's permissions".into()],
        },
        Notice::Failure {
            message: "error: the model did not answer within 120 s".into(),
        },
        Notice::Completion {
            summary: "2 of 2 tasks done after 1 revision.".into(),
        },
        Notice::Info {
            text: "Status: waiting for `/approve`.".into(),
        },
    ];
    let rendered: Vec<String> = notices.iter().map(|n| notice::render(n, t0())).collect();
    assert_rendered!(rendered.join("\n---\n"));
}
