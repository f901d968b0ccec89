//! `/budget` (issue 39): the thread's ledger shown, or its cap set by a person. The cap is
//! recorded as a `budget` history entry in the same append as `run_started`; the model never
//! writes one (only this command, from a gated forge comment, does).

use super::batch::Batch;
use super::cx::{Cx, StepEffects};
use crate::history::SessionState;
use crate::history::entry::{EntryBody, RunStatus};
use crate::history::ledger::{ThreadCap, money};
use crate::report::Notice;
use crate::trigger::BudgetAmount;

pub fn handle(
    cx: &Cx<'_>,
    batch: &mut Batch,
    amount: Option<&BudgetAmount>,
    author: &str,
) -> StepEffects {
    let budget = &cx.cfg().llm.budget;
    let (usd, tokens) = match amount {
        None => return shown(&batch.state, ledger_text(&batch.state, budget)),
        Some(BudgetAmount::Unreadable(text)) => {
            return shown(
                &batch.state,
                format!(
                    "`/budget {text}` is not a budget I can read: write `/budget $5` (dollars) or `/budget 20000 tokens`."
                ),
            );
        }
        Some(BudgetAmount::Cents(cents)) => (Some(*cents as f64 / 100.0), None),
        Some(BudgetAmount::Tokens(tokens)) => (None, Some(*tokens)),
    };
    batch.push(EntryBody::Budget {
        author: author.to_string(),
        usd,
        tokens,
    });
    let text = format!(
        "Budget of this thread set by @{author}. {}",
        ledger_text(&batch.state, budget)
    );
    let notices = vec![Notice::Info { text }];
    // With a plan, the run goes on where the thread stopped (the cycle checks the new cap
    // before it calls the model); without one there is nothing to continue yet.
    let nothing_to_continue = !batch.state.has_plan() && batch.state.planning.is_none();
    let end = nothing_to_continue.then(|| last_status(&batch.state));
    StepEffects { notices, end }
}

/// The thread's caps for a run on `input`: a `/budget $N` run's own calls already count
/// against the cap it sets (its entry is appended when the run starts).
pub fn cap_for_run(
    state: &SessionState,
    input: &super::EngineInput,
    budget: &crate::config::BudgetConfig,
) -> ThreadCap {
    let mut cap = ThreadCap::of(state, budget);
    if let super::EngineInput::Budget {
        amount: Some(amount),
        ..
    } = input
    {
        match amount {
            BudgetAmount::Cents(cents) => cap.usd = Some(*cents as f64 / 100.0),
            BudgetAmount::Tokens(tokens) => cap.tokens = Some(*tokens),
            BudgetAmount::Unreadable(_) => {}
        }
    }
    cap
}

fn last_status(state: &SessionState) -> RunStatus {
    state.last_status.unwrap_or(RunStatus::Completed)
}

fn shown(state: &SessionState, text: String) -> StepEffects {
    StepEffects {
        notices: vec![Notice::Info { text }],
        end: Some(last_status(state)),
    }
}

/// `Spent over all runs: $2.00 spent, $3.00 left of $5.00.` and what is not counted.
pub fn ledger_text(state: &SessionState, budget: &crate::config::BudgetConfig) -> String {
    let cap = ThreadCap::of(state, budget);
    let spent = &state.usage;
    let mut text = match cap.spent_and_left(spent) {
        Some(words) => format!("Over all runs of this thread: {words}."),
        None => format!(
            "Over all runs of this thread: {} and {} tokens spent; no cap is set (`/budget $N` or `/budget N tokens` sets one).",
            money(spent.cost_usd),
            crate::history::ledger::tokens(spent)
        ),
    };
    if spent.unpriced_calls > 0 {
        text.push_str(&format!(
            " {} calls were answered by a model without a price in `llm.prices`: their cost is not counted.",
            spent.unpriced_calls
        ));
    }
    text
}
