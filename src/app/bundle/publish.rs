//! `replan publish DIR`: the writes a `--bundle` run recorded, performed with the write token,
//! with no LLM and no code from the checkout. Everything is checked again on the way out: each
//! text is redacted with this job's secrets, the checklist comment is found here (only one that
//! Replan wrote, or that the history names, is edited), and the branch must apply to the checkout.
//! A re-run publish (a retried job, or the same bundle twice) ends as one publish: every create
//! is keyed and looked up first, and history lines already on the branch are not appended again.

use super::{Manifest, OUTPUTS, PLACEHOLDER_PREFIX, SUMMARY, Write, branch, digest, vet};
use crate::app::exit::{CliError, Exit};
use crate::app::secrets::known_secrets;
use crate::app::workspace::resolve_workspace;
use crate::config::{self, Config, LoadOptions};
use crate::forge::github::{GitHubClient, GitHubForge, GitHubHistory, GitHubSettings};
use crate::forge::local::LocalForge;
use crate::forge::marker;
use crate::forge::{Comment, CommentRef, Forge, ReactionTarget, ReviewThreadRef};
use crate::history::{Entry, HistoryBackend, LocalHistory, jsonl};
// Every byte publish sends passes the one redactor, with this job's secrets added.
use crate::outbound::redact;
use crate::report::markers::CHECKLIST_MARKER;
use crate::tools::git::{GitPushPublisher, Publisher, TokenPushPublisher, git};
use crate::trigger::{Actor, ForgeKind, MARKER_PREFIX, Request, ThreadRef, Trigger};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the writes go.
struct Target {
    forge: Arc<dyn Forge>,
    history: Arc<dyn HistoryBackend>,
    publisher: Arc<dyn Publisher>,
}

/// What `replan publish` is told on its command line.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions {
    pub dir: PathBuf,
    /// `--issue N`: the thread, when the job's own event names none (a local publish).
    pub issue: Option<u64>,
    /// `--digest HEX`, else `REPLAN_BUNDLE_DIGEST`: the agent job's `bundle_digest`.
    pub digest: Option<String>,
}

pub async fn publish(
    options: PublishOptions,
    env: BTreeMap<String, String>,
) -> Result<Exit, CliError> {
    let dir = options.dir;
    let workspace = resolve_workspace(None, &env)?;
    let load = LoadOptions {
        workspace: workspace.clone(),
        config_path: None,
        env: env.clone(),
        overrides: Vec::new(),
        user: None,
    };
    let config = config::load_local(&load)
        .map_err(|e| CliError::usage(e.to_string()))?
        .config;
    crate::outbound::add_secrets(known_secrets(&env, Some(&config)));
    // Integrity first, then the caps on the manifest's size and nesting, then its contents.
    let expected = options
        .digest
        .or_else(|| env.get(digest::DIGEST_ENV).cloned());
    digest::check(&dir, expected.as_deref()).map_err(CliError::failure)?;
    let bundle_digest = digest::of_dir(&dir).map_err(CliError::failure)?;
    let manifest = vet::read_manifest(&dir, &config.publish).map_err(|refusal| {
        if refusal.usage {
            CliError::usage(refusal.message)
        } else {
            CliError::failure(refusal.message)
        }
    })?;
    for write in &manifest.writes {
        if let Write::Branch { file, .. } = write {
            bundle_file(&dir, file)?;
        }
    }
    let target = connect(&manifest, &workspace, &config, &env).await?;
    let trusted = super::trusted::derive(
        manifest.forge,
        &config,
        &env,
        &workspace,
        options.issue,
        target.forge.as_ref(),
        target.history.as_ref(),
    )
    .await?;
    let sources = vet::Sources {
        dir: &dir,
        workspace: &workspace,
        forge: target.forge.as_ref(),
        history: target.history.as_ref(),
    };
    vet::vet(&manifest, &trusted, &config.publish, &sources)
        .await
        .map_err(|refusal| CliError::failure(refusal.message))?;
    // The branches first: nothing is written when one of them does not apply.
    for write in &manifest.writes {
        if let Write::Branch {
            branch: name,
            commit,
            file,
        } = write
        {
            branch::apply(&workspace, &bundle_file(&dir, file)?, name, commit)
                .map_err(CliError::failure)?;
        }
    }
    let mut publisher = Publishing {
        target,
        workspace,
        own_login: trusted.own_login.clone(),
        ids: BTreeMap::new(),
        checklists_done: BTreeSet::new(),
        history_commit: None,
        failures: Vec::new(),
        pull_requests: BTreeMap::new(),
        bundle_digest,
    };
    for (index, write) in manifest.writes.iter().enumerate() {
        publisher.perform(index, write, &manifest.writes).await;
    }
    publisher.step_files(&dir, &env);
    tracing::info!(
        "published {} write(s) from {}",
        manifest.writes.len(),
        dir.display()
    );
    if publisher.failures.is_empty() {
        Ok(Exit::Ok)
    } else {
        Err(CliError::failure(format!(
            "{} write(s) could not be published: {}",
            publisher.failures.len(),
            publisher.failures.join("; ")
        )))
    }
}

/// A bundle names its files by bare name; anything else could reach outside the directory. A
/// hidden name is refused too: the digest leaves hidden files out (`digest.rs`).
fn bundle_file(dir: &Path, file: &str) -> Result<PathBuf, CliError> {
    let plain = !file.starts_with('.')
        && Path::new(file)
            .file_name()
            .is_some_and(|name| name == std::ffi::OsStr::new(file));
    if !plain {
        return Err(CliError::usage(format!(
            "the manifest names the branch file `{file}`, which is not a file in the bundle directory"
        )));
    }
    Ok(dir.join(file))
}

async fn connect(
    manifest: &Manifest,
    workspace: &Path,
    config: &Config,
    env: &BTreeMap<String, String>,
) -> Result<Target, CliError> {
    match manifest.forge {
        ForgeKind::GitHub => {
            let settings = GitHubSettings::from_env(env, "").map_err(CliError::usage)?;
            if settings.repo != manifest.repo {
                return Err(CliError::usage(format!(
                    "the bundle was made for {} but this job runs for {}; publish it in the same repository's workflow",
                    manifest.repo, settings.repo
                )));
            }
            let token = settings.token.clone();
            let client = Arc::new(
                GitHubClient::new(settings).map_err(|e| CliError::failure(e.to_string()))?,
            );
            let graphql_url = env.get("GITHUB_GRAPHQL_URL").cloned();
            Ok(Target {
                forge: Arc::new(GitHubForge::new(client.clone()).with_graphql_url(graphql_url)),
                history: Arc::new(GitHubHistory::new(
                    client,
                    &config.history.branch,
                    &config.history.directory,
                )),
                publisher: origin_publisher(workspace, "x-access-token", &token),
            })
        }
        ForgeKind::GitLab => {
            if let Some(path) = env.get("CI_PROJECT_PATH").filter(|p| !p.is_empty())
                && *path != manifest.repo
            {
                return Err(CliError::usage(format!(
                    "the bundle was made for {} but this job runs for {path}; publish it in the same project's pipeline",
                    manifest.repo
                )));
            }
            let trigger = Trigger {
                forge: ForgeKind::GitLab,
                repo: manifest.repo.clone(),
                thread: None,
                actor: Actor {
                    login: String::new(),
                    id: None,
                    is_bot: true,
                },
                request: Request::Sweep,
                comment: None,
                event: "publish".into(),
                project_id: None,
                api_url: None,
                closed: None,
            };
            let connection = crate::forge::gitlab::connect(&trigger, config, env)
                .await
                .map_err(|e| CliError::usage(e.to_string()))?;
            let publisher: Arc<dyn Publisher> = match TokenPushPublisher::gitlab(env) {
                Some(publisher) => Arc::new(publisher),
                None => Arc::new(GitPushPublisher),
            };
            Ok(Target {
                forge: connection.forge,
                history: connection.history,
                publisher,
            })
        }
        ForgeKind::Local => {
            let dir = workspace.join(".replan");
            Ok(Target {
                forge: Arc::new(LocalForge::new(&dir).with_repository(workspace)),
                history: Arc::new(LocalHistory::new(&dir, config.history.directory.clone())),
                publisher: Arc::new(GitPushPublisher),
            })
        }
    }
}

/// Push to `origin`; over HTTPS with the token as a header, since the publish job's checkout
/// keeps no credentials (`persist-credentials: false`).
fn origin_publisher(workspace: &Path, user: &str, token: &str) -> Arc<dyn Publisher> {
    match git(workspace, &["remote", "get-url", "origin"], &[]) {
        Ok(url) if url.starts_with("https://") || url.starts_with("http://") => {
            Arc::new(TokenPushPublisher::new(url, user, token))
        }
        _ => Arc::new(GitPushPublisher),
    }
}

/// `text` with every placeholder in `ids` replaced, longest first, so that `...-1` never eats
/// the start of `...-12`.
fn resolve_with(ids: &BTreeMap<String, String>, text: &str) -> String {
    if !text.contains(PLACEHOLDER_PREFIX) {
        return text.to_owned();
    }
    let mut ids: Vec<(&String, &String)> = ids.iter().collect();
    ids.sort_by_key(|(placeholder, _)| std::cmp::Reverse(placeholder.len()));
    ids.into_iter()
        .fold(text.to_owned(), |text, (placeholder, real)| {
            text.replace(placeholder.as_str(), real)
        })
}

struct Publishing {
    target: Target,
    workspace: PathBuf,
    /// Replan's own login on this forge (trusted inputs), whose comments alone it edits.
    own_login: Option<String>,
    /// Placeholder → the real comment id or pull request URL.
    ids: BTreeMap<String, String>,
    /// Threads whose checklist was already sent (with the last body the agent rendered).
    checklists_done: BTreeSet<ThreadRef>,
    history_commit: Option<String>,
    failures: Vec<String>,
    /// Placeholder → the number of the pull request publishing it opened.
    pull_requests: BTreeMap<String, u64>,
    /// Keys the writes that carry no idempotency marker of their own.
    bundle_digest: String,
}

impl Publishing {
    /// Placeholders replaced by what publishing them returned.
    fn resolve(&self, text: &str) -> String {
        resolve_with(&self.ids, text)
    }

    fn failed(&mut self, what: String) {
        tracing::error!("{what}");
        self.failures.push(what);
    }

    /// The idempotency key of write `index`: the one its text carries (the agent's tool put it
    /// there), else one from the bundle's digest and the write's place in it. A re-run publish
    /// finds what an earlier attempt created under this key instead of creating it again.
    fn key_of(&self, index: usize, text: &str) -> String {
        match marker::key_in(text) {
            Some(key) => key.to_owned(),
            None => marker::key_for(&[&self.bundle_digest, "write", &index.to_string()]),
        }
    }

    async fn perform(&mut self, index: usize, write: &Write, all: &[Write]) {
        let forge = self.target.forge.clone();
        match write {
            Write::Comment {
                thread,
                placeholder,
                body,
            } => {
                let body = redact(&self.resolve(body));
                let key = self.key_of(index, &body);
                // A listing that fails posts nothing: the comment could be there already.
                let posted = match marker::find_comment(forge.as_ref(), thread, &key).await {
                    Ok(Some(earlier)) => Ok(earlier),
                    Ok(None) => {
                        forge
                            .post_comment(thread, &marker::with_marker(&body, &key))
                            .await
                    }
                    Err(e) => Err(e),
                };
                match posted {
                    Ok(comment) => {
                        self.ids.insert(placeholder.clone(), comment.id);
                    }
                    Err(e) => self.failed(format!("a comment on {thread}: {e}")),
                }
            }
            Write::EditComment {
                thread,
                comment_id,
                body,
            } => {
                let id = self.resolve(comment_id);
                match self.owned_comment(thread, &id, MARKER_PREFIX).await {
                    Ok(()) => {
                        if let Err(e) = forge
                            .update_comment(
                                CommentRef { thread, id: &id },
                                &redact(&self.resolve(body)),
                            )
                            .await
                        {
                            self.failed(format!("editing comment {id} on {thread}: {e}"));
                        }
                    }
                    Err(e) => self.failed(e),
                }
            }
            Write::Checklist { thread, .. } => self.checklist(*thread, all).await,
            Write::Reaction {
                thread,
                comment_id,
                reaction,
            } => {
                let id = comment_id.as_deref().map(|id| self.resolve(id));
                if let Err(e) = forge
                    .react(
                        ReactionTarget {
                            thread,
                            comment_id: id.as_deref(),
                        },
                        *reaction,
                    )
                    .await
                {
                    tracing::warn!("could not add the reaction on {thread}: {e}");
                }
            }
            Write::Branch { branch, .. } => {
                if let Err(e) = self.target.publisher.publish(&self.workspace, branch).await {
                    self.failed(format!("pushing branch `{branch}`: {}", e.message));
                }
            }
            Write::PullRequest {
                placeholder,
                request,
            } => {
                let mut request = request.clone();
                request.title = redact(&request.title);
                request.body = redact(&self.resolve(&request.body));
                let key = self.key_of(index, &request.body);
                request.body = marker::with_marker(&request.body, &key);
                let opened = match forge.find_pull_request(&key).await {
                    Ok(Some(earlier)) => Ok(earlier),
                    Ok(None) => forge.open_pull_request(&request).await,
                    Err(e) => Err(e),
                };
                match opened {
                    Ok(opened) => {
                        // The tool told the model "opened pull request #0 (<placeholder>)".
                        self.ids.insert(
                            format!("#0 ({placeholder})"),
                            format!("#{} ({})", opened.number, opened.url),
                        );
                        self.pull_requests
                            .insert(placeholder.clone(), opened.number);
                        self.ids.insert(placeholder.clone(), opened.url);
                    }
                    Err(e) => self.failed(format!("the pull request from `{}`: {e}", request.head)),
                }
            }
            Write::ReviewReply {
                pull_request,
                review_thread,
                reply_to,
                body,
            } => {
                let at = ReviewThreadRef {
                    pull_request: *pull_request,
                    thread: review_thread,
                    reply_to,
                };
                let body = redact(&self.resolve(body));
                // A retried publish finds the reply an earlier attempt posted by its key.
                if let Err(e) = marker::reply_once(forge.as_ref(), at, &body).await {
                    self.failed(format!("the reply in review thread {review_thread}: {e}"));
                }
            }
            Write::ResolveReviewThread {
                pull_request,
                review_thread,
            } => {
                let at = ReviewThreadRef {
                    pull_request: *pull_request,
                    thread: review_thread,
                    reply_to: "",
                };
                if let Err(e) = forge.resolve_review_thread(at).await {
                    self.failed(format!("resolving review thread {review_thread}: {e}"));
                }
            }
            Write::PullRequestSection {
                pull_request,
                section,
            } => {
                let number = match self.pull_requests.get(pull_request) {
                    Some(number) => Some(*number),
                    None => pull_request.parse::<u64>().ok(),
                };
                let Some(number) = number else {
                    return self.failed(format!(
                        "the Verification section of `{pull_request}`: that pull request was not opened"
                    ));
                };
                let target = crate::forge::PullRequestRef {
                    number,
                    url: format!("#{number}"),
                };
                let section = redact(&self.resolve(section));
                if let Err(e) = forge.update_pull_request_section(&target, &section).await {
                    self.failed(format!("the Verification section of #{number}: {e}"));
                }
            }
            Write::History { thread, entries } => {
                // Lines name what the writes before them made; after a failed one they would
                // keep its placeholder and come out different from the re-run's, so twice.
                if !self.failures.is_empty() {
                    return self.failed(format!(
                        "history of {thread}: not appended after a failed write; re-run publish to write both"
                    ));
                }
                let entries = match self.history_entries(entries) {
                    Ok(entries) => entries,
                    Err(e) => return self.failed(format!("history of {thread}: {e}")),
                };
                let entries = match crate::history::spool::not_yet_committed(
                    self.target.history.as_ref(),
                    thread,
                    entries,
                )
                .await
                .map_err(|e| format!("reading it to find lines already appended: {e}"))
                {
                    Ok(entries) if entries.is_empty() => return,
                    Ok(entries) => entries,
                    Err(e) => return self.failed(format!("history of {thread}: {e}")),
                };
                match self.target.history.append(thread, &entries).await {
                    Ok(outcome) => {
                        self.history_commit = outcome.commit.or(self.history_commit.take())
                    }
                    Err(e) => self.failed(format!("history of {thread}: {e}")),
                }
            }
        }
    }

    /// Each entry with its placeholders resolved and its text redacted.
    fn history_entries(&self, entries: &[Entry]) -> Result<Vec<Entry>, String> {
        entries
            .iter()
            .map(|entry| {
                let line = redact(&self.resolve(&jsonl::to_line(entry)));
                serde_json::from_str(&line).map_err(|e| format!("an entry no longer parses: {e}"))
            })
            .collect()
    }

    /// Create or update the thread's checklist once, with the last body the agent rendered.
    async fn checklist(&mut self, thread: ThreadRef, all: &[Write]) {
        let mut placeholders = Vec::new();
        let mut body = None;
        for write in all {
            if let Write::Checklist {
                thread: t,
                placeholder,
                body: b,
            } = write
                && *t == thread
            {
                placeholders.push(placeholder.clone());
                body = Some(b.clone());
            }
        }
        if !self.checklists_done.insert(thread) {
            return;
        }
        let body = redact(&body.unwrap_or_default());
        let forge = self.target.forge.clone();
        let id = match self.existing_checklist(&thread).await {
            // An earlier attempt at this publish left this very text: nothing to edit.
            Some(existing) if existing.body == body => existing.id,
            Some(Comment { id, .. }) => match forge
                .update_comment(
                    CommentRef {
                        thread: &thread,
                        id: &id,
                    },
                    &body,
                )
                .await
            {
                Ok(()) => id,
                Err(e) => return self.failed(format!("updating the checklist on {thread}: {e}")),
            },
            None => match forge.post_comment(&thread, &body).await {
                Ok(comment) => comment.id,
                Err(e) => return self.failed(format!("posting the checklist on {thread}: {e}")),
            },
        };
        for placeholder in placeholders {
            self.ids.insert(placeholder, id.clone());
        }
    }

    /// The checklist comment to edit: the one the history names, else one Replan wrote. A
    /// comment someone else wrote is never edited, whatever the bundle says.
    async fn existing_checklist(&self, thread: &ThreadRef) -> Option<Comment> {
        let recorded = crate::history::store::load(self.target.history.as_ref(), thread)
            .await
            .ok()
            .and_then(|loaded| loaded.state.checklist_comment_id);
        let comments = self.target.forge.comments(thread).await.ok()?;
        let is_checklist = |c: &&Comment| c.body.trim_start().starts_with(CHECKLIST_MARKER);
        recorded
            .and_then(|id| comments.iter().filter(is_checklist).find(|c| c.id == id))
            .or_else(|| {
                comments
                    .iter()
                    .filter(is_checklist)
                    .find(|c| self.is_own(c))
            })
            .cloned()
    }

    /// Written by Replan's own login; "any bot" is not Replan.
    fn is_own(&self, comment: &Comment) -> bool {
        self.own_login
            .as_deref()
            .is_some_and(|own| comment.author.eq_ignore_ascii_case(own))
    }

    /// A comment may be edited only when Replan wrote it: its own login, with our marker.
    async fn owned_comment(
        &self,
        thread: &ThreadRef,
        id: &str,
        marker: &str,
    ) -> Result<(), String> {
        let comments = self
            .target
            .forge
            .comments(thread)
            .await
            .map_err(|e| format!("listing the comments of {thread}: {e}"))?;
        match comments.iter().find(|c| c.id == id) {
            Some(c) if self.is_own(c) && c.body.trim_start().starts_with(marker) => Ok(()),
            Some(_) => Err(format!(
                "the bundle edits comment {id} on {thread}, which Replan did not write; not edited"
            )),
            None => Err(format!(
                "the bundle edits comment {id} on {thread}, which does not exist"
            )),
        }
    }

    /// The agent's step outputs and job summary, resolved and redacted, into this job's.
    fn step_files(&self, dir: &Path, env: &BTreeMap<String, String>) {
        let target = |name: &str| env.get(name).filter(|p| !p.is_empty()).map(PathBuf::from);
        if let (Some(path), Ok(text)) = (
            target("GITHUB_OUTPUT"),
            std::fs::read_to_string(dir.join(OUTPUTS)),
        ) {
            let values: Vec<(String, String)> = crate::actions::outputs::parse(&text)
                .into_iter()
                .map(|(name, value)| {
                    let value = match (name.as_str(), &self.history_commit) {
                        ("history_commit", Some(commit)) => commit.clone(),
                        _ => redact(&self.resolve(&value)),
                    };
                    (name, value)
                })
                .collect();
            let values: Vec<(&str, String)> = values
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            if let Err(e) = crate::actions::outputs::append(&path, &values) {
                tracing::warn!(
                    "could not write the step outputs to {}: {e}",
                    path.display()
                );
            }
        }
        if let (Some(path), Ok(text)) = (
            target("GITHUB_STEP_SUMMARY"),
            std::fs::read_to_string(dir.join(SUMMARY)),
        ) && let Err(e) = crate::actions::summary::append(&path, &redact(&self.resolve(&text)))
        {
            tracing::warn!("could not write the job summary to {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_file_must_be_a_plain_name_in_the_bundle_directory() {
        let dir = Path::new("/tmp/bundle");
        assert_eq!(
            bundle_file(dir, "branch-1.bundle").unwrap(),
            dir.join("branch-1.bundle")
        );
        for bad in [
            "../branch.bundle",
            "sub/branch.bundle",
            "/etc/passwd",
            "..",
            "",
        ] {
            let err = bundle_file(dir, bad).unwrap_err();
            assert_eq!(err.exit, Exit::Usage, "{bad}");
            assert!(err.message.contains("not a file in the bundle"), "{bad}");
        }
    }

    #[test]
    fn placeholders_resolve_longest_first() {
        let ids = BTreeMap::from([
            ("replan-bundle:comment-1".to_owned(), "11".to_owned()),
            ("replan-bundle:comment-12".to_owned(), "1212".to_owned()),
        ]);
        let text = "a replan-bundle:comment-12 b replan-bundle:comment-1 c";
        assert_eq!(resolve_with(&ids, text), "a 1212 b 11 c");
    }
}
