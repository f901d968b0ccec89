//! The planning cycle: five phases, LLM replan decisions, refinement, task judge.

pub mod input;

pub use input::EngineInput;
