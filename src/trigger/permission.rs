//! A user's access to the repository: what the forge reports (`forge::Forge::permission`) and
//! the gate weighs (SPEC F2). One type for GitHub roles, GitLab access levels and the local
//! forge's map.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// No access: not a collaborator, or a role that grants none.
    None,
    /// GitHub collaborator roles (`role_name`, or `permission` on older servers); the local
    /// forge's permission map uses them too.
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
    /// GitLab member access level (10 guest … 30 developer, 40 maintainer, 50 owner; 0 when the
    /// user is not a member).
    #[serde(rename = "gitlab_access")]
    GitLabAccess(u32),
    /// The look-up failed or answered something we do not know; the reason is for logs.
    Unknown(String),
}

impl Permission {
    /// GitHub's `role_name` / `permission` strings; `None` for a string that is not a role.
    pub fn github_role(role: &str) -> Option<Self> {
        match role.trim().to_ascii_lowercase().as_str() {
            "admin" => Some(Permission::Admin),
            "maintain" => Some(Permission::Maintain),
            "write" | "push" => Some(Permission::Write),
            "triage" => Some(Permission::Triage),
            "read" | "pull" => Some(Permission::Read),
            "none" => Some(Permission::None),
            _ => None,
        }
    }

    /// Like [`Permission::github_role`]; a string that is not a role fails closed as `Unknown`.
    pub fn from_github(role: &str) -> Self {
        Self::github_role(role).unwrap_or_else(|| {
            let other = role.trim().to_ascii_lowercase();
            Permission::Unknown(format!("GitHub reported the unknown permission `{other}`"))
        })
    }

    /// Order of the GitHub roles; `None` for GitLab levels and failed look-ups.
    pub(crate) fn github_rank(&self) -> Option<u8> {
        match self {
            Permission::None => Some(0),
            Permission::Read => Some(1),
            Permission::Triage => Some(2),
            Permission::Write => Some(3),
            Permission::Maintain => Some(4),
            Permission::Admin => Some(5),
            Permission::GitLabAccess(_) | Permission::Unknown(_) => None,
        }
    }

    pub(crate) fn github_name(&self) -> &'static str {
        match self {
            Permission::Admin => "admin",
            Permission::Maintain => "maintain",
            Permission::Write => "write",
            Permission::Triage => "triage",
            Permission::Read => "read",
            _ => "no",
        }
    }
}
