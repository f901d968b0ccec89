//! GitLab CI: what started the pipeline, from the job's CI variables.
//!
//! GitLab cannot start a pipeline on a comment by itself. The documented set-up is a project
//! webhook (issue and comment events) pointed at the pipeline-trigger URL: GitLab then stores
//! the webhook body in a file and sets `TRIGGER_PAYLOAD` to its path. Other sources: a merge
//! request pipeline (`CI_MERGE_REQUEST_IID`), a scheduled pipeline (the sweep), or a pipeline
//! started with variables (`REPLAN_ISSUE_IID`, optionally `REPLAN_NOTE_ID`).

use super::ci_run::{CiRun, CiVerdict, thread_of_branch};
use super::{
    Actor, EventOutcome, ForgeKind, Request, ReviewEvent, StartRules, ThreadKind, ThreadRef,
    Trigger, TriggerComment, TriggerError, classify_comment, mentions, timestamp,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct Hook {
    object_kind: Option<String>,
    user: Option<HookUser>,
    project: Option<HookProject>,
    object_attributes: Option<Attributes>,
    issue: Option<Noteable>,
    merge_request: Option<Noteable>,
    changes: Option<Changes>,
    #[serde(default)]
    labels: Vec<HookLabel>,
}

#[derive(Debug, Deserialize)]
struct HookUser {
    id: Option<u64>,
    username: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HookProject {
    path_with_namespace: Option<String>,
    id: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Attributes {
    id: Option<u64>,
    iid: Option<u64>,
    title: Option<String>,
    description: Option<String>,
    action: Option<String>,
    note: Option<String>,
    noteable_type: Option<String>,
    system: Option<bool>,
    /// `opened`, `closed`, `merged` or `locked`.
    state: Option<String>,
    /// Pipeline hooks: the branch, the commit, `success` / `failed` / ..., the pipeline's page.
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    sha: Option<String>,
    status: Option<String>,
    url: Option<String>,
    #[serde(default)]
    tag: bool,
    source: Option<String>,
    /// Notes: `DiffNote` for a note in a diff discussion of a merge request.
    #[serde(rename = "type")]
    note_type: Option<String>,
    discussion_id: Option<String>,
    #[serde(default, deserialize_with = "timestamp::lenient")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "timestamp::lenient")]
    updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize)]
struct Noteable {
    iid: Option<u64>,
    state: Option<String>,
    /// Pipeline hooks: the merge request's branch and the projects on both sides (a fork's
    /// merge request has another source project).
    source_branch: Option<String>,
    source_project_id: Option<u64>,
    target_project_id: Option<u64>,
}

/// GitLab's states: `opened`, `closed`, `merged`, `locked`; a merged request is closed too.
fn is_closed(state: Option<&str>) -> Option<bool> {
    state.map(|s| matches!(s, "closed" | "merged"))
}

#[derive(Debug, Deserialize)]
struct Changes {
    labels: Option<LabelChange>,
}

#[derive(Debug, Deserialize)]
struct LabelChange {
    previous: Option<Vec<HookLabel>>,
    current: Option<Vec<HookLabel>>,
}

#[derive(Debug, Deserialize)]
struct HookLabel {
    title: Option<String>,
}

/// Reads the trigger from GitLab CI variables. A `TRIGGER_PAYLOAD` that is a path is read
/// from disk; one that starts with `{` is taken as the JSON itself.
pub fn from_gitlab(
    vars: &HashMap<String, String>,
    rules: &StartRules,
) -> Result<EventOutcome, TriggerError> {
    let env = Vars(vars);
    if let Some(payload) = env.get("TRIGGER_PAYLOAD") {
        let (json, path) = if payload.starts_with('{') {
            (
                payload.to_owned(),
                PathBuf::from("TRIGGER_PAYLOAD (inline)"),
            )
        } else {
            let path = PathBuf::from(payload);
            let json = std::fs::read_to_string(&path).map_err(|source| TriggerError::Read {
                path: path.clone(),
                variable: "TRIGGER_PAYLOAD",
                source,
            })?;
            (json, path)
        };
        return from_webhook(&env, &json, &path, rules);
    }
    if env.get("CI_PIPELINE_SOURCE") == Some("schedule") {
        let actor = env.actor().unwrap_or_else(|_| Actor {
            login: "schedule".into(),
            id: None,
            is_bot: false,
        });
        return Ok(EventOutcome::run(env.trigger(
            None,
            actor,
            Request::Sweep,
            "schedule",
        )?));
    }
    if let Some(iid) = env.number("REPLAN_ISSUE_IID")? {
        let request = match env.get("REPLAN_NOTE_ID") {
            Some(id) => Request::FetchComment { id: id.to_owned() },
            None => Request::Start {
                title: String::new(),
                body: String::new(),
            },
        };
        let thread = ThreadRef::issue(iid);
        return Ok(EventOutcome::run(env.trigger(
            Some(thread),
            env.actor()?,
            request,
            "pipeline_variables",
        )?));
    }
    if let Some(iid) = env.number("CI_MERGE_REQUEST_IID")? {
        let labels = env.get("CI_MERGE_REQUEST_LABELS").unwrap_or("");
        if !labels.split(',').any(|l| rules.is_trigger_label(l)) {
            return Ok(EventOutcome::ignored(format!(
                "merge request !{iid} does not carry the `{}` label",
                rules.label
            )));
        }
        let request = Request::Start {
            title: env.get("CI_MERGE_REQUEST_TITLE").unwrap_or("").to_owned(),
            body: env
                .get("CI_MERGE_REQUEST_DESCRIPTION")
                .unwrap_or("")
                .to_owned(),
        };
        let thread = ThreadRef {
            kind: ThreadKind::MergeRequest,
            number: iid,
        };
        return Ok(EventOutcome::run(env.trigger(
            Some(thread),
            env.actor()?,
            request,
            "merge_request_pipeline",
        )?));
    }
    Ok(EventOutcome::ignored(format!(
        "this pipeline (source `{}`) names no issue or merge request: start it from a webhook (TRIGGER_PAYLOAD), with REPLAN_ISSUE_IID, for a merge request, or on a schedule",
        env.get("CI_PIPELINE_SOURCE").unwrap_or("unknown")
    )))
}

struct Vars<'a>(&'a HashMap<String, String>);

impl Vars<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    fn number(&self, name: &str) -> Result<Option<u64>, TriggerError> {
        let Some(text) = self.get(name) else {
            return Ok(None);
        };
        let digits = text.trim_start_matches(['#', '!']);
        match digits.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(TriggerError::BadVariable {
                name: name.to_owned(),
                problem: format!("is `{text}`; expected a positive number such as 42"),
            }),
        }
    }

    fn actor(&self) -> Result<Actor, TriggerError> {
        let login = self
            .get("GITLAB_USER_LOGIN")
            .ok_or_else(|| TriggerError::BadVariable {
                name: "GITLAB_USER_LOGIN".into(),
                problem: "is not set; it names who started the pipeline and GitLab CI sets it for every job".into(),
            })?;
        Ok(Actor {
            login: login.to_owned(),
            id: self.get("GITLAB_USER_ID").and_then(|id| id.parse().ok()),
            is_bot: is_gitlab_bot(login),
        })
    }

    fn repo(&self, from_payload: Option<&str>) -> Result<String, TriggerError> {
        self.get("CI_PROJECT_PATH")
            .or(from_payload)
            .map(str::to_owned)
            .ok_or_else(|| TriggerError::BadVariable {
                name: "CI_PROJECT_PATH".into(),
                problem:
                    "is not set; run Replan inside a GitLab CI job (or set it to the project path)"
                        .into(),
            })
    }

    fn trigger(
        &self,
        thread: Option<ThreadRef>,
        actor: Actor,
        request: Request,
        event: &str,
    ) -> Result<Trigger, TriggerError> {
        Ok(Trigger {
            forge: ForgeKind::GitLab,
            repo: self.repo(None)?,
            thread,
            actor,
            request,
            comment: None,
            event: event.to_owned(),
            project_id: self.get("CI_PROJECT_ID").map(str::to_owned),
            api_url: self.get("CI_API_V4_URL").map(str::to_owned),
            closed: None,
        })
    }
}

/// Project and group access tokens act as users named `project_<id>_bot_<hash>` /
/// `group_<id>_bot_<hash>`; a few built-in users are bots too.
pub fn is_gitlab_bot(username: &str) -> bool {
    let lower = username.to_ascii_lowercase();
    ((lower.starts_with("project_") || lower.starts_with("group_")) && lower.contains("_bot"))
        || lower.starts_with("service_account_")
        || matches!(
            lower.as_str(),
            "ghost" | "support-bot" | "alert-bot" | "visual-review-bot" | "security-bot"
        )
}

fn from_webhook(
    env: &Vars<'_>,
    json: &str,
    path: &Path,
    rules: &StartRules,
) -> Result<EventOutcome, TriggerError> {
    let hook: Hook = TriggerError::parse(path, json)?;
    let kind = hook
        .object_kind
        .clone()
        .ok_or_else(|| TriggerError::missing(path, "webhook", "object_kind"))?;
    let ctx = HookCtx {
        env,
        hook: &hook,
        path,
        rules,
        kind: &kind,
    };
    match kind.as_str() {
        "issue" | "work_item" => ctx.issuable(ThreadKind::Issue),
        "merge_request" => ctx.issuable(ThreadKind::MergeRequest),
        "note" => ctx.note(),
        "pipeline" => ctx.pipeline(),
        other => Ok(EventOutcome::ignored(format!(
            "GitLab `{other}` webhooks do not start Replan; send issue and comment events"
        ))),
    }
}

struct HookCtx<'a> {
    env: &'a Vars<'a>,
    hook: &'a Hook,
    path: &'a Path,
    rules: &'a StartRules,
    kind: &'a str,
}

impl HookCtx<'_> {
    fn missing(&self, field: &str) -> TriggerError {
        TriggerError::missing(self.path, &format!("{} hook", self.kind), field)
    }

    fn attributes(&self) -> Result<&Attributes, TriggerError> {
        self.hook
            .object_attributes
            .as_ref()
            .ok_or_else(|| self.missing("object_attributes"))
    }

    fn actor(&self) -> Result<Actor, TriggerError> {
        let user = self
            .hook
            .user
            .as_ref()
            .ok_or_else(|| self.missing("user"))?;
        let login = user
            .username
            .clone()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| self.missing("user.username"))?;
        Ok(Actor {
            is_bot: is_gitlab_bot(&login),
            login,
            id: user.id,
        })
    }

    fn trigger(
        &self,
        thread: ThreadRef,
        actor: Actor,
        request: Request,
        event: String,
        closed: Option<bool>,
    ) -> Result<Trigger, TriggerError> {
        let project = self.hook.project.as_ref();
        Ok(Trigger {
            forge: ForgeKind::GitLab,
            repo: self
                .env
                .repo(project.and_then(|p| p.path_with_namespace.as_deref()))?,
            thread: Some(thread),
            actor,
            request,
            comment: None,
            event,
            project_id: self
                .env
                .get("CI_PROJECT_ID")
                .map(str::to_owned)
                .or_else(|| project.and_then(|p| p.id).map(|id| id.to_string())),
            api_url: self.env.get("CI_API_V4_URL").map(str::to_owned),
            closed,
        })
    }

    fn issuable(&self, kind: ThreadKind) -> Result<EventOutcome, TriggerError> {
        let attrs = self.attributes()?;
        let action = attrs.action.as_deref().unwrap_or("");
        let number = attrs
            .iid
            .ok_or_else(|| self.missing("object_attributes.iid"))?;
        let has_label = |labels: &[HookLabel]| {
            labels.iter().any(|l| {
                l.title
                    .as_deref()
                    .is_some_and(|t| self.rules.is_trigger_label(t))
            })
        };
        let label_change = self.hook.changes.as_ref().and_then(|c| c.labels.as_ref());
        let label_added = label_change.is_some_and(|change| {
            has_label(change.current.as_deref().unwrap_or_default())
                && !has_label(change.previous.as_deref().unwrap_or_default())
        });
        // GitLab's actions, in the words of `triggers.issues` / `triggers.pull_requests`.
        let event = match action {
            "open" => "opened",
            "reopen" => "reopened",
            "update" if label_added => "labeled",
            _ => {
                return Ok(EventOutcome::ignored(format!(
                    "GitLab {} `{action}` event without the `{}` label being added does not start Replan",
                    self.kind, self.rules.label
                )));
            }
        };
        let closed = is_closed(attrs.state.as_deref());
        if let Some(reason) = self.rules.refuses_event(kind, event, closed == Some(true)) {
            return Ok(EventOutcome::ignored(reason));
        }
        let asks = has_label(&self.hook.labels)
            || attrs
                .description
                .as_deref()
                .is_some_and(|d| mentions(d, &self.rules.handle));
        // Every new issue is planned; a merge request only when it asks for it.
        if event != "labeled" && kind != ThreadKind::Issue && !asks {
            return Ok(EventOutcome::ignored(format!(
                "the {} neither carries the `{}` label nor mentions @{}",
                self.kind,
                self.rules.label,
                self.rules.handle.trim_start_matches('@')
            )));
        }
        let request = Request::Start {
            title: attrs.title.clone().unwrap_or_default(),
            body: attrs.description.clone().unwrap_or_default(),
        };
        let event = format!("{}_hook.{action}", self.kind);
        let trigger = self.trigger(
            ThreadRef { kind, number },
            self.actor()?,
            request,
            event,
            closed,
        )?;
        Ok(EventOutcome::run(trigger))
    }

    /// A finished pipeline continues the thread whose merge request branch it ran on; a fork's
    /// merge request pipeline and a tag's are not Replan's.
    fn pipeline(&self) -> Result<EventOutcome, TriggerError> {
        let attrs = self.attributes()?;
        let status = attrs.status.clone().unwrap_or_default();
        if let Some(mr) = &self.hook.merge_request
            && mr.source_project_id != mr.target_project_id
        {
            return Ok(EventOutcome::ignored(
                "the pipeline is of a merge request from another project (a fork)",
            ));
        }
        if attrs.tag {
            return Ok(EventOutcome::ignored("the pipeline is of a tag"));
        }
        // Replan's own pipelines are started by the trigger URL: their end is never acted on.
        if matches!(
            attrs.source.as_deref(),
            Some("trigger" | "pipeline" | "parent_pipeline")
        ) {
            return Ok(EventOutcome::ignored(
                "the pipeline was started by a trigger (Replan's own pipelines are)",
            ));
        }
        let branch = self
            .hook
            .merge_request
            .as_ref()
            .and_then(|mr| mr.source_branch.clone())
            .or_else(|| attrs.git_ref.clone())
            .unwrap_or_default();
        let run = CiRun {
            branch,
            conclusion: status,
            run_id: Some(
                attrs
                    .id
                    .ok_or_else(|| self.missing("object_attributes.id"))?,
            ),
            check_suite_id: None,
            url: attrs.url.clone(),
            head_sha: attrs
                .sha
                .clone()
                .ok_or_else(|| self.missing("object_attributes.sha"))?,
            workflow_path: None,
            workflow_name: None,
            report: None,
        };
        let Some(thread) = thread_of_branch(&run.branch) else {
            return Ok(EventOutcome::ignored(format!(
                "the pipeline ran on `{}`, not on a Replan merge request branch",
                run.branch
            )));
        };
        if run.verdict() == CiVerdict::Inconclusive {
            return Ok(EventOutcome::ignored(format!(
                "the pipeline on `{}` is `{}`, which says nothing about the work yet",
                run.branch, run.conclusion
            )));
        }
        let event = format!("pipeline_hook.{}", run.conclusion);
        let trigger = self.trigger(thread, self.actor()?, Request::CiResult(run), event, None)?;
        Ok(EventOutcome::run(trigger))
    }

    fn note(&self) -> Result<EventOutcome, TriggerError> {
        let attrs = self.attributes()?;
        if attrs.action.as_deref().is_some_and(|a| a != "create") {
            return Ok(EventOutcome::ignored(
                "edited comments are not trusted; post a new comment instead",
            ));
        }
        if attrs.system == Some(true) {
            return Ok(EventOutcome::ignored("system notes do not start Replan"));
        }
        if !self.rules.comments {
            return Ok(EventOutcome::ignored(
                "comments do not start Replan here (`triggers.comments` is false)",
            ));
        }
        let noteable_type = attrs
            .noteable_type
            .as_deref()
            .ok_or_else(|| self.missing("object_attributes.noteable_type"))?;
        let (kind, noteable, field) = match noteable_type {
            "Issue" => (ThreadKind::Issue, &self.hook.issue, "issue.iid"),
            "MergeRequest" => (
                ThreadKind::MergeRequest,
                &self.hook.merge_request,
                "merge_request.iid",
            ),
            other => {
                return Ok(EventOutcome::ignored(format!(
                    "comments on a {other} do not start Replan"
                )));
            }
        };
        let number = noteable
            .as_ref()
            .and_then(|n| n.iid)
            .ok_or_else(|| self.missing(field))?;
        let closed = is_closed(noteable.as_ref().and_then(|n| n.state.as_deref()));
        let id = attrs
            .id
            .ok_or_else(|| self.missing("object_attributes.id"))?;
        let body = attrs.note.clone().unwrap_or_default();
        let request = classify_comment(&body, self.rules);
        let mut trigger = self.trigger(
            ThreadRef { kind, number },
            self.actor()?,
            request,
            "note_hook.create".into(),
            closed,
        )?;
        trigger.comment = Some(TriggerComment {
            id: id.to_string(),
            body: body.clone(),
            created_at: attrs.created_at,
            updated_at: attrs.updated_at,
        });
        if let Some(review) = self.diff_note(attrs, number, body) {
            trigger.request = Request::Review(review);
        }
        Ok(EventOutcome::run(trigger))
    }

    /// A note in a diff discussion of a merge request from this project's own branch: a review
    /// comment, which on Replan's own merge request joins a review round (`app/review.rs`).
    /// GitLab has no review object: the discussion names the event's review, and the round is
    /// every open discussion of Developers not answered yet (`app/review_batch.rs`).
    fn diff_note(&self, attrs: &Attributes, number: u64, body: String) -> Option<ReviewEvent> {
        if attrs.noteable_type.as_deref() != Some("MergeRequest")
            || attrs.note_type.as_deref() != Some("DiffNote")
        {
            return None;
        }
        let merge_request = self.hook.merge_request.as_ref()?;
        // A fork's branch may carry any name: only a branch of this project can be Replan's.
        let same_project = merge_request.source_project_id.is_some()
            && merge_request.source_project_id == merge_request.target_project_id;
        if !same_project {
            return None;
        }
        Some(ReviewEvent {
            pull_request: number,
            review_id: attrs.discussion_id.clone().filter(|d| !d.is_empty())?,
            head_branch: merge_request.source_branch.clone()?,
            comment: Some(body),
            threads: vec![],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        let mut map: HashMap<String, String> = [
            ("GITLAB_CI", "true"),
            ("CI_API_V4_URL", "https://gitlab.example.com/api/v4"),
            ("CI_PROJECT_ID", "15"),
            ("CI_PROJECT_PATH", "mike/diaspora"),
            ("GITLAB_USER_LOGIN", "jsmith"),
            ("GITLAB_USER_ID", "4"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in pairs {
            map.insert(k.to_string(), v.to_string());
        }
        map
    }

    fn run(pairs: &[(&str, &str)]) -> Trigger {
        match from_gitlab(&vars(pairs), &StartRules::default()).unwrap() {
            EventOutcome::Run(t) => *t,
            other => panic!("expected a run: {other:?}"),
        }
    }

    #[test]
    fn schedule_is_a_sweep() {
        let t = run(&[("CI_PIPELINE_SOURCE", "schedule")]);
        assert_eq!(t.request, Request::Sweep);
        assert_eq!(
            t.api_url.as_deref(),
            Some("https://gitlab.example.com/api/v4")
        );
        assert_eq!(t.project_id.as_deref(), Some("15"));
    }

    #[test]
    fn pipeline_variables_start_or_fetch_a_note() {
        let t = run(&[("REPLAN_ISSUE_IID", "12")]);
        assert_eq!(t.thread, Some(ThreadRef::issue(12)));
        assert!(matches!(t.request, Request::Start { .. }));
        assert_eq!(t.actor.login, "jsmith");
        let t = run(&[("REPLAN_ISSUE_IID", "12"), ("REPLAN_NOTE_ID", "1244")]);
        assert_eq!(t.request, Request::FetchComment { id: "1244".into() });
    }

    #[test]
    fn bad_iid_names_the_variable() {
        let err = from_gitlab(
            &vars(&[("REPLAN_ISSUE_IID", "twelve")]),
            &StartRules::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("REPLAN_ISSUE_IID") && err.contains("`twelve`"),
            "{err}"
        );
    }

    #[test]
    fn merge_request_pipelines_need_the_label() {
        let t = run(&[
            ("CI_PIPELINE_SOURCE", "merge_request_event"),
            ("CI_MERGE_REQUEST_IID", "3"),
            ("CI_MERGE_REQUEST_LABELS", "backend,replan"),
            ("CI_MERGE_REQUEST_TITLE", "Add caching"),
        ]);
        assert_eq!(
            t.thread,
            Some(ThreadRef {
                kind: ThreadKind::MergeRequest,
                number: 3
            })
        );
        assert_eq!(
            t.request,
            Request::Start {
                title: "Add caching".into(),
                body: String::new()
            }
        );
        let outcome = from_gitlab(
            &vars(&[
                ("CI_MERGE_REQUEST_IID", "3"),
                ("CI_MERGE_REQUEST_LABELS", "backend"),
            ]),
            &StartRules::default(),
        )
        .unwrap();
        assert!(matches!(outcome, EventOutcome::Ignored { .. }));
    }

    #[test]
    fn a_push_pipeline_is_ignored_with_a_reason() {
        let outcome = from_gitlab(
            &vars(&[("CI_PIPELINE_SOURCE", "push")]),
            &StartRules::default(),
        )
        .unwrap();
        match outcome {
            EventOutcome::Ignored { reason } => assert!(reason.contains("`push`"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn inline_payload_and_bot_users() {
        let json = r#"{"object_kind":"note","user":{"id":99,"username":"project_15_bot_3f2a"},
            "project":{"id":15,"path_with_namespace":"mike/diaspora"},
            "object_attributes":{"id":5,"note":"/status","noteable_type":"Issue","action":"create"},
            "issue":{"iid":23}}"#;
        let t = run(&[("TRIGGER_PAYLOAD", json)]);
        assert!(t.actor.is_bot);
        assert_eq!(t.request, Request::Command(crate::trigger::Command::Status));
    }

    #[test]
    fn notes_on_closed_or_merged_threads_say_so_and_triggers_config_applies() {
        let note = |noteable: &str, state: &str| {
            format!(
                r#"{{"object_kind":"note","user":{{"username":"a"}},"object_attributes":{{"id":1,"note":"/replan","noteable_type":"{noteable}","action":"create"}},"issue":{{"iid":2,"state":"{state}"}},"merge_request":{{"iid":3,"state":"{state}"}}}}"#
            )
        };
        for (noteable, state, closed) in [
            ("MergeRequest", "merged", true),
            ("Issue", "closed", true),
            ("Issue", "opened", false),
        ] {
            let t = run(&[("TRIGGER_PAYLOAD", &note(noteable, state))]);
            assert_eq!(t.closed, Some(closed), "{noteable} {state}");
        }
        let no_comments = StartRules {
            comments: false,
            ..StartRules::default()
        };
        let outcome = from_gitlab(
            &vars(&[("TRIGGER_PAYLOAD", &note("Issue", "opened"))]),
            &no_comments,
        )
        .unwrap();
        assert!(
            matches!(outcome, EventOutcome::Ignored { ref reason } if reason.contains("triggers.comments")),
            "{outcome:?}"
        );
    }

    #[test]
    fn edited_and_system_notes_are_ignored() {
        for attrs in [
            r#""action":"update","noteable_type":"Issue""#,
            r#""system":true,"noteable_type":"Issue""#,
            r#""noteable_type":"Commit""#,
        ] {
            let json = format!(
                r#"{{"object_kind":"note","user":{{"username":"a"}},"object_attributes":{{"id":1,{attrs}}},"issue":{{"iid":1}}}}"#
            );
            let outcome =
                from_gitlab(&vars(&[("TRIGGER_PAYLOAD", &json)]), &StartRules::default()).unwrap();
            assert!(matches!(outcome, EventOutcome::Ignored { .. }), "{attrs}");
        }
    }

    #[test]
    fn a_diff_note_is_a_review_only_from_the_project_s_own_branch() {
        let hook = |kind: &str, source_project: u64| {
            format!(
                r#"{{"object_kind":"note","user":{{"username":"alice"}},
                "object_attributes":{{"id":7,"note":"Rename it","noteable_type":"MergeRequest","action":"create","type":"{kind}","discussion_id":"abc"}},
                "merge_request":{{"iid":3,"state":"opened","source_branch":"replan/issue-5","source_project_id":{source_project},"target_project_id":15}}}}"#
            )
        };
        let t = run(&[("TRIGGER_PAYLOAD", &hook("DiffNote", 15))]);
        let Request::Review(review) = &t.request else {
            panic!("a review: {:?}", t.request)
        };
        assert_eq!((review.pull_request, review.review_id.as_str()), (3, "abc"));
        assert_eq!(review.head_branch, "replan/issue-5");
        // A fork's branch may carry any name; a note outside a diff is a comment.
        for (kind, project) in [("DiffNote", 99), ("DiscussionNote", 15)] {
            let t = run(&[("TRIGGER_PAYLOAD", &hook(kind, project))]);
            assert!(!matches!(t.request, Request::Review(_)), "{kind} {project}");
        }
    }

    #[test]
    fn unreadable_payload_file_names_the_file_and_variable() {
        let err = from_gitlab(
            &vars(&[("TRIGGER_PAYLOAD", "/nonexistent/payload.json")]),
            &StartRules::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("/nonexistent/payload.json") && err.contains("TRIGGER_PAYLOAD"),
            "{err}"
        );
    }
}
