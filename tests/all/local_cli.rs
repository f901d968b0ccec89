//! `replan run` outside CI as a new user meets it, against the scripted LLM server in both wire
//! formats: a weak model that cuts replies off and never writes a valid plan still reaches
//! execution, every request is bounded and counted, huge replies are refused with bounded memory,
//! local threads are steered with `--comment`, and bad input is one clear error.

use assert_cmd::Command;
use replan::history::entry::EntryBody;
use replan::history::jsonl;
use replan::llm::scenario::Scenario;
use serde_json::Value;
use tempfile::TempDir;

use crate::github::e2e_support::scenario;
use crate::github::local_run::checkout;
use crate::support::TestRepo;
use crate::support::git::isolated_git_env;
use crate::support::llm_server::{LlmServer, Wire};

const PLANNING: &str = "Produce the planning phases";

/// `replan <args>` with only the scripted model in the environment.
fn replan(llm: Option<(&LlmServer, Wire)>, workspace: &TestRepo, args: &[&str]) -> Command {
    let mut command = Command::from_std(replan_std(llm, workspace, args));
    command.timeout(std::time::Duration::from_secs(120));
    command
}

/// [`replan`] as a plain process (no time-out), for a test that waits for it itself.
fn replan_std(
    llm: Option<(&LlmServer, Wire)>,
    workspace: &TestRepo,
    args: &[&str],
) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("replan"));
    command.env_clear();
    for key in ["PATH", "HOME", "TMPDIR"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    command.envs(isolated_git_env()).env("USER", "dev");
    match llm {
        Some((server, Wire::OpenAi)) => {
            command
                .env("REPLAN_LLM__PROVIDER", "openai")
                .env("REPLAN_LLM__BASE_URL", server.openai_base())
                .env("OPENAI_API_KEY", "sk-test-key-0123456789abcdef");
        }
        Some((server, Wire::Anthropic)) => {
            command
                .env("REPLAN_LLM__PROVIDER", "anthropic")
                .env("REPLAN_LLM__BASE_URL", server.url())
                .env("ANTHROPIC_API_KEY", "sk-ant-test-key-0123456789abcdef");
        }
        None => {}
    }
    command
        .env("REPLAN_LLM__MODEL", "weak-test-model")
        .args(args);
    if args.first() == Some(&"run") {
        command.arg("--workspace").arg(workspace.path());
    }
    command
}

/// `replan run --issue 7` creating "Add a hello file", with the forge and history in `dir`.
fn start_issue_7(
    llm: Option<(&LlmServer, Wire)>,
    checkout: &TestRepo,
    dir: &str,
) -> std::process::Output {
    let args = [
        "run",
        "--issue",
        "7",
        "--title",
        "Add a hello file",
        "--body",
        "Please.",
        "--local-dir",
        dir,
    ];
    replan(llm, checkout, &args).output().unwrap()
}

/// The entries of issue N's history file in a local directory.
fn history(dir: &std::path::Path, issue: u64) -> Vec<replan::history::Entry> {
    let path = dir.join(format!("planning_history/issues/{issue}.jsonl"));
    let parsed = jsonl::parse(&std::fs::read_to_string(path).unwrap());
    assert!(parsed.corrupt.is_empty());
    parsed.entries
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A model that cuts its first planning reply off and then only writes prose: the plan is never
/// valid, so the run must fall back to one subtask and execute it with the tools.
fn weak_model(wire: Wire) -> Scenario {
    let prose = format!(
        "  - when: {{ contains: \"{PLANNING}\" }}\n    reply: \"I would write a hello file using tool_name.\"\n"
    );
    // In the Anthropic format the first planning call forces a tool (`auto`), which the weak
    // model answers in prose: the client drops it at its first text and asks in `prompt` mode.
    let probe = match wire {
        Wire::OpenAi => String::new(),
        Wire::Anthropic => prose.clone(),
    };
    let overrides = format!(
        "steps:\n{probe}  - when: {{ contains: \"{PLANNING}\" }}\n    fault: {{ kind: cut_off }}\n{}  - when: {{ contains: \"Execute subtask `t1`\" }}\n    tool_calls: [ {{ name: write_file, arguments: {{ path: hello.md, content: \"hello\\n\" }} }} ]\n",
        prose.repeat(6)
    );
    scenario(&overrides)
}

macro_rules! both_wires {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            use super::*;
            #[test]
            fn openai() {
                super::$check(Wire::OpenAi)
            }
            #[test]
            fn anthropic() {
                super::$check(Wire::Anthropic)
            }
        }
    )*};
}

both_wires!(a_weak_model_reaches_execution_with_every_attempt_bounded_and_counted);

fn a_weak_model_reaches_execution_with_every_attempt_bounded_and_counted(wire: Wire) {
    let llm = LlmServer::start(weak_model(wire));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let dir = state.path().to_str().unwrap();
    let output = start_issue_7(Some((&llm, wire)), &checkout, dir);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");

    let sent = llm.requests();
    for (i, request) in sent.iter().enumerate() {
        let limit = request.body.get("max_tokens").and_then(Value::as_u64);
        assert!(
            limit.is_some_and(|n| n <= 4096),
            "request {i} is unbounded: {}",
            request.body
        );
    }
    // The cut-off planning reply was re-asked shorter with a higher limit, never identically.
    let cut = match wire {
        Wire::OpenAi => 0,
        Wire::Anthropic => {
            let (probe, prompt) = (&sent[0].body, &sent[1].body);
            assert_eq!(probe["tool_choice"]["type"], "tool", "{probe}");
            assert_eq!(prompt.get("tool_choice"), None, "{prompt}");
            assert_eq!(prompt["max_tokens"], probe["max_tokens"]);
            1
        }
    };
    let first = &sent[cut].body;
    assert!(sent[cut].texts().join("\n").contains(PLANNING));
    assert_ne!(
        &sent[cut + 1].body,
        first,
        "a cut-off reply was retried identically"
    );
    assert!(sent[cut + 1].body["max_tokens"].as_u64() > first["max_tokens"].as_u64());

    // The subtask's first turn must act (a small model otherwise answers in prose); later
    // turns may give the final answer.
    let executes: Vec<&Value> = sent
        .iter()
        .filter(|r| r.texts().join("\n").contains("Execute subtask `t1`"))
        .map(|r| &r.body)
        .collect();
    let required = match wire {
        Wire::OpenAi => serde_json::json!("required"),
        Wire::Anthropic => serde_json::json!({"type": "any"}),
    };
    assert_eq!(
        executes[0].get("tool_choice"),
        Some(&required),
        "{}",
        executes[0]
    );
    assert!(executes.len() >= 2, "{executes:?}");
    assert_eq!(executes[1].get("tool_choice"), None, "{}", executes[1]);

    let entries = history(state.path(), 7);
    let actions: Vec<&str> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect();
    assert!(actions.contains(&"write_file"), "{actions:?}");
    assert_eq!(checkout.read("hello.md"), "hello\n");
    // Usage counts every request the server saw, re-asks included.
    let counted: u64 = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Usage { usage, .. } => Some(usage.calls),
            _ => None,
        })
        .sum();
    assert_eq!(counted as usize, sent.len());
    // The structured-output mode `auto` settled on is recorded: the scripted OpenAI-format
    // server accepts response_format; in the Anthropic format the weak model answered the forced
    // tool call in prose (as llama-server lets it), so `auto` moved to `prompt`, whose
    // structured requests force no tool and start the reply with `{`.
    let mode = match wire {
        Wire::OpenAi => "json_schema",
        Wire::Anthropic => {
            let last = sent.last().unwrap();
            assert_eq!(last.body.get("tool_choice"), None, "{}", last.body);
            let prefill = last.body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(prefill["role"], "assistant", "{}", last.body);
            assert_eq!(prefill["content"][0]["text"], "{", "{}", last.body);
            "prompt"
        }
    };
    let finished = entries.last().unwrap();
    match &finished.body {
        EntryBody::RunFinished {
            usage,
            structured_output,
            ..
        } => {
            assert_eq!(usage.calls as usize, sent.len());
            assert!(usage.wasted_calls >= 1, "{usage:?}");
            assert_eq!(structured_output.as_deref(), Some(mode));
        }
        other => panic!("the last entry is {other:?}"),
    }
    // The final checklist shows the real final state.
    assert!(
        stdout.contains("- [x] **t1**: Do what the request asks"),
        "{stdout}"
    );
    assert!(!stdout.contains("Planning…"), "{stdout}");
    assert!(!stderr.contains('\u{1b}'), "colours on a pipe: {stderr}");

    // `history show` replays it.
    let show = replan(None, &checkout, &["history", "show", "7", "--dir", dir])
        .output()
        .unwrap();
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let shown = text(&show.stdout);
    assert!(shown.contains("t1"), "{shown}");
    assert!(
        shown.contains(&format!("(structured output: {mode})")),
        "{shown}"
    );
}

/// A server that does not enforce `tool_choice` (llama-server's Anthropic endpoint, or a chat
/// template without tool syntax): the forced first turn comes back as prose. The call is asked
/// once more as a structured reply whose schema only allows complete calls of the offered tools,
/// and the call the model writes as JSON text runs through the registry like a native one.
fn a_weak_model(execute_turn: &str) -> Scenario {
    let prose = format!(
        "  - when: {{ contains: \"{PLANNING}\" }}\n    reply: \"I would write a hello file using tool_name.\"\n"
    );
    let overrides = format!("steps:\n{}{execute_turn}", prose.repeat(7));
    scenario(&overrides)
}

/// Runs issue 7 against `llm`, which must exit 0 having written hello.md; the local state
/// directory (with the history) is handed back.
fn writes_hello(llm: &LlmServer, wire: Wire) -> TempDir {
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let dir = state.path().to_str().unwrap();
    let output = start_issue_7(Some((llm, wire)), &checkout, dir);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(checkout.read("hello.md"), "hello\n");
    state
}

/// The tools of the history's `action` entries, in order.
fn action_tools(entries: &[replan::history::Entry]) -> Vec<&str> {
    entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Action { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect()
}

const WRITE_HELLO: &str =
    r#"'{"tool": "write_file", "arguments": {"path": "hello.md", "content": "hello\n"}}'"#;

both_wires!(
    a_forced_turn_answered_in_prose_is_reasked_for_the_call_alone,
    a_tool_call_written_in_the_reply_text_runs_like_a_native_one,
    a_call_asked_for_alone_runs_without_its_arguments
);

/// SmolLM2 answered the call-only re-ask with `{"tool": "list_files"}`: the call it was asked
/// for, without arguments. It runs with none (before, it was read as no call and no action ran).
fn a_call_asked_for_alone_runs_without_its_arguments(wire: Wire) {
    let call = match wire {
        Wire::OpenAi => r#"'{"tool": "list_files"}'"#,
        Wire::Anthropic => r#"'list_files"}'"#,
    };
    let llm = LlmServer::start(a_weak_model(&format!(
        "  - when: {{ contains: \"Execute subtask `t1`\" }}\n    reply: \"I will look around.\"\n  - when: {{ contains: \"You called no tool\" }}\n    reply: {call}\n"
    )));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let output = start_issue_7(
        Some((&llm, wire)),
        &checkout,
        state.path().to_str().unwrap(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let entries = history(state.path(), 7);
    let actions = action_tools(&entries);
    assert_eq!(actions.first(), Some(&"list_files"), "{actions:?}");
}

fn a_forced_turn_answered_in_prose_is_reasked_for_the_call_alone(wire: Wire) {
    // The Messages API answers a prefilled turn with the continuation only.
    let call = match wire {
        Wire::OpenAi => WRITE_HELLO.to_string(),
        Wire::Anthropic => WRITE_HELLO.replacen(r#"{"tool": ""#, "", 1),
    };
    let llm = LlmServer::start(a_weak_model(&format!(
        "  - when: {{ contains: \"Execute subtask `t1`\" }}\n    reply: \"I will add the hello file.\"\n  - when: {{ contains: \"You called no tool\" }}\n    reply: {call}\n"
    )));
    let state = writes_hello(&llm, wire);

    let sent = llm.requests();
    let executes: Vec<&Value> = sent
        .iter()
        .filter(|r| r.texts().join("\n").contains("Execute subtask `t1`"))
        .map(|r| &r.body)
        .collect();
    let (forced, reask) = (executes[0], executes[1]);
    assert!(
        serde_json::to_string(reask)
            .unwrap()
            .contains("You called no tool"),
        "{reask}"
    );
    assert!(reask["max_tokens"].as_u64().is_some_and(|n| n <= 4096));
    // The re-ask constrains the reply to a complete call of an offered tool where the format
    // can (OpenAI json_schema, a grammar on llama-server) and hands the model the start of the
    // call where it cannot (Anthropic prefill; a forced tool would contradict it).
    let offered: Vec<&Value> = forced["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.pointer("/function/name").unwrap_or(&t["name"]))
        .collect();
    assert!(!offered.is_empty());
    assert_eq!(reask.get("tool_choice"), None, "{reask}");
    match wire {
        Wire::OpenAi => {
            let schema = &reask["response_format"]["json_schema"]["schema"];
            let names: Vec<&Value> = schema["anyOf"]
                .as_array()
                .unwrap_or_else(|| panic!("{schema}"))
                .iter()
                .map(|b| &b["properties"]["tool"]["enum"][0])
                .collect();
            assert_eq!(names, offered);
        }
        Wire::Anthropic => {
            let last = reask["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(last["role"], "assistant", "{reask}");
            assert_eq!(last["content"][0]["text"], r#"{"tool": ""#, "{reask}");
        }
    }
    // The prose reply is not sent back: the next turn continues from the call.
    let next = serde_json::to_string(executes[2]).unwrap();
    assert!(!next.contains("I will add the hello file"), "{next}");
    assert!(!next.contains("You called no tool"), "{next}");

    let entries = history(state.path(), 7);
    let actions = action_tools(&entries);
    assert_eq!(actions.first(), Some(&"write_file"), "{actions:?}");
    match &entries.last().unwrap().body {
        EntryBody::RunFinished { usage, .. } => assert_eq!(usage.calls as usize, sent.len()),
        other => panic!("the last entry is {other:?}"),
    }
}

fn a_tool_call_written_in_the_reply_text_runs_like_a_native_one(wire: Wire) {
    // Only offered tools run, through the same registry: an unknown one is prose, not a call.
    let llm = LlmServer::start(a_weak_model(concat!(
        "  - when: { contains: \"Execute subtask `t1`\" }\n",
        r#"    reply: '<tool_call>[{"name": "run_shell", "arguments": {}}]</tool_call> or "#,
        r#"<tool_call>[{"name": "write_file", "arguments": {"path": "hello.md", "content": "hello\n"}}]</tool_call>'"#,
        "\n"
    )));
    let state = writes_hello(&llm, wire);
    let sent = llm.requests();
    assert!(
        !sent
            .iter()
            .any(|r| r.texts().join("\n").contains("You called no tool")),
        "a call in the text needs no re-ask"
    );
    let entries = history(state.path(), 7);
    let tools = action_tools(&entries);
    assert_eq!(tools.first(), Some(&"write_file"), "{tools:?}");
    assert!(!tools.contains(&"run_shell"), "{tools:?}");
}

#[test]
fn a_run_finished_line_written_before_the_mode_was_recorded_still_parses() {
    let old = r#"{"v":1,"seq":1,"ts":"2026-01-02T03:04:05Z","run_id":"r1","type":"run_finished","status":"completed","usage":{"calls":2,"prompt_tokens":10,"completion_tokens":5}}"#;
    let parsed = jsonl::parse(&format!("{old}\n"));
    assert!(parsed.corrupt.is_empty(), "{:?}", parsed.corrupt);
    match &parsed.entries[0].body {
        EntryBody::RunFinished {
            structured_output,
            usage,
            ..
        } => {
            assert_eq!(*structured_output, None);
            assert_eq!(usage.calls, 2);
        }
        other => panic!("{other:?}"),
    }
    // And a line with the mode names it back.
    let new = old.replace(r#""status""#, r#""structured_output":"prompt","status""#);
    let parsed = jsonl::parse(&format!("{new}\n"));
    assert!(matches!(&parsed.entries[0].body,
        EntryBody::RunFinished { structured_output: Some(mode), .. } if mode == "prompt"));
}

/// Run `command` to its end: its exit code, its stderr, and its own peak resident memory in
/// bytes (from `wait4`, so no other process the test binary started is counted, as
/// `RUSAGE_CHILDREN` would count a Node or git process of another test).
// The child is reaped by `wait4` below, which `Child::wait` cannot give the usage of.
#[allow(clippy::zombie_processes)]
fn run_measured(mut command: std::process::Command) -> (Option<i32>, String, u64) {
    use std::io::Read as _;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = out.read_to_end(&mut sink);
    });
    let mut stderr = String::new();
    let _ = err.read_to_string(&mut stderr);
    let _ = stdout.join();
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: wait4 on our own child's pid, with valid pointers; `child` is not waited again.
    let usage = unsafe {
        let pid = child.id() as libc::pid_t;
        assert_eq!(libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()), pid);
        usage.assume_init()
    };
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (
        code,
        stderr,
        u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    )
}

#[test]
fn a_300_mb_reply_is_refused_as_too_large_with_bounded_memory() {
    for chunked in [false, true] {
        let llm = LlmServer::from_yaml(&format!(
            "steps:\n  - fault: {{ kind: huge, bytes: 314572800, chunked: {chunked} }}\n"
        ));
        let (_origin, checkout) = checkout();
        let state = TempDir::new().unwrap();
        let (code, stderr, peak) = run_measured(replan_std(
            Some((&llm, Wire::OpenAi)),
            &checkout,
            &[
                "run",
                "--issue",
                "7",
                "--title",
                "Add a hello file",
                "--local-dir",
                state.path().to_str().unwrap(),
            ],
        ));
        assert_eq!(code, Some(1), "{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "each error is printed once: {stderr}");
        assert!(errors[0].contains("too large"), "{stderr}");
        assert_eq!(llm.requests().len(), 1, "a too-large reply is not retried");
        assert!(
            peak < 200 * 1024 * 1024,
            "peak RSS {peak} bytes (chunked: {chunked})"
        );
    }
}

#[test]
fn an_empty_goal_is_a_usage_error_naming_title_and_body() {
    let checkout = TestRepo::new();
    let state = TempDir::new().unwrap();
    let output = replan(
        None,
        &checkout,
        &[
            "run",
            "--issue",
            "3",
            "--title",
            "  ",
            "--body",
            "\n\t",
            "--local-dir",
            state.path().to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error"), "{stderr}");
    assert!(
        stderr.contains("--title") && stderr.contains("--body"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("the goal is empty").count(), 1, "{stderr}");
    assert!(!state.path().join("threads/issues-3.json").exists());
}

#[test]
fn comments_steer_a_local_thread_and_thread_show_prints_them() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let dir = state.path().to_str().unwrap();
    let start = start_issue_7(Some((&llm, Wire::OpenAi)), &checkout, dir);
    assert_eq!(start.status.code(), Some(0), "{}", text(&start.stderr));
    let calls_before = llm.requests().len();

    let steer = replan(
        Some((&llm, Wire::OpenAi)),
        &checkout,
        &[
            "run",
            "--issue",
            "7",
            "--comment",
            "/status",
            "--comment",
            "Thanks, looks fine.",
            "--local-dir",
            dir,
        ],
    )
    .output()
    .unwrap();
    assert_eq!(steer.status.code(), Some(0), "{}", text(&steer.stderr));
    assert!(
        text(&steer.stdout).contains("2/2"),
        "{}",
        text(&steer.stdout)
    );
    assert_eq!(llm.requests().len(), calls_before, "/status needs no model");

    let requests: Vec<String> = history(state.path(), 7)
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::RunStarted { request } => Some(request.request.clone()),
            _ => None,
        })
        .collect();
    // As on the forge, a plain comment with no question pending starts nothing.
    assert_eq!(requests, ["start", "command:/status"]);

    let show = replan(None, &checkout, &["thread", "show", "7", "--dir", dir])
        .output()
        .unwrap();
    let shown = text(&show.stdout);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    assert!(shown.starts_with("#7 by @"), "{shown}");
    assert!(shown.contains("Add a hello file"), "{shown}");
    let status_at = shown.find("\n/status\n").expect("the /status comment");
    let answer_at = shown.find("Thanks, looks fine.").expect("the answer");
    assert!(status_at < answer_at, "{shown}");

    let missing = replan(None, &checkout, &["thread", "show", "8", "--dir", dir])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("--dir"),
        "{}",
        text(&missing.stderr)
    );
}

/// Opt-in: a whole local cycle against a real model in both wire formats (see
/// `scripts/real-llm.sh`, which serves SmolLM2-135M-Instruct with llama.cpp on CPU).
/// `REPLAN_TEST_LLM_URL` is the OpenAI-compatible base URL ending in `/v1`; the Anthropic format is
/// asked at the same server without `/v1`. Optional: `REPLAN_TEST_LLM_MODEL`, `REPLAN_TEST_LLM_KEY`.
mod real_model {
    use super::*;
    use replan::history::check::CheckStatus;
    use replan::history::entry::RunStatus;
    use std::time::{Duration, Instant};

    #[test]
    #[ignore = "needs a real model: set REPLAN_TEST_LLM_URL (see scripts/real-llm.sh) and run with --ignored"]
    fn openai() {
        whole_cycle(Wire::OpenAi)
    }

    #[test]
    #[ignore = "needs a real model: set REPLAN_TEST_LLM_URL (see scripts/real-llm.sh) and run with --ignored"]
    fn anthropic() {
        whole_cycle(Wire::Anthropic)
    }

    fn whole_cycle(wire: Wire) {
        // Run on purpose (`--ignored`) without a model: a failure, never a silent pass.
        let url = std::env::var("REPLAN_TEST_LLM_URL").expect(
            "set REPLAN_TEST_LLM_URL (e.g. http://127.0.0.1:8080/v1, see scripts/real-llm.sh) to run a whole cycle against a real model",
        );
        let model = std::env::var("REPLAN_TEST_LLM_MODEL").unwrap_or_else(|_| "smollm2".into());
        let key = std::env::var("REPLAN_TEST_LLM_KEY").unwrap_or_else(|_| "no-key-needed".into());
        let (_origin, checkout) = checkout();
        // The proof the goal asks for: without it the run must not end `completed` (issue 37).
        checkout.write(
            ".replan.yml",
            "verify:\n  - name: hello\n    argv: [grep, -q, hello, hello.md]\n    when: final\n",
        );
        checkout.commit_all("replan config");
        let state = TempDir::new().unwrap();
        let dir = state.path().to_str().unwrap();
        let mut command = replan(
            None,
            &checkout,
            &[
                "run",
                "--issue",
                "1",
                "--title",
                "Add a hello file",
                "--body",
                "Create the file hello.md containing the word hello.",
                "--local-dir",
                dir,
            ],
        );
        command
            .env("REPLAN_LLM__MODEL", &model)
            .env("REPLAN_TEST_LLM_KEY", &key)
            .env("REPLAN_LLM__API_KEY_ENV", "REPLAN_TEST_LLM_KEY")
            .timeout(Duration::from_secs(15 * 60));
        match wire {
            Wire::OpenAi => command
                .env("REPLAN_LLM__PROVIDER", "openai")
                .env("REPLAN_LLM__BASE_URL", &url),
            Wire::Anthropic => command.env("REPLAN_LLM__PROVIDER", "anthropic").env(
                "REPLAN_LLM__BASE_URL",
                url.trim_end_matches('/').trim_end_matches("/v1"),
            ),
        };
        let started = Instant::now();
        let output = command.output().unwrap();
        let wall = started.elapsed();
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
        let entries = history(state.path(), 1);
        let actions = entries
            .iter()
            .filter(|e| matches!(e.body, EntryBody::Action { .. }))
            .count();
        let Some(EntryBody::RunFinished {
            status,
            usage,
            structured_output,
            ..
        }) = entries.last().map(|e| &e.body)
        else {
            panic!("the history does not end with run_finished: {entries:?}");
        };
        let tools: Vec<String> = entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Action { tool, outcome, .. } => Some(format!("{tool} ({outcome:?})")),
                _ => None,
            })
            .collect();
        eprintln!(
            "real model, {wire:?} format: status {status:?}, {} calls, wall {:.1} s (LLM {:.1} s), wasted {:.1} s in {} calls, {actions} executed actions {tools:?}, structured output {structured_output:?}",
            usage.calls,
            wall.as_secs_f64(),
            usage.wall_ms as f64 / 1000.0,
            usage.wasted_ms as f64 / 1000.0,
            usage.wasted_calls
        );
        let checks: Vec<String> = entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Check(check) => Some(format!("{} {:?}", check.name, check.status)),
                _ => None,
            })
            .collect();
        eprintln!("checks run: {checks:?}");
        if *status == RunStatus::Completed {
            let proven = entries.iter().any(|e| {
                matches!(&e.body, EntryBody::Check(check)
                    if check.name == "hello" && check.status == CheckStatus::Passed)
            });
            assert!(
                proven,
                "the run ended `completed` without a passing `hello` check: {checks:?}"
            );
        }
        assert!(wall < Duration::from_secs(600), "the cycle took {wall:?}");
        assert!(actions > 0, "the cycle never reached execution:\n{stdout}");
        assert!(usage.calls > 0);
        assert!(structured_output.is_some());
        assert!(!stdout.contains("Planning…"), "{stdout}");
        // `history show` replays it.
        let show = replan(None, &checkout, &["history", "show", "1", "--dir", dir])
            .output()
            .unwrap();
        let shown = text(&show.stdout);
        assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
        assert!(shown.contains("last run:"), "{shown}");
        eprintln!("{shown}");
    }
}

/// `planning.approval: plan` on the local forge (issue 39): the run stops after planning with the
/// hash in the checklist, a stale `/approve <hash>` only replies, `/approve <hash>` runs the plan.
#[test]
fn plan_approval_on_a_local_thread_waits_for_approve_of_the_hash() {
    let llm = LlmServer::start(scenario(""));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let dir = state.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let mut command = replan(Some((&llm, Wire::OpenAi)), &checkout, args);
        command.env("REPLAN_PLANNING__APPROVAL", "plan");
        command.output().unwrap()
    };
    let executed = || {
        llm.requests()
            .iter()
            .any(|r| r.texts().iter().any(|t| t.contains("Execute subtask")))
    };
    let start = run(&[
        "run",
        "--issue",
        "7",
        "--title",
        "Add a hello file",
        "--body",
        "Please.",
        "--local-dir",
        dir,
    ]);
    assert_eq!(start.status.code(), Some(0), "{}", text(&start.stderr));
    assert!(!executed(), "nothing ran before the approval");
    let hash = history(state.path(), 7)
        .iter()
        .find_map(|e| match &e.body {
            EntryBody::Approval {
                decision: None,
                subject,
                ..
            } if subject["kind"] == "plan" => {
                Some(subject["hash"].as_str().unwrap()[..7].to_owned())
            }
            _ => None,
        })
        .expect("a plan approval request");
    let show = || {
        let out = replan(None, &checkout, &["thread", "show", "7", "--dir", dir])
            .output()
            .unwrap();
        text(&out.stdout)
    };
    assert!(
        show().contains(&format!("Plan v1 (`{hash}`) waits for `/approve`")),
        "{}",
        show()
    );

    let stale = run(&[
        "run",
        "--issue",
        "7",
        "--comment",
        "/approve 0000000",
        "--local-dir",
        dir,
    ]);
    assert_eq!(stale.status.code(), Some(0), "{}", text(&stale.stderr));
    assert!(!executed());
    let shown = show();
    assert_eq!(
        shown.matches("does not name the plan waiting").count(),
        1,
        "{shown}"
    );

    let approve = format!("/approve {hash}");
    let approved = run(&[
        "run",
        "--issue",
        "7",
        "--comment",
        &approve,
        "--local-dir",
        dir,
    ]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    assert!(executed(), "the approved plan ran");
    let entries = history(state.path(), 7);
    assert!(entries.iter().any(|e| matches!(
        &e.body,
        EntryBody::RunFinished {
            status: replan::history::entry::RunStatus::Completed,
            ..
        }
    )));
    assert!(entries.iter().any(|e| matches!(
        &e.body,
        EntryBody::Approval { decision: Some(replan::history::entry::ApprovalDecision::Approved), subject, .. }
            if subject["hash"].as_str().unwrap().starts_with(&hash)
    )));
}

both_wires!(an_error_reply_and_an_abandoned_reply_are_each_one_call_in_the_history);

/// Issue 37, point 7: the history's usage counts every request the server saw. The first planning
/// request gets an error reply (retried), the retry a reply so large the client abandons it
/// part-way; a later call finishes the plan and the work.
fn an_error_reply_and_an_abandoned_reply_are_each_one_call_in_the_history(wire: Wire) {
    let overrides = format!(
        "steps:\n  - when: {{ contains: \"{PLANNING}\" }}\n    fault: {{ kind: status, status: 500 }}\n  - when: {{ contains: \"{PLANNING}\" }}\n    fault: {{ kind: huge, bytes: 314572800, chunked: true }}\n"
    );
    let llm = LlmServer::start(scenario(&overrides));
    let (_origin, checkout) = checkout();
    let state = TempDir::new().unwrap();
    let dir = state.path().to_str().unwrap();
    let output = start_issue_7(Some((&llm, wire)), &checkout, dir);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));

    let sent = llm.requests().len();
    let entries = history(state.path(), 7);
    let counted: u64 = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Usage { usage, .. } => Some(usage.calls),
            _ => None,
        })
        .sum();
    // The abandoned reply ends the run (a reply too large to read is an error, exit 1), and
    // what the run spent is still in its history.
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(sent, 2, "the error reply and its retry\n{stdout}\n{stderr}");
    assert_eq!(counted as usize, sent, "{stdout}\n{stderr}");
    let Some(EntryBody::RunFinished { status, usage, .. }) = entries.last().map(|e| &e.body) else {
        panic!("the run's end is not recorded: {stdout}\n{stderr}")
    };
    assert_eq!(*status, replan::history::entry::RunStatus::Failed);
    assert_eq!(usage.calls as usize, sent);
    assert_eq!(usage.wasted_calls as usize, sent, "{usage:?}");
}
