//! Integration tests, one module per area.

mod history;
mod seed_json;
