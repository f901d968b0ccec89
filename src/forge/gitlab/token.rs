//! Which token Replan uses on GitLab. `CI_JOB_TOKEN` reaches only a few endpoints (it cannot
//! post notes, commit or open merge requests), so it is never used; when it is the only token
//! present, the error says exactly what to set up instead.

use crate::forge::ForgeError;
use std::collections::BTreeMap;

pub const TOKEN_VARIABLE: &str = "GITLAB_TOKEN";

/// The access token from `GITLAB_TOKEN`, or an error that names the fix.
pub fn gitlab_token(env: &BTreeMap<String, String>) -> Result<String, ForgeError> {
    let present = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let setup = "create a project access token (Settings → Access tokens) with the `api` scope and the Developer role, or a personal access token with the `api` scope, and store it in a masked CI/CD variable named GITLAB_TOKEN (Settings → CI/CD → Variables)";
    if let Some(token) = present(TOKEN_VARIABLE) {
        if present("CI_JOB_TOKEN") == Some(token) {
            return Err(ForgeError::Other(format!(
                "GITLAB_TOKEN holds the CI job token (GITLAB_TOKEN: $CI_JOB_TOKEN), which cannot post notes, commit the history branch or open merge requests: {setup}."
            )));
        }
        return Ok(token.to_owned());
    }
    if present("CI_JOB_TOKEN").is_some() {
        return Err(ForgeError::Other(format!(
            "GITLAB_TOKEN is not set and only CI_JOB_TOKEN is available. GitLab's job token cannot post notes, commit the history branch or open merge requests, so Replan does not use it: {setup}."
        )));
    }
    Err(ForgeError::Other(format!(
        "GITLAB_TOKEN is not set, so Replan cannot talk to GitLab: {setup}."
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|&(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn gitlab_token_wins_over_the_job_token() {
        let token = gitlab_token(&env(&[
            ("CI_JOB_TOKEN", "glcbt-x"),
            ("GITLAB_TOKEN", " glpat-abc "),
        ]))
        .unwrap();
        assert_eq!(token, "glpat-abc");
    }

    #[test]
    fn only_a_job_token_is_a_clear_error_without_the_secret() {
        let err = gitlab_token(&env(&[
            ("CI_JOB_TOKEN", "glcbt-secret"),
            ("GITLAB_TOKEN", ""),
        ]))
        .unwrap_err()
        .to_string();
        for needle in [
            "CI_JOB_TOKEN",
            "GITLAB_TOKEN",
            "`api` scope",
            "masked",
            "notes",
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert!(!err.contains("glcbt-secret"), "{err}");
    }

    #[test]
    fn the_job_token_copied_into_gitlab_token_is_refused() {
        let err = gitlab_token(&env(&[
            ("CI_JOB_TOKEN", "glcbt-same"),
            ("GITLAB_TOKEN", "glcbt-same"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("holds the CI job token"), "{err}");
        assert!(!err.contains("glcbt-same"), "{err}");
    }

    #[test]
    fn no_token_at_all_names_the_variable() {
        let err = gitlab_token(&env(&[])).unwrap_err().to_string();
        assert!(err.starts_with("GITLAB_TOKEN is not set"), "{err}");
        assert!(!err.contains("CI_JOB_TOKEN"), "{err}");
    }
}
