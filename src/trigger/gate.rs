//! Who may steer Replan (SPEC F2). Pure: the permission look-up happens at the forge and its
//! result, including a failed look-up, is passed in. Anything uncertain refuses.

use super::permission::Permission;
use super::{Actor, Request, Trigger};
use chrono::{DateTime, Utc};

/// Every comment Replan writes starts its hidden marker with this, so Replan never acts on
/// its own words (and a person cannot make it act on text copied from them).
pub const MARKER_PREFIX: &str = "<!-- replan:";

/// The configured allow-lists and thresholds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatePolicy {
    /// Always allowed, whatever the forge says (compared case-insensitively).
    pub allowed_users: Vec<String>,
    /// Bots that may steer Replan; every other bot is ignored silently.
    pub allowed_bots: Vec<String>,
    /// GitHub: the least role that may steer Replan (config `min_permission`, default write).
    /// A value that is not a GitHub role lets nobody through.
    pub github_min_permission: Permission,
    /// GitLab: the minimum access level (30 = Developer).
    pub gitlab_min_access_level: u32,
}

impl Default for GatePolicy {
    fn default() -> Self {
        GatePolicy {
            allowed_users: Vec::new(),
            allowed_bots: Vec::new(),
            github_min_permission: Permission::Write,
            gitlab_min_access_level: 30,
        }
    }
}

/// The comment that carried the request, as fetched again at run start when possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateComment<'a> {
    pub body: &'a str,
    /// `None` when the forge did not say; then the edit check cannot apply.
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateInput<'a> {
    pub actor: &'a Actor,
    pub permission: Permission,
    pub policy: &'a GatePolicy,
    pub comment: Option<GateComment<'a>>,
    pub run_started_at: DateTime<Utc>,
    /// A scheduled sweep has no person behind it to check: the schedule itself was written by
    /// someone with write access to the workflow.
    pub scheduled: bool,
}

impl<'a> GateInput<'a> {
    /// The input for a trigger, using the comment as the event carried it. Prefer replacing
    /// `comment` with the comment fetched again, so an edit made since the event is seen.
    pub fn for_trigger(
        trigger: &'a Trigger,
        permission: Permission,
        policy: &'a GatePolicy,
        run_started_at: DateTime<Utc>,
    ) -> Self {
        GateInput {
            actor: &trigger.actor,
            permission,
            policy,
            comment: trigger.comment.as_ref().map(|c| GateComment {
                body: &c.body,
                updated_at: c.updated_at,
            }),
            run_started_at,
            // A CI result is trusted for the branch it names, which the run checks against the
            // thread's history before anything is written; no person asked for it.
            scheduled: matches!(trigger.request, Request::Sweep | Request::CiResult(_)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    Allow,
    Refuse {
        /// For the log line.
        reason: String,
        /// A short polite reply to post; `None` for silent refusals (bots, our own comments).
        reply: Option<String>,
    },
}

fn refuse(reason: impl Into<String>, reply: Option<String>) -> GateDecision {
    GateDecision::Refuse {
        reason: reason.into(),
        reply,
    }
}

fn listed(list: &[String], login: &str) -> bool {
    let login = login.trim().trim_start_matches('@');
    list.iter().any(|entry| {
        entry
            .trim()
            .trim_start_matches('@')
            .eq_ignore_ascii_case(login)
    })
}

/// Decides whether the trigger may proceed. Order matters: our own comments and edited
/// comments are refused before any allow-list can let them through.
pub fn decide(input: &GateInput<'_>) -> GateDecision {
    if input.scheduled {
        return GateDecision::Allow;
    }
    let login = &input.actor.login;
    if let Some(comment) = input.comment {
        if comment.body.contains(MARKER_PREFIX) {
            return refuse("the comment carries Replan's own marker", None);
        }
        if comment
            .updated_at
            .is_some_and(|updated| updated > input.run_started_at)
        {
            return refuse(
                format!("the comment by {login} was edited after the run started"),
                None,
            );
        }
    }
    if listed(&input.policy.allowed_users, login) {
        return GateDecision::Allow;
    }
    if input.actor.is_bot {
        return if listed(&input.policy.allowed_bots, login) {
            GateDecision::Allow
        } else {
            refuse(
                format!("{login} is a bot that is not in allowed_bots"),
                None,
            )
        };
    }
    let min_github = &input.policy.github_min_permission;
    match &input.permission {
        github @ (Permission::None
        | Permission::Read
        | Permission::Triage
        | Permission::Write
        | Permission::Maintain
        | Permission::Admin) => {
            let Some(needs) = min_github.github_rank() else {
                return refuse(
                    format!(
                        "the configured GitHub minimum permission is not a role: {min_github:?}"
                    ),
                    Some(format!(
                        "@{login}, my access settings are invalid, so I did not act on this. A maintainer can fix `min_permission` in the Replan configuration."
                    )),
                );
            };
            if github.github_rank().is_some_and(|has| has >= needs) {
                GateDecision::Allow
            } else {
                refuse(
                    format!(
                        "{login} has {} access, {} is required",
                        github.github_name(),
                        min_github.github_name()
                    ),
                    Some(format!(
                        "@{login}, only people with {} access to this repository can ask me to plan or change plans, so I did not act on this.",
                        min_github.github_name()
                    )),
                )
            }
        }
        Permission::GitLabAccess(level) if *level >= input.policy.gitlab_min_access_level => {
            GateDecision::Allow
        }
        Permission::GitLabAccess(level) => refuse(
            format!(
                "{login} has access level {level}, {} is required",
                input.policy.gitlab_min_access_level
            ),
            Some(format!(
                "@{login}, only project members with at least {} access can ask me to plan or change plans, so I did not act on this.",
                gitlab_role_name(input.policy.gitlab_min_access_level)
            )),
        ),
        Permission::Unknown(why) => refuse(
            format!("could not verify the permission of {login}: {why}"),
            Some(format!(
                "@{login}, I could not verify your access to this repository, so I did not act on this. A maintainer can check the workflow's token permissions."
            )),
        ),
    }
}

fn gitlab_role_name(level: u32) -> String {
    match level {
        0..=9 => "minimal".into(),
        10..=14 => "Guest".into(),
        15..=19 => "Planner".into(),
        20..=29 => "Reporter".into(),
        30..=39 => "Developer".into(),
        40..=49 => "Maintainer".into(),
        _ => "Owner".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(login: &str, is_bot: bool) -> Actor {
        Actor {
            login: login.into(),
            id: None,
            is_bot,
        }
    }

    fn start() -> DateTime<Utc> {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    fn check(
        actor: &Actor,
        permission: Permission,
        policy: &GatePolicy,
        comment: Option<GateComment<'_>>,
    ) -> GateDecision {
        decide(&GateInput {
            actor,
            permission,
            policy,
            comment,
            run_started_at: start(),
            scheduled: false,
        })
    }

    fn is_refused_with_reply(d: &GateDecision) -> bool {
        matches!(d, GateDecision::Refuse { reply: Some(_), .. })
    }

    fn is_silent_refusal(d: &GateDecision) -> bool {
        matches!(d, GateDecision::Refuse { reply: None, .. })
    }

    #[test]
    fn write_maintain_admin_pass_lower_roles_get_a_reply() {
        let alice = actor("alice", false);
        let policy = GatePolicy::default();
        for role in ["admin", "maintain", "write"] {
            assert_eq!(
                check(&alice, Permission::from_github(role), &policy, None),
                GateDecision::Allow
            );
        }
        for role in ["triage", "read", "none"] {
            let d = check(&alice, Permission::from_github(role), &policy, None);
            assert!(is_refused_with_reply(&d), "{role}: {d:?}");
        }
    }

    #[test]
    fn the_github_minimum_is_configurable() {
        let alice = actor("alice", false);
        let triage = GatePolicy {
            github_min_permission: Permission::from_github("triage"),
            ..GatePolicy::default()
        };
        assert_eq!(
            check(&alice, Permission::Triage, &triage, None),
            GateDecision::Allow
        );
        assert!(is_refused_with_reply(&check(
            &alice,
            Permission::Read,
            &triage,
            None
        )));
        let broken = GatePolicy {
            github_min_permission: Permission::from_github("owner"),
            ..GatePolicy::default()
        };
        assert!(is_refused_with_reply(&check(
            &alice,
            Permission::Admin,
            &broken,
            None
        )));
    }

    #[test]
    fn failed_lookup_fails_closed() {
        let d = check(
            &actor("alice", false),
            Permission::Unknown("HTTP 502".into()),
            &GatePolicy::default(),
            None,
        );
        match d {
            GateDecision::Refuse { reason, reply } => {
                assert!(reason.contains("HTTP 502"));
                assert!(
                    !reply.unwrap().contains("502"),
                    "replies do not leak internals"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Permission::from_github("superuser"),
            Permission::Unknown(_)
        ));
    }

    #[test]
    fn allow_lists() {
        let policy = GatePolicy {
            allowed_users: vec!["@Carol".into()],
            allowed_bots: vec!["dependabot[bot]".into()],
            ..GatePolicy::default()
        };
        assert_eq!(
            check(&actor("carol", false), Permission::None, &policy, None),
            GateDecision::Allow
        );
        assert_eq!(
            check(
                &actor("dependabot[bot]", true),
                Permission::None,
                &policy,
                None
            ),
            GateDecision::Allow
        );
        let d = check(
            &actor("renovate[bot]", true),
            Permission::Admin,
            &policy,
            None,
        );
        assert!(is_silent_refusal(&d), "{d:?}");
    }

    #[test]
    fn own_marker_is_refused_silently_even_for_allowed_users() {
        let policy = GatePolicy {
            allowed_users: vec!["alice".into()],
            ..GatePolicy::default()
        };
        let comment = GateComment {
            body: "<!-- replan:checklist -->\n/approve",
            updated_at: None,
        };
        let d = check(
            &actor("alice", false),
            Permission::Admin,
            &policy,
            Some(comment),
        );
        assert!(is_silent_refusal(&d), "{d:?}");
    }

    #[test]
    fn edited_after_the_run_started_is_refused_silently() {
        let alice = actor("alice", false);
        let policy = GatePolicy::default();
        let edited = GateComment {
            body: "/approve",
            updated_at: Some(start() + chrono::Duration::seconds(5)),
        };
        assert!(is_silent_refusal(&check(
            &alice,
            Permission::Write,
            &policy,
            Some(edited)
        )));
        let before = GateComment {
            body: "/approve",
            updated_at: Some(start() - chrono::Duration::seconds(5)),
        };
        assert_eq!(
            check(&alice, Permission::Write, &policy, Some(before)),
            GateDecision::Allow
        );
    }

    #[test]
    fn gitlab_access_levels() {
        let alice = actor("alice", false);
        let policy = GatePolicy::default();
        assert_eq!(
            check(&alice, Permission::GitLabAccess(30), &policy, None),
            GateDecision::Allow
        );
        assert_eq!(
            check(&alice, Permission::GitLabAccess(50), &policy, None),
            GateDecision::Allow
        );
        match check(&alice, Permission::GitLabAccess(20), &policy, None) {
            GateDecision::Refuse {
                reply: Some(reply), ..
            } => assert!(reply.contains("Developer")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scheduled_sweeps_pass() {
        let d = decide(&GateInput {
            actor: &actor("schedule", false),
            permission: Permission::Unknown("no actor".into()),
            policy: &GatePolicy::default(),
            comment: None,
            run_started_at: start(),
            scheduled: true,
        });
        assert_eq!(d, GateDecision::Allow);
    }
}
