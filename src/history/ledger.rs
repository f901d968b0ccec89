//! The thread's ledger: what every run of a thread spent (the sum of its history's `usage`
//! entries: comments, resumes, sweeps, fan-out jobs, review and CI rounds alike) against the
//! thread's cap (`llm.budget.per_thread_usd` / `per_thread_tokens`, or the latest `/budget`).

use super::SessionState;
use super::entry::UsageTotals;
use crate::config::BudgetConfig;

/// The caps on a thread's whole spend; `None` = no cap of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadCap {
    pub usd: Option<f64>,
    pub tokens: Option<u64>,
}

/// Tokens a usage counts against a token cap.
pub fn tokens(usage: &UsageTotals) -> u64 {
    usage.prompt_tokens.saturating_add(usage.completion_tokens)
}

/// Dollars as people read them: cents, or four places below one cent.
pub fn money(usd: f64) -> String {
    if usd >= 1.0 || usd == 0.0 || ((usd * 100.0).round() - usd * 100.0).abs() < 1e-9 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// `$5.00`, `20000 tokens`, `$5.00 and 20000 tokens`, or `no cap`.
pub fn cap_words(usd: Option<f64>, tokens: Option<u64>) -> String {
    match (usd, tokens) {
        (Some(usd), Some(tokens)) => format!("{} and {tokens} tokens", money(usd)),
        (Some(usd), None) => money(usd),
        (None, Some(tokens)) => format!("{tokens} tokens"),
        (None, None) => "no cap".into(),
    }
}

/// Which cap a thread's spend has reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reached {
    Usd { spent: f64, cap: f64 },
    Tokens { spent: u64, cap: u64 },
}

impl Reached {
    /// `$5.02 of $5.00 spent`.
    pub fn words(&self) -> String {
        match self {
            Reached::Usd { spent, cap } => format!("{} of {} spent", money(*spent), money(*cap)),
            Reached::Tokens { spent, cap } => format!("{spent} of {cap} tokens spent"),
        }
    }

    /// The command that raises the cap that was reached.
    pub fn command(&self) -> &'static str {
        match self {
            Reached::Usd { .. } => "`/budget $N`",
            Reached::Tokens { .. } => "`/budget N tokens`",
        }
    }

    /// The checklist's line: `blocked: budget ($5.02 of $5.00 spent) — `/budget $N` to continue`.
    pub fn blocked_line(&self) -> String {
        format!(
            "blocked: budget ({}) — {} to continue",
            self.words(),
            self.command()
        )
    }
}

impl ThreadCap {
    /// The thread's caps: the latest `/budget` of each kind, else the configuration's.
    pub fn of(state: &SessionState, cfg: &BudgetConfig) -> Self {
        Self::configured(cfg).overridden_by(state)
    }

    /// The configuration's caps, before any `/budget`.
    pub fn configured(cfg: &BudgetConfig) -> Self {
        ThreadCap {
            usd: cfg.per_thread_usd,
            tokens: cfg.per_thread_tokens,
        }
    }

    /// These caps with the thread's `/budget` entries applied.
    pub fn overridden_by(self, state: &SessionState) -> Self {
        ThreadCap {
            usd: state.budget.usd.or(self.usd),
            tokens: state.budget.tokens.or(self.tokens),
        }
    }

    pub fn is_set(&self) -> bool {
        self.usd.is_some() || self.tokens.is_some()
    }

    /// The cap `spent` has reached, if any (the dollar cap first).
    pub fn reached(&self, spent: &UsageTotals) -> Option<Reached> {
        if let Some(cap) = self.usd
            && spent.cost_usd >= cap
        {
            return Some(Reached::Usd {
                spent: spent.cost_usd,
                cap,
            });
        }
        let used = tokens(spent);
        match self.tokens {
            Some(cap) if used >= cap => Some(Reached::Tokens { spent: used, cap }),
            _ => None,
        }
    }

    /// `$3.10 spent, $1.90 left of $5.00` (and the same for tokens), for the checklist footer
    /// and `/budget`; None without a cap.
    pub fn spent_and_left(&self, spent: &UsageTotals) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(cap) = self.usd {
            parts.push(format!(
                "{} spent, {} left of {}",
                money(spent.cost_usd),
                money((cap - spent.cost_usd).max(0.0)),
                money(cap)
            ));
        }
        if let Some(cap) = self.tokens {
            let used = tokens(spent);
            parts.push(format!(
                "{used} tokens spent, {} left of {cap}",
                cap.saturating_sub(used)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// `$5.02 and 1200 tokens spent`: the spend a cap of this shape counts, read from
    /// `usd` / `tokens` as amounts spent.
    pub fn spent_words(&self) -> String {
        format!("{} spent", cap_words(self.usd, self.tokens))
    }

    /// What a run may still spend: the cap less the spend before it, split evenly over `share`
    /// runs that start together and cannot see each other's spend (the subtask jobs of one
    /// fan-out wave). Never negative.
    pub fn allowance(&self, spent_before: &UsageTotals, share: u32) -> ThreadCap {
        let share = share.max(1);
        ThreadCap {
            usd: self
                .usd
                .map(|cap| (cap - spent_before.cost_usd).max(0.0) / f64::from(share)),
            tokens: self
                .tokens
                .map(|cap| cap.saturating_sub(tokens(spent_before)) / u64::from(share)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(cost_usd: f64, tokens: u64) -> UsageTotals {
        UsageTotals {
            calls: 1,
            prompt_tokens: tokens,
            cost_usd,
            ..UsageTotals::default()
        }
    }

    #[test]
    fn a_budget_entry_wins_over_the_config_and_the_blocked_line_names_the_command() {
        let cfg = BudgetConfig {
            per_thread_usd: Some(5.0),
            per_thread_tokens: Some(1000),
            ..BudgetConfig::default()
        };
        let mut state = SessionState::default();
        let cap = ThreadCap::of(&state, &cfg);
        assert_eq!(
            cap.reached(&spent(5.02, 10)).unwrap().blocked_line(),
            "blocked: budget ($5.02 of $5.00 spent) — `/budget $N` to continue"
        );
        assert_eq!(
            cap.reached(&spent(1.0, 1000)).unwrap().blocked_line(),
            "blocked: budget (1000 of 1000 tokens spent) — `/budget N tokens` to continue"
        );
        state.budget.usd = Some(8.0);
        let cap = ThreadCap::of(&state, &cfg);
        assert_eq!(cap.reached(&spent(5.02, 10)), None);
        assert_eq!(
            cap.spent_and_left(&spent(5.02, 10)).unwrap(),
            "$5.02 spent, $2.98 left of $8.00; 10 tokens spent, 990 left of 1000"
        );
    }

    /// An approved alternative applies the entries its request carries; a request is not a
    /// person's decision (a bundle may carry one), so a `budget` entry inside it is never applied.
    #[test]
    fn a_budget_inside_an_approved_alternative_is_not_applied() {
        let lines = [
            r#"{"v":1,"seq":1,"ts":"2026-01-02T03:04:05Z","run_id":"r","type":"budget","author":"alice","usd":5.0}"#,
            r#"{"v":1,"seq":2,"ts":"2026-01-02T03:04:05Z","run_id":"r","type":"approval","request_id":"alt-1","subject":{"kind":"alternative","entries":[{"type":"budget","author":"alice","usd":1000000.0},{"type":"usage","usage":{"calls":1,"prompt_tokens":0,"completion_tokens":0,"cost_usd":-50.0}}]}}"#,
        ];
        // `/approve` copies the request's subject into the decision (engine/commands.rs).
        let approved = lines[1].replace(r#""seq":2"#, r#""seq":3"#).replace(
            r#""type":"approval","#,
            r#""type":"approval","decision":"approved","author":"alice","#,
        );
        let lines = [lines[0], lines[1], &approved];
        let parsed = super::super::jsonl::parse(&(lines.join("\n") + "\n"));
        assert!(parsed.corrupt.is_empty(), "{:?}", parsed.corrupt);
        let state = super::super::replay(&parsed.entries);
        assert_eq!(state.budget.usd, Some(5.0));
        assert!(state.usage.cost_usd >= 0.0, "spend never shrinks");
    }

    #[test]
    fn the_allowance_splits_what_is_left_over_a_wave() {
        let cap = ThreadCap {
            usd: Some(5.0),
            tokens: Some(1000),
        };
        let left = cap.allowance(&spent(1.0, 400), 4);
        assert_eq!(left.usd, Some(1.0));
        assert_eq!(left.tokens, Some(150));
        assert_eq!(cap.allowance(&spent(9.0, 4000), 1).usd, Some(0.0));
    }
}
