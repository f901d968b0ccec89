//! Ranged numbers in the model's replies, checked where the reply is parsed so that an out-of-range
//! value never reaches the engine, a notice or the history.
//!
//! A confidence is a fraction 0..=1 (seed 000 §2.5). Models often answer with a percentage
//! (`85`); a value in (1, 100] is read as one and divided by 100, with a log line. Anything
//! else (negative, above 100, not a number) fails the parse, and the structured-reply layer
//! re-asks with the error.

use serde::{Deserialize, Deserializer};

/// `#[serde(deserialize_with)]` for a confidence: 0..=1, a percentage normalised.
pub fn confidence<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    to_fraction("confidence", value).map_err(serde::de::Error::custom)
}

/// `#[serde(deserialize_with)]` for an optional percentage such as `achievement_rate`: 0..=100.
pub fn optional_percentage<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    let Some(value) = Option::<f64>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if value.is_finite() && (0.0..=100.0).contains(&value) {
        Ok(Some(value))
    } else {
        Err(serde::de::Error::custom(format!(
            "a percentage must be between 0 and 100, got {value}"
        )))
    }
}

/// A fraction 0..=1 from what the model wrote: a fraction, or a percentage in (1, 100].
pub fn to_fraction(field: &str, value: f64) -> Result<f64, String> {
    if !value.is_finite() || !(0.0..=100.0).contains(&value) {
        return Err(format!(
            "{field} must be a fraction between 0 and 1 (e.g. 0.85), got {value}"
        ));
    }
    if value <= 1.0 {
        return Ok(value);
    }
    let fraction = value / 100.0;
    tracing::info!(
        field,
        given = value,
        normalised = fraction,
        "the model gave a percentage where a fraction 0..1 belongs; reading it as {fraction}"
    );
    Ok(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ReplanDecision, ReplanDecisionResponse};

    fn parse(json: &str) -> Result<ReplanDecision, String> {
        serde_json::from_str::<ReplanDecisionResponse>(json)
            .map(|r| r.replan_decision)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_fraction_is_kept() {
        let d = parse(r#"{"replan_decision": {"replan_needed": true, "confidence": 0.85}}"#);
        assert_eq!(d.unwrap().confidence, 0.85);
        assert_eq!(to_fraction("confidence", 1.0), Ok(1.0));
        assert_eq!(to_fraction("confidence", 0.0), Ok(0.0));
    }

    #[test]
    fn a_percentage_becomes_a_fraction() {
        let d = parse(r#"{"replan_decision": {"replan_needed": true, "confidence": 85}}"#);
        assert_eq!(d.unwrap().confidence, 0.85);
        assert_eq!(to_fraction("confidence", 100.0), Ok(1.0));
    }

    #[test]
    fn out_of_range_confidence_fails_the_parse_naming_the_field() {
        for bad in ["-0.1", "101", "8500"] {
            let json =
                format!(r#"{{"replan_decision": {{"replan_needed": true, "confidence": {bad}}}}}"#);
            let error = parse(&json).unwrap_err();
            assert!(
                error.contains("confidence must be a fraction between 0 and 1"),
                "{bad}: {error}"
            );
        }
        assert!(to_fraction("confidence", f64::NAN).is_err());
    }

    #[test]
    fn achievement_rate_is_a_percentage_0_to_100() {
        let ok = r#"{"replan_decision": {"replan_needed": false, "confidence": 0.9, "achievement_rate": 100}}"#;
        assert_eq!(parse(ok).unwrap().achievement_rate, Some(100.0));
        let absent = r#"{"replan_decision": {"replan_needed": false, "confidence": 0.9}}"#;
        assert_eq!(parse(absent).unwrap().achievement_rate, None);
        let bad = r#"{"replan_decision": {"replan_needed": false, "confidence": 0.9, "achievement_rate": 150}}"#;
        let error = parse(bad).unwrap_err();
        assert!(error.contains("between 0 and 100, got 150"), "{error}");
    }
}
