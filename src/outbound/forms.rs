//! The forms a secret can leave in: what the redactor masks and the push scan refuses, for each
//! known value.
//!
//! A tool, or a model told to smuggle a value out, can transform it without knowing it is a
//! secret: base64 (standard and URL-safe, at each of the three byte alignments a value can have
//! inside a longer encoded stream), percent-encoding (strict and `encodeURIComponent`-style, `+`
//! for spaces too), the JSON string escape, hex (both cases; bare, or bytes separated by `:` or a
//! space), reversed (the value, its hex, and the hex of its reversed bytes) and split by a
//! separator (`-`, space, `.`, `_`, `,`) after every character or every four. Each form is one
//! literal, so the number per value is bounded ([`MAX_FORMS_PER_VALUE`]) and every text is still
//! searched in one pass.
//!
//! Not caught, by design: encryption, compression, any other encoding (base32, rot13, …),
//! splitting at irregular offsets or with other separators, and a value spread over several
//! messages. No list of literals can catch those; the sandbox keeps secrets out of the commands'
//! reach instead.

/// Shorter known values are not treated as secrets: masking `true` or `main` everywhere would
/// make logs unreadable and such values protect nothing.
pub const MIN_SECRET_LEN: usize = 6;

/// What a form is called in a push refusal: stable words, never the value.
pub type FormName = &'static str;

pub const PLAIN: FormName = "plain";
pub const BASE64: FormName = "base64";
pub const PERCENT_ENCODED: FormName = "percent-encoded";
pub const JSON_ESCAPED: FormName = "JSON-escaped";
pub const HEX: FormName = "hex";
pub const REVERSED: FormName = "reversed";
pub const REVERSED_HEX: FormName = "reversed hex";
pub const SPLIT: FormName = "split by separators";

/// The separators a split form puts between characters (or groups of four).
pub const SEPARATORS: [char; 5] = ['-', ' ', '.', '_', ','];

/// The most forms (the value included) one value can have; each is a literal every outbound text
/// is searched for, so this bounds the automaton's size per secret.
pub const MAX_FORMS_PER_VALUE: usize = 48;

/// `value` and every form of it, each named, the value itself first; no duplicates and none
/// shorter than [`MIN_SECRET_LEN`]. Every form that holds a character JSON escapes comes with its
/// JSON-escaped form too: a serialised document holds a masked string's forms only escaped, and
/// `outbound::serialized_json_is_clean` must still see them.
pub fn forms(value: &str) -> Vec<(FormName, String)> {
    let mut out: Vec<(FormName, String)> = vec![(PLAIN, value.to_owned())];
    out.extend(base64_forms(value).into_iter().map(|f| (BASE64, f)));
    out.extend(
        percent_forms(value)
            .into_iter()
            .map(|f| (PERCENT_ENCODED, f)),
    );
    out.push((JSON_ESCAPED, json_escaped(value)));
    out.extend(hex_forms(value.as_bytes()).into_iter().map(|f| (HEX, f)));

    let reversed: String = value.chars().rev().collect();
    let reversed_hex = hex_forms(reversed.as_bytes())
        .into_iter()
        .chain(bare_hex(value.as_bytes()).map(|h| h.chars().rev().collect()))
        .filter(|h: &String| !h.contains([':', ' ']));
    out.extend(reversed_hex.map(|f| (REVERSED_HEX, f)));
    let mut raw: Vec<(FormName, String)> = vec![(REVERSED, reversed)];
    raw.extend(split_forms(value).into_iter().map(|f| (SPLIT, f)));
    for (name, form) in raw {
        let escaped = json_escaped(&form);
        out.push((name, form));
        out.push((name, escaped));
    }

    let mut seen = std::collections::HashSet::new();
    out.retain(|(_, form)| form.chars().count() >= MIN_SECRET_LEN && seen.insert(form.clone()));
    out
}

/// Base64, standard and URL-safe, of the value alone and at each alignment inside a longer
/// stream. Characters that mix bits of the neighbouring bytes are left out, so a secret embedded
/// anywhere in a base64 blob is still found.
fn base64_forms(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut forms = Vec::new();
    for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
        // The value alone, last character included.
        forms.push(engine.encode(value));
        for offset in 0..3usize {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(value.as_bytes());
            let encoded = engine.encode(&bytes);
            // Chars fully determined by the value: skip those carrying prefix bits and the last
            // one when it would carry bits of whatever follows.
            let skip = [0, 2, 3][offset];
            let end = if bytes.len() % 3 == 0 {
                encoded.len()
            } else {
                encoded.len() - 1
            };
            if end > skip {
                forms.push(encoded[skip..end].to_owned());
            }
        }
    }
    forms
}

fn percent_forms(value: &str) -> Vec<String> {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    let mut forms = Vec::new();
    for set in [NON_ALPHANUMERIC, COMPONENT] {
        let encoded = utf8_percent_encode(value, set).to_string();
        forms.push(encoded.replace("%20", "+"));
        forms.push(encoded);
    }
    forms
}

fn json_escaped(text: &str) -> String {
    let json = serde_json::to_string(text).expect("a string always serialises");
    json[1..json.len() - 1].to_owned()
}

/// Lower and upper case, without separators.
fn bare_hex(bytes: &[u8]) -> [String; 2] {
    [hex::encode(bytes), hex::encode_upper(bytes)]
}

/// Lower and upper case: bare (`xxd -p`), and with `:` (fingerprints) or a space (`hexdump`,
/// `od`) between bytes.
fn hex_forms(bytes: &[u8]) -> Vec<String> {
    let mut forms = Vec::with_capacity(6);
    for bare in bare_hex(bytes) {
        for separator in [":", " "] {
            let pairs: Vec<&str> = (0..bare.len())
                .step_by(2)
                .map(|i| &bare[i..i + 2])
                .collect();
            forms.push(pairs.join(separator));
        }
        forms.push(bare);
    }
    forms
}

/// The value with each separator after every character, and after every four.
fn split_forms(value: &str) -> Vec<String> {
    let chars: Vec<char> = value.chars().collect();
    let mut forms = Vec::with_capacity(2 * SEPARATORS.len());
    for separator in SEPARATORS {
        for group in [1, 4] {
            let mut form = String::with_capacity(value.len() * 2);
            for (i, chunk) in chars.chunks(group).enumerate() {
                if i > 0 {
                    form.push(separator);
                }
                form.extend(chunk);
            }
            forms.push(form);
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(value: &str, name: FormName) -> Vec<String> {
        forms(value)
            .into_iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, f)| f)
            .collect()
    }

    #[test]
    fn hex_comes_in_both_cases_bare_and_separated_by_bytes() {
        let hex = form("Tok-9z", HEX);
        for expected in [
            "546f6b2d397a",
            "546F6B2D397A",
            "54:6f:6b:2d:39:7a",
            "54 6F 6B 2D 39 7A",
        ] {
            assert!(hex.contains(&expected.to_owned()), "{expected}: {hex:?}");
        }
    }

    #[test]
    fn reversed_forms_cover_the_value_its_hex_and_the_hex_of_its_reverse() {
        assert_eq!(form("Tok-9z", REVERSED), ["z9-koT"]);
        let reversed_hex = form("Tok-9z", REVERSED_HEX);
        // hex of "z9-koT", and "546f6b2d397a" read backwards.
        for expected in [
            "7a392d6b6f54",
            "7A392D6B6F54",
            "a793d2b6f645",
            "A793D2B6F645",
        ] {
            assert!(
                reversed_hex.contains(&expected.to_owned()),
                "{reversed_hex:?}"
            );
        }
    }

    #[test]
    fn split_forms_put_each_separator_after_every_character_and_every_four() {
        let split = form("abcdefgh", SPLIT);
        for expected in [
            "a-b-c-d-e-f-g-h",
            "a b c d e f g h",
            "a.b.c.d.e.f.g.h",
            "a_b_c_d_e_f_g_h",
            "a,b,c,d,e,f,g,h",
            "abcd-efgh",
            "abcd efgh",
            "abcd,efgh",
        ] {
            assert!(
                split.contains(&expected.to_owned()),
                "{expected}: {split:?}"
            );
        }
    }

    /// Every form is a literal each outbound text is searched for: a value with every character
    /// an encoding treats specially still has a bounded number of them, and a token-shaped value
    /// well under it.
    #[test]
    fn the_forms_of_a_value_are_bounded() {
        for value in [
            "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
            "sk-test-key-0123456789abcdef",
            "p\"a\\s s+/w?&=%d\u{e9}\t",
            "\u{1F511} \"quoted\" key/with+all?the&chars=%",
        ] {
            let all = forms(value);
            assert!(all.len() <= MAX_FORMS_PER_VALUE, "{}: {value}", all.len());
        }
        assert!(forms("ghs_16C7e42F292c6912E7710c838347Ae178B4a").len() <= 32);
    }

    /// `serialized_json_is_clean` relies on it: whatever string holds a form, its serialisation
    /// holds a form too. (Escapes of escapes are the exception: escaping never ends.)
    #[test]
    fn every_form_has_its_json_escaped_form() {
        for value in ["p\"a\\s s+/w?&=%d\u{e9}\t", "plain-value-123"] {
            let all: Vec<String> = forms(value).into_iter().map(|(_, f)| f).collect();
            for form in &all {
                let is_an_escape = all.iter().any(|f| f != form && json_escaped(f) == *form);
                if !is_an_escape {
                    assert!(all.contains(&json_escaped(form)), "{form:?}");
                }
            }
        }
    }
}
