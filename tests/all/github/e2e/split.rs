//! Split-trust mode on GitHub: the agent job (`replan run --bundle DIR`) sends GitHub no writing
//! request and pushes nothing; the publish job (`replan publish DIR`, no LLM key) makes every
//! write, and the thread, pull request and history end as a normal run leaves them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{BRANCH, World, checklist_of, text};
use crate::support::TestRepo;
use crate::support::fake_github::DEFAULT_ACTOR;
use crate::support::faults::Fault;
use crate::support::history_shape::history_shape;
use replan::app::bundle::{Manifest, Write};

const WRITING: [&str; 4] = ["POST", "PATCH", "PUT", "DELETE"];

pub(super) fn writing_requests(world: &World) -> Vec<String> {
    world
        .fake
        .requests()
        .into_iter()
        .filter(|r| WRITING.contains(&r.method.as_str()))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// A world with alice's issue, ready for a cycle that opens a pull request.
pub(super) fn world_with_issue() -> (World, u64) {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    (world, number)
}

/// `replan run --bundle DIR` for alice's issue; the job's environment and DIR.
pub(super) fn agent_job(world: &World, number: u64) -> (BTreeMap<String, String>, PathBuf) {
    let env = world.env("issues", &world.issue_opened(number, "alice"));
    let dir = world.files.path().join("replan-bundle");
    let agent_args = [OsString::from("run"), "--bundle".into(), dir.clone().into()];
    let output = world.run_args(&env, &agent_args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    (env, dir)
}

fn publish_job(world: &World, env: &BTreeMap<String, String>, dir: &Path) {
    let output = world.run_args(env, &[OsString::from("publish"), dir.into()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}

pub(super) fn origin_branch(origin: &TestRepo, number: u64) -> Option<String> {
    origin.rev_parse(&format!("replan/issue-{number}"))
}

#[test]
fn github_split_agent_makes_no_writing_request_and_publish_makes_them_all() {
    // A normal run, for comparison.
    let (normal, normal_number) = world_with_issue();
    let output = normal.run(&normal.env("issues", &normal.issue_opened(normal_number, "alice")));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));

    // The agent job: read-only use of GitHub, the LLM key, a bundle directory that does not exist.
    let (world, number) = world_with_issue();
    let (env, dir) = agent_job(&world, number);

    assert!(!world.llm.requests().is_empty(), "the agent ran the cycle");
    assert_eq!(writing_requests(&world), Vec::<String>::new());
    assert!(!world.fake.requests().is_empty(), "it did read GitHub");
    assert!(world.fake.comments(number).is_empty(), "no comment");
    assert!(world.fake.reactions().is_empty(), "no reaction");
    assert!(world.fake.pull_requests().is_empty(), "no pull request");
    assert!(world.fake.ref_sha(BRANCH).is_none(), "no history commit");
    assert!(origin_branch(&world._origin, number).is_none(), "no push");
    assert!(dir.join("manifest.json").is_file());

    // The publish job: the write token, no LLM key, no LLM configuration.
    world.fake.clear_requests();
    let llm_calls = world.llm.requests().len();
    let mut publish_env = env.clone();
    publish_env.retain(|name, _| !name.starts_with("REPLAN_LLM") && name != "OPENAI_API_KEY");
    let digest = world.outputs()["bundle_digest"].clone();
    assert_eq!(digest.len(), 64, "the agent job's bundle_digest: {digest}");
    let output = world.run_args(
        &publish_env,
        &[
            OsString::from("publish"),
            dir.clone().into(),
            "--digest".into(),
            digest.into(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        world.llm.requests().len(),
        llm_calls,
        "publish calls no LLM"
    );
    let writes = writing_requests(&world);
    assert!(
        writes
            .iter()
            .any(|w| w.starts_with("POST /repos/octo/widgets/issues/")),
        "{writes:?}"
    );
    assert!(
        writes
            .iter()
            .any(|w| w.starts_with("POST /repos/octo/widgets/pulls"))
    );
    assert!(writes.iter().any(|w| w.contains("/git/refs")), "{writes:?}");

    // The final state equals the normal run's.
    assert_eq!(
        checklist_of(&world, number),
        checklist_of(&normal, normal_number)
    );
    let ours = |w: &World, n: u64| -> Vec<String> {
        w.fake
            .comments(n)
            .into_iter()
            .map(|c| {
                assert_eq!(c.user, DEFAULT_ACTOR);
                c.body.lines().next().unwrap_or_default().to_owned()
            })
            .collect()
    };
    assert_eq!(ours(&world, number), ours(&normal, normal_number));
    assert!(world.fake.reactions().iter().any(|r| r.content == "eyes"));
    let (pulls, normal_pulls) = (world.fake.pull_requests(), normal.fake.pull_requests());
    assert_eq!(pulls.len(), 1);
    assert_eq!(
        (
            &pulls[0].head,
            &pulls[0].base,
            &pulls[0].title,
            &pulls[0].body
        ),
        (
            &normal_pulls[0].head,
            &normal_pulls[0].base,
            &normal_pulls[0].title,
            &normal_pulls[0].body
        )
    );
    assert!(origin_branch(&world._origin, number).is_some(), "pushed");
    assert_eq!(
        history_shape(&world.history(number)),
        history_shape(&normal.history(normal_number))
    );
    let history = world.history(number);
    assert!(!history.contains("replan-bundle:"), "{history}");
    let checklist_id = world
        .fake
        .comments(number)
        .into_iter()
        .find(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .map(|c| c.id.to_string())
        .unwrap();
    assert!(
        history.contains(&format!("\"comment_id\":\"{checklist_id}\"")),
        "the history names the real checklist comment: {history}"
    );
    // The agent's step outputs come out of the publish job, with the real values.
    world.assert_completed_outputs();
}

/// The bundle is data from the agent job: a checklist aimed at someone else's comment (here a
/// bot's that copied our marker) is refused whole; the untouched bundle does not edit that
/// comment either ("any bot" is not Replan) and posts Replan's own checklist instead.
#[test]
fn github_split_publish_never_edits_a_comment_replan_did_not_write() {
    let (world, number) = world_with_issue();
    let (env, dir) = agent_job(&world, number);
    let forged = "<!-- replan:checklist -->\nnot Replan's checklist";
    let impostor = world.fake.seed_comment(number, "mallory[bot]", forged);
    let aimed_dir = world.files.path().join("aimed");
    std::fs::create_dir_all(&aimed_dir).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), aimed_dir.join(entry.file_name())).unwrap();
    }
    let mut manifest = Manifest::load(&aimed_dir).unwrap();
    let mut aimed = 0;
    for write in &mut manifest.writes {
        if let Write::Checklist { placeholder, .. } = write {
            *placeholder = impostor.to_string();
            aimed += 1;
        }
    }
    assert!(aimed > 0, "the agent rendered the checklist");
    manifest.save(&aimed_dir).unwrap();

    world.fake.clear_requests();
    let output = world.run_args(&env, &[OsString::from("publish"), aimed_dir.into()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("neither the checklist this bundle posts"),
        "{}",
        text(&output)
    );
    assert_eq!(writing_requests(&world), Vec::<String>::new());

    publish_job(&world, &env, &dir);
    assert_eq!(world.fake.comment(impostor).unwrap().body, forged);
    assert!(
        world
            .fake
            .requests_to(
                "PATCH",
                &format!("/repos/octo/widgets/issues/comments/{impostor}")
            )
            .is_empty(),
        "no edit of mallory's comment"
    );
    let ours: Vec<_> = world
        .fake
        .comments(number)
        .into_iter()
        .filter(|c| c.user == DEFAULT_ACTOR && c.body.starts_with("<!-- replan:checklist -->"))
        .collect();
    assert_eq!(ours.len(), 1, "Replan's own checklist was posted");
    assert!(ours[0].body.contains("Write hello.md"), "{}", ours[0].body);
}

/// Whatever the bundle holds, publish masks this job's secrets again before anything leaves.
#[test]
fn github_split_publish_masks_secrets_the_bundle_carries() {
    let (world, number) = world_with_issue();
    let (env, dir) = agent_job(&world, number);
    let token = world.fake.token();
    let mut manifest = Manifest::load(&dir).unwrap();
    manifest.writes.push(Write::Comment {
        thread: replan::trigger::ThreadRef::issue(number),
        placeholder: "replan-bundle:comment-999".into(),
        body: format!("<!-- replan:notice:info -->\nthe token is {token}"),
    });
    manifest.save(&dir).unwrap();

    publish_job(&world, &env, &dir);
    let comments = world.fake.comments(number);
    assert!(comments.iter().all(|c| !c.body.contains(&token)));
    assert!(
        comments
            .iter()
            .any(|c| c.body.lines().any(|l| l.ends_with("the token is ***"))),
        "{comments:#?}"
    );
    for request in world.fake.requests() {
        assert!(
            !request.body.contains(&token),
            "{} {}",
            request.method,
            request.path
        );
    }
}

/// What a user sees after a publish: the thread's comments, the reactions, the pull requests
/// (head and body), the history file's lines and the pushed branch.
fn published_state(world: &World, number: u64) -> Vec<String> {
    let mut state: Vec<String> = world
        .fake
        .comments(number)
        .into_iter()
        .map(|c| format!("comment by {}: {}", c.user, c.body))
        .collect();
    state.extend(
        world
            .fake
            .reactions()
            .into_iter()
            .map(|r| format!("reaction {}", r.content)),
    );
    state.extend(
        world
            .fake
            .pull_requests()
            .into_iter()
            .map(|p| format!("pull request {} {}", p.head, p.body)),
    );
    state.extend(world.history(number).lines().map(str::to_owned));
    state.push(format!(
        "branch {:?}",
        origin_branch(&world._origin, number)
    ));
    state
}

/// "Re-run failed jobs" on a publish that failed halfway (GitHub answered 500 to opening the
/// pull request, after the comments and the push went out), then a second re-run: one of each.
#[test]
fn github_split_publish_rerun_after_a_failure_halfway_leaves_one_of_each_write() {
    let (world, number) = world_with_issue();
    let (env, dir) = agent_job(&world, number);
    world
        .fake
        .push_fault(Fault::server_error("POST", "/repos/octo/widgets/pulls").times(50));
    let failed = world.run_args(&env, &[OsString::from("publish"), dir.clone().into()]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(
        !world.fake.comments(number).is_empty(),
        "the first attempt got halfway"
    );
    world.fake.clear_faults();

    publish_job(&world, &env, &dir);
    let once = published_state(&world, number);
    publish_job(&world, &env, &dir);
    let twice = published_state(&world, number);

    // The same bundle published once, cleanly, in a world of its own.
    let (clean, clean_number) = world_with_issue();
    let (clean_env, clean_dir) = agent_job(&clean, clean_number);
    publish_job(&clean, &clean_env, &clean_dir);
    let comments = |w: &World, n: u64| -> Vec<String> {
        w.fake
            .comments(n)
            .into_iter()
            .map(|c| c.body.lines().next().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(comments(&world, number), comments(&clean, clean_number));
    assert_eq!(world.fake.pull_requests().len(), 1);
    assert_eq!(world.fake.reactions().len(), clean.fake.reactions().len());
    assert_eq!(
        history_shape(&world.history(number)),
        history_shape(&clean.history(clean_number))
    );
    assert_eq!(twice, once, "a second re-run changes nothing");
}
