//! One integration-test binary for the whole crate (see ARCHITECTURE.md).

mod trigger;
