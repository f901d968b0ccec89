//! Credentials out of the checkout's git config, at adoption (before any model action).
//!
//! actions/checkout leaves the job's token in `http.<url>.extraheader` (in `.git/config`, or in
//! a file `.git/config` includes); a GitLab runner leaves `CI_JOB_TOKEN` as `user:password` in
//! the remote URL; a developer may have a credential helper in the repository's config. A
//! command can read all of these. So Replan takes them out of the checkout's config, keeps them
//! in memory (and in the redactor), and hands them to its own git processes as `GIT_CONFIG_*`
//! variables ([`super::command`]), never writing them to a file a command can read.

use super::command::run;
use super::error::GitError;
use std::path::{Path, PathBuf};

/// What adoption takes from the checkout's config.
pub struct Taken {
    /// The private config's text: format, remotes (no credentials), identity, transport
    /// settings.
    pub config: String,
    /// Credentials as `(key, value)` settings for Replan's own git processes.
    pub credentials: Vec<(String, String)>,
}

/// One entry of `git config --list --show-origin`.
struct Entry {
    origin: PathBuf,
    key: String,
    value: String,
}

/// Keys copied into the private config (lower case, as `git config --list` prints them); a
/// key is copied when it equals an entry or starts with one ending in `.`.
const COPIED: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.checkstat",
    "core.trustctime",
    "core.quotepath",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.partialclone",
    "extensions.preciousobjects",
    "user.name",
    "user.email",
    "index.version",
];

/// Settings of a remote that are copied (`remote.<name>.<variable>`).
const REMOTE_VARIABLES: &[&str] = &[
    "url",
    "pushurl",
    "fetch",
    "push",
    "promisor",
    "partialclonefilter",
    "tagopt",
];

/// `http.*` variables that are not credentials and that a fetch or push may need.
const HTTP_VARIABLES: &[&str] = &[
    "sslcainfo",
    "sslcapath",
    "sslverify",
    "sslversion",
    "sslbackend",
    "proxy",
    "version",
    "postbuffer",
    "lowspeedlimit",
    "lowspeedtime",
];

fn is_credential(key: &str) -> bool {
    (key.starts_with("http.") && key.ends_with(".extraheader")) || key.starts_with("credential.")
}

/// Read the checkout's config (with includes), write the private config's text, and take the
/// credentials out of the checkout's config files. `git_dir` is the checkout's own git
/// directory.
pub fn take(
    work_tree: &Path,
    git_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Taken, GitError> {
    let listed = run(
        work_tree,
        &[
            "config",
            "--local",
            "--includes",
            "--show-origin",
            "--null",
            "--list",
        ],
        &[],
    )
    .unwrap_or_default();
    let entries = parse(&listed);
    let mut config = String::new();
    config.push_str("[core]\n\tbare = false\n");
    let mut credentials = Vec::new();
    let mut secrets = Vec::new();
    for entry in &entries {
        let key = entry.key.as_str();
        if key.starts_with("http.") && key.ends_with(".extraheader") {
            secrets.extend(header_secrets(&entry.value));
            credentials.push((key.to_owned(), entry.value.clone()));
            continue;
        }
        if key.starts_with("credential.") {
            continue;
        }
        if let Some((remote, variable)) = remote_key(key) {
            if !REMOTE_VARIABLES.contains(&variable) {
                continue;
            }
            let mut value = entry.value.clone();
            if matches!(variable, "url" | "pushurl")
                && let Some((bare, user, password)) = split_userinfo(&value)
            {
                use base64::Engine as _;
                let basic =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                secrets.push(password.clone());
                secrets.push(basic.clone());
                credentials.push((
                    format!("http.{bare}.extraheader"),
                    format!("Authorization: Basic {basic}"),
                ));
                value = bare;
            }
            config.push_str(&setting(&format!("remote.{remote}"), variable, &value));
            continue;
        }
        let copied = COPIED.contains(&key)
            || key
                .strip_prefix("http.")
                .and_then(|rest| rest.rsplit_once('.').map(|(_, v)| v).or(Some(rest)))
                .is_some_and(|variable| HTTP_VARIABLES.contains(&variable))
            || (key.starts_with("url.")
                && (key.ends_with(".insteadof") || key.ends_with(".pushinsteadof")));
        if copied && let Some((section, variable)) = key.rsplit_once('.') {
            config.push_str(&setting(section, variable, &entry.value));
        }
    }
    if credentials.is_empty()
        && let Some(origin) = entries.iter().find(|e| e.key == "remote.origin.url")
        && let Some((key, value, secret)) = from_job(&origin.value, env)
    {
        secrets.push(secret);
        credentials.push((key, value));
    }
    crate::outbound::add_secrets(secrets);
    strip(work_tree, git_dir, &entries);
    if !credentials.is_empty() {
        tracing::info!(
            "git: took {} credential setting(s) out of the checkout's git config; Replan's own \
             git uses them from memory",
            credentials.len()
        );
    }
    Ok(Taken {
        config,
        credentials,
    })
}

/// A checkout made without persisted credentials (`persist-credentials: false`, GitLab's
/// `FF_GIT_URLS_WITHOUT_TOKENS`) still needs them for Replan's own fetches of a private
/// repository: the job's token, as the header its forge takes, for `origin`'s server only —
/// `GITHUB_TOKEN` on `GITHUB_SERVER_URL` (default github.com), `CI_JOB_TOKEN` on `CI_SERVER_URL`.
fn from_job(
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, String, String)> {
    use base64::Engine as _;
    let present = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let (server, user, token) = if let Some(token) = present("GITHUB_TOKEN") {
        let server = present("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        (server, "x-access-token", token)
    } else {
        (
            present("CI_SERVER_URL")?,
            "gitlab-ci-token",
            present("CI_JOB_TOKEN")?,
        )
    };
    let server = format!("{}/", server.trim_end_matches('/'));
    if !server.starts_with("https://") || !origin.starts_with(&server) {
        return None;
    }
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
    Some((
        format!("http.{server}.extraheader"),
        format!("AUTHORIZATION: basic {basic}"),
        basic,
    ))
}

/// The secrets an `extraheader` value holds: the value after the scheme, and for Basic the
/// password it encodes.
fn header_secrets(header: &str) -> Vec<String> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let value = header.split_once(':').map_or(header, |(_, v)| v).trim();
    let (scheme, credential) = value.split_once(' ').unwrap_or(("", value));
    out.push(credential.trim().to_owned());
    if scheme.eq_ignore_ascii_case("basic")
        && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credential.trim())
        && let Ok(text) = String::from_utf8(decoded)
    {
        let password = text.split_once(':').map_or(text.as_str(), |(_, p)| p);
        out.push(password.to_owned());
    }
    out.retain(|s| s.len() >= 8);
    out
}

/// `remote.<name>.<variable>` split into name and variable.
fn remote_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("remote.")?;
    rest.rsplit_once('.')
}

/// `https://user:password@host/path` → (`https://host/path`, user, password).
fn split_userinfo(url: &str) -> Option<(String, String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.starts_with("http") {
        return None;
    }
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (userinfo, host) = rest[..authority_end].rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    Some((
        format!("{scheme}://{host}{}", &rest[authority_end..]),
        decode(user),
        decode(password),
    ))
}

/// One `[section "sub"] variable = "value"` block (git config's quoting).
fn setting(section: &str, variable: &str, value: &str) -> String {
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let header = match section.split_once('.') {
        Some((name, sub)) => format!("[{name} \"{}\"]", quote(sub)),
        None => format!("[{section}]"),
    };
    let value = quote(value).replace('\n', "\\n").replace('\t', "\\t");
    format!("{header}\n\t{variable} = \"{value}\"\n")
}

/// `file:<path>\0<key>\n<value>\0…` from `--show-origin --null --list`.
fn parse(listed: &str) -> Vec<Entry> {
    let mut parts = listed.split('\0');
    let mut entries = Vec::new();
    while let (Some(origin), Some(pair)) = (parts.next(), parts.next()) {
        let Some(origin) = origin.strip_prefix("file:") else {
            continue;
        };
        let (key, value) = pair.split_once('\n').unwrap_or((pair, ""));
        entries.push(Entry {
            origin: PathBuf::from(origin),
            key: key.to_owned(),
            value: value.to_owned(),
        });
    }
    entries
}

/// Take the credentials out of the checkout's config files: credential settings in
/// `.git/config` are removed, a file it includes that holds any is no longer included, and
/// remote URLs lose their `user:password@`.
fn strip(work_tree: &Path, git_dir: &Path, entries: &[Entry]) {
    let own = git_dir.join("config");
    // `--show-origin` names files relative to where git ran: the work tree.
    let config_file = |entry: &Entry| {
        let origin = if entry.origin.is_absolute() {
            entry.origin.clone()
        } else {
            work_tree.join(&entry.origin)
        };
        origin.canonicalize().unwrap_or(origin)
    };
    let own_canonical = own.canonicalize().unwrap_or_else(|_| own.clone());
    let file = own.to_string_lossy().into_owned();
    // A failed edit (the key already gone: a second value of the same key) leaves nothing
    // behind that the listing showed; it is logged, not fatal.
    let edit = |args: &[&str]| {
        let mut all = vec!["config", "--file", file.as_str()];
        all.extend_from_slice(args);
        if let Err(e) = run(git_dir, &all, &[]) {
            tracing::debug!("git: editing the checkout's config: {}", e.message);
        }
    };
    let mut included_with_credentials: Vec<PathBuf> = Vec::new();
    for entry in entries {
        if !is_credential(&entry.key) {
            continue;
        }
        let origin = config_file(entry);
        if origin == own_canonical {
            edit(&["--unset-all", &entry.key]);
        } else if !included_with_credentials.contains(&origin) {
            included_with_credentials.push(origin);
        }
    }
    for entry in entries {
        let is_include = entry.key == "include.path"
            || (entry.key.starts_with("includeif.") && entry.key.ends_with(".path"));
        if !is_include || config_file(entry) != own_canonical {
            continue;
        }
        let target = Path::new(&entry.value);
        let target = if target.is_absolute() {
            target.to_path_buf()
        } else {
            git_dir.join(target)
        };
        let target = target.canonicalize().unwrap_or(target);
        if included_with_credentials.contains(&target) {
            edit(&["--unset-all", "--fixed-value", &entry.key, &entry.value]);
        }
    }
    for entry in entries {
        if let Some((_, "url" | "pushurl")) = remote_key(&entry.key)
            && config_file(entry) == own_canonical
            && let Some((bare, _, _)) = split_userinfo(&entry.value)
        {
            edit(&[
                "--replace-all",
                "--fixed-value",
                &entry.key,
                &bare,
                &entry.value,
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_token_serves_only_origins_own_server() {
        let env = |name: &str| match name {
            "GITHUB_TOKEN" => Some("ghs_0123456789abcdef".to_owned()),
            _ => None,
        };
        let (key, value, _) = from_job("https://github.com/o/r", &env).unwrap();
        assert_eq!(key, "http.https://github.com/.extraheader");
        assert!(value.starts_with("AUTHORIZATION: basic "), "{value}");
        assert_eq!(from_job("https://evil.example/o/r", &env), None);
        assert_eq!(from_job("https://github.com.evil.example/o/r", &env), None);
        let gitlab = |name: &str| match name {
            "CI_SERVER_URL" => Some("https://gitlab.example.com".to_owned()),
            "CI_JOB_TOKEN" => Some("glcbt-0123456789".to_owned()),
            _ => None,
        };
        assert!(from_job("https://gitlab.example.com/g/p.git", &gitlab).is_some());
        assert_eq!(from_job("http://gitlab.example.com/g/p.git", &gitlab), None);
    }

    #[test]
    fn a_url_loses_its_userinfo() {
        assert_eq!(
            split_userinfo("https://gitlab-ci-token:glcbt-abc%40x@gitlab.example.com/g/p.git"),
            Some((
                "https://gitlab.example.com/g/p.git".into(),
                "gitlab-ci-token".into(),
                "glcbt-abc@x".into()
            ))
        );
        assert_eq!(split_userinfo("https://github.com/o/r"), None);
        assert_eq!(split_userinfo("git@github.com:o/r.git"), None);
    }

    #[test]
    fn settings_are_quoted_as_git_reads_them() {
        assert_eq!(
            setting("remote.origin", "url", "https://h/p \"q\""),
            "[remote \"origin\"]\n\turl = \"https://h/p \\\"q\\\"\"\n"
        );
        assert_eq!(
            setting("http.https://github.com/", "sslverify", "true"),
            "[http \"https://github.com/\"]\n\tsslverify = \"true\"\n"
        );
    }

    #[test]
    fn a_basic_header_yields_its_password() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode("x-access-token:ghs_0123456789");
        let secrets = header_secrets(&format!("AUTHORIZATION: basic {b64}"));
        assert!(secrets.contains(&b64), "{secrets:?}");
        assert!(
            secrets.contains(&"ghs_0123456789".to_owned()),
            "{secrets:?}"
        );
    }
}
