//! The planning cycle: five phases, LLM replan decisions, refinement, task judge.
//!
//! `step::next_step` decides what to do from the replayed state alone; `cycle::run_cycle` performs
//! the steps and appends their entries, so resume is just replay.

pub mod append;
pub mod batch;
pub mod budget_command;
pub mod commands;
pub mod context;
pub mod cx;
pub mod cycle;
pub mod decide;
pub mod demo;
pub mod evidence;
pub mod folded;
pub mod input;
pub mod instructions;
pub mod journal;
pub mod judge;
pub mod parallel;
pub mod phases;
pub mod plan_commands;
pub mod plan_gate;
pub mod prompts;
pub mod refine;
pub mod replan;
pub mod review_feedback;
pub mod scope;
pub mod step;
pub mod worktree;

pub use cycle::{CycleDeps, CycleError, CycleOutcome, run_cycle};
pub use input::EngineInput;
pub use scope::Scope;
pub use step::{Step, next_step};
