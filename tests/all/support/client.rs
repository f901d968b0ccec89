//! A blocking HTTP client for tests that talk to the fakes directly.

/// reqwest is built without a default crypto provider (the product installs ring in
/// `main`); tests install it too before building a client.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A blocking client with a User-Agent, as every GitHub client must send one.
pub fn blocking_client() -> reqwest::blocking::Client {
    install_crypto_provider();
    reqwest::blocking::Client::builder()
        .user_agent("replan-tests")
        .build()
        .expect("build a blocking HTTP client")
}

/// The same without a User-Agent, for testing what the fakes do about it.
pub fn blocking_client_without_user_agent() -> reqwest::blocking::Client {
    install_crypto_provider();
    reqwest::blocking::Client::builder()
        .build()
        .expect("build a blocking HTTP client")
}

/// A response read whole: status, headers and the body as text and JSON.
#[derive(Debug)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    /// `null` when the body is empty or not JSON.
    pub json: serde_json::Value,
}

impl ApiResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The URL of a `Link` header relation (`next`, `last`...).
    pub fn link(&self, rel: &str) -> Option<String> {
        let links = self.header("link")?;
        links.split(',').find_map(|link| {
            let (url, params) = link.split_once(';')?;
            params.contains(&format!("rel=\"{rel}\"")).then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
        })
    }
}

/// A tiny JSON client for the fakes: one base URL, one credential header.
pub struct ApiClient {
    client: reqwest::blocking::Client,
    base_url: String,
    credential: Option<(String, String)>,
}

impl ApiClient {
    /// `credential` is a header, e.g. `("authorization", "Bearer …")` or `("private-token", "…")`.
    pub fn new(base_url: &str, credential: Option<(&str, &str)>) -> Self {
        ApiClient {
            client: blocking_client(),
            base_url: base_url.trim_end_matches('/').to_string(),
            credential: credential.map(|(name, value)| (name.to_string(), value.to_string())),
        }
    }

    /// A client for a fake GitHub, authenticated with its token.
    pub fn github(fake: &super::FakeGitHub) -> Self {
        ApiClient::new(
            &fake.base_url(),
            Some(("authorization", &format!("Bearer {}", fake.token()))),
        )
    }

    /// A client for a fake GitLab's API (`…/api/v4`), with its access token.
    pub fn gitlab(fake: &super::FakeGitLab) -> Self {
        ApiClient::new(&fake.api_url(), Some(("private-token", &fake.token())))
    }

    /// A client for a fake GitLab's API with only the CI job token.
    pub fn gitlab_job(fake: &super::FakeGitLab) -> Self {
        ApiClient::new(&fake.api_url(), Some(("job-token", &fake.job_token())))
    }

    pub fn get(&self, path: &str) -> ApiResponse {
        self.request("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &serde_json::Value) -> ApiResponse {
        self.request("POST", path, Some(body))
    }

    pub fn patch(&self, path: &str, body: &serde_json::Value) -> ApiResponse {
        self.request("PATCH", path, Some(body))
    }

    pub fn put(&self, path: &str, body: &serde_json::Value) -> ApiResponse {
        self.request("PUT", path, Some(body))
    }

    pub fn delete(&self, path: &str) -> ApiResponse {
        self.request("DELETE", path, None)
    }

    /// `path` is relative to the base URL, or a full URL (e.g. from a `Link` header).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> ApiResponse {
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{path}", self.base_url)
        };
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("HTTP method");
        let mut request = self.client.request(method, url);
        if let Some((name, value)) = &self.credential {
            request = request.header(name, value);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().expect("send a request to a fake");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().expect("read a fake's response body");
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        ApiResponse {
            status,
            headers,
            text,
            json,
        }
    }
}
