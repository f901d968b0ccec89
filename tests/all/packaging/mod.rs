//! Packaging (SPEC F13): the static musl binary, the action's install step, the action manifest
//! and the workflows. These tests drive the real artefacts: the release binary, `dist/install.sh`
//! under bash with a runner's environment, and actionlint.

mod action_manifest;
mod elf;
mod install_step;
mod split_workflow;
mod static_binary;
mod tools;
mod workflow_lint;
