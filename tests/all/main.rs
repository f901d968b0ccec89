//! One integration-test binary for the whole crate (see ARCHITECTURE.md): one link, shared support.

mod support;

mod architecture;
mod benchmarks_doc;
mod bundle;
mod cli;
mod config;
mod contention;
mod engine;
mod fanout;
mod github;
mod gitlab;
mod harness;
mod history;
mod ledger;
mod llm;
mod llm_bounds;
mod local_cli;
mod parallel;
mod security;
mod seed_json;
mod tools;
mod trigger;
mod work_restore;
