//! Step outputs: `name<<DELIMITER` blocks appended to the file `$GITHUB_OUTPUT` names, so a
//! value with newlines (or one that looks like `x=y`) cannot inject another output.

use std::io::Write;
use std::path::Path;

/// Appends `outputs` to the file at `path`. The delimiter is random and checked against every
/// value, as GitHub recommends.
pub fn append(path: &Path, outputs: &[(&str, String)]) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, value) in outputs {
        let value = crate::outbound::redact(value);
        let delimiter = delimiter_for(&value);
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}

fn delimiter_for(value: &str) -> String {
    loop {
        let candidate = format!("replan_EOF_{:016x}", fastrand::u64(..));
        if !value.contains(&candidate) {
            return candidate;
        }
    }
}

/// Reads an output file back (for tests and for `replan` itself when it needs an earlier value).
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            for inner in lines.by_ref() {
                if inner == delimiter {
                    break;
                }
                value.push(inner);
            }
            out.push((name.to_owned(), value.join("\n")));
        } else if let Some((name, value)) = line.split_once('=') {
            out.push((name.to_owned(), value.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiline_values_round_trip_and_cannot_inject() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "earlier=1\n").unwrap();
        append(
            &path,
            &[
                ("status", "completed".into()),
                ("note", "line one\nevil=injected".into()),
            ],
        )
        .unwrap();
        let parsed = parse(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(
            parsed,
            vec![
                ("earlier".to_owned(), "1".to_owned()),
                ("status".to_owned(), "completed".to_owned()),
                ("note".to_owned(), "line one\nevil=injected".to_owned()),
            ]
        );
    }
}
