//! Issue 39, point 2: a ledger per thread. Every run of a thread adds its spend to the thread's
//! history; `llm.budget.per_thread_usd` (or `/budget`) caps the sum over all of them. Local
//! forge, the scripted model (every call priced at $1), real git.

use replan::history::entry::{EntryBody, RunStatus};
use replan::history::{Entry, jsonl, replay};
use replan::llm::scenario::{Scenario, ScriptedUsage};
use serde_json::Value;
use tempfile::TempDir;

use crate::github::e2e_support::scenario;
use crate::github::local_run::{checkout, local_command};
use crate::support::TestRepo;
use crate::support::llm_server::LlmServer;

/// Every reply of `scenario` reports 100 prompt tokens: $1 at the price `priced_repo` sets.
pub fn one_dollar_a_call(mut scenario: Scenario) -> Scenario {
    for step in &mut scenario.steps {
        step.usage = Some(ScriptedUsage {
            prompt_tokens: 100,
            completion_tokens: 0,
            cached_tokens: 0,
        });
    }
    scenario
}

/// `.replan.yml` pricing the scripted model at $10,000 a million prompt tokens, plus `extra`.
pub fn priced_config(extra: &str) -> String {
    format!(
        "llm:\n  prices:\n    gpt-test: {{ input_per_mtok: 10000, output_per_mtok: 0 }}\n{extra}"
    )
}

struct Thread {
    llm: LlmServer,
    _origin: TestRepo,
    checkout: TestRepo,
    dir: TempDir,
}

impl Thread {
    fn new(config: &str) -> Self {
        let (origin, checkout) = checkout();
        checkout.write(".replan.yml", config);
        checkout.commit_all("replan config");
        Thread {
            llm: LlmServer::start(one_dollar_a_call(scenario(""))),
            _origin: origin,
            checkout,
            dir: TempDir::new().unwrap(),
        }
    }

    /// One run on issue 7: the start, or a comment.
    fn run(&self, comment: Option<&str>) -> std::process::Output {
        let mut command = local_command(&self.llm, &self.checkout, Some(self.dir.path()));
        if let Some(body) = comment {
            command.args(["--comment", body]);
        }
        let output = command.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    fn entries(&self) -> Vec<Entry> {
        let path = self.dir.path().join("planning_history/issues/7.jsonl");
        let parsed = jsonl::parse(&std::fs::read_to_string(path).unwrap());
        assert!(parsed.corrupt.is_empty());
        parsed.entries
    }

    fn status(&self) -> RunStatus {
        self.entries()
            .iter()
            .rev()
            .find_map(|e| match &e.body {
                EntryBody::RunFinished { status, .. } => Some(*status),
                _ => None,
            })
            .expect("a finished run")
    }

    fn spent(&self) -> f64 {
        replay(&self.entries()).usage.cost_usd
    }

    /// The comments on the local thread, oldest first.
    fn comments(&self) -> Vec<String> {
        let path = self.dir.path().join("threads/issues-7.json");
        let thread: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        thread["comments"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["body"].as_str().map(str::to_owned))
            .collect()
    }

    fn checklist(&self) -> String {
        self.comments()
            .into_iter()
            .find(|c| c.contains("Execution Plan"))
            .expect("a checklist")
    }
}

/// A start and a `/replan` cost $7 each ($1 a call); the cap of $16.50 lets the third run (a
/// second `/replan`) make three calls: the third passes it and the fourth is never sent.
#[test]
fn three_runs_share_the_threads_cap_the_third_stops_at_it_and_budget_raises_it() {
    let thread = Thread::new(&priced_config("  budget:\n    per_thread_usd: 16.5\n"));
    thread.run(None);
    assert_eq!(
        (thread.status(), thread.spent()),
        (RunStatus::Completed, 7.0)
    );
    thread.run(Some("/replan"));
    assert_eq!(
        (thread.status(), thread.spent()),
        (RunStatus::Completed, 14.0)
    );
    assert!(
        thread
            .checklist()
            .contains("Budget: $14.00 spent, $2.50 left of $16.50"),
        "{}",
        thread.checklist()
    );

    let calls_before = thread.llm.requests().len();
    thread.run(Some("/replan"));
    assert_eq!(thread.status(), RunStatus::BudgetExhausted);
    assert_eq!(
        thread.spent(),
        17.0,
        "the call that reached the cap is the last"
    );
    assert_eq!(thread.llm.requests().len(), calls_before + 3);
    let checklist = thread.checklist();
    assert!(
        checklist.contains("blocked: budget ($17.00 of $16.50 spent) — `/budget $N` to continue"),
        "{checklist}"
    );
    assert!(
        checklist.contains("Budget: $17.00 spent, $0.00 left of $16.50"),
        "{checklist}"
    );
    // Every usage entry names the model that answered and carries its price.
    let entries = thread.entries();
    let usage: Vec<(Option<&str>, f64)> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Usage { usage, model } => Some((model.as_deref(), usage.cost_usd)),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), 17);
    assert!(
        usage.iter().all(|u| *u == (Some("gpt-test"), 1.0)),
        "{usage:?}"
    );

    // A run past the cap does not call the model, and says so.
    let calls_before = thread.llm.requests().len();
    thread.run(Some("/resume"));
    assert_eq!(thread.status(), RunStatus::BudgetExhausted);
    assert_eq!(thread.llm.requests().len(), calls_before, "no model call");
    let said = thread.comments();
    assert!(
        said.iter().any(|c| c.contains("This thread's budget is spent ($17.00 of $16.50 spent), so this run did not call the model")),
        "{said:#?}"
    );

    // `/budget` alone shows the ledger; `/budget $30` raises the cap and the run goes on.
    thread.run(Some("/budget"));
    assert_eq!(thread.llm.requests().len(), calls_before, "no model call");
    assert!(
        thread.comments().iter().any(
            |c| c.contains("Over all runs of this thread: $17.00 spent, $0.00 left of $16.50.")
        ),
        "{:#?}",
        thread.comments()
    );
    thread.run(Some("/budget $30"));
    assert_eq!(thread.status(), RunStatus::Completed);
    assert_eq!(thread.spent(), 21.0);
    let budgets: Vec<(String, Option<f64>)> = thread
        .entries()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Budget { author, usd, .. } => Some((author.clone(), *usd)),
            _ => None,
        })
        .collect();
    assert_eq!(budgets, [("dev".to_string(), Some(30.0))]);
    let checklist = thread.checklist();
    assert!(!checklist.contains("blocked: budget"), "{checklist}");
    assert!(
        checklist.contains("Budget: $21.00 spent, $9.00 left of $30.00"),
        "{checklist}"
    );
}
