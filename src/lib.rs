//! Replan: a planning agent that lives in CI.

pub mod trigger;
