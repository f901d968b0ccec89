//! GitHub: a hand-written REST client (see `client.rs` for why not octocrab), the [`Forge`]
//! implementation, the history branch through the git data API, and pull requests.
//!
//! [`Forge`]: crate::forge::Forge

pub mod client;
pub mod forge_impl;
pub mod history_branch;
pub mod pulls;

pub use client::{GitHubClient, GitHubSettings, RetryPolicy};
pub use forge_impl::GitHubForge;
pub use history_branch::GitHubHistory;
