//! The plan: the seeds' data model, its validation and its dependency graph.

pub(crate) mod confidence;
pub(crate) mod file;
pub mod graph;
pub(crate) mod model;
pub mod shape;
pub(crate) mod validate;

pub use model::*;
