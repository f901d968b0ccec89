//! A stateful fake of the GitLab REST API v4: the parts Replan uses, with GitLab's status
//! codes, JSON shapes and pitfalls (notes newest first by default, url-encoded project and
//! file paths, per-file `last_commit_id` conflicts, job tokens that reach few endpoints).
//!
//! One fake serves one project (id 101, path `octo/widgets`). The API lives under
//! [`FakeGitLab::api_url`] (`…/api/v4`).

pub mod discussions;
mod json;
pub use json::date;
mod repository;
mod routes;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::faults::{ConcurrentChange, Fault, FaultQueue, answer_with};
use super::git_objects::{Commit, ObjectStore, Signature};
use super::server::{FakeRequest, FakeResponse, LoggedRequest, TestServer};

pub const PROJECT_ID: u64 = 101;
pub const PROJECT_PATH: &str = "octo/widgets";
/// A project access token: reaches every endpoint.
pub const DEFAULT_TOKEN: &str = "glpat-FakeProjectToken0123";
/// `CI_JOB_TOKEN`: reaches only reads of the project, its files and branches.
pub const DEFAULT_JOB_TOKEN: &str = "glcbt-FakeJobToken0123";
/// The user behind the token (a project access token's bot user).
pub const DEFAULT_ACTOR: &str = "project_101_bot";
pub const CLOCK_START: i64 = 1_714_564_800;

/// Access levels as GitLab numbers them.
pub mod access {
    pub const NO_ACCESS: u64 = 0;
    pub const MINIMAL: u64 = 5;
    pub const GUEST: u64 = 10;
    pub const REPORTER: u64 = 20;
    pub const DEVELOPER: u64 = 30;
    pub const MAINTAINER: u64 = 40;
    pub const OWNER: u64 = 50;
}

/// What a note is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Noteable {
    Issue(u64),
    MergeRequest(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub author: String,
    pub labels: Vec<String>,
    /// `opened` or `closed`.
    pub state: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRequest {
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub source_branch: String,
    pub target_branch: String,
    pub author: String,
    /// `opened`, `closed` or `merged`.
    pub state: String,
    pub sha: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: u64,
    pub noteable: Noteable,
    pub body: String,
    pub author: String,
    pub system: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awardable {
    Issue(u64),
    MergeRequest(u64),
    Note(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwardEmoji {
    pub id: u64,
    pub awardable: Awardable,
    pub name: String,
    pub user: String,
}

#[derive(Debug, Clone)]
struct CommitHook {
    branch: String,
    path: String,
    change: ConcurrentChange,
}

pub(crate) struct State {
    base_url: String,
    token: String,
    job_token: String,
    actor: String,
    clock: i64,
    default_branch: String,
    next_issue_iid: u64,
    next_mr_iid: u64,
    next_id: u64,
    issues: BTreeMap<u64, Issue>,
    merge_requests: BTreeMap<u64, MergeRequest>,
    notes: Vec<Note>,
    discussions: Vec<discussions::Discussion>,
    awards: Vec<AwardEmoji>,
    /// username → user id.
    users: BTreeMap<String, u64>,
    /// user id → access level.
    members: BTreeMap<u64, u64>,
    objects: ObjectStore,
    /// Branch name → commit id.
    branches: BTreeMap<String, String>,
    faults: FaultQueue,
    commit_hooks: Vec<CommitHook>,
    requests: Vec<LoggedRequest>,
    /// Pipeline id → its jobs: (job id, name, status, trace).
    pipelines: BTreeMap<u64, Vec<(u64, String, String, String)>>,
    /// Pipeline id → what it ran on, for the pipelines seeded with [`FakeGitLab::seed_branch_pipeline`].
    pipeline_runs: BTreeMap<u64, PipelineRun>,
}

/// A pipeline's own fields, as `GET /merge_requests/:iid/pipelines` lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRun {
    pub id: u64,
    /// The branch it ran on.
    pub branch: String,
    pub sha: String,
    /// `success`, `failed`, `running`, ...
    pub status: String,
    /// `push`, `merge_request_event`, `trigger`, `schedule`, ...
    pub source: String,
}

impl State {
    fn tick(&mut self) -> i64 {
        let now = self.clock;
        self.clock += 1;
        now
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The user id for a username, registering the user on first sight.
    fn user_id(&mut self, username: &str) -> u64 {
        if let Some(id) = self.users.get(username) {
            return *id;
        }
        let id = 2000 + self.users.len() as u64;
        self.users.insert(username.to_string(), id);
        id
    }

    fn username(&self, id: u64) -> Option<String> {
        self.users
            .iter()
            .find(|(_, user_id)| **user_id == id)
            .map(|(name, _)| name.clone())
    }

    fn signature(&mut self, name: &str, email: &str) -> Signature {
        Signature {
            name: name.to_string(),
            email: email.to_string(),
            time: self.tick(),
        }
    }

    fn actor_signature(&mut self) -> Signature {
        let actor = self.actor.clone();
        self.signature(&actor, &format!("{actor}@noreply.gitlab.example"))
    }

    /// Commits a change to `path` on top of `branch` (creating the branch if missing).
    fn commit_change(&mut self, branch: &str, path: &str, change: &ConcurrentChange) -> String {
        let parent = self.branches.get(branch).cloned();
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
        self.branches.insert(branch.to_string(), sha.clone());
        sha
    }

    fn run_commit_hooks(&mut self, branch: &str) {
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.commit_hooks)
            .into_iter()
            .partition(|hook| hook.branch == branch);
        self.commit_hooks = rest;
        for hook in due {
            self.commit_change(&hook.branch, &hook.path, &hook.change);
        }
    }
}

pub struct FakeGitLab {
    state: Arc<Mutex<State>>,
    server: TestServer,
}

impl FakeGitLab {
    /// A fake serving project 101 (`octo/widgets`), whose `main` has one commit with a README.
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            base_url: String::new(),
            token: DEFAULT_TOKEN.to_string(),
            job_token: DEFAULT_JOB_TOKEN.to_string(),
            actor: DEFAULT_ACTOR.to_string(),
            clock: CLOCK_START,
            default_branch: "main".to_string(),
            next_issue_iid: 0,
            next_mr_iid: 0,
            next_id: 5000,
            issues: BTreeMap::new(),
            merge_requests: BTreeMap::new(),
            notes: Vec::new(),
            discussions: Vec::new(),
            awards: Vec::new(),
            users: BTreeMap::new(),
            members: BTreeMap::new(),
            objects: ObjectStore::default(),
            branches: BTreeMap::new(),
            faults: FaultQueue::default(),
            commit_hooks: Vec::new(),
            requests: Vec::new(),
            pipelines: BTreeMap::new(),
            pipeline_runs: BTreeMap::new(),
        }));
        let handler_state = state.clone();
        let server = TestServer::start(Arc::new(move |request| handle(&handler_state, request)));
        let fake = FakeGitLab { state, server };
        {
            let mut state = fake.lock();
            state.base_url = fake.server.base_url();
            let actor = state.actor.clone();
            state.user_id(&actor);
            state.commit_change(
                "main",
                "README.md",
                &ConcurrentChange::Write("# widgets\n".to_string()),
            );
        }
        fake
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The server root, e.g. `http://127.0.0.1:4321` (`CI_SERVER_URL`).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// `…/api/v4` (`CI_API_V4_URL`).
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.server.base_url())
    }

    pub fn token(&self) -> String {
        self.lock().token.clone()
    }

    pub fn job_token(&self) -> String {
        self.lock().job_token.clone()
    }

    /// A finished pipeline with these jobs: (job id, name, `success`/`failed`, trace).
    pub fn seed_pipeline(&self, id: u64, jobs: &[(u64, &str, &str, &str)]) {
        let jobs = jobs
            .iter()
            .map(|(id, name, status, trace)| {
                (*id, (*name).into(), (*status).into(), (*trace).into())
            })
            .collect();
        self.lock().pipelines.insert(id, jobs);
    }

    /// A pipeline of `run.branch` at `run.sha` with these jobs, listed among the pipelines of
    /// the merge requests from that branch.
    pub fn seed_branch_pipeline(&self, run: PipelineRun, jobs: &[(u64, &str, &str, &str)]) {
        self.seed_pipeline(run.id, jobs);
        self.lock().pipeline_runs.insert(run.id, run);
    }

    pub fn project_id(&self) -> u64 {
        PROJECT_ID
    }

    pub fn project_path(&self) -> &'static str {
        PROJECT_PATH
    }

    /// Who the token belongs to: the author of notes, emoji and commits it makes.
    pub fn set_actor(&self, username: &str) {
        let mut state = self.lock();
        state.actor = username.to_string();
        state.user_id(username);
    }

    // ----- issues, merge requests, notes, people

    pub fn seed_issue(&self, title: &str, description: &str, author: &str) -> u64 {
        let mut state = self.lock();
        state.next_issue_iid += 1;
        let iid = state.next_issue_iid;
        let now = state.tick();
        state.user_id(author);
        state.issues.insert(
            iid,
            Issue {
                iid,
                title: title.to_string(),
                description: description.to_string(),
                author: author.to_string(),
                labels: Vec::new(),
                state: "opened".to_string(),
                created_at: now,
                updated_at: now,
            },
        );
        iid
    }

    pub fn with_issue(&self, iid: u64, change: impl FnOnce(&mut Issue)) {
        let mut state = self.lock();
        let issue = state
            .issues
            .get_mut(&iid)
            .unwrap_or_else(|| panic!("fake GitLab has no issue #{iid}"));
        change(issue);
    }

    pub fn issue(&self, iid: u64) -> Option<Issue> {
        self.lock().issues.get(&iid).cloned()
    }

    /// An open merge request from `source` (which must exist) into `target`.
    pub fn seed_merge_request(&self, title: &str, source: &str, target: &str, author: &str) -> u64 {
        let mut state = self.lock();
        let sha = state
            .branches
            .get(source)
            .cloned()
            .unwrap_or_else(|| panic!("fake GitLab has no branch {source}"));
        state.next_mr_iid += 1;
        let iid = state.next_mr_iid;
        let now = state.tick();
        state.user_id(author);
        state.merge_requests.insert(
            iid,
            MergeRequest {
                iid,
                title: title.to_string(),
                description: String::new(),
                source_branch: source.to_string(),
                target_branch: target.to_string(),
                author: author.to_string(),
                state: "opened".to_string(),
                sha,
                created_at: now,
            },
        );
        iid
    }

    pub fn merge_requests(&self) -> Vec<MergeRequest> {
        self.lock().merge_requests.values().cloned().collect()
    }

    /// A note by `author`; returns its id.
    /// A diff discussion on merge request `iid`, opened by `author`; returns its id.
    pub fn seed_discussion(
        &self,
        iid: u64,
        author: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> String {
        self.lock().seed_discussion(iid, author, path, line, body)
    }

    /// Discussion `id` resolved by `by`, as a person resolves it in the web UI.
    pub fn resolve_discussion(&self, id: &str, by: &str) {
        let mut state = self.lock();
        let discussion = state
            .discussions
            .iter_mut()
            .find(|d| d.id == id)
            .expect("a seeded discussion");
        discussion.resolved = true;
        discussion.resolved_by = Some(by.to_owned());
    }

    /// The diff discussions of merge request `iid`, with their notes and resolution.
    pub fn discussions(&self, iid: u64) -> Vec<discussions::Discussion> {
        self.lock()
            .discussions
            .iter()
            .filter(|d| d.merge_request == iid)
            .cloned()
            .collect()
    }

    pub fn seed_note(&self, noteable: Noteable, author: &str, body: &str) -> u64 {
        let mut state = self.lock();
        let id = state.next_id();
        let now = state.tick();
        state.user_id(author);
        state.notes.push(Note {
            id,
            noteable,
            body: body.to_string(),
            author: author.to_string(),
            system: false,
            created_at: now,
            updated_at: now,
        });
        id
    }

    /// The author edits a note later (its `updated_at` moves past `created_at`).
    pub fn edit_note(&self, id: u64, body: &str) {
        let mut state = self.lock();
        let now = state.tick();
        let note = state
            .notes
            .iter_mut()
            .find(|note| note.id == id)
            .unwrap_or_else(|| panic!("fake GitLab has no note {id}"));
        note.body = body.to_string();
        note.updated_at = now;
    }

    /// Notes on a thread, oldest first.
    pub fn notes(&self, noteable: Noteable) -> Vec<Note> {
        self.lock()
            .notes
            .iter()
            .filter(|note| note.noteable == noteable)
            .cloned()
            .collect()
    }

    pub fn note(&self, id: u64) -> Option<Note> {
        self.lock().notes.iter().find(|note| note.id == id).cloned()
    }

    pub fn award_emoji(&self) -> Vec<AwardEmoji> {
        self.lock().awards.clone()
    }

    /// A user who is not a member; returns the user id.
    pub fn add_user(&self, username: &str) -> u64 {
        self.lock().user_id(username)
    }

    /// A project member with an [`access`] level; returns the user id.
    pub fn add_member(&self, username: &str, access_level: u64) -> u64 {
        let mut state = self.lock();
        let id = state.user_id(username);
        state.members.insert(id, access_level);
        id
    }

    // ----- repository

    pub fn branch_sha(&self, branch: &str) -> Option<String> {
        self.lock().branches.get(branch).cloned()
    }

    pub fn commit(&self, sha: &str) -> Option<Commit> {
        self.lock().objects.commit(sha).cloned()
    }

    /// Commit messages along first parents, newest first.
    pub fn log(&self, branch: &str) -> Vec<String> {
        let state = self.lock();
        let mut messages = Vec::new();
        let mut next = state.branches.get(branch).cloned();
        while let Some(sha) = next {
            let Some(commit) = state.objects.commit(&sha) else {
                break;
            };
            messages.push(commit.message.clone());
            next = commit.parents.first().cloned();
        }
        messages
    }

    pub fn file_at_ref(&self, branch: &str, path: &str) -> Option<String> {
        let state = self.lock();
        let sha = state.branches.get(branch)?;
        state
            .objects
            .file_in_commit(sha, path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    pub fn commit_file(&self, branch: &str, path: &str, content: &str) -> String {
        self.lock()
            .commit_change(branch, path, &ConcurrentChange::Write(content.to_string()))
    }

    pub fn append_file(&self, branch: &str, path: &str, text: &str) -> String {
        self.lock()
            .commit_change(branch, path, &ConcurrentChange::Append(text.to_string()))
    }

    /// Just before the next commit (commits API) to `branch`, another run commits
    /// `change` to `path`, so the request under test meets a moved branch.
    pub fn commit_before_next_commit(&self, branch: &str, path: &str, change: ConcurrentChange) {
        self.lock().commit_hooks.push(CommitHook {
            branch: branch.to_string(),
            path: path.to_string(),
            change,
        });
    }

    // ----- faults and the request log

    pub fn push_fault(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    pub fn pending_faults(&self) -> usize {
        self.lock().faults.pending()
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.lock().requests.clone()
    }

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

/// How a request authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    Token,
    JobToken,
}

fn handle(state: &Mutex<State>, request: FakeRequest) -> FakeResponse {
    let mut state = state.lock().unwrap_or_else(|poison| poison.into_inner());
    let response = answer(&mut state, &request);
    state
        .requests
        .push(LoggedRequest::from_request(&request, response.status));
    response
}

fn answer(state: &mut State, request: &FakeRequest) -> FakeResponse {
    let Some(credential) = credential(state, request) else {
        return json::message(401, "401 Unauthorized");
    };
    if credential == Credential::JobToken && !routes::job_token_allowed(request) {
        return json::insufficient_scope();
    }
    let outcome = state.faults.take(request);
    answer_with(outcome, || routes::route(state, request))
}

fn credential(state: &State, request: &FakeRequest) -> Option<Credential> {
    if let Some(token) = request.header("private-token") {
        return (token == state.token).then_some(Credential::Token);
    }
    if let Some(value) = request.header("authorization") {
        let (scheme, token) = value.split_once(' ')?;
        return (scheme.eq_ignore_ascii_case("bearer") && token.trim() == state.token)
            .then_some(Credential::Token);
    }
    if let Some(token) = request.header("job-token") {
        return (token == state.job_token).then_some(Credential::JobToken);
    }
    None
}
