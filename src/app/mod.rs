//! The orchestration behind `replan run`: trigger → gate → config → history → engine → report →
//! outputs. Forge-agnostic: GitHub Actions, a local run, and (through its own set-up) GitLab.

pub mod bundle;
pub(crate) mod exit;
pub(crate) mod gating;
pub mod history_sink;
pub(crate) mod input;
pub(crate) mod instructions;
pub(crate) mod outputs;
pub(crate) mod pr_recorder;
pub(crate) mod pr_verification;
pub(crate) mod private_git;
pub(crate) mod review;
pub(crate) mod review_batch;
pub(crate) mod run;
pub(crate) mod secrets;
pub(crate) mod stage;
pub(crate) mod work_branch;
pub(crate) mod workspace;

pub use run::{RunOptions, run};

/// The GitLab child pipeline of one wave for `ids`, as `replan publish DIR --pipeline-out FILE`
/// writes it (the packaging tests check its jobs against the templates' rules).
pub fn gitlab_wave(ids: &[String]) -> Result<String, String> {
    stage::child_pipeline(ids, &Default::default()).map_err(|e| e.message)
}
