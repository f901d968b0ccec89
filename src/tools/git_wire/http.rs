//! A push over git's smart HTTP (`Documentation/gitprotocol-http`): the ref advertisement from
//! `GET …/info/refs?service=git-receive-pack`, the command and pack in one
//! `POST …/git-receive-pack`, without starting `git push`, `git-remote-https` and
//! `git pack-objects`.

use super::pkt_line;
use super::receive_pack::{Advertised, Update, check_report, request};

/// A remote reached over HTTP(S): its URL as `git remote get-url --push` gives it, and the
/// headers git would add (`http.extraHeader`, which holds the token of a CI checkout).
#[derive(Clone)]
pub struct HttpRemote {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpRemote {
    // The headers carry credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HttpRemote({}, {} header(s))",
            self.url,
            self.headers.len()
        )
    }
}

const SERVICE: &str = "git-receive-pack";

impl HttpRemote {
    fn with_headers(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }

    /// The first half of a push: the ref advertisement, read before the commit to push exists.
    pub async fn open(&self) -> Result<Opened, String> {
        let client = crate::http::builder()?
            // git follows no redirect of a push's POST, and a redirect may leave the origin the
            // headers were meant for.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(300))
            .build()
            .map_err(|e| format!("HTTP client setup failed: {e}"))?;
        let base = self.url.trim_end_matches('/');
        let refs = self
            .with_headers(client.get(format!("{base}/info/refs?service={SERVICE}")))
            .send()
            .await;
        let body = Self::body(refs, "advertisement").await?;
        let mut input = body.as_slice();
        let announced = pkt_line::read_until_flush(&mut input)
            .ok_or("the remote sent no service announcement")?;
        if announced.first().map(Vec::as_slice) != Some(format!("# service={SERVICE}").as_bytes()) {
            return Err("the remote does not speak git's smart HTTP".to_owned());
        }
        let lines = pkt_line::read_until_flush(&mut input)
            .ok_or("the remote's ref advertisement is cut off")?;
        Ok(Opened {
            remote: self.clone(),
            client,
            advertised: Advertised::parse(&lines)?,
        })
    }

    /// The body of a `200` answer of content type `application/x-git-receive-pack-<kind>`.
    async fn body(
        answer: Result<reqwest::Response, reqwest::Error>,
        kind: &str,
    ) -> Result<Vec<u8>, String> {
        // Only the status: reqwest's errors name the URL, which may say where the token is for.
        let answer = answer.map_err(|e| format!("the request failed ({})", kind_of(&e)))?;
        if answer.status() != reqwest::StatusCode::OK {
            return Err(format!("the remote answered {}", answer.status()));
        }
        let expected = format!("application/x-{SERVICE}-{kind}");
        let content_type = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if content_type != expected {
            return Err(format!(
                "the remote answered with `{content_type}`, not `{expected}`"
            ));
        }
        let bytes = answer
            .bytes()
            .await
            .map_err(|e| format!("reading the answer failed ({})", kind_of(&e)))?;
        Ok(bytes.to_vec())
    }
}

/// An HTTP push whose advertisement was read: the second half sends the command and the pack.
pub struct Opened {
    remote: HttpRemote,
    client: reqwest::Client,
    advertised: Advertised,
}

impl Opened {
    /// Send `update` and `pack` in one `POST …/git-receive-pack` and read the report.
    pub async fn push(self, update: &Update<'_>, pack: &[u8]) -> Result<(), String> {
        let sent = request(&self.advertised, update, pack)?;
        let base = self.remote.url.trim_end_matches('/');
        let answer = self
            .remote
            .with_headers(self.client.post(format!("{base}/{SERVICE}")))
            .header("Content-Type", format!("application/x-{SERVICE}-request"))
            .header("Accept", format!("application/x-{SERVICE}-result"))
            .body(sent)
            .send()
            .await;
        let body = HttpRemote::body(answer, "result").await?;
        let report = pkt_line::read_until_flush(&mut body.as_slice())
            .ok_or("the remote's report is cut off")?;
        check_report(&report, update.branch)
    }
}

fn kind_of(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "time-out"
    } else if error.is_connect() {
        "no connection"
    } else {
        "transport error"
    }
}
