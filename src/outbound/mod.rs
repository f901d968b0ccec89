//! Everything that leaves the process passes one redactor: the run's secret set.
//!
//! # The secret set
//!
//! Read once at start-up ([`init`], first thing in `main`): the value (6+ characters) of every
//! environment variable whose name contains `TOKEN`, `KEY`, `SECRET`, `PASSWORD`, `PASSWD`,
//! `CREDENTIAL` or `AUTH` (any case; `AUTHOR`, as in `GIT_AUTHOR_NAME`, is a name, not a
//! credential). Once the configuration is loaded the run adds the LLM key (`llm.api_key_env`,
//! whatever its name) and `secrets.extra_values` ([`add_secrets`]), each with the name of the
//! variable (or setting) it came from, which only [`secret_scan`] reports. Each value is also
//! masked in its base64, percent-encoded, JSON-escaped, hex, reversed and split forms
//! ([`forms`]); every occurrence becomes exactly `***`.
//!
//! # Why redaction sits at the exits, not at the call sites
//!
//! A helper that each surface must remember to call is how secrets leaked before (masked in the
//! checklist, not in `post_comment`). Instead each *kind* of byte leaves through one place, and
//! that place redacts, so a new comment, log line or prompt cannot skip it:
//!
//! | bytes | the one exit | |
//! |---|---|---|
//! | stdout, stderr (logs, `println!`, workflow commands, panics, inherited child output) | file descriptors 1 and 2 are pipes read by [`stdio`] | every line |
//! | forge writes: comments, notes, PR/MR titles and bodies (the model's `post_comment` and `open_pull_request` too) | [`crate::forge::redacting`], the outermost layer of the only `Forge` the run hands out | every text argument |
//! | LLM requests: prompts (issue text included), tool results | `llm::http::HttpClient::post_json` | every JSON string |
//! | history entries | `history::jsonl::to_line`, the one serializer | every JSON string |
//! | commit messages of the pull-request branch | `tools::git::commit_working_tree` | the message |
//! | file content the model writes (and a pull request pushes) | `write_file`, `edit_file`, `apply_patch` arguments | known values only ([`redact_known`]) |
//! | `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY` | `actions::outputs::append`, `actions::summary::append` | every value |
//!
//! The one exemption the redactor allows itself, the model's own assistant turns echoed back to
//! it, is not taken: the whole request body is redacted, which costs nothing, because the model
//! never receives a secret it could have echoed.
//!
//! What this cannot cover: bytes a sandboxed command writes into workspace files that a pull
//! request then pushes (Replan does not compose those, so it does not change them: a push is
//! scanned with [`secret_scan::find`] instead, and refused on a hit), and a secret transformed
//! in a way [`forms`] does not list (encrypted, compressed, split at irregular offsets). The
//! sandbox (`crate::sandbox`) and the scrubbed child environment keep secrets out of the
//! commands' reach in the first place.

pub mod forms;
pub mod named_secret;
pub(crate) mod redactor;
pub mod secret_scan;
pub mod stdio;

pub use named_secret::{NamedSecret, SecretInput};
pub use redactor::{Redactor, SharedRedactor};
pub use secret_scan::SecretHit;
use serde_json::Value;
use std::sync::LazyLock;

/// Fragments of an environment variable name that mark its value as a secret.
pub const SECRET_NAME_MARKERS: &[&str] = &[
    "TOKEN",
    "KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];

/// Whether the variable `name` holds a secret by its name (see the module docs).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name
        .to_ascii_uppercase()
        .replace("AUTHORIZ", "AUTHZ")
        .replace("AUTHOR", "");
    SECRET_NAME_MARKERS
        .iter()
        .any(|marker| upper.contains(marker))
}

/// The secrets among `vars` (normally `std::env::vars()`), each named by its variable.
pub fn secret_values(vars: impl IntoIterator<Item = (String, String)>) -> Vec<NamedSecret> {
    vars.into_iter()
        .filter(|(name, value)| is_secret_name(name) && !value.trim().is_empty())
        .map(|(name, value)| NamedSecret { name, value })
        .collect()
}

static SECRETS: LazyLock<SharedRedactor> = LazyLock::new(|| {
    let vars = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)));
    SharedRedactor::new(Redactor::new(secret_values(vars)))
});

/// Reads the secret set from the environment now (start-up), not at the first redaction.
pub fn init() {
    LazyLock::force(&SECRETS);
}

/// The process-wide secret set every exit redacts with.
pub fn secrets() -> SharedRedactor {
    SECRETS.clone()
}

/// Adds values learned later (the configured LLM key, `secrets.extra_values`), bare or named
/// ([`NamedSecret`], for the push scan's report).
pub fn add_secrets<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: SecretInput,
{
    SECRETS.add_secrets(values);
}

/// `text` with every secret (and token shape) replaced by `***`.
pub fn redact(text: &str) -> String {
    SECRETS.redact(text)
}

/// `text` with the known secret values masked, token shapes left alone: for what the model
/// writes into files (`write_file`, `edit_file`, `apply_patch`), which a pull request pushes.
pub fn redact_known(text: &str) -> String {
    SECRETS.current().redact_known(text).into_owned()
}

/// Whether the serialised JSON document `json` holds nothing [`redact_json_with`] would mask, told
/// from its text alone: each string of the document appears in it as it is or JSON-escaped,
/// the redactor knows the escaped form of every secret form (see [`forms`]), and no
/// token shape's literal holds a character JSON escapes.
pub fn serialized_json_is_clean(json: &str) -> bool {
    SECRETS.current().holds_nothing_in(json)
}

/// `value` serialised as it may leave the process: every string in it, object keys included,
/// redacted. Serialised once and searched as a whole (past what it shares with the last clean
/// document); the strings are redacted one by one only when that search finds something (see
/// [`serialized_json_is_clean`]).
pub fn redacted_json_text(value: &Value) -> bytes::Bytes {
    let text = serde_json::to_vec(value).expect("a JSON value always serialises");
    let redactor = SECRETS.current();
    if redactor.holds_nothing_in_document(&text) {
        return text.into();
    }
    let redacted = redact_json_with(&redactor, value);
    serde_json::to_vec(&redacted)
        .expect("a JSON value always serialises")
        .into()
}

/// `value` with every string in it, object keys included, redacted by `redactor` (one snapshot
/// for a whole document); `value` itself when nothing in it is masked.
pub fn redact_json_with<'a>(redactor: &Redactor, value: &'a Value) -> std::borrow::Cow<'a, Value> {
    if !masks_something(redactor, value) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut copy = value.clone();
    redact_json_in_place(redactor, &mut copy);
    std::borrow::Cow::Owned(copy)
}

/// Whether redacting `text` would change it.
fn masks(redactor: &Redactor, text: &str) -> bool {
    matches!(redactor.redact(text), std::borrow::Cow::Owned(_))
}

/// Whether redacting `value` would change a string or a key in it.
fn masks_something(redactor: &Redactor, value: &Value) -> bool {
    match value {
        Value::String(text) => masks(redactor, text),
        Value::Array(items) => items.iter().any(|item| masks_something(redactor, item)),
        Value::Object(map) => map
            .iter()
            .any(|(key, item)| masks(redactor, key) || masks_something(redactor, item)),
        _ => false,
    }
}

/// [`redact_json_with`] on a value the caller owns: only the strings that hold a secret are replaced,
/// nothing else is copied (every history line and LLM request passes here).
pub fn redact_owned_json(mut value: Value) -> Value {
    redact_json_in_place(&SECRETS.current(), &mut value);
    value
}

fn redact_json_in_place(redactor: &Redactor, value: &mut Value) {
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(masked) = redactor.redact(text) {
                *text = masked;
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_json_in_place(redactor, item);
            }
        }
        Value::Object(map) => {
            let masks_a_key = map.keys().any(|key| masks(redactor, key));
            if masks_a_key {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(key, mut item)| {
                        redact_json_in_place(redactor, &mut item);
                        (redactor.redact(&key).into_owned(), item)
                    })
                    .collect();
            } else {
                for item in map.values_mut() {
                    redact_json_in_place(redactor, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names_follow_the_markers_but_not_author() {
        for name in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "db_password",
            "MY_PASSWD",
            "AWS_SECRET_ACCESS_KEY",
            "NPM_AUTH",
            "HTTP_AUTHORIZATION",
            "GCP_CREDENTIALS",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "RUST_LOG",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn json_strings_and_keys_are_redacted_structure_kept() {
        let redactor = Redactor::new(["canary-4f2a9c"]);
        let value =
            json!({"a": ["x canary-4f2a9c y", 3], "canary-4f2a9c": {"b": "Y2FuYXJ5LTRmMmE5Yw"}});
        let out = redact_json_with(&redactor, &value);
        assert_eq!(*out, json!({"a": ["x *** y", 3], "***": {"b": "***"}}));
    }

    #[test]
    fn a_json_value_with_nothing_to_mask_is_not_copied() {
        let redactor = Redactor::new(["canary-4f2a9c"]);
        let clean = json!({"messages": [{"role": "user", "content": "write the notes"}]});
        assert!(matches!(
            redact_json_with(&redactor, &clean),
            std::borrow::Cow::Borrowed(_)
        ));
        let key_only = json!({"canary-4f2a9c": 1});
        assert_eq!(*redact_json_with(&redactor, &key_only), json!({"***": 1}));
    }

    #[test]
    fn a_request_body_is_sent_as_serialised_unless_a_string_in_it_holds_a_secret() {
        add_secrets(["canary-request-7d1e0b"]);
        let clean = json!({"messages": [{"role": "user", "content": "write the notes"}]});
        assert_eq!(
            redacted_json_text(&clean).as_ref(),
            serde_json::to_vec(&clean).unwrap()
        );
        let leaky = json!({"messages": [{"content": "key: canary-request-7d1e0b", "n": 2}]});
        let sent = redacted_json_text(&leaky);
        let sent: Value = serde_json::from_slice(&sent).unwrap();
        assert_eq!(sent, json!({"messages": [{"content": "key: ***", "n": 2}]}));
    }
}
