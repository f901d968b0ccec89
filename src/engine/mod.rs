//! The planning cycle: five phases, LLM replan decisions, refinement, task judge.

pub mod input;
pub mod judge;
pub mod refine;
pub mod replan;

pub use input::EngineInput;
