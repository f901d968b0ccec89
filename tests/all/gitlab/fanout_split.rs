//! The fan-out in split-trust mode on GitLab, as the child pipelines run it: every stage an
//! agent job (`replan run --stage ... --bundle DIR`, which sends GitLab no writing request and
//! pushes nothing) followed by a publish job without the LLM key (`replan publish DIR`). The
//! thread ends as the single-job fan-out on GitLab leaves it.

use std::ffi::OsString;

use super::ci_job::{job_environment, text};
use crate::github::e2e_support::scenario;
use crate::support::fake_gitlab::{Noteable, access};
use crate::support::history_shape::history_shape;
use crate::support::llm_server::LlmServer;
use crate::support::{FakeGitLab, TestRepo};

const WRITING: [&str; 4] = ["POST", "PATCH", "PUT", "DELETE"];

struct Project {
    fake: FakeGitLab,
    llm: LlmServer,
    origin: TestRepo,
    checkout: TestRepo,
    iid: u64,
    files: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let fake = FakeGitLab::start();
        fake.add_member("alice", access::DEVELOPER);
        let iid = fake.seed_issue("Add a hello file", "Please add hello.md.", "alice");
        let origin = TestRepo::bare();
        let checkout = TestRepo::clone_from(&origin);
        let _ = checkout.try_git(&["checkout", "-q", "-b", "main"]);
        checkout.write("README.md", "# widgets\n");
        checkout.commit_all("init");
        checkout.run_git(&["push", "-q", "origin", "main"]);
        // Pushes go to the git `origin` above, which the fake's API does not see: the branch the
        // merge request comes from is known to the fake, so opening it can succeed.
        fake.commit_file(&format!("replan/issue-{iid}"), ".keep", "");
        Project {
            fake,
            llm: LlmServer::start(scenario("")),
            origin,
            checkout,
            iid,
            files: tempfile::TempDir::new().unwrap(),
        }
    }

    /// What the runner's checkout leaves: the commit of `main`, nothing else.
    fn fresh_checkout(&self) {
        self.checkout.run_git(&["checkout", "-q", "-f", "main"]);
        self.checkout.run_git(&["clean", "-q", "-fdx"]);
    }

    fn job(&self, args: &[OsString], llm_key: bool) -> std::process::Output {
        let vars = [
            ("REPLAN_ISSUE_IID", self.iid.to_string()),
            ("GITLAB_USER_LOGIN", "alice".to_owned()),
        ];
        let mut command = job_environment(&self.fake, &self.llm, &self.checkout, &vars);
        if !llm_key {
            command
                .env_remove("OPENAI_API_KEY")
                .env_remove("REPLAN_LLM__BASE_URL");
        }
        command.args(args).output().unwrap()
    }

    fn origin_refs(&self) -> String {
        self.origin
            .run_git(&["for-each-ref", "--format=%(refname) %(objectname)"])
    }

    fn history(&self) -> String {
        self.fake
            .file_at_ref(
                "replan-history",
                &format!("planning_history/issues/{}.jsonl", self.iid),
            )
            .unwrap_or_default()
    }

    fn checklists(&self) -> Vec<String> {
        self.fake
            .notes(Noteable::Issue(self.iid))
            .into_iter()
            .filter(|n| n.body.starts_with("<!-- replan:checklist -->"))
            .map(|n| n.body)
            .collect()
    }
}

const STAGES: [&[&str]; 5] = [
    &["run", "--stage", "plan"],
    &["run", "--stage", "subtask", "--subtask", "task_1"],
    &["run", "--stage", "join"],
    &["run", "--stage", "subtask", "--subtask", "task_2"],
    &["run", "--stage", "join"],
];

fn args(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

#[test]
fn gitlab_split_fanout_agent_jobs_write_nothing_and_publish_ends_as_the_single_job_fanout() {
    let normal = Project::new();
    for stage in STAGES {
        normal.fresh_checkout();
        let output = normal.job(&args(stage), true);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{stage:?}\n{}",
            text(&output)
        );
    }

    let split = Project::new();
    for (n, stage) in STAGES.iter().enumerate() {
        let dir = split.files.path().join(format!("bundle-{n}"));
        split.fresh_checkout();
        split.fake.clear_requests();
        let refs = split.origin_refs();
        let mut agent = args(stage);
        agent.extend([OsString::from("--bundle"), dir.clone().into()]);
        let output = split.job(&agent, true);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{stage:?}\n{}",
            text(&output)
        );
        let writes: Vec<String> = split
            .fake
            .requests()
            .into_iter()
            .filter(|r| WRITING.contains(&r.method.as_str()))
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert_eq!(
            writes,
            Vec::<String>::new(),
            "{stage:?}: the agent job wrote"
        );
        assert_eq!(split.origin_refs(), refs, "{stage:?}: the agent job pushed");

        split.fresh_checkout();
        let calls = split.llm.requests().len();
        let output = split.job(&[OsString::from("publish"), dir.into()], false);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{stage:?}\n{}",
            text(&output)
        );
        assert_eq!(split.llm.requests().len(), calls, "publish calls no LLM");
    }

    let without_run_link = |body: &str| -> String {
        body.lines()
            .map(|l| l.split(" | [View").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (ours, theirs) = (split.checklists(), normal.checklists());
    assert_eq!(ours.len(), 1, "one checklist for all the jobs: {ours:#?}");
    assert_eq!(without_run_link(&ours[0]), without_run_link(&theirs[0]));
    let (mrs, normal_mrs) = (split.fake.merge_requests(), normal.fake.merge_requests());
    assert_eq!(mrs.len(), 1, "{}", split.history());
    assert_eq!(normal_mrs.len(), 1, "{}", normal.history());
    assert_eq!(
        (&mrs[0].source_branch, &mrs[0].target_branch, &mrs[0].title),
        (
            &normal_mrs[0].source_branch,
            &normal_mrs[0].target_branch,
            &normal_mrs[0].title
        )
    );
    assert_eq!(
        split.origin.show("replan/issue-1:hello.md"),
        "hello\n",
        "the merge request's branch holds the subtasks' work"
    );
    let history = split.history();
    assert!(!history.contains("replan-bundle:"), "{history}");
    assert!(
        history
            .lines()
            .last()
            .is_some_and(|l| l.contains(r#""status":"completed""#)),
        "{history}"
    );
    assert_eq!(history_shape(&history), history_shape(&normal.history()));
}
