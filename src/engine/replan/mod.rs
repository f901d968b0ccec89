//! Pure decision logic for seed 000 LLM replan decisions: which limit a decision spends, where it
//! sends the cycle back to, whether it may run (confidence bands, limits, loops), how an override
//! escalates, and which task progress survives the new plan. No I/O: the cycle calls these.

pub mod carry_over;
pub mod escalation;
pub mod levels;
pub mod limits;
pub mod loop_detect;
pub mod policy;

pub use carry_over::{CarryOver, carry_over, carry_over_from_state};
pub use escalation::{
    ESCALATION_TEMPLATE, Escalation, EscalationPolicy, EscalationStep, escalation_prompt,
};
pub use levels::{
    ReplanLevel, ResolvedTarget, TargetSource, decided_in, effective_type, resolve_target,
    returns_to,
};
pub use limits::{LimitBucket, ReplanCounters, bucket_for, limit_for, loop_count};
pub use loop_detect::{normalise_issue, trigger_key};
pub use policy::{Assessment, ConfidenceBand, HIGH_CONFIDENCE, OverrideReason, assess, band};
