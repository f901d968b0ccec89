//! The push side of git's protocol, version 0 (`Documentation/gitprotocol-pack`, "Pushing
//! Data To a Server"), whatever carries it: the server advertises its refs, the client sends
//! one update command and the pack, the server reports whether the ref moved.

use super::pkt_line;

const ZERO_ID: &str = "0000000000000000000000000000000000000000";

/// The refs and capabilities a receive-pack advertised.
#[derive(Debug, Default)]
pub struct Advertised {
    refs: Vec<(String, String)>,
    capabilities: Vec<String>,
}

impl Advertised {
    /// From the advertisement's lines (up to its flush). An empty repository advertises the
    /// capabilities on a `capabilities^{}` line; `.have` lines name objects, not refs.
    pub fn parse(lines: &[Vec<u8>]) -> Result<Advertised, String> {
        let mut advertised = Advertised::default();
        for (i, line) in lines.iter().enumerate() {
            let line = String::from_utf8_lossy(line);
            let (line, capabilities) = match line.split_once('\0') {
                Some((line, caps)) if i == 0 => (line.to_owned(), Some(caps.to_owned())),
                _ => (line.into_owned(), None),
            };
            if let Some(caps) = capabilities {
                advertised.capabilities = caps.split(' ').map(str::to_owned).collect();
            }
            let (id, name) = line
                .split_once(' ')
                .ok_or_else(|| format!("not a ref advertisement: {line:?}"))?;
            if name != "capabilities^{}" && name != ".have" {
                advertised.refs.push((name.to_owned(), id.to_owned()));
            }
        }
        Ok(advertised)
    }

    fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    fn value_of(&self, name: &str) -> Option<&str> {
        self.refs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.as_str())
    }
}

/// Move `branch` from `old` (`None`: it does not exist) to `new`.
pub struct Update<'a> {
    pub branch: &'a str,
    pub old: Option<&'a str>,
    pub new: &'a str,
}

/// The push request for `update`: its command (with the capabilities asked for), a flush and
/// the pack. An error when the server's branch is not where the update starts from, or the
/// server cannot report on the update: `git push` then decides, as it always did.
pub fn request(advertised: &Advertised, update: &Update, pack: &[u8]) -> Result<Vec<u8>, String> {
    let name = format!("refs/heads/{}", update.branch);
    if advertised.value_of(&name) != update.old {
        return Err(format!(
            "the remote's `{name}` is at {}, not at {}",
            advertised.value_of(&name).unwrap_or("nothing"),
            update.old.unwrap_or("nothing")
        ));
    }
    if !advertised.has("report-status") {
        return Err("the remote does not report the push's outcome".to_owned());
    }
    if advertised
        .capabilities
        .iter()
        .any(|c| c.starts_with("object-format=") && c != "object-format=sha1")
    {
        return Err("the remote is not a SHA-1 repository".to_owned());
    }
    let mut capabilities = "report-status".to_owned();
    if advertised.has("quiet") {
        capabilities.push_str(" quiet");
    }
    let old = update.old.unwrap_or(ZERO_ID);
    let command = format!("{old} {} {name}\0{capabilities}\n", update.new);
    let mut request = pkt_line::encode(command.as_bytes());
    request.extend_from_slice(pkt_line::FLUSH);
    request.extend_from_slice(pack);
    Ok(request)
}

/// Whether the report (its lines up to the flush) says the pack was stored and `branch` moved.
pub fn check_report(lines: &[Vec<u8>], branch: &str) -> Result<(), String> {
    let lines: Vec<_> = lines.iter().map(|l| String::from_utf8_lossy(l)).collect();
    match lines.first().map(|l| l.as_ref()) {
        Some("unpack ok") => {}
        Some(other) => return Err(format!("the remote could not store the pack: {other}")),
        None => return Err("the remote sent no report".to_owned()),
    }
    let name = format!("refs/heads/{branch}");
    for line in &lines[1..] {
        if line.strip_prefix("ok ") == Some(name.as_str()) {
            return Ok(());
        }
        if let Some(reason) = line.strip_prefix("ng ").and_then(|l| l.strip_prefix(&name)) {
            return Err(format!("the remote refused `{name}`:{reason}"));
        }
    }
    Err(format!("the remote's report does not mention `{name}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn advertised(lines: &[&str]) -> Advertised {
        let lines: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
        Advertised::parse(&lines).unwrap()
    }

    #[test]
    fn the_update_starts_where_the_remote_branch_is() {
        let remote = advertised(&[
            &format!("{A} refs/heads/main\0report-status delete-refs quiet agent=git/2.47"),
            &format!("{B} refs/heads/replan/work/issue-1"),
        ]);
        let update = Update {
            branch: "replan/work/issue-1",
            old: Some(B),
            new: A,
        };
        let sent = request(&remote, &update, b"PACK").unwrap();
        let command = format!("{B} {A} refs/heads/replan/work/issue-1\0report-status quiet\n");
        let mut expected = pkt_line::encode(command.as_bytes());
        expected.extend_from_slice(b"0000PACK");
        assert_eq!(sent, expected);

        let moved = Update {
            old: Some(A),
            ..update
        };
        let err = request(&remote, &moved, b"PACK").unwrap_err();
        assert!(err.contains(&format!("is at {B}, not at {A}")), "{err}");
        let created = Update {
            branch: "replan/work/issue-2",
            old: None,
            new: A,
        };
        let sent = request(&remote, &created, b"").unwrap();
        assert!(String::from_utf8_lossy(&sent).contains(&format!("{ZERO_ID} {A} ")));
    }

    #[test]
    fn an_empty_or_sha256_or_silent_remote_is_recognised() {
        let empty = advertised(&[&format!("{ZERO_ID} capabilities^{{}}\0report-status")]);
        let update = Update {
            branch: "b",
            old: None,
            new: A,
        };
        assert!(request(&empty, &update, b"").is_ok());
        let sha256 = advertised(&[&format!(
            "{ZERO_ID} capabilities^{{}}\0report-status object-format=sha256"
        )]);
        assert!(
            request(&sha256, &update, b"")
                .unwrap_err()
                .contains("SHA-1")
        );
        let silent = advertised(&[&format!("{A} refs/heads/main\0delete-refs")]);
        assert!(
            request(&silent, &update, b"")
                .unwrap_err()
                .contains("report")
        );
    }

    #[test]
    fn the_report_says_whether_the_branch_moved() {
        let lines = |l: &[&str]| l.iter().map(|l| l.as_bytes().to_vec()).collect::<Vec<_>>();
        assert!(check_report(&lines(&["unpack ok", "ok refs/heads/b"]), "b").is_ok());
        let refused = check_report(
            &lines(&["unpack ok", "ng refs/heads/b non-fast-forward"]),
            "b",
        );
        assert_eq!(
            refused.unwrap_err(),
            "the remote refused `refs/heads/b`: non-fast-forward"
        );
        let unpack = check_report(&lines(&["unpack index-pack failed"]), "b").unwrap_err();
        assert!(unpack.contains("index-pack failed"), "{unpack}");
        assert!(check_report(&lines(&["unpack ok"]), "b").is_err());
        assert!(check_report(&[], "b").is_err());
    }
}
