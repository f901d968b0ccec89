//! Slash commands in comments: `/replan [goal|tasks|actions] [reason]`, `/approve [hash]`,
//! `/reject [reason]`, `/stop`, `/resume`, `/status`, `/budget [$N | N tokens]`, and `@handle`
//! mentions.
//!
//! A command counts only at the start of a rendered paragraph line (see [`super::prose`]): never
//! inside code, quotes, HTML or list items, so quoting or documenting a command does not run it.

use super::prose::prose_lines;
use serde::{Deserialize, Serialize};

/// Which planning phase a `/replan` returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplanScope {
    Goal,
    Tasks,
    Actions,
}

impl ReplanScope {
    fn parse(word: &str) -> Option<Self> {
        match word.to_ascii_lowercase().as_str() {
            "goal" => Some(ReplanScope::Goal),
            "tasks" => Some(ReplanScope::Tasks),
            "actions" => Some(ReplanScope::Actions),
            _ => None,
        }
    }
}

/// A command a person gave in a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Human-requested replan; the reason is feedback for the planner.
    Replan {
        phase: Option<ReplanScope>,
        reason: Option<String>,
    },
    /// `/approve [hash]`: the hash, when given, must name the plan waiting for approval.
    Approve {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hash: Option<String>,
    },
    Reject {
        reason: Option<String>,
    },
    Stop,
    /// Retry blocked tasks.
    Resume,
    Status,
    /// `/budget` alone shows the thread's spend and what is left; `/budget $N` and
    /// `/budget N tokens` set the thread's cap over all its runs.
    Budget {
        amount: Option<BudgetAmount>,
    },
}

/// What `/budget` was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetAmount {
    /// `$5`, `$5.02`, `5`: dollars, kept in cents so a command compares exactly.
    Cents(u64),
    /// `20000 tokens`.
    Tokens(u64),
    /// Arguments that are neither; the reply names them and the forms that work.
    Unreadable(String),
}

impl BudgetAmount {
    fn parse(args: &str) -> Option<Self> {
        let args = args.trim();
        if args.is_empty() {
            return None;
        }
        let words: Vec<&str> = args.split_whitespace().collect();
        let number = |text: &str| text.replace(['_', ','], "");
        let read = match words.as_slice() {
            [n, unit]
                if unit.eq_ignore_ascii_case("tokens") || unit.eq_ignore_ascii_case("token") =>
            {
                number(n).parse::<u64>().ok().map(BudgetAmount::Tokens)
            }
            [amount] => {
                let dollars = amount.strip_prefix('$').unwrap_or(amount);
                number(dollars)
                    .parse::<f64>()
                    .ok()
                    .filter(|d| d.is_finite() && *d >= 0.0 && *d < 1e12)
                    .map(|d| BudgetAmount::Cents((d * 100.0).round() as u64))
            }
            _ => None,
        };
        Some(read.unwrap_or_else(|| BudgetAmount::Unreadable(args.chars().take(80).collect())))
    }
}

impl Command {
    /// The command word, for log lines and replies.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Replan { .. } => "replan",
            Command::Approve { .. } => "approve",
            Command::Reject { .. } => "reject",
            Command::Stop => "stop",
            Command::Resume => "resume",
            Command::Status => "status",
            Command::Budget { .. } => "budget",
        }
    }
}

/// Every command in `body`, in order of appearance. Unknown `/words` are ignored.
pub fn parse_commands(body: &str) -> Vec<Command> {
    prose_lines(body)
        .iter()
        .filter(|line| line.may_command)
        .filter_map(|line| parse_line(&line.raw, &line.masked))
        .collect()
}

/// `raw` and `masked` have equal byte lengths; the word is read from `masked` (so inline code
/// never counts) and the arguments from `raw` (so a reason keeps its inline code).
fn parse_line(raw: &str, masked: &str) -> Option<Command> {
    let start = masked.len() - masked.trim_start().len();
    let after_slash = masked[start..].strip_prefix('/')?;
    let word_len = after_slash
        .find(char::is_whitespace)
        .unwrap_or(after_slash.len());
    let word = after_slash[..word_len].to_ascii_lowercase();
    let args = raw[start + 1 + word_len..].trim();
    let reason = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    Some(match word.as_str() {
        "replan" => {
            let (first, rest) = split_first_word(args);
            match ReplanScope::parse(first) {
                Some(scope) => Command::Replan {
                    phase: Some(scope),
                    reason: reason(rest),
                },
                None => Command::Replan {
                    phase: None,
                    reason: reason(args),
                },
            }
        }
        "approve" => Command::Approve {
            hash: plan_hash_word(args),
        },
        "reject" => Command::Reject {
            reason: reason(args),
        },
        "stop" => Command::Stop,
        "resume" => Command::Resume,
        "status" => Command::Status,
        "budget" => Command::Budget {
            amount: BudgetAmount::parse(args),
        },
        _ => return None,
    })
}

/// The first word after `/approve` when it is hex (a plan hash, perhaps mistyped); other words
/// (`/approve looks good`) are a plain `/approve`.
fn plan_hash_word(args: &str) -> Option<String> {
    let word = split_first_word(args).0.trim_matches('`');
    (!word.is_empty() && word.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| word.to_ascii_lowercase())
}

fn split_first_word(text: &str) -> (&str, &str) {
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim()),
        None => (text, ""),
    }
}

/// Whether `body` mentions `@handle` in prose (the handle may be given with or without `@`).
/// `@replanner`, `me@replan.dev`, `@replan/team` and `@replan-bot` are not mentions of `replan`.
pub fn mentions(body: &str, handle: &str) -> bool {
    let handle = handle.trim().trim_start_matches('@');
    if handle.is_empty() {
        return false;
    }
    prose_lines(body)
        .iter()
        .any(|line| line_mentions(&line.masked, handle))
}

fn line_mentions(line: &str, handle: &str) -> bool {
    let lower = line.to_lowercase();
    let needle = format!("@{}", handle.to_lowercase());
    // Lowercasing can change byte lengths for some scripts; compare on the lowercased text only.
    let mut from = 0;
    while let Some(found) = lower[from..].find(&needle) {
        let at = from + found;
        let end = at + needle.len();
        let before = lower[..at].chars().next_back();
        let mut after = lower[end..].chars();
        let next = after.next();
        let next2 = after.next();
        let starts_cleanly = before.is_none_or(|c| !is_handle_or_address_char(c));
        let ends_cleanly = match next {
            None => true,
            Some(c) if is_login_char(c) || c == '/' || c == '@' => false,
            // A dot followed by more name characters is a domain (`@replan.dev`).
            Some('.') => next2.is_none_or(|c| !is_login_char(c)),
            Some(_) => true,
        };
        if starts_cleanly && ends_cleanly {
            return true;
        }
        from = at + 1;
    }
    false
}

fn is_login_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

fn is_handle_or_address_char(c: char) -> bool {
    is_login_char(c) || matches!(c, '.' | '+' | '@' | '/' | '`')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replan(phase: Option<ReplanScope>, reason: Option<&str>) -> Command {
        Command::Replan {
            phase,
            reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn replan_with_scope_and_reason() {
        assert_eq!(
            parse_commands("/replan tasks the tests are flaky"),
            [replan(
                Some(ReplanScope::Tasks),
                Some("the tests are flaky")
            )]
        );
    }

    #[test]
    fn replan_without_scope_keeps_the_whole_reason() {
        assert_eq!(
            parse_commands("/replan because X"),
            [replan(None, Some("because X"))]
        );
        assert_eq!(parse_commands("/replan"), [replan(None, None)]);
        assert_eq!(
            parse_commands("/replan GOAL"),
            [replan(Some(ReplanScope::Goal), None)]
        );
        assert_eq!(
            parse_commands("/replan goals are vague"),
            [replan(None, Some("goals are vague"))]
        );
    }

    #[test]
    fn every_command_word_case_insensitive() {
        let body = "/APPROVE\n/Reject too risky\n/stop\n  /Resume\n/status please\n/reject";
        assert_eq!(
            parse_commands(body),
            [
                Command::Approve { hash: None },
                Command::Reject {
                    reason: Some("too risky".into())
                },
                Command::Stop,
                Command::Resume,
                Command::Status,
                Command::Reject { reason: None },
            ]
        );
    }

    #[test]
    fn approve_takes_a_hex_word_as_the_plan_hash() {
        let approve = |hash: Option<&str>| Command::Approve {
            hash: hash.map(str::to_owned),
        };
        assert_eq!(
            parse_commands("/approve 3F2a9c1"),
            [approve(Some("3f2a9c1"))]
        );
        assert_eq!(
            parse_commands("/approve `3f2a9c1`"),
            [approve(Some("3f2a9c1"))]
        );
        assert_eq!(parse_commands("/approve looks good"), [approve(None)]);
        assert_eq!(parse_commands("/approve"), [approve(None)]);
    }

    #[test]
    fn budget_in_dollars_or_tokens() {
        let budget = |amount| Command::Budget { amount };
        assert_eq!(parse_commands("/budget"), [budget(None)]);
        assert_eq!(
            parse_commands("/budget $5\n/budget 5.02\n/BUDGET 20_000 tokens\n/budget 1 token"),
            [
                budget(Some(BudgetAmount::Cents(500))),
                budget(Some(BudgetAmount::Cents(502))),
                budget(Some(BudgetAmount::Tokens(20_000))),
                budget(Some(BudgetAmount::Tokens(1))),
            ]
        );
        assert_eq!(
            parse_commands("/budget lots please"),
            [budget(Some(BudgetAmount::Unreadable("lots please".into())))]
        );
        assert_eq!(
            parse_commands("/budget $-3"),
            [budget(Some(BudgetAmount::Unreadable("$-3".into())))]
        );
        assert!(parse_commands("`/budget $100`\n> /budget $100").is_empty());
    }

    #[test]
    fn look_alikes_and_unknown_commands_are_ignored() {
        assert!(parse_commands("/approved\n/approve.\n/foo bar\n/ approve\napprove").is_empty());
    }

    #[test]
    fn commands_must_start_the_line() {
        assert!(parse_commands("please /approve").is_empty());
        assert_eq!(
            parse_commands("   /approve"),
            [Command::Approve { hash: None }]
        );
    }

    #[test]
    fn commands_in_code_quotes_and_comments_are_ignored() {
        let body = "```\n/approve\n```\n~~~sh\n/stop\n~~~\n\n    /status\n\n`/resume`\n> /reject no\n/approve\n\n<!-- /replan -->\n\n<pre>\n/approve\n</pre>\n\n<code>/stop</code>\n- /status\n```\n/approve unterminated";
        assert!(
            parse_commands(body).is_empty(),
            "{:?}",
            parse_commands(body)
        );
    }

    #[test]
    fn reason_keeps_inline_code() {
        assert_eq!(
            parse_commands("/reject `cargo test` fails"),
            [Command::Reject {
                reason: Some("`cargo test` fails".into())
            }]
        );
    }

    #[test]
    fn mention_rules() {
        assert!(mentions("hey @replan, please look", "replan"));
        assert!(mentions("@Replan.", "@replan"));
        assert!(mentions("(@replan)", "replan"));
        assert!(!mentions("@replanner help", "replan"));
        assert!(!mentions("mail me@replan.dev", "replan"));
        assert!(!mentions("@replan.dev", "replan"));
        assert!(!mentions("@replan/team", "replan"));
        assert!(!mentions("@replan-bot", "replan"));
        assert!(!mentions("`@replan`", "replan"));
        assert!(!mentions("> @replan said", "replan"));
        assert!(!mentions("```\n@replan\n```", "replan"));
        assert!(!mentions("anything", ""));
        assert!(
            mentions("- @replan please look", "replan"),
            "a list item is prose"
        );
        assert!(!mentions("<code>@replan</code>", "replan"));
    }
}
