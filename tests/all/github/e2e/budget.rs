//! Issue 39 on the fake GitHub: a thread's cap over all its runs, reached mid-run; `/budget` from
//! someone who may not steer Replan changes nothing; a writer's `/budget $N` is recorded with
//! its author and the run goes on.

use replan::history::entry::EntryBody;
use replan::history::jsonl;

use super::{World, checklist_of, comment_by, scenario, text};
use crate::support::llm_server::LlmServer;

fn budget_entries(world: &World, number: u64) -> Vec<(String, Option<f64>)> {
    jsonl::parse(&world.history(number))
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Budget { author, usd, .. } => Some((author.clone(), *usd)),
            _ => None,
        })
        .collect()
}

#[test]
fn github_e2e_a_threads_cap_stops_the_run_and_only_a_writers_budget_raises_it() {
    let mut world = World::new("");
    world.llm = LlmServer::start(crate::ledger::one_dollar_a_call(scenario("")));
    world.fake.add_collaborator("mallory", "read");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let capped = |mut env: std::collections::BTreeMap<String, String>| {
        env.insert(
            "REPLAN_LLM__PRICES".into(),
            r#"{"gpt-test": {"input_per_mtok": 10000, "output_per_mtok": 0}}"#.into(),
        );
        env.insert("REPLAN_LLM__BUDGET__PER_THREAD_USD".into(), "3".into());
        env
    };

    let first = world.run(&capped(
        world.env("issues", &world.issue_opened(number, "alice")),
    ));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert_eq!(world.outputs()["status"], "budget_exhausted");
    let checklist = checklist_of(&world, number);
    assert!(
        checklist.contains("blocked: budget ($3.00 of $3.00 spent) — `/budget $N` to continue"),
        "{checklist}"
    );
    assert!(
        checklist.contains("Budget: $3.00 spent, $0.00 left of $3.00"),
        "{checklist}"
    );

    // Someone with read access: gated like every command, nothing recorded, no model call.
    let calls = world.llm.requests().len();
    let mallory = comment_by(&world, number, "mallory", "/budget $1000");
    let output = world.run(&capped(world.env("issue_comment", &mallory)));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(budget_entries(&world, number).is_empty());
    assert_eq!(world.llm.requests().len(), calls);

    let alice = comment_by(&world, number, "alice", "/budget $100");
    let output = world.run(&capped(world.env("issue_comment", &alice)));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        budget_entries(&world, number),
        [("alice".to_string(), Some(100.0))]
    );
    assert_eq!(world.outputs()["status"], "completed", "{}", text(&output));
    assert!(world.llm.requests().len() > calls, "the run went on");
    let checklist = checklist_of(&world, number);
    assert!(!checklist.contains("blocked: budget"), "{checklist}");
    assert!(checklist.contains("left of $100.00"), "{checklist}");
    let replies: Vec<String> = world
        .fake
        .comments(number)
        .into_iter()
        .map(|c| c.body)
        .filter(|b| b.contains("Budget of this thread set by @alice"))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
}
