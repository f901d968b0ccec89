//! The plan: the seeds' data model, its validation and its dependency graph.

pub mod confidence;
pub mod file;
pub mod graph;
pub mod model;
pub mod shape;
pub mod validate;

pub use model::*;
