//! `github` / `gitlab` — what starts a run and who may start it (SPEC F1, F2).

use serde::{Deserialize, Serialize};

/// One struct for both forges: `min_permission` applies to GitHub, `min_access_level` to GitLab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForgeTriggerConfig {
    /// Label that starts a run when added to an issue.
    pub trigger_label: String,
    /// A comment mentioning this handle starts or continues a run.
    pub mention_handle: String,
    /// Logins allowed regardless of their permission; empty = decided by permission only.
    pub allowed_users: Vec<String>,
    /// Bot logins allowed to trigger (bots are refused unless listed).
    pub allowed_bots: Vec<String>,
    /// GitHub: least repository permission of a triggering user (read|triage|write|maintain|admin).
    pub min_permission: String,
    /// GitLab: least access level of a triggering user (10 guest, 20 reporter, 30 developer,
    /// 40 maintainer, 50 owner).
    pub min_access_level: u32,
    /// Login of the account Replan posts as: only its comments are ever edited. Unset: asked
    /// from the forge (GitHub: GraphQL `viewer`, else `github-actions[bot]`; GitLab: the token's
    /// user). Set it for app tokens or personal access tokens that cannot say.
    pub bot_login: Option<String>,
}

impl Default for ForgeTriggerConfig {
    fn default() -> Self {
        Self {
            trigger_label: "replan".to_owned(),
            mention_handle: "@replan".to_owned(),
            allowed_users: Vec::new(),
            allowed_bots: Vec::new(),
            min_permission: "write".to_owned(),
            min_access_level: 30,
            bot_login: None,
        }
    }
}

/// GitHub repository permissions, weakest first.
pub const GITHUB_PERMISSIONS: &[&str] = &["read", "triage", "write", "maintain", "admin"];

/// GitLab access levels.
pub const GITLAB_ACCESS_LEVELS: &[u32] = &[10, 20, 30, 40, 50];
