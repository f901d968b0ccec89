//! Pushing a work-branch save without `git push`: the save knows the few objects it added
//! (see [`crate::tools::git::Snapshots`]), so it packs them in-process and speaks git's push
//! protocol itself, to `git receive-pack` for a remote on this machine or over smart HTTP.
//! A `git push` starts three to five processes on the save's path (issue 15's cycle overhead).
//! Only where `git push` would do nothing more: no pre-push hook, no signed pushes or push
//! options, no HTTP settings but extra headers and CA roots (see [`PushSettings`]). Every failure is left to `git push`, which
//! also decides what a remote that moved means.

mod http;
mod local;
pub(crate) mod pack;
mod pkt_line;
mod receive_pack;
pub(crate) mod settings;

pub use http::HttpRemote;
use receive_pack::Update;
pub use settings::PushSettings;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a push goes when git is not asked to.
#[derive(Debug, Clone)]
pub enum Remote {
    Local(PathBuf),
    Http(HttpRemote),
}

/// A commit to push, the branch value the push expects on the remote (`None`: no branch yet)
/// and the pack of the objects the remote does not have.
pub struct Outgoing {
    pub commit: String,
    pub old: Option<String>,
    pub pack: Arc<Vec<u8>>,
}

/// A push whose first half is done: the remote's side has advertised its refs (a
/// `git receive-pack` waiting on this machine, or the answer of `GET …/info/refs`), so a save
/// can start it beside its `git add` and commit and send the pack the moment it is made.
pub struct Opened(Session);

enum Session {
    Local(local::Receiving),
    Http(http::Opened),
}

impl Remote {
    /// Make `branch` on the remote `outgoing.commit`.
    pub async fn push(&self, branch: &str, outgoing: &Outgoing) -> Result<(), String> {
        self.open().await?.push(branch, outgoing).await
    }

    /// Start a push before its commit exists (see [`Opened`]). The remote's branch may move
    /// before the pack is sent; the update then fails as it would have a moment later, since
    /// the command names the value the branch must still have.
    pub async fn open(&self) -> Result<Opened, String> {
        let session = match self {
            Remote::Local(path) => {
                let path = path.clone();
                let opened = tokio::task::spawn_blocking(move || local::open(&path))
                    .await
                    .map_err(|e| format!("the push stopped: {e}"))??;
                Session::Local(opened)
            }
            Remote::Http(remote) => Session::Http(remote.open().await?),
        };
        Ok(Opened(session))
    }

    /// How `git push` would reach `url` from `repo` with `headers` (besides the configured
    /// ones) under `settings`, when this module can do the same: `None` for another transport,
    /// credentials in the URL, a relative path, or settings only git honours. Blocking: an
    /// HTTP remote's settings come from `git config`.
    pub fn resolve(
        repo: &Path,
        settings: &PushSettings,
        url: &str,
        headers: Vec<(String, String)>,
    ) -> Option<Remote> {
        if settings.pushes_differently(repo) {
            return None;
        }
        let path = url.strip_prefix("file://").unwrap_or(url);
        if path.starts_with('/') {
            return Some(Remote::Local(PathBuf::from(path)));
        }
        let parsed = url::Url::parse(url).ok()?;
        let plain = matches!(parsed.scheme(), "http" | "https")
            && parsed.username().is_empty()
            && parsed.password().is_none();
        if !plain || git_http_variables() {
            return None;
        }
        let mut all = http_headers(repo, url)?;
        all.extend(headers);
        Some(Remote::Http(HttpRemote {
            url: url.to_owned(),
            headers: all,
        }))
    }
}

impl Opened {
    /// Make `branch` on the remote `outgoing.commit`.
    pub async fn push(self, branch: &str, outgoing: &Outgoing) -> Result<(), String> {
        match self.0 {
            Session::Local(receiving) => {
                let branch = branch.to_owned();
                let (old, new, pack) = (
                    outgoing.old.clone(),
                    outgoing.commit.clone(),
                    outgoing.pack.clone(),
                );
                tokio::task::spawn_blocking(move || {
                    let update = Update {
                        branch: &branch,
                        old: old.as_deref(),
                        new: &new,
                    };
                    receiving.push(&update, &pack)
                })
                .await
                .map_err(|e| format!("the push stopped: {e}"))?
            }
            Session::Http(opened) => {
                let update = Update {
                    branch,
                    old: outgoing.old.as_deref(),
                    new: &outgoing.commit,
                };
                opened.push(&update, &outgoing.pack).await
            }
        }
    }
}

/// Settings of which roots git trusts: our TLS trusts the Mozilla roots only, so a server they
/// do not vouch for fails the handshake and `git push` (with these settings) takes over.
const CA_SETTINGS: &[&str] = &[
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "http.sslcainfo",
    "http.sslcapath",
];

/// Environment that changes how git speaks HTTP (client certificates, no verification, proxies,
/// cURL options), except [`CA_SETTINGS`].
fn git_http_variables() -> bool {
    std::env::vars_os().any(|(name, _)| {
        let name = name.to_string_lossy();
        let http = [
            "GIT_SSL_",
            "GIT_HTTP_",
            "GIT_CURL_",
            "GIT_PROXY_",
            "GIT_TRACE_CURL",
        ];
        http.iter().any(|p| name.starts_with(p)) && !CA_SETTINGS.contains(&name.as_ref())
    })
}

/// The `http.extraHeader` values git would send to `url`; `None` when any other `http.*`
/// setting but [`CA_SETTINGS`] applies there (a proxy, a client certificate, a cookie file…).
fn http_headers(repo: &Path, url: &str) -> Option<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for (key, value) in settings::config_entries(repo, &["--get-urlmatch", "http", url])? {
        if CA_SETTINGS.contains(&key.as_str()) {
            continue;
        }
        if key != "http.extraheader" {
            return None;
        }
        // An empty value resets the list in git.
        if value.is_empty() {
            headers.clear();
            continue;
        }
        let (name, value) = value.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Some(headers)
}
