//! Seed 004 task judge (done / continue / replan / blocked), the split of a failed task into new
//! subtasks, and seed 003 ranked alternatives.

pub mod alternatives;
pub mod outcome;
pub mod split;

pub use alternatives::{
    Alternative, ScoreBreakdown, ScoredAlternative, complexity_score, needs_approval,
    past_success_rate, rank, score, tools_available_ratio,
};
pub use outcome::{JudgeOutcome, JudgeVerdict, decide, outcome};
pub use split::{ChainCheck, SplitError, SplitResult, apply_split, check_chain};
