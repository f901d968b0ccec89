//! Per-user remote config (seed 001 §9.3): `GET {url}?user=<login>` with a bearer token,
//! answering `{"status":"success","data":{...}}`. Fails closed: once configured, any failure is
//! an error rather than a silent run with different settings.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::UserConfigApi;
use super::error::ConfigError;

/// Fetches the user's overrides; the result is a config tree like the repository file's.
pub(crate) async fn fetch(
    api: &UserConfigApi,
    user: &str,
    env: &BTreeMap<String, String>,
) -> Result<Value, ConfigError> {
    let shown = display_url(&api.url);
    let fail = |message: String| ConfigError::Remote {
        url: shown.clone(),
        message,
    };
    let mut url = url::Url::parse(&api.url).map_err(|e| fail(format!("not a URL: {e}")))?;
    url.query_pairs_mut().append_pair("user", user);

    let client = http_client(Duration::from_secs(api.timeout_seconds)).map_err(fail)?;
    let mut request = client.get(url).header("accept", "application/json");
    if let Some(var) = &api.token_env {
        let token = env.get(var).filter(|t| !t.is_empty()).ok_or_else(|| {
            fail(format!(
                "token variable {var} (user_config_api.token_env) is not set"
            ))
        })?;
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .map_err(|e| fail(format!("request failed: {}", without_url(&e))))?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("HTTP status {status}")));
    }
    let body: Value = response
        .json()
        .await
        .map_err(|e| fail(format!("response is not JSON: {}", without_url(&e))))?;
    match (body.get("status").and_then(Value::as_str), body.get("data")) {
        (Some("success"), Some(data @ Value::Object(_))) => Ok(data.clone()),
        (Some("success"), Some(Value::Null) | None) => Ok(Value::Object(Default::default())),
        (Some("success"), Some(_)) => Err(fail("`data` must be an object of config keys".into())),
        (status, _) => Err(fail(format!(
            "expected {{\"status\":\"success\",\"data\":{{...}}}}, got status {}",
            status.map_or_else(|| "missing".to_owned(), |s| format!("`{s}`"))
        ))),
    }
}

fn http_client(timeout: Duration) -> Result<reqwest::Client, String> {
    crate::http::client(timeout)
}

/// The URL as shown in messages and provenance: no credentials, no query.
pub(crate) fn display_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string()
        }
        Err(_) => raw.to_owned(),
    }
}

/// reqwest errors embed the full URL (with the user's login); the message says which URL.
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
        text = text.replace(url.as_str(), "<url>");
    }
    text
}
