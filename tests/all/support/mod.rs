//! Shared test support: fake forges on loopback, real git repositories, HTTP helpers.
//!
//! Not every test module uses every helper or re-export.
#![allow(dead_code, unused_imports)]

pub mod bundle_digest;
pub mod client;
pub mod fake_github;
pub mod fake_gitlab;
pub mod faults;
pub mod gfm;
pub mod git;
pub mod git_http;
pub mod git_objects;
pub mod history_shape;
pub mod llm_server;
pub mod mermaid_parser;
pub mod prism;
pub mod server;

pub use fake_github::FakeGitHub;
pub use fake_gitlab::FakeGitLab;
pub use faults::{ConcurrentChange, Fault};
pub use git::TestRepo;
pub use server::{FakeRequest, FakeResponse, LoggedRequest, TestServer};
