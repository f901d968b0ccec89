//! Forge timestamps in the formats they actually send.
//!
//! GitHub sends RFC 3339; GitLab webhooks send RFC 3339 in newer versions and
//! `2015-05-17 18:08:09 UTC` in older ones. An unreadable timestamp becomes `None` rather than
//! rejecting the whole event: the gate compares a freshly fetched `updated_at` anyway.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Deserializer};

pub(crate) fn parse(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S %z") {
        return Some(t.with_timezone(&Utc));
    }
    let naive = text.strip_suffix(" UTC").unwrap_or(text);
    NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

pub(crate) fn lenient<'de, D>(deserializer: D) -> Result<Option<DateTime<Utc>>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.as_ref().and_then(|v| v.as_str()).and_then(parse))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_github_and_both_gitlab_formats() {
        let expected = "2015-05-17T18:08:09Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(parse("2015-05-17T18:08:09Z"), Some(expected));
        assert_eq!(parse("2015-05-17 18:08:09 UTC"), Some(expected));
        assert_eq!(parse("2015-05-17 20:08:09 +0200"), Some(expected));
        assert_eq!(
            parse("2017-11-17T13:59:48.158Z").map(|t| t.timestamp_subsec_millis()),
            Some(158)
        );
        assert_eq!(parse("yesterday"), None);
    }
}
