//! GitHub Actions integration: step outputs, the job summary, and workflow commands in the log.

pub mod log;
pub mod outputs;
pub mod summary;
