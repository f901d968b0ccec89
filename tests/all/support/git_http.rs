//! git's smart HTTP for the bare repositories under one directory, as a forge serves pushes:
//! `git http-backend` (CGI) behind an `Authorization` check (401 without the expected header,
//! as GitHub answers a push without credentials). Each request is logged with its headers
//! (credentials redacted).

use super::git::isolated_git_env;
use super::server::{FakeRequest, FakeResponse, LoggedRequest, TestServer};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

pub struct GitHttp {
    server: TestServer,
    log: Arc<Mutex<Vec<LoggedRequest>>>,
}

impl GitHttp {
    /// Serve the repositories under `root` to clients that send `authorization` (the whole
    /// header value).
    pub fn start(root: &Path, authorization: &str) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (root, expected, logged) = (root.to_path_buf(), authorization.to_owned(), log.clone());
        let server = TestServer::start(Arc::new(move |request: FakeRequest| {
            let response = if request.header("authorization") == Some(expected.as_str()) {
                http_backend(&root, &request)
            } else {
                FakeResponse::text(401, "Unauthorized")
                    .with_header("www-authenticate", "Basic realm=\"git\"")
            };
            let mut log = logged.lock().unwrap();
            log.push(LoggedRequest::from_request(&request, response.status));
            response
        }));
        GitHttp { server, log }
    }

    /// `http://127.0.0.1:<port>/<name>`.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.server.base_url())
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.log.lock().unwrap().clone()
    }
}

/// One CGI request to `git http-backend`; the authenticated user may push (`REMOTE_USER`).
fn http_backend(root: &PathBuf, request: &FakeRequest) -> FakeResponse {
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .envs(isolated_git_env())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "replan")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", &request.method)
        .env("PATH_INFO", &request.path)
        .env("QUERY_STRING", &request.query)
        .env("CONTENT_TYPE", request.header("content-type").unwrap_or(""))
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("start git http-backend");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&request.body)
        .expect("send the request body to git http-backend");
    let output = child.wait_with_output().expect("git http-backend finishes");
    let split = output
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("git http-backend sends CGI headers");
    let head = String::from_utf8_lossy(&output.stdout[..split]).into_owned();
    let mut response = FakeResponse::empty(200);
    for line in head.split("\r\n") {
        let (name, value) = line.split_once(':').expect("a CGI header line");
        if name.eq_ignore_ascii_case("status") {
            response.status = value.trim()[..3].parse().expect("a CGI status");
        } else {
            response = response.with_header(name, value.trim());
        }
    }
    response.body = output.stdout[split + 4..].to_vec();
    response
}
