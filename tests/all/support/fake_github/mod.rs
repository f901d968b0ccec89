//! A stateful fake of the GitHub REST API: the parts Replan uses, with GitHub's status
//! codes, JSON shapes and pitfalls (PATCH-only comment updates, fast-forward-only ref
//! updates, base64 with line breaks, `head=` filters that need `owner:branch`).
//!
//! One fake serves one repository (`octo/widgets` unless started with another name).
//! Tests seed and inspect it through the methods below; every request is logged.

mod actions;
pub use actions::Job;
mod git_data;
mod json;
pub use json::date;
pub mod reviews;
mod routes;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub use super::faults::ConcurrentChange;
use super::faults::{Fault, FaultQueue, answer_with};
use super::git_objects::{Commit, ObjectStore, Signature};
use super::server::{FakeRequest, FakeResponse, LoggedRequest, TestServer};

pub const DEFAULT_REPO: &str = "octo/widgets";
pub const DEFAULT_TOKEN: &str = "ghs_FakeInstallationToken0123456789";
/// The login the token belongs to (what `GITHUB_TOKEN` comments appear as).
pub const DEFAULT_ACTOR: &str = "github-actions[bot]";
/// 2024-05-01T12:00:00Z: the fake's clock starts here and ticks a second per write.
pub const CLOCK_START: i64 = 1_714_564_800;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub user: String,
    pub labels: Vec<String>,
    /// `open` or `closed`.
    pub state: String,
    /// True for the issue side of a pull request.
    pub pull_request: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub issue_number: u64,
    pub body: String,
    pub user: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReactionTarget {
    Issue(u64),
    Comment(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    pub id: u64,
    pub target: ReactionTarget,
    pub content: String,
    pub user: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub title: String,
    /// Branch name, without `owner:`.
    pub head: String,
    pub base: String,
    pub body: String,
    pub state: String,
    pub head_sha: String,
    pub draft: bool,
}

#[derive(Debug, Clone)]
struct RefHook {
    git_ref: String,
    path: String,
    change: ConcurrentChange,
}

pub(crate) struct State {
    base_url: String,
    owner: String,
    name: String,
    default_branch: String,
    token: String,
    actor: String,
    clock: i64,
    next_number: u64,
    next_id: u64,
    issues: BTreeMap<u64, Issue>,
    comments: Vec<Comment>,
    reactions: Vec<Reaction>,
    /// Lower-cased login → role (`admin|maintain|write|triage|read|none`).
    collaborators: BTreeMap<String, String>,
    objects: ObjectStore,
    /// Full ref name (`refs/heads/main`) → commit id.
    refs: BTreeMap<String, String>,
    pulls: Vec<PullRequest>,
    review_threads: Vec<reviews::ReviewThread>,
    faults: FaultQueue,
    ref_hooks: Vec<RefHook>,
    requests: Vec<LoggedRequest>,
    actions: actions::Actions,
    /// Where signed log URLs point (another host), once a job log was seeded.
    blob_url: Option<String>,
}

impl State {
    /// The current time, then advance the clock so later writes sort after.
    fn tick(&mut self) -> i64 {
        let now = self.clock;
        self.clock += 1;
        now
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    fn actor_signature(&mut self) -> Signature {
        let time = self.tick();
        let login = self.actor.clone();
        Signature {
            email: format!(
                "{}+{}@users.noreply.github.com",
                json::user_id(&login),
                login
            ),
            name: login,
            time,
        }
    }

    /// Commits a file change on top of `git_ref` (creating the ref if missing).
    fn commit_change(&mut self, git_ref: &str, path: &str, change: &ConcurrentChange) -> String {
        let parent = self.refs.get(git_ref).cloned();
        let current = parent
            .as_deref()
            .and_then(|sha| self.objects.file_in_commit(sha, path))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let content = change.apply(current.as_deref());
        let author = self.actor_signature();
        let sha = self.objects.commit_file(
            parent.as_deref(),
            path,
            content.as_bytes(),
            &format!("Update {path}"),
            author,
        );
        self.refs.insert(git_ref.to_string(), sha.clone());
        sha
    }

    /// Fires the hooks registered for `git_ref`: another run commits first.
    fn run_ref_hooks(&mut self, git_ref: &str) {
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ref_hooks)
            .into_iter()
            .partition(|hook| hook.git_ref == git_ref);
        self.ref_hooks = rest;
        for hook in due {
            self.commit_change(&hook.git_ref, &hook.path, &hook.change);
        }
    }
}

/// `main`, `heads/main` and `refs/heads/main` all name `refs/heads/main`.
fn branch_ref(branch: &str) -> String {
    if branch.starts_with("refs/") {
        branch.to_string()
    } else if branch.starts_with("heads/") || branch.starts_with("tags/") {
        format!("refs/{branch}")
    } else {
        format!("refs/heads/{branch}")
    }
}

pub struct FakeGitHub {
    state: Arc<Mutex<State>>,
    server: TestServer,
    blobs: std::sync::OnceLock<actions::BlobHost>,
}

impl FakeGitHub {
    /// A fake serving `octo/widgets`, whose `main` has one commit with a README.
    pub fn start() -> Self {
        FakeGitHub::start_with_repo(DEFAULT_REPO)
    }

    pub fn start_with_repo(full_name: &str) -> Self {
        let (owner, name) = full_name
            .split_once('/')
            .expect("repository name as owner/name");
        let state = Arc::new(Mutex::new(State {
            base_url: String::new(),
            owner: owner.to_string(),
            name: name.to_string(),
            default_branch: "main".to_string(),
            token: DEFAULT_TOKEN.to_string(),
            actor: DEFAULT_ACTOR.to_string(),
            clock: CLOCK_START,
            next_number: 0,
            next_id: 1000,
            issues: BTreeMap::new(),
            comments: Vec::new(),
            reactions: Vec::new(),
            collaborators: BTreeMap::new(),
            objects: ObjectStore::default(),
            refs: BTreeMap::new(),
            pulls: Vec::new(),
            review_threads: Vec::new(),
            faults: FaultQueue::default(),
            ref_hooks: Vec::new(),
            requests: Vec::new(),
            actions: actions::Actions::default(),
            blob_url: None,
        }));
        let handler_state = state.clone();
        let server = TestServer::start(Arc::new(move |request| handle(&handler_state, request)));
        let fake = FakeGitHub {
            state,
            server,
            blobs: std::sync::OnceLock::new(),
        };
        {
            let mut state = fake.lock();
            state.base_url = fake.server.base_url();
            state.commit_change(
                "refs/heads/main",
                "README.md",
                &ConcurrentChange::Write(format!("# {name}\n")),
            );
        }
        fake
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The API root, e.g. `http://127.0.0.1:4321` (use as `GITHUB_API_URL`).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn token(&self) -> String {
        self.lock().token.clone()
    }

    pub fn set_token(&self, token: &str) {
        self.lock().token = token.to_string();
    }

    /// Who the token belongs to: the author of comments, reactions and commits it makes.
    pub fn set_actor(&self, login: &str) {
        self.lock().actor = login.to_string();
    }

    /// `owner/name`.
    pub fn repo(&self) -> String {
        self.lock().full_name()
    }

    pub fn owner(&self) -> String {
        self.lock().owner.clone()
    }

    pub fn advance_clock(&self, seconds: i64) {
        self.lock().clock += seconds;
    }

    pub fn now(&self) -> i64 {
        self.lock().clock
    }

    // ----- issues, comments, reactions, people

    /// A new open issue; returns its number.
    pub fn seed_issue(&self, title: &str, body: &str, author: &str) -> u64 {
        let mut state = self.lock();
        state.next_number += 1;
        let number = state.next_number;
        let now = state.tick();
        state.issues.insert(
            number,
            Issue {
                number,
                title: title.to_string(),
                body: body.to_string(),
                user: author.to_string(),
                labels: Vec::new(),
                state: "open".to_string(),
                pull_request: false,
                created_at: now,
                updated_at: now,
            },
        );
        number
    }

    /// Changes an issue in place (labels, state, body...).
    pub fn with_issue(&self, number: u64, change: impl FnOnce(&mut Issue)) {
        let mut state = self.lock();
        let issue = state
            .issues
            .get_mut(&number)
            .unwrap_or_else(|| panic!("fake GitHub has no issue #{number}"));
        change(issue);
    }

    pub fn issue(&self, number: u64) -> Option<Issue> {
        self.lock().issues.get(&number).cloned()
    }

    /// A comment by `author` on issue `number`; returns its id.
    pub fn seed_comment(&self, number: u64, author: &str, body: &str) -> u64 {
        let mut state = self.lock();
        assert!(
            state.issues.contains_key(&number),
            "fake GitHub has no issue #{number}"
        );
        let id = state.next_id();
        let now = state.tick();
        state.comments.push(Comment {
            id,
            issue_number: number,
            body: body.to_string(),
            user: author.to_string(),
            created_at: now,
            updated_at: now,
        });
        id
    }

    /// The author edits a comment later (its `updated_at` moves past `created_at`).
    pub fn edit_comment(&self, id: u64, body: &str) {
        let mut state = self.lock();
        let now = state.tick();
        let comment = state
            .comments
            .iter_mut()
            .find(|comment| comment.id == id)
            .unwrap_or_else(|| panic!("fake GitHub has no comment {id}"));
        comment.body = body.to_string();
        comment.updated_at = now;
    }

    /// The comments on issue `number`, oldest first.
    pub fn comments(&self, number: u64) -> Vec<Comment> {
        self.lock()
            .comments
            .iter()
            .filter(|comment| comment.issue_number == number)
            .cloned()
            .collect()
    }

    pub fn comment(&self, id: u64) -> Option<Comment> {
        self.lock()
            .comments
            .iter()
            .find(|comment| comment.id == id)
            .cloned()
    }

    pub fn reactions(&self) -> Vec<Reaction> {
        self.lock().reactions.clone()
    }

    /// `permission` is a role: `admin|maintain|write|triage|read|none`.
    pub fn add_collaborator(&self, login: &str, permission: &str) {
        assert!(
            ["admin", "maintain", "write", "triage", "read", "none"].contains(&permission),
            "unknown GitHub role {permission}"
        );
        self.lock()
            .collaborators
            .insert(login.to_ascii_lowercase(), permission.to_string());
    }

    pub fn pull_requests(&self) -> Vec<PullRequest> {
        self.lock().pulls.clone()
    }

    /// A pull request a person opened from `head` into `base`; returns its number.
    pub fn seed_pull_request(&self, head: &str, base: &str, author: &str) -> u64 {
        let mut state = self.lock();
        let head_sha = state
            .refs
            .get(&branch_ref(head))
            .cloned()
            .expect("the head branch exists");
        state.next_number += 1;
        let number = state.next_number;
        let now = state.tick();
        let title = format!("Change from {head}");
        state.issues.insert(
            number,
            Issue {
                number,
                title: title.clone(),
                body: String::new(),
                user: author.to_string(),
                labels: Vec::new(),
                state: "open".to_string(),
                pull_request: true,
                created_at: now,
                updated_at: now,
            },
        );
        state.pulls.push(PullRequest {
            number,
            title,
            head: head.to_string(),
            base: base.to_string(),
            body: String::new(),
            state: "open".to_string(),
            head_sha,
            draft: false,
        });
        number
    }

    /// A review submitted on pull request `number`: one thread per comment. Returns the review
    /// id and each comment's (thread node id, comment id).
    pub fn seed_review(
        &self,
        number: u64,
        reviewer: &str,
        comments: &[reviews::SeedComment<'_>],
    ) -> (u64, Vec<(String, u64)>) {
        self.lock().seed_review(number, reviewer, comments)
    }

    /// The review threads of pull request `number`, with their replies and resolution.
    pub fn review_threads(&self, number: u64) -> Vec<reviews::ReviewThread> {
        self.lock()
            .review_threads
            .iter()
            .filter(|t| t.pull_number == number)
            .cloned()
            .collect()
    }

    // ----- git data

    /// The commit a branch (or `heads/x`, `refs/...`) points at.
    pub fn ref_sha(&self, branch: &str) -> Option<String> {
        self.lock().refs.get(&branch_ref(branch)).cloned()
    }

    pub fn commit(&self, sha: &str) -> Option<Commit> {
        self.lock().objects.commit(sha).cloned()
    }

    /// Commit messages along first parents, newest first.
    pub fn log(&self, branch: &str) -> Vec<String> {
        let state = self.lock();
        let mut messages = Vec::new();
        let mut next = state.refs.get(&branch_ref(branch)).cloned();
        while let Some(sha) = next {
            let Some(commit) = state.objects.commit(&sha) else {
                break;
            };
            messages.push(commit.message.clone());
            next = commit.parents.first().cloned();
        }
        messages
    }

    /// The committed content of `path` on `branch`, read through the git objects.
    pub fn file_at_ref(&self, branch: &str, path: &str) -> Option<String> {
        let state = self.lock();
        let sha = state.refs.get(&branch_ref(branch))?;
        state
            .objects
            .file_in_commit(sha, path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The file's bytes as stored (no lossy conversion).
    pub fn file_bytes_at_ref(&self, branch: &str, path: &str) -> Option<Vec<u8>> {
        let state = self.lock();
        let sha = state.refs.get(&branch_ref(branch))?;
        state.objects.file_in_commit(sha, path)
    }

    /// Commits exactly `content` (any bytes) to `path` on `branch`.
    pub fn commit_file_bytes(&self, branch: &str, path: &str, content: &[u8]) -> String {
        let mut state = self.lock();
        let git_ref = branch_ref(branch);
        let parent = state.refs.get(&git_ref).cloned();
        let author = state.actor_signature();
        let sha = state.objects.commit_file(
            parent.as_deref(),
            path,
            content,
            &format!("Update {path}"),
            author,
        );
        state.refs.insert(git_ref, sha.clone());
        sha
    }

    /// Commits `content` to `path` on `branch` (an orphan branch if it does not exist).
    pub fn commit_file(&self, branch: &str, path: &str, content: &str) -> String {
        self.lock().commit_change(
            &branch_ref(branch),
            path,
            &ConcurrentChange::Write(content.to_string()),
        )
    }

    /// Appends `text` to `path` on `branch` in a new commit: another run got there first.
    pub fn append_file(&self, branch: &str, path: &str, text: &str) -> String {
        self.lock().commit_change(
            &branch_ref(branch),
            path,
            &ConcurrentChange::Append(text.to_string()),
        )
    }

    /// Just before the next update (PATCH) or creation (POST) of `branch`'s ref, another
    /// run commits `change` to `path` on it, so the request under test meets a moved ref.
    pub fn advance_ref_before_next_update(
        &self,
        branch: &str,
        path: &str,
        change: ConcurrentChange,
    ) {
        self.lock().ref_hooks.push(RefHook {
            git_ref: branch_ref(branch),
            path: path.to_string(),
            change,
        });
    }

    /// Creates (or moves) a branch to an existing commit.
    /// A finished workflow run `run_id` with these jobs; each job's log is served from another
    /// host through a signed URL, as GitHub does.
    pub fn seed_workflow_run(&self, run_id: u64, jobs: Vec<Job>) {
        let blobs = self.blobs.get_or_init(actions::BlobHost::start);
        for job in &jobs {
            blobs.logs.lock().unwrap().insert(job.id, job.log.clone());
        }
        let mut state = self.lock();
        state.blob_url = Some(blobs.server.base_url());
        state.actions.runs.insert(run_id, jobs);
    }

    /// A check suite's check runs (GitHub's JSON for each).
    pub fn seed_check_suite(&self, suite_id: u64, check_runs: Vec<serde_json::Value>) {
        self.lock().actions.check_runs.insert(suite_id, check_runs);
    }

    pub fn set_ref(&self, branch: &str, sha: &str) {
        self.lock().refs.insert(branch_ref(branch), sha.to_string());
    }

    // ----- faults and the request log

    pub fn push_fault(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// Drop the faults not used up yet: the forge is well again.
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Faults not used up yet (summed over their remaining counts).
    pub fn pending_faults(&self) -> usize {
        self.lock().faults.pending()
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.lock().requests.clone()
    }

    /// Requests whose method matches and whose path starts with `path_prefix`.
    pub fn requests_to(&self, method: &str, path_prefix: &str) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|request| request.method == method && request.path.starts_with(path_prefix))
            .collect()
    }

    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }
}

fn handle(state: &Mutex<State>, request: FakeRequest) -> FakeResponse {
    let mut state = state.lock().unwrap_or_else(|poison| poison.into_inner());
    let mut response = answer(&mut state, &request);
    response = response
        .with_header("x-ratelimit-limit", "5000")
        .with_header("x-github-media-type", "github.v3; format=json");
    if !response
        .headers
        .iter()
        .any(|(name, _)| name == "x-ratelimit-remaining")
    {
        response = response.with_header("x-ratelimit-remaining", "4999");
    }
    state
        .requests
        .push(LoggedRequest::from_request(&request, response.status));
    response
}

fn answer(state: &mut State, request: &FakeRequest) -> FakeResponse {
    if request.header("user-agent").is_none_or(str::is_empty) {
        return FakeResponse::text(
            403,
            "Request forbidden by administrative rules. Please make sure your request has a User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check https://developer.github.com for other possible causes.\n",
        );
    }
    if !authorized(state, request) {
        return json::error(401, "Bad credentials");
    }
    let outcome = state.faults.take(request);
    answer_with(outcome, || routes::route(state, request))
}

fn authorized(state: &State, request: &FakeRequest) -> bool {
    let Some(value) = request.header("authorization") else {
        return false;
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return false;
    };
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
        && token.trim() == state.token
}
