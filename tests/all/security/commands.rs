//! `allowed_commands`: whole-argv matches; more arguments only after a trailing `*`.

use super::{allowing, call, tools_for};
use replan::tools::ToolErrorKind;
use serde_json::json;

#[tokio::test]
async fn an_entry_allows_exactly_its_argv_and_star_allows_more() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_for(dir.path(), allowing(&["echo exact", "echo open *"]), |_| {}).await;

    let said = call(&tools, "run_command", json!({"argv": ["echo", "exact"]}))
        .await
        .unwrap();
    assert!(said.contains("exact"), "{said}");
    for refused in [
        vec!["echo", "exact", "/proc/1/environ"],
        vec!["echo"],
        vec!["echo", "exactly"],
    ] {
        let error = call(&tools, "run_command", json!({ "argv": refused }))
            .await
            .unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::Denied, "{refused:?}: {error}");
    }
    let said = call(
        &tools,
        "run_command",
        json!({"argv": ["echo", "open", "and", "more"]}),
    )
    .await
    .unwrap();
    assert!(said.contains("open and more"), "{said}");
    let said = call(&tools, "run_command", json!({"argv": ["echo", "open"]}))
        .await
        .unwrap();
    assert!(said.contains("open"), "{said}");
}

#[tokio::test]
async fn the_tool_description_lists_exactly_what_may_run() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_for(dir.path(), allowing(&["make test", "cargo test *"]), |_| {}).await;
    let spec = tools.get("run_command").unwrap().spec();
    assert!(
        spec.description.contains("`make test`, `cargo test *`"),
        "{}",
        spec.description
    );
    assert!(
        spec.description.contains("equal an entry"),
        "{}",
        spec.description
    );
}

#[tokio::test]
async fn detected_commands_follow_the_same_rule() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Makefile"), "test:\n\techo ran\n").unwrap();
    let tools = tools_for(dir.path(), allowing(&[]), |_| {}).await;
    let spec = tools.get("run_command").unwrap().spec();
    assert!(
        spec.description.contains("`make test`"),
        "{}",
        spec.description
    );
    let error = call(
        &tools,
        "run_command",
        json!({"argv": ["make", "test", "SHELL=/bin/sh -c id"]}),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::Denied, "{error}");
}
