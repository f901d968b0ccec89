//! What started the job: event payloads, comment commands, and the safety gate.

pub mod thread;

pub use thread::{ForgeKind, ThreadKind, ThreadRef};
