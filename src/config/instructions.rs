//! `instructions` — the repository's own instructions for agents (`AGENTS.md` and its cousins),
//! read from the trusted commit of the run and put in the prompts as data to follow for style
//! and procedure (never as permissions).

use serde::{Deserialize, Serialize};

/// The files Codex, Claude Code, Gemini and Copilot read, in the order they are read.
pub const DEFAULT_INSTRUCTION_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".github/instructions/*.instructions.md",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InstructionsConfig {
    /// Paths from the repository root, read in this order (`*` matches within one directory).
    /// With `AGENTS.md` listed, the nearest `AGENTS.md` above a subtask's files is read too.
    /// `[]` reads none.
    pub files: Vec<String>,
    /// Bytes of all the files together; what is over is cut, and the cut is logged.
    pub max_bytes: u64,
}

impl Default for InstructionsConfig {
    fn default() -> Self {
        Self {
            files: DEFAULT_INSTRUCTION_FILES
                .iter()
                .map(|f| (*f).to_owned())
                .collect(),
            max_bytes: 32 * 1024,
        }
    }
}
