//! Issue 15's wire check: the 20-subtask cycle's round trips and prompt tokens counted again by a
//! server this project did not write in Rust — `scripts/wire_count.py` (Python standard library),
//! an OpenAI-compatible server that sits between Replan and the scripted model, counts what
//! reaches its socket and answers with the scripted model's reply. Skipped without `python3`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::scenario;
use crate::tokens::{analyse, from_wire};
use crate::world::World;

pub fn check() {
    println!("## Round trips counted on the wire by an independent server\n");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/wire_count.py");
    let llm = scenario::cycle_llm(20, Duration::ZERO);
    let proxy = Command::new("python3")
        .arg(script)
        .args(["--upstream", &llm.openai_base()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut proxy) = proxy else {
        println!("(skipped: `python3` is not on PATH)\n");
        return;
    };
    let mut first = String::new();
    let stdout = proxy.stdout.take().expect("piped stdout");
    BufReader::new(stdout).read_line(&mut first).unwrap_or(0);
    let Some(base) = first
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_owned)
    else {
        println!("(skipped: wire_count.py did not start: {first:?})\n");
        let _ = proxy.kill();
        return;
    };
    let mut world = World::new();
    world.fresh_checkout();
    let (_, payload) = world.new_issue("Write the notes", "One notes file per step.");
    let mut env = world.env(&llm, &payload);
    env.insert("REPLAN_LLM__BASE_URL".into(), base.clone());
    let result = world.run(&env);
    let (requests, unmatched, _) = llm.take();
    assert!(
        result.exit_code == 0 && unmatched.is_empty(),
        "the cycle through the proxy completes"
    );
    let count = get_count(&base);
    let _ = proxy.kill();
    let _ = proxy.wait();
    let ours = analyse(&from_wire(&requests));
    println!(
        "`scripts/wire_count.py` (Python `http.server`) between `replan run` and the scripted model, \
         one 20-subtask cycle:\n"
    );
    println!("| counted by | LLM round trips | prompt tokens |");
    println!("| --- | ---: | ---: |");
    println!(
        "| the bench (scripted server's log) | {} | {} |",
        requests.len(),
        ours.prompt_tokens
    );
    println!(
        "| wire_count.py (independent) | {} | {} |",
        count["requests"], count["prompt_tokens"]
    );
    println!();
    eprintln!(
        "wire check: bench {} round trips / {} prompt tokens; wire_count.py {} / {}",
        requests.len(),
        ours.prompt_tokens,
        count["requests"],
        count["prompt_tokens"]
    );
}

/// `GET /count` of the proxy, over a plain socket (the proxy answers with `Content-Length` and
/// closes; one request needs no HTTP client).
fn get_count(base: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let authority = base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&authority).expect("connect to the proxy");
    write!(
        stream,
        "GET /count HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .expect("ask the proxy");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("the proxy's answer");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).expect("the proxy's count is JSON")
}
