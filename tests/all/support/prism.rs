//! Stoplight Prism in proxy mode (`prism proxy <spec> <upstream>`) in front of a fake, checking
//! every request and answer against an OpenAPI description (GitHub's, for the GitHub client),
//! and a recorder in front of Prism that keeps each violation Prism reports in its
//! `sl-violations` answer header together with the request it belongs to.
//!
//! client → recorder → Prism → fake. Prism forwards even a request that breaks the description
//! (`--errors=false`), so a run goes on and every violation of the whole run is listed at once.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use tempfile::NamedTempFile;

use super::client::install_crypto_provider;
use super::server::{FakeRequest, FakeResponse, Handler, TestServer};

/// The prism executable is `REPLAN_PRISM`, the OpenAPI description `REPLAN_PRISM_SPEC`
/// (`scripts/prism-conformance.sh` installs both and sets them).
pub struct PrismSetup {
    pub command: PathBuf,
    pub spec: PathBuf,
}

impl PrismSetup {
    /// Both variables, naming the files; `Err` says what to set (the test is skipped then).
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        match (var("REPLAN_PRISM"), var("REPLAN_PRISM_SPEC")) {
            (Some(command), Some(spec)) => Ok(PrismSetup { command, spec }),
            _ => Err("set REPLAN_PRISM (the prism executable) and REPLAN_PRISM_SPEC (GitHub's OpenAPI description), or run scripts/prism-conformance.sh, which installs and sets both".to_owned()),
        }
    }
}

/// One entry of Prism's `sl-violations` header, with the request it was reported on.
#[derive(Debug, Clone)]
pub struct Violation {
    pub method: String,
    /// The path and query as sent.
    pub target: String,
    /// Where: `["request", "body"]`, `["request", "query", "state"]`, `["response"]`, ...
    pub location: Vec<String>,
    /// `Error` or `Warning` (an unknown route is a warning).
    pub severity: String,
    pub message: String,
}

impl Violation {
    /// A violation of the request (ours), not of the answer (the fake's).
    pub fn of_request(&self) -> bool {
        self.location.first().map(String::as_str) == Some("request")
    }

    /// `POST /repos/o/r/git/trees: request.body [Error] Request body must ...`.
    pub fn line(&self) -> String {
        format!(
            "{} {}: {} [{}] {}",
            self.method,
            self.target,
            self.location.join("."),
            self.severity,
            self.message
        )
    }
}

#[derive(Deserialize)]
struct Reported {
    #[serde(default)]
    location: Vec<Value>,
    #[serde(default)]
    severity: String,
    #[serde(default)]
    message: String,
}

#[derive(Default)]
struct Record {
    /// `"GET /repos/o/r/issues/1"` for every request forwarded, in order.
    requests: Vec<String>,
    violations: Vec<Violation>,
}

/// A running Prism and its recorder; both stop when dropped.
pub struct Prism {
    child: Child,
    log: NamedTempFile,
    recorder: TestServer,
    record: Arc<Mutex<Record>>,
}

/// How long Prism may take to load GitHub's description (~13 MB; about 30 s on a busy machine).
const STARTUP: Duration = Duration::from_secs(300);

impl Prism {
    /// Starts `prism proxy` on a free loopback port in front of `upstream` and waits until it
    /// listens; panics with the tail of its log when it does not.
    pub fn start(setup: &PrismSetup, upstream: &str) -> Self {
        let port = free_port();
        let log = NamedTempFile::new().expect("a temporary file for prism's log");
        let child = Command::new(&setup.command)
            .arg("proxy")
            .arg(&setup.spec)
            .arg(upstream)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--errors=false", "--verboseLevel", "warn"])
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("prism's log for stdout"))
            .stderr(log.reopen().expect("prism's log for stderr"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", setup.command.display()));
        let record = Arc::new(Mutex::new(Record::default()));
        let routes = MultiSegmentRoutes::of(&setup.spec);
        let recorder = TestServer::start(recorder(
            format!("http://127.0.0.1:{port}"),
            routes,
            record.clone(),
        ));
        let mut prism = Prism {
            child,
            log,
            recorder,
            record,
        };
        prism.wait_until_listening(port);
        prism
    }

    fn wait_until_listening(&mut self, port: u16) {
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("prism exited ({status}) before listening:\n{}", self.log());
            }
            if started.elapsed() > STARTUP {
                panic!("prism did not listen within {STARTUP:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        eprintln!("prism listens after {:.1?}", started.elapsed());
    }

    /// What Prism wrote, its last 4 KB.
    pub fn log(&self) -> String {
        let mut text = String::new();
        let _ = self
            .log
            .reopen()
            .and_then(|mut file| file.read_to_string(&mut text));
        let start = text.len().saturating_sub(4096);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }

    /// The URL to give the client (the recorder's).
    pub fn base_url(&self) -> String {
        self.recorder.base_url()
    }

    /// `"METHOD /path"` of every request that went through, in order.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    pub fn violations(&self) -> Vec<Violation> {
        self.lock().violations.clone()
    }

    /// Forgets the requests and violations so far.
    pub fn clear(&self) {
        *self.lock() = Record::default();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port for prism")
}

/// Forwards each request to `prism` and records the violations its answer reports.
fn recorder(prism: String, routes: MultiSegmentRoutes, record: Arc<Mutex<Record>>) -> Handler {
    install_crypto_provider();
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(120))
        .build()
        .expect("the recorder's HTTP client");
    Arc::new(move |request: FakeRequest| {
        let target = if request.query.is_empty() {
            request.path.clone()
        } else {
            format!("{}?{}", request.path, request.query)
        };
        let method = request.method.clone();
        let url = format!("{prism}{}", routes.for_prism(&target));
        let client = client.clone();
        // The handler runs on the server's runtime; the blocking client needs its own thread.
        let forwarded = std::thread::spawn(move || forward(&client, &url, request))
            .join()
            .expect("the forwarding thread");
        let mut record = record.lock().unwrap_or_else(|e| e.into_inner());
        record
            .requests
            .push(format!("{method} {}", target_path(&target)));
        match forwarded {
            Ok((response, reported)) => {
                record.violations.extend(reported.into_iter().map(|r| {
                    Violation {
                        method: method.clone(),
                        target: target.clone(),
                        location: r
                            .location
                            .iter()
                            .map(|part| match part {
                                Value::String(text) => text.clone(),
                                other => other.to_string(),
                            })
                            .collect(),
                        severity: r.severity,
                        message: r.message,
                    }
                }));
                response
            }
            Err(e) => FakeResponse::text(502, &format!("the recorder could not reach prism: {e}")),
        }
    })
}

fn target_path(target: &str) -> &str {
    target.split_once('?').map_or(target, |(path, _)| path)
}

/// Hop-by-hop and framing headers the recorder does not pass on (the body is re-framed).
const NOT_FORWARDED: [&str; 6] = [
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "accept-encoding",
];

fn forward(
    client: &reqwest::blocking::Client,
    url: &str,
    request: FakeRequest,
) -> Result<(FakeResponse, Vec<Reported>), String> {
    let method =
        reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|e| e.to_string())?;
    let mut builder = client.request(method, url);
    for (name, value) in &request.headers {
        if !NOT_FORWARDED.contains(&name.to_ascii_lowercase().as_str()) {
            builder = builder.header(name, value);
        }
    }
    if !request.body.is_empty() {
        builder = builder.body(request.body);
    }
    let response = builder.send().map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| !NOT_FORWARDED.contains(&name.as_str()))
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let reported = headers
        .iter()
        .filter(|(name, _)| name == "sl-violations")
        .flat_map(|(_, value)| reported(value))
        .collect();
    let body = response.bytes().map_err(|e| e.to_string())?.to_vec();
    Ok((
        FakeResponse {
            status,
            headers,
            body,
            delay: None,
        },
        reported,
    ))
}

/// The violations of one `sl-violations` header. Past a size Prism cuts the list off and writes
/// `Too many violations! [...` before it; the whole entries are kept, and the cut one still
/// says whether it was about the request (`location` comes first).
fn reported(header: &str) -> Vec<Reported> {
    if let Ok(all) = serde_json::from_str::<Vec<Reported>>(header) {
        return all;
    }
    const START: &str = r#"{"location":"#;
    let starts: Vec<usize> = header.match_indices(START).map(|(at, _)| at).collect();
    let mut out = Vec::new();
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(header.len());
        let fragment = header[start..end].trim_end().trim_end_matches([',', ']']);
        out.push(
            serde_json::from_str::<Reported>(fragment).unwrap_or_else(|_| Reported {
                location: vec![Value::from(
                    if fragment.starts_with(r#"{"location":["request""#) {
                        "request"
                    } else {
                        "response"
                    },
                )],
                severity: "Error".to_owned(),
                message: format!("(cut off by prism) {fragment}"),
            }),
        );
    }
    if out.is_empty() {
        out.push(Reported {
            location: vec![Value::from("request")],
            severity: "Error".to_owned(),
            message: format!("unreadable sl-violations header: {header}"),
        });
    }
    out
}

/// GitHub marks some path parameters `x-multi-segment`: a ref such as `heads/main` keeps its
/// slash in the path, as GitHub's "Get a reference" asks (`heads/<branch name>`). Prism does not
/// know the extension and finds no route for such a path. The recorder hands Prism those
/// parameters with their slashes encoded, so Prism routes the request and checks the rest of
/// it (the query, the body); the fake reads both forms alike.
struct MultiSegmentRoutes(Vec<Regex>);

impl MultiSegmentRoutes {
    fn of(spec: &Path) -> Self {
        let text = std::fs::read_to_string(spec)
            .unwrap_or_else(|e| panic!("reading {}: {e}", spec.display()));
        let spec: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", spec.display()));
        let mut routes: Vec<(usize, Regex)> = Vec::new();
        for (template, operations) in spec["paths"].as_object().into_iter().flatten() {
            let multi: BTreeSet<&str> = operations
                .as_object()
                .into_iter()
                .flat_map(|operations| operations.values())
                .flat_map(|operation| operation["parameters"].as_array().into_iter().flatten())
                .map(|parameter| resolve(&spec, parameter))
                .filter(|parameter| {
                    parameter["in"] == "path" && parameter["x-multi-segment"] == true
                })
                .filter_map(|parameter| parameter["name"].as_str())
                .collect();
            if multi.is_empty() {
                continue;
            }
            let mut pattern = String::from("^");
            let mut literals = 0;
            for segment in template.trim_start_matches('/').split('/') {
                pattern.push('/');
                match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) if multi.contains(name) => pattern.push_str("(?P<multi>.+?)"),
                    Some(_) => pattern.push_str("[^/]+"),
                    None => {
                        pattern.push_str(&regex::escape(segment));
                        literals += 1;
                    }
                }
            }
            pattern.push('$');
            routes.push((literals, Regex::new(&pattern).expect("a route pattern")));
        }
        // The most specific first: `/branches/{branch}/protection` before `/branches/{branch}`.
        routes.sort_by_key(|(literals, _)| std::cmp::Reverse(*literals));
        MultiSegmentRoutes(routes.into_iter().map(|(_, regex)| regex).collect())
    }

    /// `target` with the slashes of a multi-segment parameter encoded.
    fn for_prism(&self, target: &str) -> String {
        let (path, query) = target
            .split_once('?')
            .map_or((target, None), |(p, q)| (p, Some(q)));
        let Some(multi) = self
            .0
            .iter()
            .find_map(|route| route.captures(path).and_then(|found| found.name("multi")))
        else {
            return target.to_owned();
        };
        let path = format!(
            "{}{}{}",
            &path[..multi.start()],
            multi.as_str().replace('/', "%2F"),
            &path[multi.end()..]
        );
        match query {
            Some(query) => format!("{path}?{query}"),
            None => path,
        }
    }
}

/// A parameter, or the one its `$ref` names.
fn resolve<'a>(spec: &'a Value, parameter: &'a Value) -> &'a Value {
    match parameter["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => spec.pointer(pointer).unwrap_or(parameter),
        None => parameter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_segment_parameters_reach_prism_with_their_slashes_encoded() {
        let spec = tempfile::NamedTempFile::new().unwrap();
        let ref_param = serde_json::json!({
            "name": "ref", "in": "path", "required": true, "x-multi-segment": true,
            "schema": { "type": "string" }
        });
        let description = serde_json::json!({
            "components": { "parameters": { "git-ref-only": ref_param } },
            "paths": {
                "/repos/{owner}/{repo}/git/ref/{ref}": { "get": { "parameters": [
                    { "$ref": "#/components/parameters/git-ref-only" }
                ] } },
                "/repos/{owner}/{repo}/branches/{branch}": { "get": { "parameters": [
                    { "name": "branch", "in": "path", "x-multi-segment": true }
                ] } },
                "/repos/{owner}/{repo}/branches/{branch}/rename": { "post": { "parameters": [
                    { "name": "branch", "in": "path", "x-multi-segment": true }
                ] } },
                "/repos/{owner}/{repo}/issues/{number}": { "get": { "parameters": [
                    { "name": "number", "in": "path" }
                ] } }
            }
        });
        std::fs::write(spec.path(), description.to_string()).unwrap();
        let routes = MultiSegmentRoutes::of(spec.path());

        assert_eq!(
            routes.for_prism("/repos/o/r/git/ref/heads/replan/history?x=1"),
            "/repos/o/r/git/ref/heads%2Freplan%2Fhistory?x=1"
        );
        assert_eq!(
            routes.for_prism("/repos/o/r/branches/a/b/rename"),
            "/repos/o/r/branches/a%2Fb/rename"
        );
        assert_eq!(
            routes.for_prism("/repos/o/r/branches/a/b"),
            "/repos/o/r/branches/a%2Fb"
        );
        assert_eq!(
            routes.for_prism("/repos/o/r/issues/1"),
            "/repos/o/r/issues/1"
        );
    }

    #[test]
    fn a_cut_off_violations_header_keeps_whole_entries_and_the_side_of_the_cut_one() {
        let header = r#"Too many violations! [{"location":["request","body"],"severity":"Error","code":"required","message":"Request body must have required property 'sha'"},{"location":["response","body","0"],"severity":"Error","message":"one"},{"location":["request","query"],"severity":"Err"#;

        let found = reported(header);

        assert_eq!(found.len(), 3);
        assert_eq!(
            found[0].location,
            vec![Value::from("request"), Value::from("body")]
        );
        assert!(found[0].message.contains("'sha'"));
        assert_eq!(found[1].message, "one");
        assert_eq!(found[2].location, vec![Value::from("request")]);
        assert!(found[2].message.starts_with("(cut off by prism)"));
        assert_eq!(
            reported("garbage")[0].location,
            vec![Value::from("request")]
        );
    }
}
