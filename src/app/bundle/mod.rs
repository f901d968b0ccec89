//! Split-trust mode. `replan run --bundle DIR` runs the whole cycle with read-only forge access
//! and records every write it would have made in `DIR/manifest.json` (the pull request's branch
//! as a `git bundle` beside it); `replan publish DIR` performs those writes in a job that holds
//! the write token but no LLM key and runs no model-written code, checking them again first.
//!
//! The manifest is an ordered list of writes. Ids the forge would have returned (a new comment's
//! id, the pull request's URL) are placeholders (`replan-bundle:...`) in the agent phase; publish
//! maps them to the real ones, including where history entries mention them.

pub(crate) mod branch;
pub mod digest;
pub(crate) mod publish;
pub(crate) mod record;
mod review_round;
mod review_vet;
pub(crate) mod trusted;
pub mod vet;

use crate::forge::{PullRequestRequest, Reaction};
use crate::history::Entry;
use crate::trigger::{ForgeKind, ThreadRef};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use publish::{PublishOptions, publish};
pub use record::Recorder;

/// The manifest's format tag; publish refuses any other.
pub const FORMAT: &str = "replan-bundle/1";
pub const MANIFEST: &str = "manifest.json";
/// Step outputs and job summary of the agent phase, in `$GITHUB_OUTPUT` / Markdown form.
pub const OUTPUTS: &str = "outputs.txt";
pub const SUMMARY: &str = "summary.md";
/// Every placeholder starts with this.
pub const PLACEHOLDER_PREFIX: &str = "replan-bundle:";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub forge: ForgeKind,
    /// `owner/name` on GitHub, the project path on GitLab, empty locally.
    #[serde(default)]
    pub repo: String,
    pub run_id: String,
    pub writes: Vec<Write>,
}

/// One write the agent phase did not make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Write {
    /// A new comment (a notice, a refusal, a comment the model posted).
    Comment {
        thread: ThreadRef,
        placeholder: String,
        body: String,
    },
    /// An edit of a comment that is not the checklist.
    EditComment {
        thread: ThreadRef,
        comment_id: String,
        body: String,
    },
    /// Create or update the thread's checklist comment; publish finds the real comment.
    Checklist {
        thread: ThreadRef,
        placeholder: String,
        body: String,
    },
    Reaction {
        thread: ThreadRef,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment_id: Option<String>,
        reaction: Reaction,
    },
    /// The pull request's branch: `file` (in the bundle directory) is a `git bundle` holding
    /// `refs/heads/<branch>` at `commit`.
    Branch {
        branch: String,
        commit: String,
        file: String,
    },
    PullRequest {
        placeholder: String,
        request: PullRequestRequest,
    },
    /// Lines for the thread's history file.
    History {
        thread: ThreadRef,
        entries: Vec<Entry>,
    },
    /// A reply in a review thread of the thread's pull request (issue 38).
    ReviewReply {
        pull_request: u64,
        review_thread: String,
        reply_to: String,
        body: String,
    },
    /// Resolving a review thread of the thread's pull request.
    ResolveReviewThread {
        pull_request: u64,
        review_thread: String,
    },
    /// The "Verification" section of the thread's own pull request body (issue 37): only the
    /// section's text, never a body. `pull_request` is the placeholder of this bundle's
    /// `pull_request` write or the number of the one the thread's history records; publish
    /// splices the section between its markers into the body as it reads it then.
    PullRequestSection {
        pull_request: String,
        section: String,
    },
}

impl Manifest {
    pub fn new(forge: ForgeKind, repo: &str, run_id: &str) -> Self {
        Manifest {
            format: FORMAT.to_owned(),
            forge,
            repo: repo.to_owned(),
            run_id: run_id.to_owned(),
            writes: Vec::new(),
        }
    }

    /// Read `DIR/manifest.json`, with errors that name the file and the fix.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "cannot read {}: {e}; pass the directory that `replan run --bundle DIR` wrote",
                path.display()
            )
        })?;
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a Replan bundle manifest: {e}", path.display()))?;
        if manifest.format != FORMAT {
            return Err(format!(
                "{} has format `{}`; this replan reads `{FORMAT}`: publish with the same replan version that ran the agent",
                path.display(),
                manifest.format
            ));
        }
        Ok(manifest)
    }

    /// Replace the manifest whole (write, then rename), so a crash never leaves half of it.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        // The bundle is uploaded as an artifact: an outbound surface like any other.
        let text = crate::outbound::redact(
            &serde_json::to_string_pretty(self).expect("a manifest serialises"),
        );
        let temporary = dir.join(format!("{MANIFEST}.tmp"));
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, dir.join(MANIFEST))
    }
}

/// `DIR` made absolute against the current directory, created if missing.
pub fn prepare_dir(dir: &Path) -> Result<PathBuf, String> {
    let dir = if dir.is_relative() {
        std::env::current_dir()
            .map_err(|e| format!("--bundle {}: no current directory: {e}", dir.display()))?
            .join(dir)
    } else {
        dir.to_path_buf()
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "--bundle {}: cannot create the directory: {e}",
            dir.display()
        )
    })?;
    Ok(dir)
}
