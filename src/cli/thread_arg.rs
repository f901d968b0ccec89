//! Parsing a thread given on the command line: `issues/12`, `pulls/7`, `merge_requests/3`, `12`,
//! `#12` or `!3`.

use crate::app::exit::CliError;
use crate::trigger::{ThreadKind, ThreadRef};

pub fn parse_thread(raw: &str) -> Result<ThreadRef, CliError> {
    let raw = raw.trim();
    let bad = || {
        CliError::usage(format!(
            "thread `{raw}` is not understood; write it as issues/12, pulls/7, merge_requests/3, #12 or 12"
        ))
    };
    let number = |s: &str| s.parse::<u64>().ok().filter(|n| *n > 0);
    if let Some((kind, n)) = raw.split_once('/') {
        let kind = ThreadKind::from_dir_name(kind).ok_or_else(bad)?;
        return Ok(ThreadRef {
            kind,
            number: number(n).ok_or_else(bad)?,
        });
    }
    if let Some(n) = raw.strip_prefix('!') {
        return Ok(ThreadRef {
            kind: ThreadKind::MergeRequest,
            number: number(n).ok_or_else(bad)?,
        });
    }
    let n = raw.strip_prefix('#').unwrap_or(raw);
    Ok(ThreadRef::issue(number(n).ok_or_else(bad)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_is_understood() {
        assert_eq!(parse_thread("12").unwrap(), ThreadRef::issue(12));
        assert_eq!(parse_thread("#12").unwrap(), ThreadRef::issue(12));
        assert_eq!(parse_thread("issues/12").unwrap(), ThreadRef::issue(12));
        assert_eq!(
            parse_thread("pulls/7").unwrap(),
            ThreadRef {
                kind: ThreadKind::PullRequest,
                number: 7
            }
        );
        assert_eq!(
            parse_thread("!3").unwrap(),
            ThreadRef {
                kind: ThreadKind::MergeRequest,
                number: 3
            }
        );
        for bad in ["", "0", "issue/1", "pulls/x", "abc"] {
            assert!(parse_thread(bad).is_err(), "{bad}");
        }
    }
}
