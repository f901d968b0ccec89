//! Replan: a planning agent that lives in CI.
//!
//! Data flows one way: trigger → gate → config → history replay → engine (LLM, tools, forge) →
//! report → persist. See ARCHITECTURE.md in the repository for the module map.

pub mod actions;
pub mod app;
pub mod cli;
pub mod config;
pub mod engine;
pub mod forge;
pub mod git;
pub mod history;
pub mod http;
pub mod llm;
pub mod outbound;
pub mod plan;
pub mod report;
pub mod sandbox;
pub mod tools;
pub mod trigger;
