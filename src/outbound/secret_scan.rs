//! Push protection: whether bytes about to leave as a commit hold a known secret.
//!
//! Redaction masks what Replan composes; a commit's files are bytes a command may have written,
//! which nothing redacts and which must not be changed silently. So every object a push adds is
//! scanned for the run's known values in every form the redactor masks
//! ([`super::forms`]: plain, base64, percent-encoded, JSON-escaped, hex, reversed, split), and a
//! hit refuses the push, naming the secret's variable and the form, never the value, like
//! GitHub's push protection. Token shapes (`ghp_…`) are not searched here: in a file they are
//! usually examples and tests, not leaks; known values are certain.

use super::redactor::Redactor;

/// A known secret found in scanned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHit {
    /// The variable (or setting) the secret came from, e.g. `GITHUB_TOKEN`,
    /// `secrets.extra_values`; [`super::named_secret::UNNAMED`] for a value given without one.
    pub name: String,
    /// How it was written: one of the names in [`super::forms`] (`plain`, `base64`, `hex`,
    /// `reversed`, `split by separators`, …).
    pub form: &'static str,
}

impl std::fmt::Display for SecretHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the secret {} ({})", self.name, self.form)
    }
}

/// The first of the run's known secrets (see [`super::secrets`]) in `bytes`, in any form the
/// redactor masks; `None` when there is none. `bytes` may be anything (a file's contents, binary
/// included); one pass over it, whatever the number of secrets. Call it for every blob a push
/// adds, and refuse the push on `Some`.
pub fn find(bytes: &[u8]) -> Option<SecretHit> {
    find_with(&super::secrets().current(), bytes)
}

/// [`find`] with a given secret set (a snapshot taken once for a whole push, or a test's).
pub fn find_with(redactor: &Redactor, bytes: &[u8]) -> Option<SecretHit> {
    let (name, form) = redactor.find_known(bytes)?;
    Some(SecretHit {
        name: name.to_owned(),
        form,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::NamedSecret;
    use crate::outbound::forms;

    const TOKEN: &str = "ghs_Canary7d41e0b9f2a6";

    fn scanner() -> Redactor {
        Redactor::new([
            NamedSecret::new("GITHUB_TOKEN", TOKEN),
            NamedSecret::new("OPENAI_API_KEY", "sk-other-value-0123456789"),
        ])
    }

    fn hit(bytes: impl AsRef<[u8]>) -> Option<SecretHit> {
        find_with(&scanner(), bytes.as_ref())
    }

    fn expect(bytes: impl AsRef<[u8]>, form: &'static str) {
        assert_eq!(
            hit(bytes),
            Some(SecretHit {
                name: "GITHUB_TOKEN".into(),
                form
            })
        );
    }

    #[test]
    fn each_form_is_found_and_named_never_shown() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{TOKEN}"));
        let reversed: String = TOKEN.chars().rev().collect();
        let reversed_hex: String = hex::encode(TOKEN).chars().rev().collect();
        let pairs: Vec<String> = TOKEN.bytes().map(|b| format!("{b:02X}")).collect();
        let by_char: Vec<String> = TOKEN.chars().map(String::from).collect();
        let by_four: Vec<String> = TOKEN
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect();
        let cases = [
            (format!("key = \"{TOKEN}\"\n"), forms::PLAIN),
            (format!("Authorization: Basic {b64}"), forms::BASE64),
            (
                format!("x={}", TOKEN.replace('_', "%5F")),
                forms::PERCENT_ENCODED,
            ),
            (hex::encode(TOKEN), forms::HEX),
            (hex::encode_upper(TOKEN), forms::HEX),
            (pairs.join(":"), forms::HEX),
            (pairs.join(" ").to_lowercase(), forms::HEX),
            (format!("[{reversed}]"), forms::REVERSED),
            (reversed_hex.to_uppercase(), forms::REVERSED_HEX),
            (hex::encode(reversed.as_bytes()), forms::REVERSED_HEX),
            (by_char.join("-"), forms::SPLIT),
            (by_char.join(" "), forms::SPLIT),
            (by_four.join("."), forms::SPLIT),
            (by_four.join(","), forms::SPLIT),
            (by_four.join("_"), forms::SPLIT),
        ];
        for (text, form) in cases {
            expect(&text, form);
            let shown = format!("{:?} {}", hit(&text), hit(&text).unwrap());
            assert!(
                !shown.contains(TOKEN) && !shown.contains("Canary"),
                "{shown}"
            );
        }
    }

    #[test]
    fn binary_bytes_around_a_secret_do_not_hide_it() {
        let mut blob = vec![0u8, 0xff, 0xfe, 0x80, b'\n'];
        blob.extend_from_slice(hex::encode(TOKEN).as_bytes());
        blob.extend_from_slice(&[0xc3, 0x28, 0]);
        expect(&blob, forms::HEX);
        let mut zeros = vec![0u8; 100_000];
        zeros.extend_from_slice(TOKEN.as_bytes());
        expect(&zeros, forms::PLAIN);
    }

    #[test]
    fn clean_bytes_and_partial_values_are_not_hits() {
        assert_eq!(hit(b"fn main() { println!(\"hello\"); }\n"), None);
        assert_eq!(hit(&TOKEN[..TOKEN.len() - 1]), None);
        assert_eq!(hit([0u8, 1, 2, 0xff]), None);
        // Token shapes are left to redaction: in a file they are examples, not leaks.
        assert_eq!(hit("ghp_abcdefghijklmnopqrstuvwxyz0123456789"), None);
        assert_eq!(find_with(&Redactor::default(), TOKEN.as_bytes()), None);
    }

    #[test]
    fn a_value_first_given_unnamed_gets_its_name_later() {
        let unnamed = Redactor::new([TOKEN]);
        assert_eq!(
            find_with(&unnamed, TOKEN.as_bytes()).unwrap().name,
            crate::outbound::named_secret::UNNAMED
        );
        let named = unnamed.with_more([NamedSecret::new("GH_TOKEN", TOKEN)]);
        assert_eq!(
            find_with(&named, TOKEN.as_bytes()).unwrap().name,
            "GH_TOKEN"
        );
        // And keeps it when given unnamed again.
        let again = named.with_more([TOKEN]);
        assert_eq!(
            find_with(&again, TOKEN.as_bytes()).unwrap().name,
            "GH_TOKEN"
        );
    }

    #[test]
    fn each_line_of_a_multi_line_secret_is_found_under_its_name() {
        let pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----";
        let r = Redactor::new([NamedSecret::new("DEPLOY_KEY", pem)]);
        let line = hex::encode("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC");
        let found = find_with(&r, line.as_bytes()).unwrap();
        assert_eq!(
            (found.name.as_str(), found.form),
            ("DEPLOY_KEY", forms::HEX)
        );
    }
}
