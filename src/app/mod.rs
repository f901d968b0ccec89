//! The orchestration behind `replan run`: trigger → gate → config → history → engine → report →
//! outputs. Forge-agnostic: GitHub Actions, a local run, and (through its own set-up) GitLab.

pub mod bundle;
pub mod exit;
pub mod gating;
pub mod history_sink;
pub mod input;
pub mod outputs;
pub mod pr_recorder;
pub mod run;
pub mod secrets;
pub mod stage;
pub mod work_branch;
pub mod workspace;

pub use run::{RunOptions, run};
