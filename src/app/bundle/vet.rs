//! Every write of a bundle checked against the publish job's own trusted inputs before the first
//! one is made. The bundle is hostile input (the job that wrote it ran model-written code): one
//! refusal refuses the whole bundle, and the message names the write and the rule.

use super::trusted::Trusted;
use super::{MANIFEST, Manifest, PLACEHOLDER_PREFIX, Write};
use crate::config::PublishConfig;
use crate::forge::Forge;
use crate::history::entry::{ApprovalDecision, EntryBody};
use crate::history::plan_approval::named_plan;
use crate::history::state::Pending;
use crate::history::{Entry, HistoryBackend, jsonl};
use crate::plan::hash::{names as plan_hash_names, short as short_hash};
use crate::tools::forge_tools::branch_prefix;
use crate::tools::git::git;
use crate::trigger::{BudgetAmount, Command, MARKER_PREFIX, Request, ThreadRef};
use std::collections::BTreeSet;
use std::path::Path;

/// JSON nesting a manifest may have; a real one stays near ten.
pub const MAX_NESTING: usize = 32;

/// Paths whose change makes Replan or CI run something else: Replan's configuration and
/// prompts, GitHub workflows and actions, GitLab CI files and includes.
pub fn is_protected_path(path: &str) -> bool {
    let path = path.to_ascii_lowercase();
    const EXACT: [&str; 3] = [".replan.yml", ".github/replan.yml", ".gitlab-ci.yml"];
    const UNDER: [&str; 5] = [
        ".github/replan/",
        ".replan/",
        ".github/workflows/",
        ".github/actions/",
        ".gitlab/",
    ];
    EXACT.contains(&path.as_str())
        || UNDER.iter().any(|dir| path.starts_with(dir))
        || path.ends_with(".gitlab-ci.yml")
}

/// `manifest.json` read under the caps: its size before it is read, its nesting before it is
/// parsed. A cap refusal is a failure (exit 1); a missing or malformed manifest a usage error.
pub fn read_manifest(dir: &Path, caps: &PublishConfig) -> Result<Manifest, Refusal> {
    let path = dir.join(MANIFEST);
    if let Ok(meta) = std::fs::metadata(&path)
        && meta.len() > caps.max_manifest_bytes
    {
        return Err(Refusal::whole(format!(
            "{} is {} bytes, over `publish.max_manifest_bytes` ({})",
            path.display(),
            meta.len(),
            caps.max_manifest_bytes
        )));
    }
    let text = std::fs::read(&path).map_err(|e| {
        Refusal::usage(format!(
            "cannot read {}: {e}; pass the directory that `replan run --bundle DIR` wrote",
            path.display()
        ))
    })?;
    if nesting(&text) > MAX_NESTING {
        return Err(Refusal::whole(format!(
            "{} holds JSON nested deeper than {MAX_NESTING} levels",
            path.display()
        )));
    }
    Manifest::load(dir).map_err(Refusal::usage)
}

/// The deepest nesting of arrays and objects in `json`, strings skipped; cheap, one pass.
fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Why a bundle is not published.
#[derive(Debug)]
pub struct Refusal {
    pub message: String,
    /// A manifest that cannot be read at all is a usage error, not a refusal.
    pub usage: bool,
}

impl Refusal {
    fn whole(rule: String) -> Self {
        Refusal {
            message: format!("publish refused the bundle: {rule}; nothing was published"),
            usage: false,
        }
    }

    fn usage(message: String) -> Self {
        Refusal {
            message,
            usage: true,
        }
    }

    fn write(index: usize, write: &Write, rule: String) -> Self {
        Refusal::whole(format!("write #{} ({}): {rule}", index + 1, kind(write)))
    }
}

fn kind(write: &Write) -> &'static str {
    match write {
        Write::Comment { .. } => "comment",
        Write::EditComment { .. } => "edit_comment",
        Write::Checklist { .. } => "checklist",
        Write::Reaction { .. } => "reaction",
        Write::Branch { .. } => "branch",
        Write::PullRequest { .. } => "pull_request",
        Write::History { .. } => "history",
        Write::ReviewReply { .. } => "review_reply",
        Write::ResolveReviewThread { .. } => "resolve_review_thread",
        Write::PullRequestSection { .. } => "pull_request_section",
    }
}

/// What vetting reads: the checkout, the bundle directory and the forge and history as they are.
pub struct Sources<'a> {
    pub dir: &'a Path,
    pub workspace: &'a Path,
    pub forge: &'a dyn Forge,
    pub history: &'a dyn HistoryBackend,
}

/// Check every write; `Ok` only when all of them may be published.
pub async fn vet(
    manifest: &Manifest,
    trusted: &Trusted,
    caps: &PublishConfig,
    sources: &Sources<'_>,
) -> Result<(), Refusal> {
    let writes = &manifest.writes;
    for (i, write) in writes.iter().enumerate() {
        rule_of_write(write, trusted, writes).map_err(|rule| Refusal::write(i, write, rule))?;
    }
    caps_hold(writes, caps)?;
    super::review_vet::entries_name_the_round(writes, trusted).map_err(Refusal::whole)?;
    for (i, write) in writes.iter().enumerate() {
        match write {
            Write::EditComment {
                thread, comment_id, ..
            } => edit_target(*thread, comment_id, writes, trusted, sources)
                .await
                .map_err(|rule| Refusal::write(i, write, rule))?,
            Write::Branch {
                branch,
                commit,
                file,
            } => {
                let (workspace, file) = (sources.workspace.to_path_buf(), sources.dir.join(file));
                let (branch, commit) = (branch.clone(), commit.clone());
                tokio::task::spawn_blocking(move || {
                    protected_changes(&workspace, &file, &branch, &commit)
                })
                .await
                .map_err(|e| Refusal::whole(format!("checking the branches stopped: {e}")))?
                .map_err(|rule| Refusal::write(i, write, rule))?
            }
            Write::History { thread, entries } => {
                checklist_entries(*thread, entries, writes, sources)
                    .await
                    .map_err(|rule| Refusal::write(i, write, rule))?;
                decisions_answer_the_stored_request(*thread, entries, trusted, sources)
                    .await
                    .map_err(|rule| Refusal::write(i, write, rule))?
            }
            Write::ReviewReply {
                pull_request,
                review_thread,
                reply_to,
                ..
            } => review_write_target(
                *pull_request,
                review_thread,
                Some(reply_to),
                trusted,
                sources,
            )
            .await
            .map_err(|rule| Refusal::write(i, write, rule))?,
            Write::ResolveReviewThread {
                pull_request,
                review_thread,
            } => review_write_target(*pull_request, review_thread, None, trusted, sources)
                .await
                .map_err(|rule| Refusal::write(i, write, rule))?,
            Write::PullRequestSection { pull_request, .. } => {
                own_pull_request(pull_request, writes, trusted, sources)
                    .await
                    .map_err(|rule| Refusal::write(i, write, rule))?
            }
            _ => {}
        }
    }
    Ok(())
}

/// A `checklist` entry tells every later run which comment to edit: it may name only the
/// checklist this bundle posts (its placeholder) or the one the history already names.
async fn checklist_entries(
    thread: ThreadRef,
    entries: &[Entry],
    writes: &[Write],
    sources: &Sources<'_>,
) -> Result<(), String> {
    let named: Vec<&str> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Checklist { comment_id } => Some(comment_id.as_str()),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let posted_here = |id: &str| {
        writes.iter().any(|w| {
            matches!(w, Write::Checklist { thread: t, placeholder, .. }
                if *t == thread && placeholder == id && id.starts_with(PLACEHOLDER_PREFIX))
        })
    };
    let mut recorded = None;
    for id in named {
        if posted_here(id) {
            continue;
        }
        if recorded.is_none() {
            recorded = Some(history_checklist(thread, sources).await?);
        }
        if recorded.as_ref().and_then(Option::as_deref) != Some(id) {
            return Err(format!(
                "a `checklist` history entry names comment {id}, which is neither the checklist this bundle posts nor the one the history names"
            ));
        }
    }
    Ok(())
}

/// A person's decision (`approval` with a verdict) may only answer the approval request the
/// stored history waits on, with that request's id and subject exactly: a bundle cannot approve
/// a plan (or decision) it wrote itself, one nobody asked about, or another version than the one
/// the person read. `/approve <hash>` must name the plan that waits.
async fn decisions_answer_the_stored_request(
    thread: ThreadRef,
    entries: &[Entry],
    trusted: &Trusted,
    sources: &Sources<'_>,
) -> Result<(), String> {
    let decisions: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            matches!(
                e.body,
                EntryBody::Approval {
                    decision: Some(_),
                    ..
                }
            )
        })
        .collect();
    if decisions.is_empty() {
        return Ok(());
    }
    let pending = crate::history::store::load(sources.history, &thread)
        .await
        .map_err(|e| format!("cannot read the history of {thread}: {e}"))?
        .state
        .pending;
    let waiting = match &pending {
        Some(Pending::Approval {
            request_id,
            subject,
            ..
        }) => Some((request_id, subject)),
        _ => None,
    };
    for entry in decisions {
        let EntryBody::Approval {
            request_id,
            subject,
            ..
        } = &entry.body
        else {
            continue;
        };
        let answers = waiting
            .is_some_and(|(id, waiting_subject)| id == request_id && waiting_subject == subject);
        if !answers {
            return Err(format!(
                "history entry {} (`approval` of `{request_id}`) answers no approval request the stored history of {thread} waits on ({})",
                entry.seq,
                waiting.map_or_else(
                    || "nothing waits".to_owned(),
                    |(id, _)| format!("`{id}` waits")
                )
            ));
        }
        if let (Request::Command(Command::Approve { hash: Some(given) }), Some((_, hash))) =
            (&trusted.request, named_plan(subject))
            && !plan_hash_names(given, hash)
        {
            return Err(format!(
                "history entry {} approves plan `{}`, which the triggering `/approve {given}` does not name",
                entry.seq,
                short_hash(hash)
            ));
        }
    }
    Ok(())
}

async fn history_checklist(
    thread: ThreadRef,
    sources: &Sources<'_>,
) -> Result<Option<String>, String> {
    Ok(crate::history::store::load(sources.history, &thread)
        .await
        .map_err(|e| format!("cannot read the history of {thread}: {e}"))?
        .state
        .checklist_comment_id)
}

/// The rules one write must meet on its own (and against the bundle's other writes).
fn rule_of_write(write: &Write, trusted: &Trusted, writes: &[Write]) -> Result<(), String> {
    // The 👀 of a review goes on the reviewed pull request, Replan's own.
    let reviewed_pull_request = |thread: ThreadRef| {
        matches!(
            write,
            Write::Reaction {
                comment_id: None,
                ..
            }
        ) && trusted.review.is_some_and(|r| r.pull_request == thread)
    };
    if let Some(thread) = thread_of(write)
        && Some(thread) != trusted.thread
        && !reviewed_pull_request(thread)
    {
        return Err(format!(
            "addressed to {thread}, not the thread this publish job runs for ({}, from its own event or --issue)",
            trusted.thread_name()
        ));
    }
    match write {
        Write::Reaction {
            comment_id: Some(id),
            ..
        } if trusted.comment_id.as_deref() != Some(id.as_str()) => Err(format!(
            "a reaction goes only on the triggering comment or the thread itself; comment {id} is neither"
        )),
        Write::Branch { branch, .. } => {
            let thread = trusted.thread.ok_or("this publish job names no thread")?;
            if allowed_branch(&thread, branch) {
                Ok(())
            } else {
                Err(format!(
                    "`{branch}` is not a branch Replan writes for {thread} (`{prefix}`, `{prefix}-N`, `{work}`, `{prefix}-tasks/<id>`)",
                    prefix = branch_prefix(&thread),
                    work = crate::app::work_branch::work_branch(&thread),
                ))
            }
        }
        Write::PullRequest { request, .. } => {
            let bundled = writes
                .iter()
                .any(|w| matches!(w, Write::Branch { branch, .. } if *branch == request.head));
            if !bundled {
                return Err(format!(
                    "the pull request's branch `{}` is not a branch of this bundle",
                    request.head
                ));
            }
            if !trusted.bases.contains(&request.base) {
                return Err(format!(
                    "a pull request into `{}`, which is not the repository's default branch ({})",
                    request.base,
                    if trusted.bases.is_empty() {
                        "unknown: this job's event does not name it".to_owned()
                    } else {
                        trusted.bases.join(", ")
                    }
                ));
            }
            Ok(())
        }
        Write::History { entries, .. } => entries
            .iter()
            .try_for_each(|entry| decision_allowed(entry, trusted)),
        Write::ReviewReply { pull_request, .. }
        | Write::ResolveReviewThread { pull_request, .. } => {
            review_write_allowed(*pull_request, trusted)
        }
        Write::PullRequestSection { section, .. }
            if crate::forge::pr_section::holds_marker(section) =>
        {
            Err("the section holds the section markers, which would let it reach outside its place in the body".to_owned())
        }
        _ => Ok(()),
    }
}

/// Review threads are answered and resolved only on the pull request Replan opened for the
/// trusted thread, and only when this job's own event is a review of it.
fn review_write_allowed(pull_request: u64, trusted: &Trusted) -> Result<(), String> {
    match trusted.review {
        Some(review) if review.pull_request.number == pull_request => Ok(()),
        Some(review) => Err(format!(
            "a review thread of #{pull_request}; this publish job's event is a review of {}, the pull request Replan opened for {}",
            review.pull_request, review.owner
        )),
        None => Err(format!(
            "a review thread of #{pull_request}, but this publish job's own event is no review of a pull request Replan opened for {}",
            trusted.thread_name()
        )),
    }
}

/// A section goes only into the pull request Replan opened for the trusted thread: the one this
/// bundle opens (its placeholder; the `pull_request` write's own rules vetted its branch), or
/// the one the thread's stored history records (`app::pr_verification`).
async fn own_pull_request(
    target: &str,
    writes: &[Write],
    trusted: &Trusted,
    sources: &Sources<'_>,
) -> Result<(), String> {
    let thread = trusted.thread.ok_or("this publish job names no thread")?;
    if target.starts_with(PLACEHOLDER_PREFIX) {
        let opened_here = writes
            .iter()
            .any(|w| matches!(w, Write::PullRequest { placeholder, .. } if placeholder == target));
        return if opened_here {
            Ok(())
        } else {
            Err(format!(
                "`{target}` is not the placeholder of a pull request this bundle opens"
            ))
        };
    }
    let loaded = crate::history::store::load(sources.history, &thread)
        .await
        .map_err(|e| format!("cannot read the history of {thread}: {e}"))?;
    let recorded = crate::app::pr_verification::recorded_pull_request(
        sources.forge,
        &loaded.state,
        &loaded.intents,
    )
    .await?;
    match recorded {
        Some(own) if own.number.to_string() == target => Ok(()),
        Some(own) => Err(format!(
            "pull request {target} is not the pull request Replan opened for {thread} (#{})",
            own.number
        )),
        None => Err(format!(
            "pull request {target} is not the pull request Replan opened for {thread} (its history records none)"
        )),
    }
}

/// A review write's thread is a review thread of the pull request on the forge, and one of the
/// round this publish job computed for its own review event.
async fn review_write_target(
    pull_request: u64,
    review_thread: &str,
    reply_to: Option<&str>,
    trusted: &Trusted,
    sources: &Sources<'_>,
) -> Result<(), String> {
    review_thread_exists(pull_request, review_thread, reply_to, sources).await?;
    super::review_vet::names(review_thread, trusted)
}

/// The thread a review write names is one of the pull request's review threads on the forge
/// (and a reply goes to that thread's first comment).
async fn review_thread_exists(
    pull_request: u64,
    review_thread: &str,
    reply_to: Option<&str>,
    sources: &Sources<'_>,
) -> Result<(), String> {
    let threads = sources
        .forge
        .review_threads(pull_request)
        .await
        .map_err(|e| format!("cannot read the review threads of #{pull_request}: {e}"))?;
    let thread = threads
        .iter()
        .find(|t| t.id == review_thread)
        .ok_or_else(|| {
            format!("review thread {review_thread} is not a thread of #{pull_request}")
        })?;
    match reply_to {
        Some(id) if thread.comments.first().map(|c| c.id.as_str()) != Some(id) => Err(format!(
            "the reply goes to comment {id}, which does not open review thread {review_thread}"
        )),
        _ => Ok(()),
    }
}

fn thread_of(write: &Write) -> Option<ThreadRef> {
    match write {
        Write::Comment { thread, .. }
        | Write::EditComment { thread, .. }
        | Write::Checklist { thread, .. }
        | Write::Reaction { thread, .. }
        | Write::History { thread, .. } => Some(*thread),
        Write::Branch { .. }
        | Write::PullRequest { .. }
        | Write::ReviewReply { .. }
        | Write::ResolveReviewThread { .. }
        | Write::PullRequestSection { .. } => None,
    }
}

/// `replan/issue-7`, `replan/issue-7-2` (a second pull request's branch), `replan/work/issue-7`
/// and the fan-out's `replan/issue-7-tasks/<id>` (`app/stage/branches.rs`).
fn allowed_branch(thread: &ThreadRef, branch: &str) -> bool {
    let prefix = branch_prefix(thread);
    if branch == prefix || branch == crate::app::work_branch::work_branch(thread) {
        return true;
    }
    let Some(rest) = branch.strip_prefix(&prefix) else {
        return false;
    };
    if let Some(n) = rest.strip_prefix('-')
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return true;
    }
    rest.strip_prefix("-tasks/").is_some_and(|id| {
        !id.is_empty()
            && !id.starts_with('.')
            && !id.contains("..")
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    })
}

/// Entries that record a person's decision are the publish job's to learn from its own event:
/// one is accepted only when that event is a comment by the same person asking for it.
fn decision_allowed(entry: &Entry, trusted: &Trusted) -> Result<(), String> {
    let (author, asked) = match &entry.body {
        EntryBody::Approval {
            decision: Some(decision),
            author,
            ..
        } => (
            author.as_deref().unwrap_or_default(),
            match decision {
                ApprovalDecision::Approved => {
                    matches!(trusted.request, Request::Command(Command::Approve { .. }))
                }
                ApprovalDecision::Rejected => {
                    matches!(trusted.request, Request::Command(Command::Reject { .. }))
                }
            },
        ),
        // A thread's cap is raised only by the `/budget` comment this job's own event carries,
        // for exactly the amount it names.
        EntryBody::Budget {
            author,
            usd,
            tokens,
        } => (
            author.as_str(),
            match &trusted.request {
                Request::Command(Command::Budget {
                    amount: Some(BudgetAmount::Cents(cents)),
                }) => tokens.is_none() && *usd == Some(*cents as f64 / 100.0),
                Request::Command(Command::Budget {
                    amount: Some(BudgetAmount::Tokens(asked)),
                }) => usd.is_none() && *tokens == Some(*asked),
                _ => false,
            },
        ),
        EntryBody::Answer {
            author, assumed, ..
        } => (
            author.as_str(),
            !assumed
                && matches!(
                    trusted.request,
                    Request::Answer { .. } | Request::Mention { .. } | Request::Command(_)
                ),
        ),
        _ => return Ok(()),
    };
    let by_actor = trusted.comment_id.is_some()
        && !trusted.actor.is_empty()
        && author.eq_ignore_ascii_case(&trusted.actor);
    if asked && by_actor {
        Ok(())
    } else {
        Err(format!(
            "history entry {} (`{}`) records a person's decision that this publish job's own event does not carry",
            entry.seq,
            entry.body.type_name()
        ))
    }
}

fn caps_hold(writes: &[Write], caps: &PublishConfig) -> Result<(), Refusal> {
    let mut comments = 0u64;
    let mut checklists = BTreeSet::new();
    let mut pull_requests = 0u64;
    let mut branches = BTreeSet::new();
    let mut history_bytes = 0u64;
    for write in writes {
        match write {
            Write::Comment { .. } | Write::EditComment { .. } => comments += 1,
            Write::Checklist { thread, .. } => {
                checklists.insert(*thread);
            }
            Write::PullRequest { .. } => pull_requests += 1,
            Write::Branch { branch, .. } => {
                branches.insert(branch.as_str());
            }
            Write::History { entries, .. } => {
                history_bytes += entries
                    .iter()
                    .map(|e| jsonl::to_line(e).len() as u64 + 1)
                    .sum::<u64>();
            }
            Write::Reaction { .. } | Write::ResolveReviewThread { .. } => {}
            Write::ReviewReply { .. } | Write::PullRequestSection { .. } => comments += 1,
        }
    }
    let comments = comments + checklists.len() as u64;
    for (key, count, cap) in [
        ("max_comments", comments, u64::from(caps.max_comments)),
        (
            "max_pull_requests",
            pull_requests,
            u64::from(caps.max_pull_requests),
        ),
        (
            "max_branches",
            branches.len() as u64,
            u64::from(caps.max_branches),
        ),
        ("max_history_bytes", history_bytes, caps.max_history_bytes),
    ] {
        if count > cap {
            return Err(Refusal::whole(format!(
                "the bundle holds {count} against `publish.{key}` = {cap}"
            )));
        }
    }
    Ok(())
}

/// A comment may be edited when this bundle posts it, when the thread's history names it as the
/// checklist, or when it carries Replan's marker AND was written by Replan's own login.
async fn edit_target(
    thread: ThreadRef,
    id: &str,
    writes: &[Write],
    trusted: &Trusted,
    sources: &Sources<'_>,
) -> Result<(), String> {
    let posted_here = id.starts_with(PLACEHOLDER_PREFIX)
        && writes.iter().any(|w| match w {
            Write::Comment { placeholder, .. } | Write::Checklist { placeholder, .. } => {
                placeholder == id
            }
            _ => false,
        });
    if posted_here {
        return Ok(());
    }
    let checklist = history_checklist(thread, sources).await?;
    if checklist.as_deref() == Some(id) {
        return Ok(());
    }
    let comments = sources
        .forge
        .comments(&thread)
        .await
        .map_err(|e| format!("cannot list the comments of {thread}: {e}"))?;
    let Some(comment) = comments.iter().find(|c| c.id == id) else {
        return Err(format!("comment {id} does not exist on {thread}"));
    };
    let ours = trusted
        .own_login
        .as_deref()
        .is_some_and(|own| comment.author.eq_ignore_ascii_case(own));
    if ours && comment.body.trim_start().starts_with(MARKER_PREFIX) {
        Ok(())
    } else {
        Err(format!(
            "comment {id} by `{}` is not Replan's own (Replan writes as `{}` and marks its comments)",
            comment.author,
            trusted.own_login.as_deref().unwrap_or("an unknown login")
        ))
    }
}

/// The bundle's branch must apply to this checkout, hold exactly `commit`, and none of the
/// commits it adds to what the checkout and `origin` already have may touch a protected path.
fn protected_changes(
    workspace: &Path,
    file: &Path,
    branch: &str,
    commit: &str,
) -> Result<(), String> {
    let file_text = file.to_string_lossy();
    git(workspace, &["bundle", "verify", "--quiet", &file_text], &[]).map_err(|e| {
        format!(
            "the branch `{branch}` in {} does not apply to this checkout ({}); check out the commit the agent job ran on",
            file.display(),
            e.message
        )
    })?;
    let reference = format!("refs/heads/{branch}");
    let heads = git(
        workspace,
        &["bundle", "list-heads", &file_text, &reference],
        &[],
    )
    .map_err(|e| e.message)?;
    let bundled = heads.split_whitespace().next().unwrap_or_default();
    if bundled != commit {
        return Err(format!(
            "{} holds `{branch}` at {bundled:?}, but the manifest says {commit}",
            file.display()
        ));
    }
    let scratch = format!("refs/replan-publish/vet-{}", fastrand::u64(..));
    let refspec = format!("+{reference}:{scratch}");
    git(
        workspace,
        &[
            "fetch",
            "--quiet",
            "--no-write-fetch-head",
            &file_text,
            &refspec,
        ],
        &[],
    )
    .map_err(|e| {
        format!(
            "cannot read `{branch}` from {}: {}",
            file.display(),
            e.message
        )
    })?;
    let found = changed_paths(workspace, &scratch);
    let _ = git(workspace, &["update-ref", "-d", &scratch], &[]);
    match found?.into_iter().find(|(_, path)| is_protected_path(path)) {
        Some((commit, path)) => Err(format!(
            "commit {commit} of `{branch}` touches protected path `{path}`"
        )),
        None => Ok(()),
    }
}

/// Every (commit, path) the commits reachable from `tip` but not from HEAD or `origin` change,
/// each commit against its first parent (a root commit: all its files).
fn changed_paths(workspace: &Path, tip: &str) -> Result<Vec<(String, String)>, String> {
    let listed = git(
        workspace,
        &["rev-list", "--parents", tip, "--not", "HEAD", "--remotes"],
        &[],
    )
    .map_err(|e| format!("cannot list the branch's commits: {}", e.message))?;
    let mut found = Vec::new();
    for line in listed.lines() {
        let mut ids = line.split_whitespace();
        let Some(commit) = ids.next() else { continue };
        let mut args = vec!["diff-tree", "-r", "-z", "--name-only", "--no-commit-id"];
        match ids.next() {
            Some(parent) => {
                args.push(parent);
                args.push(commit);
            }
            None => {
                args.push("--root");
                args.push(commit);
            }
        }
        let names = git(workspace, &args, &[])
            .map_err(|e| format!("cannot list the files of commit {commit}: {}", e.message))?;
        found.extend(
            names
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(|p| (commit.to_owned(), p.to_owned())),
        );
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_cover_config_prompts_workflows_and_ci() {
        for path in [
            ".replan.yml",
            ".github/replan.yml",
            ".github/replan/planning.md",
            ".replan/x",
            ".github/workflows/pwn.yml",
            ".GitHub/Workflows/x.yml",
            ".github/actions/a/action.yml",
            ".gitlab-ci.yml",
            ".gitlab/ci/x.yml",
            "ci/deploy.gitlab-ci.yml",
        ] {
            assert!(is_protected_path(path), "{path}");
        }
        for path in ["hello.md", "src/.replan.yml.md", "docs/workflows/x.yml"] {
            assert!(!is_protected_path(path), "{path}");
        }
    }

    #[test]
    fn only_the_threads_own_branches_are_allowed() {
        let thread = ThreadRef::issue(7);
        for ok in [
            "replan/issue-7",
            "replan/issue-7-2",
            "replan/work/issue-7",
            "replan/issue-7-tasks/task_1",
        ] {
            assert!(allowed_branch(&thread, ok), "{ok}");
        }
        for bad in [
            "feature-x",
            "replan/issue-8",
            "replan/issue-70",
            "replan/issue-7-x",
            "replan/issue-7-tasks/",
            "replan/issue-7-tasks/a/b",
            "replan/issue-7-tasks/..x",
            "replan/work/issue-7/x",
            "main",
        ] {
            assert!(!allowed_branch(&thread, bad), "{bad}");
        }
    }

    /// A bundle may carry the `budget` entry of its own job's `/budget` comment, exactly as the
    /// comment asked, by the comment's author; any other raise is refused.
    #[test]
    fn a_budget_entry_needs_the_jobs_own_budget_comment_for_that_amount() {
        let trusted = |request: Request| Trusted {
            thread: Some(ThreadRef::issue(7)),
            comment_id: Some("c-1".into()),
            actor: "alice".into(),
            request,
            bases: vec!["main".into()],
            own_login: None,
            review: None,
            review_round: None,
        };
        let budget = |author: &str, usd: Option<f64>, tokens: Option<u64>| Entry {
            v: 1,
            seq: 9,
            ts: chrono::Utc::now(),
            run_id: "r".into(),
            body: EntryBody::Budget {
                author: author.into(),
                usd,
                tokens,
            },
        };
        let five = trusted(Request::Command(Command::Budget {
            amount: Some(BudgetAmount::Cents(500)),
        }));
        assert!(decision_allowed(&budget("alice", Some(5.0), None), &five).is_ok());
        for forged in [
            budget("alice", Some(5000.0), None),
            budget("alice", Some(5.0), Some(1)),
            budget("alice", None, Some(500)),
            budget("mallory", Some(5.0), None),
        ] {
            let refused = decision_allowed(&forged, &five).unwrap_err();
            assert!(refused.contains("records a person's decision"), "{refused}");
        }
        let tokens = trusted(Request::Command(Command::Budget {
            amount: Some(BudgetAmount::Tokens(20_000)),
        }));
        assert!(decision_allowed(&budget("alice", None, Some(20_000)), &tokens).is_ok());
        assert!(decision_allowed(&budget("alice", None, Some(90_000)), &tokens).is_err());
        for request in [
            Request::Command(Command::Budget { amount: None }),
            Request::Command(Command::Approve { hash: None }),
            Request::Start {
                title: String::new(),
                body: String::new(),
            },
        ] {
            assert!(
                decision_allowed(&budget("alice", Some(5.0), None), &trusted(request)).is_err()
            );
        }
    }

    #[test]
    fn nesting_is_counted_outside_strings() {
        assert_eq!(nesting(br#"{"a": [1, {"b": "[[[[{{"}]}"#), 3);
        assert_eq!(nesting(br#"["\"[", []]"#), 2);
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert_eq!(nesting(deep.as_bytes()), 100);
    }
}
