//! Repository config files: load, validate and explain whatever `.replan.yml` holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replan::config::{LoadOptions, explain_text, load_local};

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    if std::fs::write(dir.path().join(".replan.yml"), data).is_err() {
        return;
    }
    let options = LoadOptions {
        workspace: dir.path().to_owned(),
        config_path: None,
        env: Default::default(),
        overrides: Vec::new(),
        user: None,
    };
    if let Ok(loaded) = load_local(&options) {
        let _ = explain_text(&loaded);
    }
});
