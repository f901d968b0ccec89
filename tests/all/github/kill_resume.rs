//! The kill test: a local cycle that posts a comment (`post_comment`) and opens a pull request is
//! killed with SIGKILL while it waits for each of its model replies in turn — every point at
//! which its history has grown — and resumed with the identical `replan run` command. Every time
//! it ends in the same state: the cycle completed, exactly one such comment, one pull request.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use replan::forge::Forge;
use replan::forge::local::LocalForge;
use replan::history::entry::{EntryBody, RunStatus};
use replan::history::jsonl;
use replan::trigger::ThreadRef;
use tempfile::TempDir;

use super::e2e_support::scenario;
use super::local_run::{checkout, local_command};
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

const COMMENT: &str = "Wrote hello.md; a pull request follows.";

/// The base cycle (write hello.md, open a pull request), with a comment posted in task 1.
fn commenting_scenario() -> replan::llm::scenario::Scenario {
    scenario(&format!(
        r#"
steps:
  - when: {{ contains: "Execute subtask `task_1`" }}
    tool_calls:
      - {{ name: write_file, arguments: {{ path: hello.md, content: "hello\n" }} }}
      - {{ name: post_comment, arguments: {{ body: "{COMMENT}" }} }}
"#
    ))
}

struct Workspace {
    origin: TestRepo,
    checkout: TestRepo,
    state: TempDir,
}

fn workspace() -> Workspace {
    let (origin, checkout) = checkout();
    Workspace {
        origin,
        checkout,
        state: TempDir::new().unwrap(),
    }
}

/// The identical command every time: `replan run --issue 7 --title … --body …`.
fn replan_run(llm: &LlmServer, workspace: &Workspace) -> Command {
    let mut command = local_command(llm, &workspace.checkout, Some(workspace.state.path()));
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

fn run_to_the_end(workspace: &Workspace) -> usize {
    run_to_the_end_with(workspace).requests().len()
}

fn run_to_the_end_with(workspace: &Workspace) -> LlmServer {
    let llm = LlmServer::start(commenting_scenario());
    let output = replan_run(&llm, workspace).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    llm
}

/// SIGKILL the run while it waits for model reply `index` (0-based).
fn run_killed_at(workspace: &Workspace, index: usize) {
    let llm = LlmServer::start(commenting_scenario());
    llm.hold_from(index);
    let mut child = replan_run(&llm, workspace)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.requests().len() <= index {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("kill point {index}: the run ended ({status}) before reaching it");
        }
        assert!(
            Instant::now() < deadline,
            "kill point {index} never reached"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[derive(Debug, PartialEq)]
struct FinalState {
    status: Option<RunStatus>,
    comments: usize,
    pull_requests: Vec<String>,
    hello_on_the_branch: String,
}

/// The comments and pull requests the local forge holds now.
fn forge_contents(
    workspace: &Workspace,
) -> (
    Vec<replan::forge::Comment>,
    Vec<replan::forge::local::RecordedPullRequest>,
) {
    let forge = LocalForge::new(workspace.state.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        (
            forge.comments(&ThreadRef::issue(7)).await.unwrap(),
            forge.pull_requests().await.unwrap(),
        )
    })
}

fn final_state(workspace: &Workspace) -> FinalState {
    let (comments, pulls) = forge_contents(workspace);
    let history = std::fs::read_to_string(
        workspace
            .state
            .path()
            .join("planning_history/issues/7.jsonl"),
    )
    .unwrap();
    let status = jsonl::parse(&history)
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EntryBody::RunFinished { status, .. } => Some(*status),
            _ => None,
        });
    let head = pulls.first().map(|p| p.request.head.clone());
    FinalState {
        status,
        comments: comments.iter().filter(|c| c.body.contains(COMMENT)).count(),
        pull_requests: pulls.iter().map(|p| p.request.title.clone()).collect(),
        hello_on_the_branch: head
            .map(|head| workspace.checkout.show(&format!("{head}:hello.md")))
            .unwrap_or_default(),
    }
}

fn origin_branches(workspace: &Workspace) -> String {
    workspace
        .checkout
        .run_git(&["ls-remote", "--heads", "origin", "replan/issue-*"])
}

#[test]
fn a_cycle_killed_at_any_point_resumes_to_one_comment_and_one_pull_request() {
    let reference = workspace();
    let replies = run_to_the_end(&reference);
    let expected = final_state(&reference);
    assert_eq!(
        expected,
        FinalState {
            status: Some(RunStatus::Completed),
            comments: 1,
            pull_requests: vec!["Add hello.md".to_owned()],
            hello_on_the_branch: "hello\n".to_owned(),
        }
    );
    // Folded decisions (the default) make this cycle 7 model replies; the assertion below checks
    // that kill points fall on both sides of the comment and of the PR.
    assert!(
        replies > 4,
        "a cycle long enough to be interesting: {replies}"
    );

    // Kill points after which the resumed run had to find the comment / the PR, not make it.
    let (mut comment_found, mut pull_found) = (0, 0);
    for index in 1..replies {
        let workspace = workspace();
        run_killed_at(&workspace, index);
        let (comments, pulls) = forge_contents(&workspace);
        comment_found += usize::from(comments.iter().any(|c| c.body.contains(COMMENT)));
        pull_found += usize::from(!pulls.is_empty());
        run_to_the_end(&workspace);
        assert_eq!(
            final_state(&workspace),
            expected,
            "killed while waiting for model reply {index} of {replies}"
        );
        let branches = origin_branches(&workspace);
        assert_eq!(
            branches.lines().count(),
            1,
            "kill point {index}: one pushed branch: {branches}"
        );
    }
    assert!(
        comment_found > 0 && pull_found > 0,
        "some kill points come after the comment ({comment_found}) and the PR ({pull_found})"
    );
}

/// A CI re-run starts from a fresh clone: the finished task's changes come back from the work
/// branch pushed after it.
#[test]
fn finished_tasks_changes_survive_a_rerun_on_a_fresh_checkout() {
    let reference = workspace();
    let llm = run_to_the_end_with(&reference);
    let task_2 = llm
        .requests()
        .iter()
        .position(|r| {
            r.texts()
                .iter()
                .any(|t| t.contains("Execute subtask `task_2`"))
        })
        .expect("task 2 is executed");

    let first = workspace();
    run_killed_at(&first, task_2);
    assert!(
        first
            .checkout
            .try_git(&["ls-remote", "--exit-code", "origin", "replan/work/issue-7"])
            .is_ok(),
        "the work branch was pushed after task 1"
    );
    let fresh = Workspace {
        checkout: TestRepo::clone_from(&first.origin),
        origin: first.origin,
        state: first.state,
    };
    let _ = fresh.checkout.try_git(&["checkout", "-q", "main"]);
    assert!(!fresh.checkout.path().join("hello.md").exists());

    // The re-run restores the work branch before it asks the model anything: stopped at its
    // first model request, the fresh checkout already holds task 1's file. (With
    // `history.commit_every` batching, default 20, task 1's entries may not have reached the
    // history before the SIGKILL, so task 1 may run again, on the restored tree.)
    run_killed_at(&fresh, 0);
    assert_eq!(
        std::fs::read_to_string(fresh.checkout.path().join("hello.md")).ok(),
        Some("hello\n".to_owned()),
        "task 1's file is restored from the work branch"
    );
    run_to_the_end_with(&fresh);
    let state = final_state(&fresh);
    assert_eq!(state.status, Some(RunStatus::Completed));
    assert_eq!(state.pull_requests.len(), 1);
    assert_eq!(
        state.hello_on_the_branch, "hello\n",
        "the pull request holds task 1's file"
    );
}
