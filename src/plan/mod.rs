//! The plan: the seeds' data model, its validation and its dependency graph.

pub mod model;

pub use model::*;
