//! GitHub: octocrab's typed API over our HTTP layer (`client.rs`, `transport.rs`), the [`Forge`]
//! implementation, the history branch through the contents and git data APIs, and pull requests.
//!
//! [`Forge`]: crate::forge::Forge

mod ci_runs;
pub mod client;
pub mod forge_impl;
pub mod history_branch;
pub mod pulls;
mod review_threads;
mod transport;

pub use client::{GitHubClient, GitHubSettings, RetryPolicy};
pub use forge_impl::GitHubForge;
pub use history_branch::GitHubHistory;
