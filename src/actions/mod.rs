//! GitHub Actions integration: step outputs, the job summary, and workflow commands in the log.

pub(crate) mod log;
pub mod outputs;
pub(crate) mod summary;
