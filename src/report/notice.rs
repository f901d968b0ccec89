//! Notice comments: seed 000 §11.2 (decision) and §11.3 (clarification), plus approval requests,
//! overrides, hand-offs, failures and completion.

use super::Notice;
use super::markers::notice_marker;
use chrono::{DateTime, Utc};
use std::fmt::Write;

fn bullets(out: &mut String, items: &[String]) {
    for item in items {
        let _ = writeln!(out, "- {}", super::md_text::inline(item));
    }
}

fn kind(notice: &Notice) -> &'static str {
    match notice {
        Notice::Decision { .. } => "decision",
        Notice::Clarification { .. } => "clarification",
        Notice::ApprovalRequest { .. } => "approval",
        Notice::PlanApproval { .. } => "plan-approval",
        Notice::Override { .. } => "override",
        Notice::HumanNeeded { .. } => "human-needed",
        Notice::Failure { .. } => "failure",
        Notice::Completion { .. } => "completion",
        Notice::Info { .. } => "info",
    }
}

/// The notice's idempotency key: the same notice on the same thread and plan version (the text
/// without its timestamp) is the same forge write, so a run resumed after a kill that had posted
/// it finds it by its marker instead of posting it again.
pub fn key(thread: &crate::trigger::ThreadRef, plan_version: u32, notice: &Notice) -> String {
    crate::forge::marker::key_for(&[
        &thread.to_string(),
        "notice",
        &plan_version.to_string(),
        &render(notice, DateTime::<Utc>::default()),
    ])
}

/// Render a notice as a comment body. `at` is the timestamp shown at the bottom.
pub fn render(notice: &Notice, at: DateTime<Utc>) -> String {
    let mut out = notice_marker(kind(notice));
    out.push('\n');
    match notice {
        Notice::Decision { phase, decision } => {
            out.push_str("## 🔄 Plan Revision Decided by AI\n\n");
            let _ = writeln!(out, "**Phase**: {}", phase.title());
            let _ = writeln!(out, "**Confidence**: {:.0}%\n", decision.confidence * 100.0);
            let _ = writeln!(out, "**Reasoning**:\n{}\n", decision.reasoning);
            if !decision.issues_found.is_empty() {
                out.push_str("**Issues Found**:\n");
                bullets(&mut out, &decision.issues_found);
                out.push('\n');
            }
            if !decision.recommended_actions.is_empty() {
                out.push_str("**Recommended Actions**:\n");
                bullets(&mut out, &decision.recommended_actions);
                out.push('\n');
            }
        }
        Notice::Clarification {
            questions,
            context,
            assumptions,
        } => {
            out.push_str("## ❓ Clarification Needed (AI Decision)\n\n");
            out.push_str(
                "I've analyzed the task and need some clarification to proceed effectively:\n\n",
            );
            out.push_str("**Questions**:\n");
            for (i, q) in questions.iter().enumerate() {
                let _ = writeln!(out, "{}. {}", i + 1, super::md_text::inline(q));
            }
            if !context.is_empty() {
                let _ = writeln!(out, "\n**Context**:\n{context}");
            }
            if !assumptions.is_empty() {
                out.push_str(
                    "\n**If no response**:\nI will proceed with the following assumptions:\n",
                );
                bullets(&mut out, assumptions);
            }
            out.push_str("\nPlease reply to this comment with your answers.\n\n");
        }
        Notice::ApprovalRequest {
            summary,
            confidence,
        } => {
            out.push_str("## ✋ Approval Needed\n\n");
            let _ = writeln!(out, "{summary}\n");
            let _ = writeln!(
                out,
                "The model's confidence is {:.0}%, too low to act on alone. Reply `/approve` to go ahead \
                 or `/reject [reason]` to keep the current plan.\n",
                confidence * 100.0
            );
        }
        Notice::PlanApproval {
            version,
            short_hash,
            scope_diff,
        } => {
            out.push_str("## ✋ Plan Approval Needed\n\n");
            match scope_diff {
                Some(diff) => {
                    let _ = writeln!(
                        out,
                        "Plan v{version} (`{short_hash}`) widens the approved scope:\n\n{diff}"
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "Plan v{version} (`{short_hash}`) is in the checklist; nothing runs until it is approved.\n"
                    );
                }
            }
            let _ = writeln!(
                out,
                "Reply `/approve` (or `/approve {short_hash}`) to run exactly this plan, or \
                 `/reject [reason]` to have it planned again.\n"
            );
        }
        Notice::Override { phase, reason } => {
            out.push_str("## ⚠️ AI Decision Overridden\n\n");
            let _ = writeln!(out, "**Phase**: {}\n", phase.title());
            let _ = writeln!(out, "**Reason**: {reason}\n");
        }
        Notice::HumanNeeded {
            reason,
            recommendations,
        } => {
            out.push_str("## 🙋 Human Intervention Needed\n\n");
            let _ = writeln!(out, "{reason}\n");
            if !recommendations.is_empty() {
                out.push_str("**Recommendations**:\n");
                bullets(&mut out, recommendations);
                out.push('\n');
            }
            out.push_str(
                "Reply `/resume` to retry blocked tasks or `/replan [reason]` to plan again.\n\n",
            );
        }
        Notice::Failure { message } => {
            out.push_str("## ❌ Replan Failed\n\n");
            let _ = writeln!(out, "{message}\n");
            out.push_str(
                "The history is kept: the next run resumes from the last recorded step.\n\n",
            );
        }
        Notice::Completion { summary } => {
            out.push_str("## ✅ Completed\n\n");
            let _ = writeln!(out, "{summary}\n");
        }
        Notice::Info { text } => {
            let _ = writeln!(out, "{text}\n");
        }
    }
    let _ = writeln!(out, "*{}*", at.format("%Y-%m-%d %H:%M:%S UTC"));
    out
}
