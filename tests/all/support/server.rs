//! A tiny HTTP server for fakes: every request goes to one synchronous handler.
//!
//! The server runs on its own thread with its own tokio runtime, so it serves both
//! plain `#[test]`s (driving the built binary or a blocking client) and `#[tokio::test]`s.
//! Dropping the server stops it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use serde_json::Value;

/// A request as a fake sees it: the path is raw (still percent-encoded), like the wire.
#[derive(Debug, Clone)]
pub struct FakeRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl FakeRequest {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// A decoded query parameter.
    pub fn query_param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }

    /// The body as JSON; an empty body reads as `null`.
    pub fn json(&self) -> Result<Value, serde_json::Error> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body)
    }

    /// Path segments, percent-decoded, without the empty leading one.
    pub fn segments(&self) -> Vec<String> {
        self.path
            .trim_start_matches('/')
            .split('/')
            .map(percent_decode)
            .collect()
    }
}

/// What a fake answers.
#[derive(Debug, Clone)]
pub struct FakeResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (for time-out tests).
    pub delay: Option<Duration>,
}

impl FakeResponse {
    pub fn json(status: u16, value: &Value) -> Self {
        FakeResponse {
            status,
            headers: vec![(
                "content-type".into(),
                "application/json; charset=utf-8".into(),
            )],
            body: serde_json::to_vec(value).expect("JSON value serializes"),
            delay: None,
        }
    }

    pub fn text(status: u16, text: &str) -> Self {
        FakeResponse {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: text.as_bytes().to_vec(),
            delay: None,
        }
    }

    pub fn empty(status: u16) -> Self {
        FakeResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// One entry of a fake's request log. Credentials are redacted: an `Authorization`
/// header keeps its scheme (`Bearer <redacted>`), token headers read `<redacted>`.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The status the fake answered with.
    pub status: u16,
}

impl LoggedRequest {
    pub fn from_request(request: &FakeRequest, status: u16) -> Self {
        let headers = request
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), redact_header(name, value)))
            .collect();
        LoggedRequest {
            method: request.method.clone(),
            path: request.path.clone(),
            query: request.query.clone(),
            headers,
            body: String::from_utf8_lossy(&request.body).into_owned(),
            status,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON (`null` when empty or not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// `"PATCH /repos/o/r/git/refs/heads/x"`: handy for asserting on a sequence.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

fn redact_header(name: &str, value: &str) -> String {
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "authorization" => match value.split_once(' ') {
            Some((scheme, _)) => format!("{scheme} <redacted>"),
            None => "<redacted>".to_string(),
        },
        "private-token" | "job-token" | "x-api-key" => "<redacted>".to_string(),
        _ => value.to_string(),
    }
}

/// Decodes `%XX` escapes; malformed escapes are kept as they are.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let (Some(high), Some(low)) =
                (hex_value(bytes[index + 1]), hex_value(bytes[index + 2]))
        {
            out.push(high * 16 + low);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

pub type Handler = Arc<dyn Fn(FakeRequest) -> FakeResponse + Send + Sync>;

/// A running server; stops when dropped.
pub struct TestServer {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(handler: Handler) -> Self {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port for a fake");
        listener
            .set_nonblocking(true)
            .expect("make the fake's listener non-blocking");
        let addr = listener.local_addr().expect("fake listener address");
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("fake-server-{}", addr.port()))
            .spawn(move || serve(listener, handler, stopped))
            .expect("spawn the fake server thread");
        TestServer {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>` without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    listener: std::net::TcpListener,
    handler: Handler,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build the fake server's runtime");
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).expect("adopt the fake's listener");
        let app = axum::Router::new().fallback(move |request: Request| {
            let handler = handler.clone();
            async move { respond(handler, request).await }
        });
        // Not a graceful shutdown: dropping the runtime cancels open keep-alive
        // connections at once, so a test never waits on a client's idle pool.
        tokio::select! {
            _ = axum::serve(listener, app) => {}
            _ = stopped => {}
        }
    });
}

async fn respond(handler: Handler, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .map(|bytes| bytes.to_vec())
        .unwrap_or_default();
    let fake_request = FakeRequest {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let fake_response = handler(fake_request);
    if let Some(delay) = fake_response.delay {
        tokio::time::sleep(delay).await;
    }
    let mut builder = Response::builder().status(fake_response.status);
    for (name, value) in &fake_response.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Body::from(fake_response.body))
        .expect("fake response is well formed")
}
