//! End-to-end runs of the built `replan` binary as a GitHub Action would start it: an event
//! payload from `tests/fixtures/github-events/`, the fake GitHub API, the scripted LLM server
//! (OpenAI wire format) and a real git checkout whose `origin` is a local bare repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use replan::history::entry::EntryBody;
use replan::history::jsonl;
use replan::llm::scenario::{Scenario, ScenarioMode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::fake_github::{DEFAULT_ACTOR, date};
use crate::support::git::isolated_git_env;
use crate::support::llm_server::LlmServer;
use crate::support::{ConcurrentChange, FakeGitHub, Fault, TestRepo};

const BASE_SCENARIO: &str = include_str!("../../scenarios/github_e2e_base.yaml");
pub(super) const BRANCH: &str = "replan-history";

/// The base replies, each repeated so a whole cycle (and a few replans) has enough, after the
/// test's own steps (used first, once each).
pub fn scenario(overrides: &str) -> Scenario {
    let base = Scenario::from_yaml(BASE_SCENARIO).expect("base scenario");
    let mut steps = Vec::new();
    if !overrides.trim().is_empty() {
        steps.extend(
            Scenario::from_yaml(overrides)
                .expect("override scenario")
                .steps,
        );
    }
    for step in base.steps {
        for _ in 0..40 {
            steps.push(step.clone());
        }
    }
    Scenario {
        mode: ScenarioMode::Matched,
        steps,
    }
}

pub(super) struct World {
    pub(super) fake: FakeGitHub,
    pub(super) llm: LlmServer,
    pub(super) _origin: TestRepo,
    checkout: TestRepo,
    pub(super) files: TempDir,
    /// Each run of the binary is a new workflow run with its own id.
    runs: std::cell::Cell<u32>,
    /// `planning.decisions`: scripts that answer the separate decision prompts need `separate`.
    decisions: &'static str,
}

impl World {
    pub(super) fn new(overrides: &str) -> Self {
        let fake = FakeGitHub::start();
        let origin = TestRepo::bare();
        let checkout = TestRepo::clone_from(&origin);
        let _ = checkout.try_git(&["checkout", "-q", "-b", "main"]);
        checkout.write("README.md", "# widgets\n");
        checkout.commit_all("init");
        checkout.run_git(&["push", "-q", "origin", "main"]);
        World {
            fake,
            llm: LlmServer::start(scenario(overrides)),
            _origin: origin,
            checkout,
            files: TempDir::new().unwrap(),
            runs: std::cell::Cell::new(0),
            decisions: "folded",
        }
    }

    /// A world whose runs ask every replan decision on its own (`planning.decisions: separate`).
    pub(super) fn separate(overrides: &str) -> Self {
        World {
            decisions: "separate",
            ..World::new(overrides)
        }
    }

    /// Another clone of the world's `origin`, on `main` (a second runner's checkout).
    pub(super) fn fresh_checkout(&self) -> TestRepo {
        let checkout = TestRepo::clone_from(&self._origin);
        let _ = checkout.try_git(&["checkout", "-q", "main"]);
        checkout
    }

    /// A fixture payload rewritten to point at the fake's repository and `number`.
    pub(super) fn payload(&self, fixture: &str, patch: impl FnOnce(&mut Value)) -> PathBuf {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github-events")
            .join(format!("{fixture}.json"));
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture is JSON");
        let repo = self.fake.repo();
        let (owner, name) = repo.split_once('/').unwrap();
        value["repository"]["full_name"] = json!(repo);
        value["repository"]["name"] = json!(name);
        value["repository"]["owner"]["login"] = json!(owner);
        value["repository"]["default_branch"] = json!("main");
        patch(&mut value);
        let out = self
            .files
            .path()
            .join(format!("{fixture}-{}.json", fastrand::u32(..)));
        std::fs::write(&out, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        out
    }

    pub(super) fn issue_opened(&self, number: u64, author: &str) -> PathBuf {
        let issue = self.fake.issue(number).expect("seeded issue");
        self.payload("issues.opened.15", |v| {
            v["issue"]["number"] = json!(number);
            v["issue"]["title"] = json!(issue.title);
            v["issue"]["body"] = json!(issue.body);
            v["issue"]["user"]["login"] = json!(author);
            v["sender"]["login"] = json!(author);
            v["sender"]["type"] = json!("User");
        })
    }

    pub(super) fn comment_created(&self, number: u64, comment_id: u64) -> PathBuf {
        let comment = self.fake.comment(comment_id).expect("seeded comment");
        let is_bot = comment.user.ends_with("[bot]");
        self.payload("issue_comment.created.0", |v| {
            v["issue"]["number"] = json!(number);
            v["comment"]["id"] = json!(comment_id);
            v["comment"]["body"] = json!(comment.body);
            v["comment"]["user"]["login"] = json!(comment.user);
            v["comment"]["user"]["type"] = json!(if is_bot { "Bot" } else { "User" });
            // The payload's copy is the comment as the fake holds it when the event fires.
            v["comment"]["created_at"] = json!(date(comment.created_at));
            v["comment"]["updated_at"] = json!(date(comment.updated_at));
            v["sender"]["login"] = json!(comment.user);
            v["sender"]["type"] = json!(if is_bot { "Bot" } else { "User" });
        })
    }

    pub(super) fn env(&self, event: &str, payload: &Path) -> BTreeMap<String, String> {
        let file = |name: &str| self.files.path().join(name).display().to_string();
        let mut env: BTreeMap<String, String> = [
            ("GITHUB_ACTIONS", "true".to_owned()),
            ("GITHUB_EVENT_NAME", event.to_owned()),
            ("GITHUB_EVENT_PATH", payload.display().to_string()),
            ("GITHUB_API_URL", self.fake.base_url()),
            ("GITHUB_SERVER_URL", "https://github.com".to_owned()),
            ("GITHUB_REPOSITORY", self.fake.repo()),
            ("GITHUB_RUN_ID", "4242".to_owned()),
            ("GITHUB_RUN_ATTEMPT", "1".to_owned()),
            ("GITHUB_TOKEN", self.fake.token()),
            (
                "GITHUB_WORKSPACE",
                self.checkout.path().display().to_string(),
            ),
            ("GITHUB_OUTPUT", file("output.txt")),
            ("GITHUB_STEP_SUMMARY", file("summary.md")),
            ("REPLAN_LLM__PROVIDER", "openai".to_owned()),
            ("REPLAN_LLM__BASE_URL", self.llm.openai_base()),
            ("REPLAN_LLM__MODEL", "gpt-test".to_owned()),
            ("REPLAN_LLM__MAX_RETRIES", "1".to_owned()),
            ("OPENAI_API_KEY", "sk-test-key-0123456789abcdef".to_owned()),
            ("RUST_LOG", "replan=info".to_owned()),
            ("REPLAN_PLANNING__DECISIONS", self.decisions.to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for (k, v) in isolated_git_env() {
            env.insert(k.to_owned(), v.to_owned());
        }
        env
    }

    pub(super) fn run(&self, env: &BTreeMap<String, String>) -> std::process::Output {
        self.run_args(env, &["run"])
    }

    pub(super) fn run_args<S: AsRef<std::ffi::OsStr>>(
        &self,
        env: &BTreeMap<String, String>,
        args: &[S],
    ) -> std::process::Output {
        let mut command = Command::from_std(self.command(env));
        command.args(args);
        command.timeout(std::time::Duration::from_secs(120));
        command.output().expect("run replan")
    }

    /// The binary with only `env` (and PATH, HOME, TMPDIR), as the next workflow run; no
    /// arguments yet.
    pub(super) fn command(&self, env: &BTreeMap<String, String>) -> std::process::Command {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("replan"));
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR"] {
            if let Ok(value) = std::env::var(key) {
                command.env(key, value);
            }
        }
        command.envs(env);
        if env.get("GITHUB_RUN_ID").map(String::as_str) == Some("4242") {
            let run = 4242 + self.runs.get();
            command.env("GITHUB_RUN_ID", run.to_string());
        }
        self.runs.set(self.runs.get() + 1);
        command
    }

    pub(super) fn outputs(&self) -> BTreeMap<String, String> {
        let text =
            std::fs::read_to_string(self.files.path().join("output.txt")).unwrap_or_default();
        replan::actions::outputs::parse(&text).into_iter().collect()
    }

    pub(super) fn history(&self, number: u64) -> String {
        self.fake
            .file_at_ref(BRANCH, &format!("planning_history/issues/{number}.jsonl"))
            .unwrap_or_default()
    }

    pub(super) fn types(&self, number: u64) -> Vec<String> {
        jsonl::parse(&self.history(number))
            .entries
            .iter()
            .map(|e| e.body.type_name().to_owned())
            .collect()
    }

    /// Step outputs and job summary of a completed two-task cycle that opened a pull request.
    fn assert_completed_outputs(&self) {
        let outputs = self.outputs();
        assert_eq!(outputs["status"], "completed");
        assert_eq!(outputs["plan_version"], "1");
        assert_eq!(outputs["tasks_done"], "2");
        assert_eq!(outputs["tasks_total"], "2");
        assert!(outputs["pull_request"].contains("/pull/"), "{outputs:?}");
        assert_eq!(
            Some(outputs["history_commit"].clone()),
            self.fake.ref_sha(BRANCH)
        );
        let summary = std::fs::read_to_string(self.files.path().join("summary.md")).unwrap();
        assert!(summary.starts_with("# Replan: ✅ Completed"), "{summary}");
    }

    /// An issue by alice (who may write), its pull request branch prepared: the set-up most
    /// cycles start from.
    pub(super) fn alices_issue(&self, title: &str, body: &str) -> u64 {
        self.fake.add_collaborator("alice", "write");
        let number = self.fake.seed_issue(title, body, "alice");
        self.prepare_pull_request_branch(number);
        number
    }

    /// The branch the pull request tool pushes must exist on the fake for it to accept the PR.
    pub(super) fn prepare_pull_request_branch(&self, number: u64) {
        let main = self.fake.ref_sha("main").unwrap();
        let branch = format!("replan/issue-{number}");
        self.fake.set_ref(&branch, &main);
        self.fake.append_file(&branch, "hello.md", "hello\n");
    }
}

pub(super) fn text(output: &std::process::Output) -> String {
    format!(
        "status: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub(super) fn ours(body: &str) -> bool {
    body.trim_start().starts_with("<!-- replan:")
}

#[test]
fn github_e2e_issue_opened_plans_executes_opens_a_pull_request_and_completes() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // Checklist comment: one, ours, edited in place with PATCH, with the plan and the run link.
    let comments = world.fake.comments(number);
    let checklists: Vec<_> = comments
        .iter()
        .filter(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .collect();
    assert_eq!(checklists.len(), 1, "{comments:#?}");
    let checklist = &checklists[0].body;
    assert!(checklist.contains("Write hello.md"), "{checklist}");
    assert!(checklist.contains("```mermaid"), "{checklist}");
    assert!(
        checklist.contains("https://github.com/octo/widgets/actions/runs/4242"),
        "{checklist}"
    );
    assert!(
        !world
            .fake
            .requests_to(
                "PATCH",
                &format!("/repos/octo/widgets/issues/comments/{}", checklists[0].id)
            )
            .is_empty(),
        "the checklist is edited in place"
    );
    assert!(comments.iter().all(|c| c.user == DEFAULT_ACTOR));
    assert!(comments.iter().all(|c| ours(&c.body)));
    // The 👀 reaction on the issue.
    assert!(world.fake.reactions().iter().any(|r| r.content == "eyes"));
    // The workspace change went out as a pull request that closes the issue.
    let pulls = world.fake.pull_requests();
    assert_eq!(pulls.len(), 1, "{}", text(&output));
    assert_eq!(pulls[0].head, format!("replan/issue-{number}"));
    assert!(pulls[0].body.contains(&format!("Closes #{number}")));
    // The history, read back from the fake's git objects.
    let types = world.types(number);
    for wanted in [
        "run_started",
        "plan",
        "replan_decision",
        "action",
        "task_state",
        "completion",
        "run_finished",
    ] {
        assert!(
            types.iter().any(|t| t == wanted),
            "no {wanted} in {types:?}"
        );
    }
    let parsed = jsonl::parse(&world.history(number));
    assert!(parsed.corrupt.is_empty());
    assert!(parsed.entries.iter().all(|e| e.run_id == "4242-1"));
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(
        parsed
            .entries
            .iter()
            .any(|e| matches!(&e.body, EntryBody::Checklist { comment_id } if *comment_id == checklists[0].id.to_string())),
        "the checklist id is stored in history"
    );
    world.assert_completed_outputs();
    // Log groups, masks, and no secret in any output.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("::group::Replan: planning cycle on #"),
        "{stdout}"
    );
    assert!(stdout.contains("::add-mask::"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains(&world.fake.token()), "{stderr}");
    assert!(!stderr.contains("sk-test-key-0123456789abcdef"));
    for comment in world.fake.comments(number) {
        assert!(!comment.body.contains(&world.fake.token()));
    }
}

/// The completion notice's effect entry (written before the notice is posted) does not cost a
/// history commit of its own at the end of the run: it joins the completion's commit, or, while
/// the last save of the work still pushes, goes first and the completion joins run_finished.
#[test]
fn github_e2e_the_completion_notice_costs_no_history_commit_of_its_own() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let notice = world
        .fake
        .comments(number)
        .into_iter()
        .find(|c| c.body.starts_with("<!-- replan:notice:completion -->"))
        .expect("a completion notice");
    let key = replan::forge::marker::key_in(&notice.body)
        .expect("the notice carries its key")
        .to_owned();
    // Each history commit uploads the whole file: the first that holds the completion.
    let uploads = history_uploads(&world.fake);
    let first = uploads
        .iter()
        .position(|file| file.contains(r#""type":"completion""#))
        .expect("a commit with the completion");
    assert!(
        uploads[first].contains(&key),
        "the notice's key {key} is recorded with the completion or before it"
    );
    // With the notice's record, then run_finished; or, while the last save still pushes, the
    // record alone first and the completion with run_finished.
    assert!(
        uploads.len() - first <= 2,
        "{} history commits from the completion on",
        uploads.len() - first
    );
}

/// The history file as each history commit uploaded it, in order: inline in a tree (the
/// branch's first commit) or as the content of a `PUT /contents/…` that landed.
fn history_uploads(fake: &crate::support::FakeGitHub) -> Vec<String> {
    use base64::Engine as _;
    fake.requests()
        .into_iter()
        .filter(|r| r.status < 300)
        .filter_map(|r| {
            let body: Value = serde_json::from_str(&r.body).ok()?;
            match (r.method.as_str(), r.path.as_str()) {
                ("POST", "/repos/octo/widgets/git/trees") => {
                    body["tree"][0]["content"].as_str().map(String::from)
                }
                ("PUT", path)
                    if path.starts_with("/repos/octo/widgets/contents/planning_history/") =>
                {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(body["content"].as_str()?)
                        .ok()?;
                    String::from_utf8(bytes).ok()
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn github_e2e_our_own_comment_does_not_trigger() {
    let world = World::new("");
    let number = world.fake.seed_issue("Title", "Body", "alice");
    let comment = world.fake.seed_comment(
        number,
        DEFAULT_ACTOR,
        "<!-- replan:notice:completion -->\n/replan once more",
    );
    let payload = world.comment_created(number, comment);

    let output = world.run(&world.env("issue_comment", &payload));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.fake.comments(number).len(), 1, "nothing posted");
    assert!(world.fake.reactions().is_empty());
    assert!(world.llm.requests().is_empty());
    assert!(
        world
            .fake
            .requests_to("GET", "/repos/octo/widgets/collaborators")
            .is_empty(),
        "no permission look-up for our own comment"
    );
}

#[test]
fn github_e2e_invalid_payload_exits_2_naming_the_file() {
    let world = World::new("");
    let payload = world.files.path().join("broken-event.json");
    std::fs::write(&payload, "{\"action\": \"opened\", \"issue\": ").unwrap();

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken-event.json"), "{stderr}");
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    assert!(world.fake.requests().is_empty(), "nothing sent to GitHub");
}

#[test]
fn github_e2e_missing_token_exits_2_and_says_which_variable() {
    let world = World::new("");
    world.fake.add_collaborator("alice", "write");
    let number = world.fake.seed_issue("Title", "Body", "alice");
    let payload = world.issue_opened(number, "alice");
    let mut env = world.env("issues", &payload);
    env.remove("GITHUB_TOKEN");

    let output = world.run(&env);

    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("GITHUB_TOKEN"));
}

#[test]
fn github_e2e_server_errors_and_rate_limits_are_retried_during_a_run() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please.");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    world.fake.push_fault(Fault::server_error(
        "GET",
        "/repos/octo/widgets/collaborators/",
    ));
    world.fake.push_fault(Fault::github_rate_limit(
        "POST",
        "/repos/octo/widgets/issues/",
        now + 1,
    ));
    world.fake.push_fault(Fault::github_secondary_rate_limit(
        "POST",
        "/repos/octo/widgets/git/trees",
        1,
    ));
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.fake.pending_faults(), 0, "every fault was met");
    assert_eq!(world.outputs()["status"], "completed");
    assert!(world.types(number).contains(&"run_finished".to_owned()));
}

#[test]
fn github_e2e_the_cycle_does_not_wait_for_the_reaction() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please.");
    let slow = Duration::from_secs(6);
    world.fake.push_fault(Fault::slow(
        "POST",
        &format!("/repos/octo/widgets/issues/{number}/reactions"),
        slow,
    ));
    let payload = world.issue_opened(number, "alice");
    let (planning_asked_after, status) = time_to_first_model_call(&world, &payload, slow * 2);

    assert_eq!(status.code(), Some(0));
    assert!(
        planning_asked_after < slow / 2,
        "the model was asked for the plan {planning_asked_after:?} after the start, while the reaction took {slow:?}"
    );
    assert!(world.fake.reactions().iter().any(|r| r.content == "eyes"));
    assert_eq!(world.outputs()["status"], "completed");
}

/// The thread's history is read while the gate looks up the actor's permission: with each of
/// the two taking `slow`, the plan is asked for after about one of them, not both.
#[test]
fn github_e2e_the_history_is_read_while_the_gate_asks_for_the_permission() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please.");
    let slow = Duration::from_secs(3);
    world.fake.push_fault(Fault::slow(
        "GET",
        "/repos/octo/widgets/collaborators/alice/permission",
        slow,
    ));
    world.fake.push_fault(Fault::slow(
        "GET",
        &format!("/repos/octo/widgets/git/ref/heads/{BRANCH}"),
        slow,
    ));
    let payload = world.issue_opened(number, "alice");
    let (planning_asked_after, status) = time_to_first_model_call(&world, &payload, slow * 4);

    assert_eq!(status.code(), Some(0));
    assert_eq!(
        world.fake.pending_faults(),
        0,
        "both slow answers were given"
    );
    assert!(
        planning_asked_after < slow * 5 / 3,
        "the model was asked for the plan {planning_asked_after:?} after the start: the permission and the history took {slow:?} each, one after the other"
    );
    assert_eq!(world.outputs()["status"], "completed");
}

/// The history read beside the gate used the config before the actor's remote layer; when that
/// layer moves the history to another branch, the run reads and writes that branch.
#[test]
fn github_e2e_a_per_user_config_that_moves_the_history_is_followed() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please.");
    let moved = "replan-history-alice";
    let user_config = crate::support::server::TestServer::start(std::sync::Arc::new(|_| {
        crate::support::server::FakeResponse::json(
            200,
            &json!({ "status": "success", "data": { "history": { "branch": "replan-history-alice" } } }),
        )
    }));
    let payload = world.issue_opened(number, "alice");
    let mut env = world.env("issues", &payload);
    env.insert(
        "REPLAN_USER_CONFIG_API__URL".into(),
        format!("{}/user-config", user_config.base_url()),
    );

    let output = world.run(&env);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let path = format!("planning_history/issues/{number}.jsonl");
    let history = world.fake.file_at_ref(moved, &path).unwrap_or_default();
    let types: Vec<String> = jsonl::parse(&history)
        .entries
        .iter()
        .map(|e| e.body.type_name().to_owned())
        .collect();
    assert_eq!(
        types.first().map(String::as_str),
        Some("run_started"),
        "{types:?}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("run_finished"),
        "{types:?}"
    );
    assert!(
        world.fake.file_at_ref(BRANCH, &path).is_none(),
        "nothing on the branch the config before the gate named"
    );
}

#[test]
fn github_e2e_two_runs_committing_at_once_lose_no_entry() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please.");
    let path = format!("planning_history/issues/{number}.jsonl");
    // Another run on the same thread commits its line just before our first ref update.
    let theirs = r#"{"v":1,"seq":1,"ts":"2024-05-01T12:00:00Z","run_id":"other-1","type":"answer","author":"bob","text":"from the other run","assumed":false}"#;
    world.fake.advance_ref_before_next_update(
        BRANCH,
        &path,
        ConcurrentChange::Append(format!("{theirs}\n")),
    );
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let parsed = jsonl::parse(&world.history(number));
    assert!(parsed.corrupt.is_empty());
    assert!(
        parsed.entries.iter().any(|e| e.run_id == "other-1"),
        "the other run's line survived"
    );
    let ours: Vec<_> = parsed
        .entries
        .iter()
        .filter(|e| e.run_id == "4242-1")
        .collect();
    assert!(ours.iter().any(|e| e.body.type_name() == "run_started"));
    assert!(ours.iter().any(|e| e.body.type_name() == "run_finished"));
    let seqs: Vec<u64> = parsed.entries.iter().map(|e| e.seq).collect();
    let mut unique = seqs.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        seqs.len(),
        "sequence numbers stay unique: {seqs:?}"
    );
}

/// Runs `replan run` on `payload` and measures how long it took to make its first model call
/// (waiting at most `limit`); the run's exit status once it ends.
fn time_to_first_model_call(
    world: &World,
    payload: &Path,
    limit: Duration,
) -> (Duration, std::process::ExitStatus) {
    let started = Instant::now();
    let mut child = world
        .command(&world.env("issues", payload))
        .arg("run")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while world.llm.requests().is_empty() && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(10));
    }
    let asked_after = started.elapsed();
    (asked_after, child.wait().unwrap())
}

pub(super) fn comment_by(world: &World, number: u64, author: &str, body: &str) -> PathBuf {
    let id = world.fake.seed_comment(number, author, body);
    world.comment_created(number, id)
}

pub(super) fn checklist_of(world: &World, number: u64) -> String {
    world
        .fake
        .comments(number)
        .into_iter()
        .find(|c| c.body.starts_with("<!-- replan:checklist -->"))
        .map(|c| c.body)
        .unwrap_or_default()
}

fn llm_saw(world: &World, needle: &str) -> bool {
    world
        .llm
        .requests()
        .iter()
        .any(|r| r.texts().iter().any(|t| t.contains(needle)))
}

#[test]
fn github_e2e_replan_command_with_a_reason_revises_the_plan_with_carry_over() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    let first = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));

    for (round, body) in [
        "/replan tasks the tests need their own subtask",
        "/replan actions write the file in one go",
    ]
    .iter()
    .enumerate()
    {
        let payload = comment_by(&world, number, "alice", body);
        let output = world.run(&world.env("issue_comment", &payload));
        assert_eq!(
            output.status.code(),
            Some(0),
            "round {round}: {}",
            text(&output)
        );
        if std::env::var("E2E_DEBUG").is_ok() {
            eprintln!("{}\n{}", text(&output), world.history(number));
        }
    }

    let checklist = checklist_of(&world, number);
    assert!(
        checklist.contains("## 📋 Execution Plan (Revised #2)"),
        "{checklist}"
    );
    assert!(
        checklist.contains("write the file in one go"),
        "the reason is shown: {checklist}"
    );
    assert!(
        checklist.contains("**Previous Progress**: 2/2"),
        "progress of the previous plan is carried over: {checklist}"
    );
    assert!(checklist.contains("<details>"), "{checklist}");
    assert!(llm_saw(&world, "the tests need their own subtask"));
    assert!(llm_saw(&world, "write the file in one go"));
    let types = world.types(number);
    assert_eq!(
        types.iter().filter(|t| *t == "revision").count(),
        2,
        "{types:?}"
    );
    assert_eq!(
        world
            .fake
            .comments(number)
            .iter()
            .filter(|c| c.body.starts_with("<!-- replan:checklist -->"))
            .count(),
        1
    );
    let outputs = world.outputs();
    assert_eq!(outputs["plan_version"], "3", "{outputs:?}");
}

pub(super) const ASK_WHICH_FILE: &str = r#"
mode: matched
steps:
  - when: { contains: "Now evaluate the whole plan" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 0.9, "reasoning": "which file?", "replan_type": "clarification_request",
       "target_phase": "goal_understanding", "clarification_needed": true, "clarification_questions": ["Which file should hold the greeting?"],
       "assumptions_to_make": ["hello.md"]}}
"#;

#[test]
fn github_e2e_clarification_waits_for_the_answer_comment_and_resumes() {
    let world = World::separate(ASK_WHICH_FILE);
    let number = world.alices_issue("Add a greeting", "Somewhere.");

    let asked = world.run(&world.env("issues", &world.issue_opened(number, "alice")));

    assert_eq!(asked.status.code(), Some(0), "{}", text(&asked));
    assert_eq!(world.outputs()["status"], "waiting_for_answer");
    let question = world
        .fake
        .comments(number)
        .into_iter()
        .find(|c| c.body.contains("Which file should hold the greeting?"))
        .expect("the question was posted");
    assert!(ours(&question.body));
    assert!(
        question.body.contains("hello.md"),
        "assumptions are shown: {}",
        question.body
    );
    assert!(world.fake.pull_requests().is_empty());

    let payload = comment_by(&world, number, "alice", "Put it in hello.md at the root.");
    let answered = world.run(&world.env("issue_comment", &payload));

    assert_eq!(answered.status.code(), Some(0), "{}", text(&answered));
    assert!(llm_saw(&world, "Put it in hello.md at the root."));
    let types = world.types(number);
    assert!(types.contains(&"question".to_owned()), "{types:?}");
    assert!(types.contains(&"answer".to_owned()), "{types:?}");
    let outputs = world.outputs();
    assert_eq!(outputs["status"], "completed", "{outputs:?}");
    assert_eq!(world.fake.pull_requests().len(), 1);
}

const UNSURE_REPLAN: &str = r#"
mode: matched
steps:
  - when: { contains: "Now evaluate the whole plan" }
    reply: |
      {"replan_decision": {"replan_needed": true, "confidence": 0.4, "reasoning": "the action order might be wrong", "replan_type": "partial_replan",
       "target_phase": "action_sequence", "replan_level": 2, "issues_found": ["order"], "recommended_actions": ["reorder"],
       "clarification_needed": false, "clarification_questions": []}}
"#;

#[test]
fn github_e2e_low_confidence_decision_waits_for_approve_then_runs() {
    let world = World::separate(UNSURE_REPLAN);
    world.fake.add_collaborator("alice", "write");
    world.fake.add_collaborator("maya", "maintain");
    let number = world
        .fake
        .seed_issue("Add a hello file", "Please.", "alice");
    world.prepare_pull_request_branch(number);

    let first = world.run(&world.env("issues", &world.issue_opened(number, "alice")));

    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert_eq!(world.outputs()["status"], "waiting_for_approval");
    assert!(
        world
            .fake
            .comments(number)
            .iter()
            .any(|c| ours(&c.body) && c.body.contains("/approve")),
        "an approval request asks for /approve"
    );

    let payload = comment_by(&world, number, "maya", "/approve");
    let approved = world.run(&world.env("issue_comment", &payload));

    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
    let outputs = world.outputs();
    assert_eq!(outputs["status"], "completed", "{outputs:?}");
    // The decision came on the draft, so the approved re-planning produced the first plan.
    assert_eq!(outputs["plan_version"], "1", "{outputs:?}");
    assert_eq!(outputs["tasks_done"], "2", "{outputs:?}");
    let history = world.history(number);
    assert!(
        jsonl::parse(&history).entries.iter().any(|e| matches!(
            &e.body,
            EntryBody::ReplanDecision(d) if d.confidence == 0.4 && d.result == replan::history::entry::DecisionResult::Pending
        )),
        "the 0.4 decision waited"
    );
    assert!(
        jsonl::parse(&history).entries.iter().any(|e| matches!(
            &e.body,
            EntryBody::Approval { decision: Some(_), author: Some(a), .. } if a == "maya"
        )),
        "the approval is recorded with its author"
    );
}

#[test]
fn github_e2e_schedule_sweep_continues_a_question_that_waited_too_long() {
    let world = World::separate(ASK_WHICH_FILE);
    let number = world.alices_issue("Add a greeting", "Somewhere.");
    let asked = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(asked.status.code(), Some(0), "{}", text(&asked));
    assert_eq!(world.outputs()["status"], "waiting_for_answer");
    let schedule = world.files.path().join("schedule.json");
    std::fs::write(&schedule, r#"{"schedule": "*/30 * * * *"}"#).unwrap();

    // Not yet timed out: the sweep leaves the thread waiting.
    let early = world.run(&world.env("schedule", &schedule));
    assert_eq!(early.status.code(), Some(0), "{}", text(&early));
    assert!(!world.types(number).contains(&"answer".to_owned()));

    // An hour passes (the history is backdated); the timeout is one minute.
    let path = format!("planning_history/issues/{number}.jsonl");
    let old = regex::Regex::new(r#""ts":"[^"]+""#)
        .unwrap()
        .replace_all(&world.history(number), r#""ts":"2024-05-01T11:00:00Z""#)
        .into_owned();
    world.fake.commit_file(BRANCH, &path, &old);
    let mut env = world.env("schedule", &schedule);
    env.insert(
        "REPLAN_PLANNING__REPLANNING__GOAL_UNDERSTANDING__AUTO_ASSUME_TIMEOUT_MINUTES".into(),
        "1".into(),
    );
    let swept = world.run(&env);

    assert_eq!(swept.status.code(), Some(0), "{}", text(&swept));
    let parsed = jsonl::parse(&world.history(number));
    assert!(
        parsed
            .entries
            .iter()
            .any(|e| matches!(&e.body, EntryBody::Answer { assumed: true, .. })),
        "the sweep answered with the assumptions"
    );
    assert_eq!(world.outputs()["status"], "completed");
}

const LLM_DOWN: &str = r#"
mode: matched
steps:
  - when: { contains: "Produce the planning phases" }
    fault: { kind: status, status: 500, times: 50 }
    reply: "never"
"#;

#[test]
fn github_e2e_llm_failure_exits_1_with_a_failure_notice_and_an_error_annotation() {
    let world = World::new(LLM_DOWN);
    world.fake.add_collaborator("alice", "write");
    let number = world
        .fake
        .seed_issue("Add a hello file", "Please.", "alice");
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("::error title=Replan::"), "{stdout}");
    assert!(
        world
            .fake
            .comments(number)
            .iter()
            .any(|c| ours(&c.body) && c.body.contains("500")),
        "a failure notice tells the thread: {:#?}",
        world.fake.comments(number)
    );
    assert_eq!(world.outputs()["status"], "failed");
    let types = world.types(number);
    assert!(types.contains(&"run_started".to_owned()), "{types:?}");
}

mod budget;
/// Split-trust mode (`--bundle` / `replan publish`) against the same world.
pub(super) mod ci_round;
mod fanout;
mod fanout_split;
mod git_attack;
mod instructions;
mod plan_approval;
mod plan_approval_forgery;
mod split;
mod split_hostile;
mod split_pr_section;
mod verify;
mod work_push;
/// The checklist look-up lists the comments; a next link to another origin is refused there
/// with a message naming it. (That look-up downgrades a failed listing to a warning, so the run
/// goes on; the token never leaves the API origin either way.)
#[test]
fn github_e2e_foreign_next_link_is_refused_naming_the_url_without_the_token() {
    let world = World::new("");
    world.fake.add_collaborator("alice", "write");
    let number = world
        .fake
        .seed_issue("Add a hello file", "Please.", "alice");
    world.fake.seed_comment(number, "bob", "an earlier comment");
    let foreign = format!(
        "https://collector.example:8443/repos/octo/widgets/issues/{number}/comments?page=2"
    );
    world.fake.push_fault(
        Fault::extra_header(
            "GET",
            &format!("/repos/octo/widgets/issues/{number}/comments"),
            "link",
            &format!("<{foreign}>; rel=\"next\""),
        )
        .times(50),
    );
    let payload = world.issue_opened(number, "alice");

    let output = world.run(&world.env("issues", &payload));

    let said = text(&output);
    assert!(said.contains(&foreign), "names the URL: {said}");
    assert!(said.contains("outside the API origin"), "{said}");
    // `::add-mask::` hands the token to the runner for masking; no other line may hold it.
    assert!(
        said.lines()
            .filter(|line| !line.starts_with("::add-mask::"))
            .all(|line| !line.contains(&world.fake.token())),
        "{said}"
    );
}

#[test]
fn github_e2e_forge_answer_over_forge_api_max_response_bytes_is_refused_as_too_large() {
    let world = World::new("");
    world.fake.add_collaborator("alice", "write");
    let number = world
        .fake
        .seed_issue("Add a hello file", "Please.", "alice");
    for n in 0..40 {
        world
            .fake
            .seed_comment(number, "bob", &format!("{n}: {}", "words ".repeat(400)));
    }
    let payload = world.issue_opened(number, "alice");
    let mut env = world.env("issues", &payload);
    env.insert(
        "REPLAN_FORGE_API__MAX_RESPONSE_BYTES".into(),
        "65536".into(),
    );

    let output = world.run(&env);

    let said = text(&output);
    assert!(
        said.contains("too large") && said.contains("65536"),
        "the comment listing (~100 KB) is refused: {said}"
    );
}
