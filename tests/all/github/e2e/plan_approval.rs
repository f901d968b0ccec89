//! `planning.approval: plan` end to end on the fake GitHub (issue 39): the plan is posted and the
//! run stops with its hash in the checklist comment; a stale `/approve <hash>` gets one reply and
//! changes nothing; `/approve <hash>` runs exactly that plan.

use replan::history::entry::{ApprovalDecision, EntryBody};
use replan::history::jsonl;

use super::{World, checklist_of, comment_by, ours, text};

/// The short hash the checklist comment shows for the waiting plan.
pub(super) fn waiting_hash(world: &World, number: u64) -> String {
    let checklist = checklist_of(world, number);
    let re = regex::Regex::new(r"Plan v1 \(`([0-9a-f]{7})`\) waits for `/approve`").unwrap();
    re.captures(&checklist)
        .unwrap_or_else(|| panic!("no waiting plan in the checklist:\n{checklist}"))[1]
        .to_owned()
}

pub(super) fn plan_mode_env(
    world: &World,
    event: &str,
    payload: &std::path::Path,
) -> std::collections::BTreeMap<String, String> {
    let mut env = world.env(event, payload);
    env.insert("REPLAN_PLANNING__APPROVAL".into(), "plan".into());
    env
}

fn executed(world: &World) -> bool {
    world
        .llm
        .requests()
        .iter()
        .any(|r| r.texts().iter().any(|t| t.contains("Execute subtask")))
}

#[test]
fn github_e2e_plan_mode_waits_for_approve_of_the_hash_then_runs_that_plan() {
    let world = World::new("");
    world.fake.add_collaborator("maya", "maintain");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");

    let first = world.run(&plan_mode_env(
        &world,
        "issues",
        &world.issue_opened(number, "alice"),
    ));

    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    let hash = waiting_hash(&world, number);
    assert!(!executed(&world), "nothing ran before the approval");
    assert!(world.fake.pull_requests().is_empty());
    assert!(
        checklist_of(&world, number).contains("Write hello.md"),
        "the checklist shows the plan"
    );

    // A stale hash: one reply naming the current hash, nothing else.
    let comments_before = world.fake.comments(number).len();
    let stale = comment_by(&world, number, "maya", "/approve 0000000");
    let output = world.run(&plan_mode_env(&world, "issue_comment", &stale));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    let comments = world.fake.comments(number);
    let new: Vec<_> = comments[comments_before..]
        .iter()
        .filter(|c| ours(&c.body))
        .collect();
    assert_eq!(new.len(), 1, "one reply: {new:?}");
    assert!(
        new[0].body.contains("0000000") && new[0].body.contains(&hash),
        "{}",
        new[0].body
    );
    assert!(!executed(&world));
    assert!(!world.types(number).iter().any(|t| t == "revision"));

    let approve = comment_by(&world, number, "maya", &format!("/approve {hash}"));
    let output = world.run(&plan_mode_env(&world, "issue_comment", &approve));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let outputs = world.outputs();
    assert_eq!(outputs["status"], "completed", "{outputs:?}");
    assert_eq!(outputs["plan_version"], "1", "exactly the approved version");
    assert_eq!(world.fake.pull_requests().len(), 1);
    let history = world.history(number);
    let approval = jsonl::parse(&history)
        .entries
        .into_iter()
        .find_map(|e| match e.body {
            EntryBody::Approval {
                decision: Some(ApprovalDecision::Approved),
                author,
                subject,
                ..
            } => Some((author, subject, e.ts)),
            _ => None,
        })
        .expect("the approval is recorded");
    assert_eq!(approval.0.as_deref(), Some("maya"));
    assert_eq!(approval.1["version"], 1);
    assert!(approval.1["hash"].as_str().unwrap().starts_with(&hash));
}
