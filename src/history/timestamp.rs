//! Reading an entry's `ts`. Every history line carries one, and chrono's general parser was a
//! visible share of replaying 100k lines; the form the writer uses (`2026-11-23T21:48:00.123Z`,
//! UTC, 0–9 fraction digits) is read by position, anything else by chrono as before.

use chrono::{DateTime, NaiveDate, NaiveTime, TimeZone, Utc};

/// `text` as a UTC time: the writer's form directly, any other RFC 3339 form through chrono
/// (offsets converted, its errors unchanged).
pub fn parse_utc(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    match written_form(text) {
        Some(ts) => Ok(ts),
        None => text.parse(),
    }
}

fn written_form(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    if b.len() < 20
        || b.len() > 30
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[b.len() - 1] != b'Z'
    {
        return None;
    }
    let digits = |bytes: &[u8]| {
        bytes.iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let fraction = &b[19..b.len() - 1];
    let nanos = match fraction {
        [] => 0,
        [b'.', rest @ ..] if (1..=9).contains(&rest.len()) => {
            digits(rest)? * 10u32.pow(9 - rest.len() as u32)
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(digits(&b[0..4])?).ok()?,
        digits(&b[5..7])?,
        digits(&b[8..10])?,
    )?;
    // A leap second (`:60`) is not representable here: chrono reads it.
    let time = NaiveTime::from_hms_nano_opt(
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
        nanos,
    )?;
    Some(Utc.from_utc_datetime(&date.and_time(time)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_chrono_reads() {
        for text in [
            "2026-11-23T21:48:00Z",
            "2026-11-23T21:48:00.1Z",
            "2026-11-23T21:48:00.123456Z",
            "2026-11-23T21:48:00.123456789Z",
            "2024-02-29T00:00:59.5Z",
            "2026-11-23T21:48:00+02:00",
            "2026-11-23T21:48:00.5-05:30",
            "2026-11-23 21:48:00Z",
            "2016-12-31T23:59:60Z",
            "2026-02-30T21:48:00Z",
            "2026-11-23T25:48:00Z",
            "2026-11-23T21:48:00.Z",
            "2026-11-23T21:48:00.1234567890Z",
            "2026-1a-23T21:48:00Z",
            "not a time",
            "",
        ] {
            let chrono: Result<DateTime<Utc>, _> = text.parse();
            assert_eq!(
                parse_utc(text).map_err(|e| e.to_string()),
                chrono.map_err(|e| e.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn the_writers_form_round_trips() {
        let now = Utc::now();
        let written = serde_json::to_value(now).unwrap();
        assert_eq!(parse_utc(written.as_str().unwrap()), Ok(now));
        assert!(written_form(written.as_str().unwrap()).is_some());
    }
}
