//! What of the checkout's git configuration decides whether a push may go without `git push`,
//! read with one `git config` (ahead of the first save, beside the planning).

use std::path::Path;

/// `remote.origin.*` and `url.*` say where the push goes; the others make `git push` do more
/// than send a pack (a hook, a signature, push options, another receive-pack program).
const KEYS: &str = r"^(remote\.origin\.(url|pushurl|receivepack)|url\..*\.(insteadof|pushinsteadof)|push\.(gpgsign|pushoption)|core\.hookspath)$";

pub struct PushSettings {
    /// `(key, value)` as git prints them: section and name lower-case.
    entries: Vec<(String, String)>,
}

impl PushSettings {
    /// `None` when git cannot be asked.
    pub fn read(repo: &Path) -> Option<PushSettings> {
        let entries = config_entries(repo, &["--get-regexp", KEYS])?;
        Some(PushSettings { entries })
    }

    fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A URL may be rewritten (`url.<base>.insteadOf`, `pushInsteadOf`).
    pub fn rewrites_urls(&self) -> bool {
        self.entries.iter().any(|(k, _)| k.starts_with("url."))
    }

    /// Where `git push origin` goes when the settings say it plainly (one push URL or one URL,
    /// nothing rewritten); `None` when git has to be asked.
    pub fn origin_push_url(&self) -> Option<String> {
        if self.rewrites_urls() {
            return None;
        }
        let push: Vec<_> = self.values("remote.origin.pushurl").collect();
        let urls: Vec<_> = self.values("remote.origin.url").collect();
        match (push.as_slice(), urls.as_slice()) {
            ([one], _) | ([], [one]) => Some((*one).to_owned()),
            _ => None,
        }
    }

    /// A pre-push hook, signed pushes, push options or another receive-pack program: `git push`
    /// would do more than send the pack.
    pub fn pushes_differently(&self, repo: &Path) -> bool {
        let settings = [
            "push.gpgsign",
            "push.pushoption",
            "remote.origin.receivepack",
        ];
        if settings.iter().any(|key| self.values(key).next().is_some()) {
            return true;
        }
        let hooks = match self.values("core.hookspath").last() {
            Some(path) => repo.join(path),
            // A worktree's or a separate git directory's hooks: left to git.
            None if repo.join(".git").is_dir() => repo.join(".git/hooks"),
            None => return true,
        };
        hooks.join("pre-push").exists()
    }
}

/// `git config -z <query>`: `(key, value)` for each setting found, none when nothing matched
/// (git exits with 1); `None` when git cannot be asked.
pub fn config_entries(repo: &Path, query: &[&str]) -> Option<Vec<(String, String)>> {
    let mut args = vec!["config", "-z"];
    args.extend_from_slice(query);
    let output = super::super::git_command::git_output(repo, &args, &[]).ok()?;
    match output.status.code() {
        Some(0) | Some(1) => {}
        _ => return None,
    }
    let entries = output
        .stdout
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (key, value) = entry.split_once('\n').unwrap_or((&entry, ""));
            (key.to_owned(), value.to_owned())
        })
        .collect();
    Some(entries)
}
