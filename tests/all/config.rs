//! Configuration (SPEC F3): sources, precedence, errors, explain, remote endpoint, reference doc.

use std::collections::BTreeMap;
use std::path::Path;

use replan::config::{
    ConfigError, LoadOptions, LoadedConfig, Override, PlanningMode, ProviderKind, Source, Strategy,
    explain_json, explain_text, load, load_local, reference_markdown,
};

const MAX_TOTAL: &str = "planning.replanning.global.max_total_replans";

fn opts(workspace: &Path) -> LoadOptions {
    LoadOptions {
        workspace: workspace.to_owned(),
        ..LoadOptions::default()
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn write(dir: &Path, rel: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn local_err(o: &LoadOptions) -> ConfigError {
    load_local(o).expect_err("config should be rejected")
}

fn explain_line<'a>(text: &'a str, key: &str) -> &'a str {
    let prefix = format!("{key} = ");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line for {key} in\n{text}"))
}

// ---------------------------------------------------------------- defaults

#[test]
fn no_sources_gives_the_seed_defaults_all_from_default() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, replan::config::Config::default());
    assert!(loaded.file.is_none());
    let text = explain_text(&loaded);
    assert!(text.lines().all(|l| l.ends_with("(default)")), "{text}");
    assert!(explain_line(&text, MAX_TOTAL).contains("= 10"));
}

// ---------------------------------------------------------------- file discovery

#[test]
fn github_dir_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        ".github/replan.yml",
        "planning:\n  max_subtasks: 12\n",
    );
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config.planning.max_subtasks, 12);
    assert_eq!(loaded.file.as_deref(), Some(path.as_path()));
    assert_eq!(
        loaded.provenance.source_of("planning.max_subtasks"),
        Source::File(path)
    );
}

#[test]
fn dot_replan_file_at_root_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        ".replan.yml",
        "planning:\n  strategy: hierarchical\n",
    );
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config.planning.strategy, Strategy::Hierarchical);
    assert_eq!(loaded.file.as_deref(), Some(path.as_path()));
    assert!(loaded.warnings.is_empty());
}

#[test]
fn both_files_present_uses_github_dir_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".github/replan.yml",
        "planning:\n  max_subtasks: 1\n",
    );
    write(dir.path(), ".replan.yml", "planning:\n  max_subtasks: 2\n");
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config.planning.max_subtasks, 1);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains(".replan.yml"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn explicit_config_path_wins_over_discovery() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".github/replan.yml",
        "planning:\n  max_subtasks: 1\n",
    );
    write(
        dir.path(),
        "ci/replan.yml",
        "planning:\n  max_subtasks: 7\n",
    );
    let mut o = opts(dir.path());
    o.config_path = Some("ci/replan.yml".into());
    assert_eq!(load_local(&o).unwrap().config.planning.max_subtasks, 7);
}

#[test]
fn explicit_missing_config_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.config_path = Some("nope.yml".into());
    let err = local_err(&o);
    assert!(matches!(err, ConfigError::FileNotFound { .. }));
    assert!(err.to_string().contains("nope.yml"), "{err}");
}

#[test]
fn empty_file_and_empty_sections_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".replan.yml", "planning:\nllm:\n");
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, replan::config::Config::default());
}

#[test]
fn yaml_syntax_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".replan.yml", "planning: [unclosed\n");
    let err = local_err(&opts(dir.path()));
    assert!(matches!(err, ConfigError::FileSyntax { .. }), "{err}");
    assert!(err.to_string().contains(".replan.yml"), "{err}");
}

#[test]
fn seed_camel_case_keys_in_file_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".replan.yml",
        "refinement:\n  maxRefinementAttempts: 4\nreplanning:\n  enabled: false\n  maxIterations: 5\n  timeoutSeconds: 60\n",
    );
    let mut o = opts(dir.path());
    o.env = env(&[("REPLAN_REFINEMENT__MAX_REFINEMENT_ATTEMPTS", "6")]);
    let c = load_local(&o).unwrap().config;
    // The env var's snake_case key addresses the same setting as the file's camelCase one.
    assert_eq!(c.refinement.max_refinement_attempts, 6);
    assert!(!c.replanning.enabled);
    assert_eq!(c.replanning.max_iterations, 5);
}

/// Keys the seeds name that nothing reads: a seed's config block still loads, and a warning
/// names each key, where it came from and what to do instead.
#[test]
fn seed_keys_nothing_reads_load_with_a_warning_each() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".replan.yml",
        "planning:\n  reflection:\n    depth: deep\n  history:\n    storage_type: jsonl\n    directory: elsewhere\nreplanning:\n  timeoutSeconds: 60\n",
    );
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config.history.directory, "planning_history");
    for key in [
        "planning.reflection.depth",
        "planning.history.directory",
        "replanning.timeout_seconds",
    ] {
        let warning = loaded
            .warnings
            .iter()
            .find(|w| w.contains(&format!("`{key}`")))
            .unwrap_or_else(|| panic!("no warning for {key}: {:?}", loaded.warnings));
        assert!(warning.starts_with("warning: config key"), "{warning}");
        assert!(warning.contains(".replan.yml"), "{warning}");
    }
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
}

// ---------------------------------------------------------------- remote endpoint

/// What the test endpoint saw: the query string and the Authorization header.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// A user_config_api endpoint on 127.0.0.1 answering every GET with `status` and `body`.
async fn endpoint(status: u16, body: &str) -> (String, Seen) {
    use axum::http::{HeaderMap, StatusCode, Uri};
    let seen: Seen = Default::default();
    let recorder = seen.clone();
    let body = body.to_owned();
    let app = axum::Router::new().route(
        "/user-config",
        axum::routing::get(move |uri: Uri, headers: HeaderMap| {
            let recorder = recorder.clone();
            let body = body.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_owned());
                recorder
                    .lock()
                    .unwrap()
                    .push((uri.query().unwrap_or_default().to_owned(), auth));
                (
                    StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/json")],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/user-config"), seen)
}

fn remote_opts(dir: &Path, url: &str, extra_yaml: &str) -> LoadOptions {
    write(
        dir,
        ".github/replan.yml",
        &format!("user_config_api:\n  url: {url}\n  token_env: CFG_TOKEN\n{extra_yaml}"),
    );
    let mut o = opts(dir);
    o.user = Some("octocat".into());
    o.env = env(&[("CFG_TOKEN", "t0ken")]);
    o
}

#[tokio::test]
async fn remote_success_overrides_file_and_sends_user_and_token() {
    let (url, seen) = endpoint(
        200,
        r#"{"status":"success","data":{"planning":{"strategy":"simple","reflection":{"enabled":true,"trigger_interval":5}}}}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let o = remote_opts(
        dir.path(),
        &url,
        "planning:\n  strategy: hierarchical\n  max_subtasks: 9\n",
    );
    let loaded = load(&o).await.unwrap();
    assert_eq!(loaded.config.planning.strategy, Strategy::Simple);
    assert_eq!(loaded.config.planning.reflection.trigger_interval, 5);
    assert_eq!(
        loaded.config.planning.max_subtasks, 9,
        "file values the remote leaves alone stay"
    );
    assert_eq!(
        loaded.provenance.source_of("planning.strategy"),
        Source::Remote(url.clone())
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![("user=octocat".to_owned(), Some("Bearer t0ken".to_owned()))]
    );
}

#[tokio::test]
async fn remote_http_500_is_an_error_naming_the_url() {
    let (url, _) = endpoint(500, r#"{"status":"error"}"#).await;
    let dir = tempfile::tempdir().unwrap();
    let err = load(&remote_opts(dir.path(), &url, "")).await.unwrap_err();
    assert!(matches!(err, ConfigError::Remote { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("500"), "{text}");
}

#[tokio::test]
async fn remote_bad_shape_is_an_error_naming_the_url() {
    for body in [
        r#"{"status":"error","message":"no such user"}"#,
        r#"{"planning":{"enabled":false}}"#,
        r#"{"status":"success","data":[1,2]}"#,
        "not json",
    ] {
        let (url, _) = endpoint(200, body).await;
        let dir = tempfile::tempdir().unwrap();
        let err = load(&remote_opts(dir.path(), &url, "")).await.unwrap_err();
        assert!(matches!(err, ConfigError::Remote { .. }), "{body}: {err}");
        assert!(err.to_string().contains(&url), "{err}");
    }
}

#[tokio::test]
async fn remote_unknown_key_names_the_key_and_the_remote() {
    let (url, _) = endpoint(
        200,
        r#"{"status":"success","data":{"planning":{"stratgy":"simple"}}}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let err = load(&remote_opts(dir.path(), &url, "")).await.unwrap_err();
    assert_eq!(err.key(), Some("planning.stratgy"), "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("remote {url}")), "{text}");
    assert!(text.contains("did you mean `strategy`"), "{text}");
}

#[tokio::test]
async fn remote_unreachable_is_an_error_and_missing_token_var_too() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}/cfg");
    let err = load(&remote_opts(dir.path(), &dead, "")).await.unwrap_err();
    assert!(matches!(err, ConfigError::Remote { .. }), "{err}");
    assert!(err.to_string().contains(&dead), "{err}");

    let (url, seen) = endpoint(200, r#"{"status":"success","data":{}}"#).await;
    let mut o = remote_opts(dir.path(), &url, "");
    o.env.clear();
    let err = load(&o).await.unwrap_err();
    assert!(err.to_string().contains("CFG_TOKEN"), "{err}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "no request without the token"
    );
}

#[tokio::test]
async fn remote_is_skipped_without_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = remote_opts(dir.path(), "http://127.0.0.1:9/cfg", "");
    o.user = None;
    assert!(load(&o).await.unwrap().config.user_config_api.is_some());
}

// ---------------------------------------------------------------- precedence

/// The same key at every layer: each higher layer wins, and explain names it.
#[tokio::test]
async fn precedence_default_file_remote_env_input_flag() {
    let (url, _) = endpoint(
        200,
        r#"{"status":"success","data":{"planning":{"replanning":{"global":{"max_total_replans":2}}},"llm":{"model":"remote-model"}}}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file_yaml = "planning:\n  replanning:\n    global:\n      max_total_replans: 1\nllm:\n  model: file-model\n";
    let file = dir.path().join(".github/replan.yml");

    let mut o = remote_opts(dir.path(), &url, file_yaml);
    let check = |loaded: &LoadedConfig, value: u32, source: Source| {
        assert_eq!(
            loaded.config.planning.replanning.global.max_total_replans,
            value
        );
        assert_eq!(loaded.provenance.source_of(MAX_TOTAL), source);
        let text = explain_text(loaded);
        let line = explain_line(&text, MAX_TOTAL);
        assert!(line.contains(&format!("= {value}")), "{line}");
        assert!(line.ends_with(&format!("({source})")), "{line}");
    };

    // file < remote
    check(&load(&o).await.unwrap(), 2, Source::Remote(url.clone()));
    // remote < env (seed name)
    o.env.insert("MAX_TOTAL_REPLANS".into(), "3".into());
    check(
        &load(&o).await.unwrap(),
        3,
        Source::Env("MAX_TOTAL_REPLANS".into()),
    );
    // seed name < REPLAN_ generic name
    o.env.insert(
        "REPLAN_PLANNING__REPLANNING__GLOBAL__MAX_TOTAL_REPLANS".into(),
        "4".into(),
    );
    check(
        &load(&o).await.unwrap(),
        4,
        Source::Env("REPLAN_PLANNING__REPLANNING__GLOBAL__MAX_TOTAL_REPLANS".into()),
    );
    // env < action input
    o.env.insert("INPUT_MAX_TOTAL_REPLANS".into(), "5".into());
    check(
        &load(&o).await.unwrap(),
        5,
        Source::Input("INPUT_MAX_TOTAL_REPLANS".into()),
    );
    // input < CLI flag
    o.overrides
        .push(Override::flag(MAX_TOTAL, "6", "--max-total-replans"));
    let loaded = load(&o).await.unwrap();
    check(&loaded, 6, Source::Flag("--max-total-replans".into()));

    // A key only the lower layers set keeps their value and source.
    assert_eq!(loaded.config.llm.model.as_deref(), Some("remote-model"));
    assert_eq!(
        loaded.provenance.source_of("llm.model"),
        Source::Remote(url.clone())
    );
    assert_eq!(
        loaded.provenance.source_of("user_config_api.url"),
        Source::File(file.clone())
    );
    assert_eq!(
        loaded.provenance.source_of("planning.enabled"),
        Source::Default
    );

    // And without the remote layer, the file is what shows.
    o.user = None;
    o.env.clear();
    o.overrides.clear();
    check(&load(&o).await.unwrap(), 1, Source::File(file));
}

#[test]
fn every_seed_env_var_sets_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[
        ("PLANNING_ENABLED", "false"),
        ("PLANNING_STRATEGY", "simple"),
        ("PLANNING_MAX_SUBTASKS", "20"),
        ("REFLECTION_ENABLED", "false"),
        ("REFLECTION_INTERVAL", "0"),
        ("MAX_PLAN_REVISIONS", "7"),
        ("REPLANNING_ENABLED", "false"),
        ("REPLANNING_MIN_CONFIDENCE", "0.6"),
        ("MAX_TOTAL_REPLANS", "4"),
    ]);
    let loaded = load_local(&o).unwrap();
    let p = &loaded.config.planning;
    assert!(!p.enabled);
    assert_eq!(p.strategy, Strategy::Simple);
    assert_eq!(p.max_subtasks, 20);
    assert!(!p.reflection.enabled);
    assert_eq!(p.reflection.trigger_interval, 0);
    assert_eq!(p.revision.max_revisions, 7);
    assert!(!p.replanning.enabled);
    assert_eq!(p.replanning.llm_decision.min_confidence_threshold, 0.6);
    assert_eq!(p.replanning.global.max_total_replans, 4);
    assert_eq!(
        loaded
            .provenance
            .source_of("planning.reflection.trigger_interval"),
        Source::Env("REFLECTION_INTERVAL".into())
    );
}

#[test]
fn action_inputs_set_their_keys_and_empty_inputs_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[
        ("INPUT_PROVIDER", "ollama"),
        ("INPUT_MODEL", "4"),
        ("INPUT_BASE-URL", "http://127.0.0.1:11434"),
        ("INPUT_TRIGGER_LABEL", "plan-me"),
        ("INPUT_MENTION_HANDLE", "@planbot"),
        ("INPUT_HISTORY_BRANCH", "plans"),
        ("INPUT_MAX_SUBTASKS", "15"),
        ("INPUT_PLANNING_MODE", "per_phase"),
        ("INPUT_MAX_TOTAL_REPLANS", ""),
    ]);
    let loaded = load_local(&o).unwrap();
    let c = &loaded.config;
    assert_eq!(c.llm.provider, ProviderKind::Ollama);
    // A model name that looks like a number stays the text given.
    assert_eq!(c.llm.model.as_deref(), Some("4"));
    assert_eq!(c.llm.base_url.as_deref(), Some("http://127.0.0.1:11434"));
    assert_eq!(c.github.trigger_label, "plan-me");
    assert_eq!(c.github.mention_handle, "@planbot");
    assert_eq!(c.history.branch, "plans");
    assert_eq!(c.planning.max_subtasks, 15);
    assert_eq!(c.planning.mode, PlanningMode::PerPhase);
    assert_eq!(c.planning.replanning.global.max_total_replans, 10);
    assert_eq!(
        loaded.provenance.source_of("llm.base_url"),
        Source::Input("INPUT_BASE-URL".into())
    );
}

#[test]
fn env_lists_and_maps_reach_nested_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[
        ("REPLAN_GITHUB__ALLOWED_USERS", "alice, bob"),
        ("REPLAN_MCP_SERVERS__DOCS__COMMAND", "docs-mcp"),
        ("REPLAN_LOG", "debug"),
    ]);
    let c = load_local(&o).unwrap().config;
    assert_eq!(c.github.allowed_users, ["alice", "bob"]);
    assert_eq!(c.mcp_servers["docs"].command, "docs-mcp");
    assert_eq!(c.mcp_servers["docs"].startup_timeout_seconds, 30);
}

// ---------------------------------------------------------------- bad config names its key

fn file_err(yaml: &str) -> (ConfigError, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), ".github/replan.yml", yaml);
    let err = local_err(&opts(dir.path()));
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "names the file: {text}"
    );
    (err, text)
}

#[test]
fn unknown_top_level_key_is_named_with_a_suggestion() {
    let (err, text) = file_err("planing:\n  enabled: true\n");
    assert_eq!(err.key(), Some("planing"), "{text}");
    assert!(text.contains("did you mean `planning`"), "{text}");
}

#[test]
fn an_unknown_planning_approval_names_the_key_and_the_three_values() {
    let (err, text) = file_err("planning:\n  approval: always\n");
    assert_eq!(err.key(), Some("planning.approval"), "{text}");
    assert!(text.contains("use one of: never, plan, scope"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".github/replan.yml",
        "planning:\n  approval: scope\n",
    );
    let loaded = load_local(&opts(dir.path())).unwrap();
    assert_eq!(
        loaded.config.planning.approval,
        replan::config::ApprovalMode::Scope
    );
    assert!(explain_text(&loaded).contains("planning.approval = \"scope\""));
}

#[test]
fn unknown_nested_key_is_named_with_its_full_path() {
    let (err, text) =
        file_err("planning:\n  replanning:\n    global:\n      max_total_replan: 3\n");
    assert_eq!(
        err.key(),
        Some("planning.replanning.global.max_total_replan"),
        "{text}"
    );
    assert!(text.contains("did you mean `max_total_replans`"), "{text}");
}

#[test]
fn wrong_type_names_the_full_key_path() {
    let (err, text) = file_err(
        "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: high\n",
    );
    assert_eq!(
        err.key(),
        Some("planning.replanning.llm_decision.min_confidence_threshold"),
        "{text}"
    );
}

#[test]
fn confidence_out_of_range_names_the_key() {
    let (err, text) = file_err(
        "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: 1.5\n",
    );
    assert_eq!(
        err.key(),
        Some("planning.replanning.llm_decision.min_confidence_threshold"),
        "{text}"
    );
    assert!(text.contains("0..=1"), "{text}");
}

#[test]
fn user_confirmation_threshold_above_min_confidence_is_rejected() {
    let (err, text) = file_err(
        "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: 0.4\n      user_confirmation_threshold: 0.45\n",
    );
    assert_eq!(
        err.key(),
        Some("planning.replanning.llm_decision.user_confirmation_threshold"),
        "{text}"
    );
    assert!(text.contains("<= min_confidence_threshold"), "{text}");
}

#[test]
fn unknown_strategy_lists_the_allowed_values() {
    let (err, text) = file_err("planning:\n  strategy: waterfall\n");
    assert_eq!(err.key(), Some("planning.strategy"), "{text}");
    for allowed in ["chain_of_thought", "hierarchical", "simple"] {
        assert!(text.contains(allowed), "{text}");
    }
}

#[test]
fn other_ranges_name_their_keys() {
    for (yaml, key) in [
        ("history:\n  retention_days: 0\n", "history.retention_days"),
        (
            "refinement:\n  delta_threshold_percent: 120\n",
            "refinement.delta_threshold_percent",
        ),
        (
            "replanning:\n  alternatives_approval_threshold: -0.1\n",
            "replanning.alternatives_approval_threshold",
        ),
        (
            "replanning:\n  min_new_subtasks: 6\n",
            "replanning.min_new_subtasks",
        ),
        (
            "replanning:\n  max_new_subtasks: 2\n",
            "replanning.max_new_subtasks",
        ),
        (
            "planning:\n  replanning:\n    llm_decision:\n      min_confidence_threshold: 0.2\n",
            "planning.replanning.llm_decision.min_confidence_threshold",
        ),
        (
            "github:\n  min_permission: owner\n",
            "github.min_permission",
        ),
        (
            "gitlab:\n  min_access_level: 35\n",
            "gitlab.min_access_level",
        ),
        ("llm:\n  api_key_env: sk-live-abc123\n", "llm.api_key_env"),
        ("llm:\n  provider: scripted\n", "llm.provider"),
        ("history:\n  branch: 'has space'\n", "history.branch"),
        ("planning:\n  max_subtasks: -1\n", "planning.max_subtasks"),
    ] {
        let (err, text) = file_err(yaml);
        assert_eq!(err.key(), Some(key), "{yaml}: {text}");
    }
}

#[test]
fn a_pasted_secret_in_api_key_env_is_not_echoed() {
    let (_, text) = file_err("llm:\n  api_key_env: sk-live-abc123\n");
    assert!(!text.contains("sk-live-abc123"), "{text}");
}

#[test]
fn bad_env_value_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[("PLANNING_MAX_SUBTASKS", "many")]);
    let err = local_err(&o);
    assert_eq!(err.key(), Some("planning.max_subtasks"));
    assert!(
        err.to_string().contains("env PLANNING_MAX_SUBTASKS"),
        "{err}"
    );

    o.env = env(&[("REPLANNING_MIN_CONFIDENCE", "2")]);
    let err = local_err(&o);
    assert!(
        err.to_string().contains("env REPLANNING_MIN_CONFIDENCE"),
        "{err}"
    );

    o.env = env(&[("REPLAN_PLANNING__NOPE", "1")]);
    let err = local_err(&o);
    assert_eq!(err.key(), Some("planning.nope"));
    assert!(
        err.to_string().contains("env REPLAN_PLANNING__NOPE"),
        "{err}"
    );
}

#[test]
fn bad_flag_names_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.overrides
        .push(Override::flag("planning.mode", "both", "--planning-mode"));
    let err = local_err(&o);
    assert_eq!(err.key(), Some("planning.mode"));
    let text = err.to_string();
    assert!(text.contains("flag --planning-mode"), "{text}");
    assert!(
        text.contains("single_call") && text.contains("per_phase"),
        "{text}"
    );
}

// ---------------------------------------------------------------- explain and reference

#[test]
fn explain_json_has_value_and_source_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[("PLANNING_STRATEGY", "simple")]);
    let json = explain_json(&load_local(&o).unwrap());
    assert_eq!(json["planning.strategy"]["value"], "simple");
    assert_eq!(json["planning.strategy"]["source"], "env PLANNING_STRATEGY");
    assert_eq!(json["history.retention_days"]["value"], 90);
    assert_eq!(json["history.retention_days"]["source"], "default");
}

/// docs/config-reference.md is generated; run with REPLAN_BLESS=1 to rewrite it.
#[test]
fn config_reference_doc_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config-reference.md");
    let expected = reference_markdown();
    if std::env::var_os("REPLAN_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is stale; regenerate it with `REPLAN_BLESS=1 cargo test --test all config_reference`",
        path.display()
    );
    assert!(expected.contains("| `planning.replanning.global.max_total_replans` | `10` | `MAX_TOTAL_REPLANS`, `REPLAN_PLANNING__REPLANNING__GLOBAL__MAX_TOTAL_REPLANS` | `max_total_replans` |"));
}
