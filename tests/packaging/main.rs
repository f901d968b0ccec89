//! Packaging (SPEC F13): the static musl binary, the action's install step, the action manifest
//! and the workflows. These tests drive the real artefacts: the release binary, `dist/install.sh`
//! under bash with a runner's environment, and actionlint.
//!
//! A test target of its own that `cargo test` skips (`test = false` in Cargo.toml): it needs the
//! musl release build and installed lint tools, minutes of work. `.ci/packaging.sh` (called by
//! `.ci/run`) prepares both and runs `cargo test --locked --test packaging`.

mod action_manifest;
mod binary_size;
mod elf;
mod gitlab_templates;
mod image_user;
mod install_step;
mod split_workflow;
mod static_binary;
mod tools;
mod workflow_lint;

/// The one piece of the integration tests' support the install step needs: the loopback server.
#[path = "../all/support/server.rs"]
#[allow(dead_code)] // shared with tests/all, which uses the rest of it
mod server;

mod support {
    pub use crate::server::{FakeResponse, TestServer};
}
