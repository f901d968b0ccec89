//! GitHub Actions event payloads (`GITHUB_EVENT_NAME` + the JSON file at `GITHUB_EVENT_PATH`).
//!
//! The structs hold only the fields Replan reads, all optional: GitHub omits or nulls fields
//! between event kinds and API versions, and a missing field we need is reported by its path.

use super::ci_run::{CiRun, CiVerdict, thread_of_branch};
use super::{
    Actor, EventOutcome, ForgeKind, Request, ReviewEvent, StartRules, ThreadKind, ThreadRef,
    Trigger, TriggerComment, TriggerError, classify_comment, mentions, timestamp,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Default, Deserialize)]
struct Payload {
    action: Option<String>,
    issue: Option<Issue>,
    pull_request: Option<Issue>,
    comment: Option<Comment>,
    review: Option<Review>,
    label: Option<Label>,
    repository: Option<Repository>,
    sender: Option<User>,
    inputs: Option<serde_json::Map<String, Value>>,
    workflow_run: Option<WorkflowRun>,
    check_suite: Option<CheckSuite>,
}

/// `workflow_run` events: the run that finished.
#[derive(Debug, Deserialize)]
struct WorkflowRun {
    id: Option<u64>,
    name: Option<String>,
    path: Option<String>,
    head_branch: Option<String>,
    head_sha: Option<String>,
    conclusion: Option<String>,
    html_url: Option<String>,
    head_repository: Option<Repository>,
}

/// `check_suite` events: a CI app's suite of checks on a commit.
#[derive(Debug, Deserialize)]
struct CheckSuite {
    id: Option<u64>,
    head_branch: Option<String>,
    head_sha: Option<String>,
    conclusion: Option<String>,
}

/// An issue or a pull request: the fields we read are the same.
#[derive(Debug, Deserialize)]
struct Issue {
    number: Option<u64>,
    title: Option<String>,
    body: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
    /// Present (an object) when an `issue_comment` is on a pull request.
    pull_request: Option<Value>,
    /// `open` or `closed`.
    state: Option<String>,
    /// A pull request's head (its branch).
    head: Option<Head>,
}

#[derive(Debug, Deserialize)]
struct Head {
    #[serde(rename = "ref")]
    branch: Option<String>,
    /// The repository the branch is in: a fork's pull request names the fork.
    repo: Option<Repository>,
}

/// A `pull_request_review` event's review.
#[derive(Debug, Deserialize)]
struct Review {
    id: Option<u64>,
    user: Option<User>,
    /// `approved`, `changes_requested`, `commented` (any case).
    state: Option<String>,
}

impl Issue {
    fn is_closed(&self) -> bool {
        self.state.as_deref() == Some("closed")
    }
}

#[derive(Debug, Deserialize)]
struct Comment {
    id: Option<u64>,
    body: Option<String>,
    user: Option<User>,
    /// A review comment's review.
    pull_request_review_id: Option<u64>,
    #[serde(default, deserialize_with = "timestamp::lenient")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "timestamp::lenient")]
    updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize)]
struct Label {
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Repository {
    full_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct User {
    login: Option<String>,
    id: Option<u64>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// The `workflow_dispatch` inputs that name the issue to plan: the first is the one the shipped
/// workflow (examples/workflows/replan.yml) declares, the others are accepted aliases.
pub const DISPATCH_ISSUE_INPUTS: &[&str] = &["issue", "issue_number", "number"];

/// Parses an Actions event. `Ok(None)` is an event Replan deliberately ignores; the reason is
/// logged at info level (use [`from_actions_explained`] to get it).
pub fn from_actions(
    event_name: &str,
    payload_json: &str,
    payload_path_for_errors: &Path,
    rules: &StartRules,
) -> Result<Option<Trigger>, TriggerError> {
    let outcome = from_actions_explained(event_name, payload_json, payload_path_for_errors, rules)?;
    if let EventOutcome::Ignored { reason } = &outcome {
        tracing::info!(event = event_name, "ignoring the event: {reason}");
    }
    Ok(outcome.into_trigger())
}

/// Reads the payload file and parses it; a read error names the file.
pub fn load_actions_event(
    event_name: &str,
    payload_path: &Path,
    rules: &StartRules,
) -> Result<EventOutcome, TriggerError> {
    let json = std::fs::read_to_string(payload_path).map_err(|source| TriggerError::Read {
        path: payload_path.to_owned(),
        variable: "GITHUB_EVENT_PATH",
        source,
    })?;
    from_actions_explained(event_name, &json, payload_path, rules)
}

/// Parses an Actions event and says why when it is ignored.
pub fn from_actions_explained(
    event_name: &str,
    payload_json: &str,
    path: &Path,
    rules: &StartRules,
) -> Result<EventOutcome, TriggerError> {
    let event_name = event_name.trim();
    if !matches!(
        event_name,
        "issues"
            | "issue_comment"
            | "pull_request"
            | "pull_request_target"
            | "pull_request_review_comment"
            | "pull_request_review"
            | "workflow_dispatch"
            | "schedule"
            | "workflow_run"
            | "check_suite"
    ) {
        return Ok(EventOutcome::ignored(format!(
            "`{event_name}` events do not start Replan (it runs on issues, issue_comment, pull_request, pull_request_review, pull_request_review_comment, workflow_dispatch, schedule, workflow_run and check_suite)"
        )));
    }
    let payload: Payload = if event_name == "schedule" && payload_json.trim().is_empty() {
        Payload::default()
    } else {
        TriggerError::parse(path, payload_json)?
    };
    let ctx = Ctx {
        event_name,
        path,
        rules,
        payload: &payload,
    };
    ctx.dispatch()
}

struct Ctx<'a> {
    event_name: &'a str,
    path: &'a Path,
    rules: &'a StartRules,
    payload: &'a Payload,
}

impl Ctx<'_> {
    fn dispatch(&self) -> Result<EventOutcome, TriggerError> {
        let action = self.payload.action.as_deref().unwrap_or("");
        match (self.event_name, action) {
            ("schedule", _) => self.sweep(),
            ("workflow_dispatch", _) => self.dispatched(),
            ("workflow_run", "completed") => self.workflow_run(),
            ("check_suite", "completed") => self.check_suite(),
            ("issues", "opened" | "reopened") => self.opened(ThreadKind::Issue, action),
            ("issues" | "pull_request" | "pull_request_target", "labeled") => self.labeled(),
            ("pull_request" | "pull_request_target", "opened" | "reopened") => {
                self.opened(ThreadKind::PullRequest, action)
            }
            ("issue_comment" | "pull_request_review_comment", "created")
            | ("pull_request_review", "submitted")
                if !self.rules.comments =>
            {
                Ok(EventOutcome::ignored(
                    "comments do not start Replan here (`triggers.comments` is false)",
                ))
            }
            ("issue_comment", "created") => self.commented(),
            ("pull_request_review_comment", "created") => self.review_commented(),
            ("pull_request_review", "submitted") => self.reviewed(),
            ("issue_comment" | "pull_request_review_comment", "edited") => {
                Ok(EventOutcome::ignored(
                    "edited comments are not trusted; post a new comment instead",
                ))
            }
            _ => Ok(EventOutcome::ignored(format!(
                "`{}` with action `{action}` does not start Replan",
                self.event_name
            ))),
        }
    }

    fn event(&self) -> String {
        match self.payload.action.as_deref() {
            Some(action) if !action.is_empty() => format!("{}.{action}", self.event_name),
            _ => self.event_name.to_owned(),
        }
    }

    fn missing(&self, field: &str) -> TriggerError {
        TriggerError::missing(self.path, self.event_name, field)
    }

    fn repo(&self) -> Result<String, TriggerError> {
        self.payload
            .repository
            .as_ref()
            .and_then(|r| r.full_name.clone())
            .ok_or_else(|| self.missing("repository.full_name"))
    }

    fn actor(&self, user: Option<&User>, field: &str) -> Result<Actor, TriggerError> {
        let user = user.ok_or_else(|| self.missing(field))?;
        let login = user
            .login
            .clone()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| self.missing(&format!("{field}.login")))?;
        let is_bot = user.kind.as_deref() == Some("Bot") || login.ends_with("[bot]");
        Ok(Actor {
            login,
            id: user.id,
            is_bot,
        })
    }

    fn sender(&self) -> Result<Actor, TriggerError> {
        self.actor(self.payload.sender.as_ref(), "sender")
    }

    /// The issue or pull request the event is about, with the field name for errors.
    fn thread_item(&self) -> Result<(&Issue, ThreadKind, &'static str), TriggerError> {
        if let Some(issue) = &self.payload.issue {
            let kind = if issue.pull_request.as_ref().is_some_and(|v| !v.is_null()) {
                ThreadKind::PullRequest
            } else {
                ThreadKind::Issue
            };
            return Ok((issue, kind, "issue"));
        }
        if let Some(pr) = &self.payload.pull_request {
            return Ok((pr, ThreadKind::PullRequest, "pull_request"));
        }
        let field = if self.event_name.starts_with("pull_request") {
            "pull_request"
        } else {
            "issue"
        };
        Err(self.missing(field))
    }

    fn thread(&self) -> Result<(ThreadRef, &Issue), TriggerError> {
        let (item, kind, field) = self.thread_item()?;
        let number = item
            .number
            .ok_or_else(|| self.missing(&format!("{field}.number")))?;
        Ok((ThreadRef { kind, number }, item))
    }

    fn trigger(
        &self,
        thread: Option<ThreadRef>,
        actor: Actor,
        request: Request,
    ) -> Result<Trigger, TriggerError> {
        Ok(Trigger {
            forge: ForgeKind::GitHub,
            repo: self.repo()?,
            thread,
            actor,
            request,
            comment: None,
            event: self.event(),
            project_id: None,
            api_url: None,
            closed: self
                .thread_item()
                .ok()
                .and_then(|(item, ..)| item.state.as_deref())
                .map(|state| state == "closed"),
        })
    }

    fn start(item: &Issue) -> Request {
        Request::Start {
            title: item.title.clone().unwrap_or_default(),
            body: item.body.clone().unwrap_or_default(),
        }
    }

    fn opened(&self, kind: ThreadKind, action: &str) -> Result<EventOutcome, TriggerError> {
        let (thread, item) = self.thread()?;
        if let Some(reason) = self.rules.refuses_event(kind, action, item.is_closed()) {
            return Ok(EventOutcome::ignored(reason));
        }
        let labeled = item.labels.iter().any(|l| {
            l.name
                .as_deref()
                .is_some_and(|n| self.rules.is_trigger_label(n))
        });
        let mentioned = item
            .body
            .as_deref()
            .is_some_and(|b| mentions(b, &self.rules.handle));
        // Every new issue is planned; a pull request only when it asks for it.
        if kind != ThreadKind::Issue && !(labeled || mentioned) {
            return Ok(EventOutcome::ignored(format!(
                "the new {} neither carries the `{}` label nor mentions @{}",
                kind.noun(),
                self.rules.label,
                self.rules.handle.trim_start_matches('@')
            )));
        }
        let trigger = self.trigger(Some(thread), self.sender()?, Self::start(item))?;
        Ok(EventOutcome::run(trigger))
    }

    /// A finished CI run continues the thread whose pull request branch it ran on. A run of a
    /// fork's branch of the same name is not Replan's.
    fn workflow_run(&self) -> Result<EventOutcome, TriggerError> {
        let run = self
            .payload
            .workflow_run
            .as_ref()
            .ok_or_else(|| self.missing("workflow_run"))?;
        let repo = self.repo()?;
        let head_repo = run
            .head_repository
            .as_ref()
            .and_then(|r| r.full_name.as_deref());
        if head_repo != Some(repo.as_str()) {
            return Ok(EventOutcome::ignored(format!(
                "the workflow run is of a branch in {}, not in {repo}",
                head_repo.unwrap_or("an unnamed repository")
            )));
        }
        self.ci_result(CiRun {
            branch: run.head_branch.clone().unwrap_or_default(),
            conclusion: run.conclusion.clone().unwrap_or_default(),
            run_id: Some(run.id.ok_or_else(|| self.missing("workflow_run.id"))?),
            check_suite_id: None,
            url: run.html_url.clone(),
            head_sha: run
                .head_sha
                .clone()
                .ok_or_else(|| self.missing("workflow_run.head_sha"))?,
            workflow_path: run.path.clone(),
            workflow_name: run.name.clone(),
            report: None,
        })
    }

    fn check_suite(&self) -> Result<EventOutcome, TriggerError> {
        let suite = self
            .payload
            .check_suite
            .as_ref()
            .ok_or_else(|| self.missing("check_suite"))?;
        self.ci_result(CiRun {
            branch: suite.head_branch.clone().unwrap_or_default(),
            conclusion: suite.conclusion.clone().unwrap_or_default(),
            run_id: None,
            check_suite_id: Some(suite.id.ok_or_else(|| self.missing("check_suite.id"))?),
            url: None,
            head_sha: suite
                .head_sha
                .clone()
                .ok_or_else(|| self.missing("check_suite.head_sha"))?,
            workflow_path: None,
            workflow_name: None,
            report: None,
        })
    }

    fn ci_result(&self, run: CiRun) -> Result<EventOutcome, TriggerError> {
        let Some(thread) = thread_of_branch(&run.branch) else {
            return Ok(EventOutcome::ignored(format!(
                "the CI run is on `{}`, not on a Replan pull request branch",
                run.branch
            )));
        };
        if run.verdict() == CiVerdict::Inconclusive {
            return Ok(EventOutcome::ignored(format!(
                "the CI run on `{}` ended `{}`, which says nothing about the work",
                run.branch, run.conclusion
            )));
        }
        let mut trigger = self.trigger(Some(thread), self.sender()?, Request::CiResult(run))?;
        trigger.closed = None;
        Ok(EventOutcome::run(trigger))
    }

    fn labeled(&self) -> Result<EventOutcome, TriggerError> {
        let name = self
            .payload
            .label
            .as_ref()
            .and_then(|l| l.name.as_deref())
            .ok_or_else(|| self.missing("label.name"))?;
        if !self.rules.is_trigger_label(name) {
            return Ok(EventOutcome::ignored(format!(
                "label `{name}` is not the trigger label `{}`",
                self.rules.label
            )));
        }
        let (thread, item) = self.thread()?;
        if let Some(reason) = self
            .rules
            .refuses_event(thread.kind, "labeled", item.is_closed())
        {
            return Ok(EventOutcome::ignored(reason));
        }
        // The person who added the label asked for the run, not the thread's author.
        let trigger = self.trigger(Some(thread), self.sender()?, Self::start(item))?;
        Ok(EventOutcome::run(trigger))
    }

    fn commented(&self) -> Result<EventOutcome, TriggerError> {
        let (thread, _) = self.thread()?;
        let comment = self
            .payload
            .comment
            .as_ref()
            .ok_or_else(|| self.missing("comment"))?;
        let id = comment.id.ok_or_else(|| self.missing("comment.id"))?;
        let body = comment.body.clone().unwrap_or_default();
        let actor = match comment.user.as_ref() {
            Some(user) => self.actor(Some(user), "comment.user")?,
            None => self.sender()?,
        };
        let mut trigger = self.trigger(Some(thread), actor, classify_comment(&body, self.rules))?;
        trigger.comment = Some(TriggerComment {
            id: id.to_string(),
            body,
            created_at: comment.created_at,
            updated_at: comment.updated_at,
        });
        Ok(EventOutcome::run(trigger))
    }

    /// The pull request's head branch, which names the thread when Replan opened it; `None`
    /// for a branch in another repository (a fork's branch may carry any name).
    fn head_branch(&self) -> Result<Option<String>, TriggerError> {
        let head = self
            .payload
            .pull_request
            .as_ref()
            .and_then(|pr| pr.head.as_ref());
        let branch = head
            .and_then(|head| head.branch.clone())
            .ok_or_else(|| self.missing("pull_request.head.ref"))?;
        let head_repo = head
            .and_then(|head| head.repo.as_ref())
            .and_then(|r| r.full_name.as_deref());
        Ok((head_repo == Some(self.repo()?.as_str())).then_some(branch))
    }

    /// A review comment: a comment (as before) that also names its review, so that on Replan's
    /// own pull request it joins the review's one cycle.
    fn review_commented(&self) -> Result<EventOutcome, TriggerError> {
        let outcome = self.commented()?;
        let EventOutcome::Run(mut trigger) = outcome else {
            return Ok(outcome);
        };
        let review_id = self
            .payload
            .comment
            .as_ref()
            .and_then(|c| c.pull_request_review_id);
        if let (Some(review_id), Some(thread), Some(head_branch)) =
            (review_id, trigger.thread, self.head_branch()?)
        {
            trigger.request = Request::Review(ReviewEvent {
                pull_request: thread.number,
                review_id: review_id.to_string(),
                head_branch,
                comment: trigger.comment.as_ref().map(|c| c.body.clone()),
                threads: vec![],
            });
        }
        Ok(EventOutcome::Run(trigger))
    }

    /// A submitted review that asks for changes or comments; an approval asks for nothing.
    fn reviewed(&self) -> Result<EventOutcome, TriggerError> {
        let review = self
            .payload
            .review
            .as_ref()
            .ok_or_else(|| self.missing("review"))?;
        let state = review.state.as_deref().unwrap_or("").to_ascii_lowercase();
        if !matches!(state.as_str(), "changes_requested" | "commented") {
            return Ok(EventOutcome::ignored(format!(
                "a review in state `{state}` asks for no change"
            )));
        }
        let (thread, _) = self.thread()?;
        let id = review.id.ok_or_else(|| self.missing("review.id"))?;
        let actor = match review.user.as_ref() {
            Some(user) => self.actor(Some(user), "review.user")?,
            None => self.sender()?,
        };
        let Some(head_branch) = self.head_branch()? else {
            return Ok(EventOutcome::ignored(
                "a review of a pull request from another repository (Replan's own are not)",
            ));
        };
        let request = Request::Review(ReviewEvent {
            pull_request: thread.number,
            review_id: id.to_string(),
            head_branch,
            comment: None,
            threads: vec![],
        });
        Ok(EventOutcome::run(self.trigger(
            Some(thread),
            actor,
            request,
        )?))
    }

    fn dispatched(&self) -> Result<EventOutcome, TriggerError> {
        let inputs = self.payload.inputs.clone().unwrap_or_default();
        let issue = self.number_input(&inputs, DISPATCH_ISSUE_INPUTS)?;
        let pull = self.number_input(&inputs, &["pull_request_number"])?;
        let thread = match (issue, pull) {
            (Some(number), _) => ThreadRef::issue(number),
            (None, Some(number)) => ThreadRef {
                kind: ThreadKind::PullRequest,
                number,
            },
            (None, None) => {
                return Err(TriggerError::MissingField {
                    path: self.path.to_owned(),
                    event: self.event_name.to_owned(),
                    field: format!("inputs.{}", DISPATCH_ISSUE_INPUTS[0]),
                    hint: format!(
                        "give the workflow_dispatch trigger an `{}` input (as in examples/workflows/replan.yml) and pass the issue to plan",
                        DISPATCH_ISSUE_INPUTS[0]
                    ),
                });
            }
        };
        let command = inputs
            .get("command")
            .and_then(Value::as_str)
            .and_then(|text| super::parse_commands(text).into_iter().next());
        let request = match command {
            Some(command) => Request::Command(command),
            None => Request::Start {
                title: String::new(),
                body: String::new(),
            },
        };
        let trigger = self.trigger(Some(thread), self.sender()?, request)?;
        Ok(EventOutcome::run(trigger))
    }

    /// The first present, non-empty input among `names`, as a number or a numeric string
    /// (`"42"`, `"#42"`).
    fn number_input(
        &self,
        inputs: &serde_json::Map<String, Value>,
        names: &[&str],
    ) -> Result<Option<u64>, TriggerError> {
        for name in names {
            let bad = |shown: &str| TriggerError::BadValue {
                path: self.path.to_owned(),
                field: format!("inputs.{name}"),
                problem: format!(
                    "is {shown}; expected a positive issue or pull request number such as 42"
                ),
            };
            match inputs.get(*name) {
                None | Some(Value::Null) => continue,
                Some(Value::Number(n)) => {
                    return match n.as_u64().filter(|&n| n > 0) {
                        Some(n) => Ok(Some(n)),
                        None => Err(bad(&n.to_string())),
                    };
                }
                Some(Value::String(s)) if s.trim().is_empty() => continue,
                Some(Value::String(s)) => {
                    let digits = s.trim().trim_start_matches('#');
                    return match digits.parse::<u64>().ok().filter(|&n| n > 0) {
                        Some(n) => Ok(Some(n)),
                        None => Err(bad(&format!("`{s}`"))),
                    };
                }
                Some(other) => return Err(bad(&other.to_string())),
            }
        }
        Ok(None)
    }

    fn sweep(&self) -> Result<EventOutcome, TriggerError> {
        let actor = self.sender().unwrap_or_else(|_| Actor {
            login: "schedule".into(),
            id: None,
            is_bot: false,
        });
        let repo = self
            .payload
            .repository
            .as_ref()
            .and_then(|r| r.full_name.clone())
            .unwrap_or_default();
        Ok(EventOutcome::run(Trigger {
            forge: ForgeKind::GitHub,
            repo,
            thread: None,
            actor,
            request: Request::Sweep,
            comment: None,
            event: "schedule".into(),
            project_id: None,
            api_url: None,
            closed: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger::Command;

    fn parse(event: &str, json: &str) -> Result<EventOutcome, TriggerError> {
        from_actions_explained(
            event,
            json,
            Path::new("/tmp/event.json"),
            &StartRules::default(),
        )
    }

    fn run(event: &str, json: &str) -> Trigger {
        match parse(event, json).unwrap() {
            EventOutcome::Run(t) => *t,
            other => panic!("expected a run, got {other:?}"),
        }
    }

    const REPO: &str =
        r#""repository":{"full_name":"o/r"},"sender":{"login":"alice","id":1,"type":"User"}"#;

    #[test]
    fn comment_on_a_pull_request_is_a_pull_request_thread() {
        let json = format!(
            r#"{{"action":"created","issue":{{"number":5,"pull_request":{{"url":"x"}}}},"comment":{{"id":9,"body":"/stop","user":{{"login":"bob","id":2,"type":"User"}}}},{REPO}}}"#
        );
        let t = run("issue_comment", &json);
        assert_eq!(
            t.thread,
            Some(ThreadRef {
                kind: ThreadKind::PullRequest,
                number: 5
            })
        );
        assert_eq!(t.actor.login, "bob");
        assert_eq!(t.request, Request::Command(Command::Stop));
        assert_eq!(t.comment.unwrap().id, "9");
    }

    #[test]
    fn bot_comments_are_marked_as_bots() {
        let json = format!(
            r#"{{"action":"created","issue":{{"number":5}},"comment":{{"id":9,"body":"hi","user":{{"login":"renovate[bot]","type":"Bot"}}}},{REPO}}}"#
        );
        assert!(run("issue_comment", &json).actor.is_bot);
    }

    #[test]
    fn dispatch_number_as_string_or_number() {
        for inputs in [
            r#"{"issue_number":"42"}"#,
            r#"{"number":42}"#,
            r##"{"issue_number":" #42 "}"##,
        ] {
            let json = format!(r#"{{"inputs":{inputs},{REPO}}}"#);
            assert_eq!(
                run("workflow_dispatch", &json).thread,
                Some(ThreadRef::issue(42))
            );
        }
    }

    #[test]
    fn dispatch_with_a_command_input() {
        let json =
            format!(r#"{{"inputs":{{"issue_number":"3","command":"/replan actions"}},{REPO}}}"#);
        assert_eq!(
            run("workflow_dispatch", &json).request,
            Request::Command(Command::Replan {
                phase: Some(crate::trigger::ReplanScope::Actions),
                reason: None
            })
        );
    }

    #[test]
    fn dispatch_with_a_bad_number_names_the_input() {
        let json = format!(r#"{{"inputs":{{"issue_number":"abc"}},{REPO}}}"#);
        let err = parse("workflow_dispatch", &json).unwrap_err().to_string();
        assert!(
            err.contains("inputs.issue_number") && err.contains("`abc`"),
            "{err}"
        );
    }

    #[test]
    fn other_labels_and_edits_are_ignored_with_a_reason() {
        let json = format!(
            r#"{{"action":"labeled","label":{{"name":"bug"}},"issue":{{"number":1}},{REPO}}}"#
        );
        assert_eq!(
            parse("issues", &json).unwrap(),
            EventOutcome::ignored("label `bug` is not the trigger label `replan`")
        );
        let json = format!(r#"{{"action":"edited","issue":{{"number":1}},{REPO}}}"#);
        assert!(
            matches!(parse("issue_comment", &json).unwrap(), EventOutcome::Ignored { reason } if reason.contains("edited"))
        );
    }

    #[test]
    fn pull_request_opened_needs_the_label_or_a_mention() {
        let plain =
            format!(r#"{{"action":"opened","pull_request":{{"number":7,"body":"fix"}},{REPO}}}"#);
        assert!(matches!(
            parse("pull_request", &plain).unwrap(),
            EventOutcome::Ignored { .. }
        ));
        let labeled = format!(
            r#"{{"action":"opened","pull_request":{{"number":7,"body":null,"labels":[{{"name":"Replan"}}]}},{REPO}}}"#
        );
        let t = run("pull_request", &labeled);
        assert_eq!(t.thread.unwrap().kind, ThreadKind::PullRequest);
        let synced = format!(r#"{{"action":"synchronize","pull_request":{{"number":7}},{REPO}}}"#);
        assert!(matches!(
            parse("pull_request", &synced).unwrap(),
            EventOutcome::Ignored { .. }
        ));
    }

    #[test]
    fn schedule_needs_no_payload() {
        let t = run("schedule", "");
        assert_eq!(t.request, Request::Sweep);
        assert_eq!(t.thread, None);
        let t = run(
            "schedule",
            r#"{"schedule":"*/15 * * * *","repository":{"full_name":"o/r"}}"#,
        );
        assert_eq!(t.repo, "o/r");
    }

    #[test]
    fn missing_number_is_named() {
        let json = format!(r#"{{"action":"opened","issue":{{"title":"t"}},{REPO}}}"#);
        let err = parse("issues", &json).unwrap_err().to_string();
        assert!(
            err.contains("`issue.number`") && err.contains("/tmp/event.json"),
            "{err}"
        );
    }

    #[test]
    fn wrong_type_names_the_field_and_the_expected_type() {
        let err = parse(
            "issues",
            "{\n  \"action\": \"opened\",\n  \"issue\": {\"number\": \"one\"}\n}",
        )
        .unwrap_err();
        match err {
            TriggerError::WrongShape { field, message, .. } => {
                assert_eq!(field, "issue.number");
                assert!(message.contains("expected u64"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
