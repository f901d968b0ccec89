//! The set-up most GitLab CI runs of the built binary share: the fake GitLab API, the scripted
//! LLM server, a real checkout, and a git server for the pushes Replan makes with
//! `GITLAB_TOKEN` (`$CI_SERVER_URL/$CI_PROJECT_PATH.git`, which refuses any other credential).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use replan::history::entry::{CiResult, EntryBody};
use replan::history::jsonl;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::ci_job::{job_environment, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, PipelineRun, access};
use crate::support::git::git_command;
use crate::support::git_http::GitHttp;
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

pub const HISTORY: &str = "replan-history";
pub const CHECKLIST: &str = "<!-- replan:checklist -->";

pub struct World {
    pub fake: FakeGitLab,
    pub llm: LlmServer,
    pub checkout: TestRepo,
    /// Holds `octo/widgets.git`, the bare repository the git server serves.
    origin_root: TempDir,
    pub git: GitHttp,
    pub files: TempDir,
}

impl World {
    /// Alice is a Developer; the model follows `overrides`, then the base replies.
    pub fn new(overrides: &str) -> Self {
        let fake = FakeGitLab::start();
        fake.add_member("alice", access::DEVELOPER);
        let origin_root = TempDir::new().unwrap();
        let bare = origin_root
            .path()
            .join(format!("{}.git", fake.project_path()));
        std::fs::create_dir_all(&bare).unwrap();
        let init = git_command(&bare)
            .args(["init", "-q", "--bare", "-b", "main"])
            .output()
            .unwrap();
        assert!(init.status.success(), "{init:?}");
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("oauth2:{}", fake.token()));
        let git = GitHttp::start(origin_root.path(), &format!("Basic {basic}"));
        // The job's checkout fetches from the same repository (Replan reads the merge request's
        // branch from `origin` when the checkout lacks it, as a runner's fresh clone does).
        let checkout = TestRepo::new();
        checkout.run_git(&["remote", "add", "origin", &bare.display().to_string()]);
        checkout.run_git(&["push", "-q", "origin", "main"]);
        World {
            llm: LlmServer::start(scenario(overrides)),
            fake,
            checkout,
            origin_root,
            git,
            files: TempDir::new().unwrap(),
        }
    }

    /// `replan run` in a job of the fake's project; `vars` add to or override the job's.
    pub fn run(&self, vars: &[(&str, String)]) -> std::process::Output {
        self.command(vars).arg("run").output().unwrap()
    }

    /// The binary in a job of the fake's project, no arguments yet.
    pub fn command(&self, vars: &[(&str, String)]) -> assert_cmd::Command {
        let server = self.git.url("");
        let mut all = vec![("CI_SERVER_URL", server.trim_end_matches('/').to_owned())];
        all.extend(vars.iter().cloned());
        job_environment(&self.fake, &self.llm, &self.checkout, &all)
    }

    /// Alice's issue asking for `hello.md`.
    pub fn alices_issue(&self) -> u64 {
        self.fake
            .seed_issue("Add a hello file", "Please add hello.md.", "alice")
    }

    /// The pipeline Alice starts for issue `iid` (`REPLAN_ISSUE_IID`), as it ended.
    pub fn start_issue(&self, iid: u64) -> std::process::Output {
        self.run(&[
            ("REPLAN_ISSUE_IID", iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ])
    }

    /// Alice's issue, planned and done in a first run whose merge request is open from
    /// `replan/issue-<iid>`: returns the issue, the branch and its tip on the fake.
    pub fn merge_request_opened(&self) -> (u64, String, String) {
        let iid = self.alices_issue();
        // The fake keeps its own branches: the one the merge request is opened from must be
        // there when Replan asks for it.
        let branch = format!("replan/issue-{iid}");
        self.fake.commit_file(&branch, "hello.md", "hello\n");
        let first = self.start_issue(iid);
        assert_eq!(first.status.code(), Some(0), "{}", text(&first));
        assert_eq!(self.fake.merge_requests().len(), 1, "{}", text(&first));
        let tip = self.fake.branch_sha(&branch).unwrap();
        (iid, branch, tip)
    }

    /// A Pipeline Hook payload (`tests/fixtures/gitlab-events/pipeline_hook.failed.json`) for
    /// pipeline `id` of `branch` at `sha`, finished with `status`; `patch` changes it further.
    pub fn pipeline_hook(
        &self,
        id: u64,
        branch: &str,
        sha: &str,
        status: &str,
        patch: impl FnOnce(&mut Value),
    ) -> PathBuf {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gitlab-events/pipeline_hook.failed.json");
        let mut hook: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap())
            .expect("fixture is JSON");
        let project = self.fake.project_id();
        let attributes = &mut hook["object_attributes"];
        attributes["id"] = json!(id);
        attributes["ref"] = json!(branch);
        attributes["sha"] = json!(sha);
        attributes["status"] = json!(status);
        attributes["source"] = json!("merge_request_event");
        attributes["url"] = json!(self.pipeline_url(id));
        hook["merge_request"]["source_branch"] = json!(branch);
        hook["merge_request"]["source_project_id"] = json!(project);
        hook["merge_request"]["target_project_id"] = json!(project);
        hook["project"]["id"] = json!(project);
        hook["project"]["path_with_namespace"] = json!(self.fake.project_path());
        hook["user"]["username"] = json!("alice");
        patch(&mut hook);
        let path = self
            .files
            .path()
            .join(format!("pipeline_hook-{id}-{}.json", fastrand::u32(..)));
        std::fs::write(&path, serde_json::to_string(&hook).unwrap()).unwrap();
        path
    }

    /// The variables of the pipeline the webhook's trigger URL starts for `payload`.
    pub fn hook_vars(payload: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("CI_PIPELINE_SOURCE", "trigger".to_owned()),
            ("TRIGGER_PAYLOAD", payload.display().to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ]
    }

    /// A failed pipeline `id` of `branch` at `sha` on the fake: a passing build and a failing
    /// test job whose trace ends with `line`.
    pub fn failed_pipeline(&self, id: u64, branch: &str, sha: &str, line: &str) {
        let trace = format!("running 3 tests\n{line}\nERROR: Job failed: exit code 1\n");
        self.fake.seed_branch_pipeline(
            run(id, branch, sha, "failed"),
            &[
                (id * 10, "build", "success", "compiled\n"),
                (id * 10 + 1, "test", "failed", &trace),
            ],
        );
    }

    /// A passed pipeline `id` of `branch` at `sha` on the fake.
    pub fn passed_pipeline(&self, id: u64, branch: &str, sha: &str) {
        self.fake.seed_branch_pipeline(
            run(id, branch, sha, "success"),
            &[(id * 10, "test", "success", "ok\n")],
        );
    }

    /// Where a person sees pipeline `id`, as the fake's API (and the hook) say.
    pub fn pipeline_url(&self, id: u64) -> String {
        format!(
            "{}/{}/-/pipelines/{id}",
            self.fake.base_url(),
            self.fake.project_path()
        )
    }

    pub fn history(&self, iid: u64) -> String {
        self.fake
            .file_at_ref(HISTORY, &format!("planning_history/issues/{iid}.jsonl"))
            .unwrap_or_default()
    }

    pub fn types(&self, iid: u64) -> Vec<String> {
        jsonl::parse(&self.history(iid))
            .entries
            .iter()
            .map(|e| e.body.type_name().to_owned())
            .collect()
    }

    pub fn ci_results(&self, iid: u64) -> Vec<CiResult> {
        jsonl::parse(&self.history(iid))
            .entries
            .into_iter()
            .filter_map(|e| match e.body {
                EntryBody::CiResult(ci) => Some(*ci),
                _ => None,
            })
            .collect()
    }

    pub fn checklist(&self, iid: u64) -> String {
        let notes = self.fake.notes(Noteable::Issue(iid));
        let ours: Vec<_> = notes
            .iter()
            .filter(|n| n.body.starts_with(CHECKLIST))
            .collect();
        assert_eq!(ours.len(), 1, "one checklist note: {notes:#?}");
        ours[0].body.clone()
    }

    /// `git` in the bare repository Replan pushes to.
    pub fn origin_git(&self, args: &[&str]) -> String {
        let bare = self
            .origin_root
            .path()
            .join(format!("{}.git", self.fake.project_path()));
        let output = git_command(&bare).args(args).output().unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Every request to the fake API that is not a read.
    pub fn writes(&self) -> Vec<String> {
        self.fake
            .requests()
            .iter()
            .filter(|r| r.method != "GET")
            .map(|r| r.line())
            .collect()
    }

    pub fn llm_saw(&self, needle: &str) -> bool {
        self.llm
            .requests()
            .iter()
            .any(|r| r.texts().iter().any(|t| t.contains(needle)))
    }
}

/// A merge request pipeline of `branch` at `sha`.
pub fn run(id: u64, branch: &str, sha: &str, status: &str) -> PipelineRun {
    PipelineRun {
        id,
        branch: branch.to_owned(),
        sha: sha.to_owned(),
        status: status.to_owned(),
        source: "merge_request_event".to_owned(),
    }
}
