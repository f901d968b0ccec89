//! Phases 1–3 (seed 001 §2.1–2.3): drafting the plan in one call or phase by phase, validating
//! it, the replan decision on it, and making it the current plan.

use crate::engine::batch::Batch;
use crate::engine::context::{self, json};
use crate::engine::cx::{Cx, CycleError, StepEffects};
use crate::engine::decide::{DecisionAsk, DecisionOutcome, decide, decision_format};
use crate::engine::folded::{FoldedPlanning, is_folded};
use crate::engine::replan::carry_over_from_state;
use crate::engine::step::{Step, next_step};
use crate::history::entry::{DraftSource, EntryBody, RunStatus};
use crate::history::state::PlanningWork;
use crate::plan::validate::{ValidationRules, validate};
use crate::plan::{
    ActionPlan, GoalUnderstanding, Phase, Plan, PlanningResponse, ReplanType, RevisionChange,
    TaskDecomposition, TaskState,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The planner's reply: the seed's planning response plus our per-phase self-check.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PlanningReply {
    #[serde(flatten)]
    pub planning: PlanningResponse,
    #[serde(default)]
    pub self_check: Value,
}

/// `planning.decisions: folded`: the draft plus the decision and quality self-check on it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FoldedPlanningReply {
    #[serde(flatten)]
    pub reply: PlanningReply,
    #[serde(flatten)]
    pub folded: FoldedPlanning,
}

fn work(batch: &Batch) -> PlanningWork {
    batch.state.planning.clone().unwrap_or_default()
}

fn phase_list(first: Phase, last: Phase) -> String {
    [
        (Phase::GoalUnderstanding, "goal_understanding"),
        (Phase::TaskDecomposition, "task_decomposition"),
        (Phase::ActionSequence, "action_plan"),
    ]
    .into_iter()
    .filter(|(p, _)| *p >= first && *p <= last)
    .map(|(_, n)| n)
    .collect::<Vec<_>>()
    .join(", ")
}

fn fixed_parts(w: &PlanningWork, first: Phase) -> String {
    let mut out = serde_json::Map::new();
    if first > Phase::GoalUnderstanding
        && let Some(g) = &w.goal
    {
        out.insert(
            "goal_understanding".into(),
            serde_json::to_value(g).unwrap_or_default(),
        );
    }
    if first > Phase::TaskDecomposition
        && let Some(d) = &w.decomposition
    {
        out.insert(
            "task_decomposition".into(),
            serde_json::to_value(d).unwrap_or_default(),
        );
    }
    if out.is_empty() {
        "(none)".into()
    } else {
        json(&Value::Object(out))
    }
}

fn feedback(w: &PlanningWork, extra: &[String]) -> String {
    let mut items = w.feedback.clone();
    items.extend(extra.iter().cloned());
    context::bullet_list(&items)
}

/// Ask for phases `first..=last`; one call for all three in single-call mode.
pub async fn draft(
    cx: &Cx<'_>,
    batch: &mut Batch,
    first: Phase,
    last: Phase,
) -> Result<StepEffects, CycleError> {
    let w = work(batch);
    ask_draft(cx, batch, &w, first, last, DraftSource::Planning, &[]).await
}

/// Validation found problems: ask once more for the whole plan with the problems as feedback.
pub async fn redraft_invalid(cx: &Cx<'_>, batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let w = work(batch);
    let first = w
        .from
        .unwrap_or(Phase::GoalUnderstanding)
        .min(Phase::ActionSequence);
    let problems: Vec<String> = w
        .problems
        .iter()
        .map(|p| format!("Plan validation: {p}"))
        .collect();
    ask_draft(
        cx,
        batch,
        &w,
        first,
        Phase::ActionSequence,
        DraftSource::ValidationRetry,
        &problems,
    )
    .await
}

pub(crate) async fn ask_draft(
    cx: &Cx<'_>,
    batch: &mut Batch,
    w: &PlanningWork,
    first: Phase,
    last: Phase,
    source: DraftSource,
    extra_feedback: &[String],
) -> Result<StepEffects, CycleError> {
    let task_request = context::task_request(&batch.state);
    let past = context::past_history(&batch.state);
    let tools =
        context::available_tools(&cx.deps.tools) + &context::checks_for_planning(&cx.deps.tools);
    let fixed = fixed_parts(w, first);
    let fb = feedback(w, extra_feedback);
    let rules = context::planning_rules(&cx.deps.prompts, cx.cfg())?;
    let (template, purpose, phase_text) = if first == last {
        let instructions = cx.render(&format!("phase_{}", first.as_str()), &[])?;
        (
            "planning_phase",
            format!("planning.{}", first.as_str()),
            instructions,
        )
    } else {
        ("planning_single", "planning".to_string(), String::new())
    };
    let phases = phase_list(first, last);
    let folded = is_folded(cx.cfg().planning.decisions);
    let checks = if folded {
        folded_checks(cx, first, last)?
    } else {
        String::new()
    };
    let prompt = if template == "planning_phase" {
        cx.render(
            template,
            &[
                ("phase", first.as_str()),
                ("task_request", &task_request),
                ("past_history", &past),
                ("fixed_parts", &fixed),
                ("feedback", &fb),
                ("available_tools", &tools),
                ("phase_instructions", &phase_text),
                ("folded_checks", &checks),
                ("planning_rules", &rules),
            ],
        )?
    } else {
        cx.render(
            template,
            &[
                ("phases", &phases),
                ("task_request", &task_request),
                ("past_history", &past),
                ("fixed_parts", &fixed),
                ("feedback", &fb),
                ("available_tools", &tools),
                ("folded_checks", &checks),
                ("planning_rules", &rules),
            ],
        )?
    };
    let purpose = match source {
        DraftSource::Refinement => "planning.refinement".to_string(),
        DraftSource::ValidationRetry => "planning.validation_retry".to_string(),
        _ => purpose,
    };
    let unusable = |f: crate::llm::StructuredFailure| {
        (
            PlanningReply {
                planning: PlanningResponse::default(),
                self_check: Value::Null,
            },
            FoldedPlanning::default(),
            Some(format!("the planning reply could not be used: {}", f.error)),
        )
    };
    let (reply, folded, mut parse_problem) = if folded {
        match cx
            .ask::<FoldedPlanningReply>(batch, &purpose, prompt)
            .await?
        {
            Ok(r) => (r.reply, r.folded, None),
            Err(f) => unusable(f),
        }
    } else {
        match cx.ask::<PlanningReply>(batch, &purpose, prompt).await? {
            Ok(r) => (r, FoldedPlanning::default(), None),
            Err(f) => unusable(f),
        }
    };
    let mut fx = StepEffects::default();
    if let Some(err) = &reply.planning.error {
        // Seed 001 §10.1.1: the goal is unclear; weigh it like a clarification request.
        let decision = crate::plan::ReplanDecision {
            replan_needed: true,
            confidence: 1.0,
            reasoning: err.message.clone(),
            replan_type: ReplanType::ClarificationRequest,
            target_phase: Some(Phase::GoalUnderstanding),
            clarification_needed: true,
            clarification_questions: err.clarification_needed.clone(),
            ..Default::default()
        };
        let outcome = crate::engine::decide::weigh_given(
            cx,
            batch,
            Phase::GoalUnderstanding,
            decision,
            &mut fx.notices,
        );
        if outcome != DecisionOutcome::Continue {
            return Ok(outcome_effects(outcome, fx));
        }
        // No question may be asked (limit): go on with an empty draft whose problems say why.
        parse_problem = Some(format!("the goal is unclear: {}", err.message));
    }
    let p = reply.planning;
    let want = |phase: Phase| phase >= first && phase <= last;
    let goal = want(Phase::GoalUnderstanding).then(|| {
        p.goal_understanding
            .clone()
            .unwrap_or_else(|| GoalUnderstanding {
                main_objective: String::new(),
                ..Default::default()
            })
    });
    let decomposition = want(Phase::TaskDecomposition).then(|| {
        p.task_decomposition
            .clone()
            .unwrap_or_else(TaskDecomposition::default)
    });
    let actions = want(Phase::ActionSequence)
        .then(|| p.action_plan.clone().unwrap_or_else(ActionPlan::default));
    // Validate the draft once all three phases are there.
    let mut merged = w.clone();
    if let Some(g) = &goal {
        merged.goal = Some(g.clone());
    }
    if let Some(d) = &decomposition {
        merged.decomposition = Some(d.clone());
    }
    if let Some(a) = &actions {
        merged.actions = Some(a.clone());
    }
    let mut problems: Vec<String> = parse_problem.into_iter().collect();
    if let Some(plan) = merged.draft() {
        problems.extend(validation_problems(cx, &plan));
        problems.extend(crate::plan::criteria::criteria_problems(
            &plan.goal_understanding,
            &context::check_names(&cx.deps.tools),
        ));
    }
    batch.push(EntryBody::Draft {
        goal_understanding: goal,
        task_decomposition: decomposition,
        action_plan: actions,
        self_check: reply.self_check,
        source,
        problems,
    });
    settle_folded(cx, batch, folded, fx).await
}

/// The folded parts the planner answers with the draft: the decision on the phase it drafts
/// (the whole plan in one call) and, with the action plan, the quality self-check.
fn folded_checks(cx: &Cx<'_>, first: Phase, last: Phase) -> Result<String, CycleError> {
    let phase = if first == last {
        first
    } else {
        Phase::ActionSequence
    };
    let quality = if last == Phase::ActionSequence && cx.cfg().refinement.enabled {
        cx.render("planning_folded_quality", &[])?
    } else {
        String::new()
    };
    cx.render(
        "planning_folded",
        &[
            ("replan_decision_format", &decision_format(cx, phase)?),
            ("quality", &quality),
        ],
    )
}

pub fn validation_problems(cx: &Cx<'_>, plan: &Plan) -> Vec<String> {
    let rules = ValidationRules {
        max_subtasks: cx.cfg().planning.max_subtasks as usize,
        known_tools: Some(cx.deps.tools.names().map(str::to_string).collect()),
    };
    match validate(plan, &rules) {
        Ok(()) => vec![],
        Err(problems) => problems.iter().map(|p| p.to_string()).collect(),
    }
}

fn outcome_effects(outcome: DecisionOutcome, mut fx: StepEffects) -> StepEffects {
    match outcome {
        DecisionOutcome::Waiting(status) => fx.end = Some(status),
        DecisionOutcome::HumanNeeded => fx.end = Some(RunStatus::RequiresHumanIntervention),
        DecisionOutcome::Continue | DecisionOutcome::Replan(_) | DecisionOutcome::Retry => {}
    }
    fx
}

/// The seed 000 decision after a planning phase (§4.2, §5.2, §6.2), or on the whole plan in
/// single-call mode.
pub async fn decide_phase(
    cx: &Cx<'_>,
    batch: &mut Batch,
    phase: Phase,
) -> Result<StepEffects, CycleError> {
    let prompt = decision_prompt(cx, batch, phase)?;
    let mut fx = StepEffects::default();
    let outcome = decide(
        cx,
        batch,
        DecisionAsk {
            phase,
            trigger: None,
            prompt,
            answer: None,
        },
        &mut fx.notices,
    )
    .await?;
    Ok(outcome_effects(outcome, fx))
}

/// The seed 000 decision prompt on the draft's `phase` (§4.2, §5.2, §6.2; the whole plan in
/// single-call mode).
fn decision_prompt(cx: &Cx<'_>, batch: &Batch, phase: Phase) -> Result<String, CycleError> {
    let w = work(batch);
    let fmt = decision_format(cx, phase)?;
    let task_request = context::task_request(&batch.state);
    let ctx_info = format!(
        "{}\n\nFeedback given for this plan:\n{}",
        context::past_history(&batch.state),
        context::bullet_list(&w.feedback)
    );
    let problems = context::bullet_list(&w.problems);
    let single = cx.cfg().planning.mode == crate::config::PlanningMode::SingleCall;
    Ok(match phase {
        Phase::GoalUnderstanding => cx.render(
            "decision_goal_understanding",
            &[
                ("goal_understanding_result", &json(&w.goal)),
                ("task_request", &task_request),
                ("context_info", &ctx_info),
                ("replan_decision_format", &fmt),
            ],
        )?,
        Phase::TaskDecomposition => cx.render(
            "decision_task_decomposition",
            &[
                ("task_decomposition_result", &json(&w.decomposition)),
                ("goal_understanding", &json(&w.goal)),
                ("available_tools", &context::available_tools(&cx.deps.tools)),
                ("replan_decision_format", &fmt),
            ],
        )?,
        _ => {
            let plan = w.draft().unwrap_or_default();
            let availability = context::tool_availability(&plan, &cx.deps.tools);
            if single {
                cx.render(
                    "decision_plan",
                    &[
                        ("task_request", &task_request),
                        ("context_info", &ctx_info),
                        ("plan", &json(&plan)),
                        ("self_check", &json(&w.self_check)),
                        ("tool_availability", &availability),
                        ("validation_problems", &problems),
                        ("replan_decision_format", &fmt),
                    ],
                )?
            } else {
                cx.render(
                    "decision_action_sequence",
                    &[
                        ("action_plan", &json(&plan.action_plan)),
                        ("subtasks", &json(&plan.task_decomposition.subtasks)),
                        ("tool_availability", &availability),
                        ("validation_problems", &problems),
                        ("replan_decision_format", &fmt),
                    ],
                )?
            }
        }
    })
}

/// Folded: the decision and quality self-check the planning reply carried, weighed as if they
/// had been asked (a part the reply lacks is left to its own step).
async fn settle_folded(
    cx: &Cx<'_>,
    batch: &mut Batch,
    folded: FoldedPlanning,
    mut fx: StepEffects,
) -> Result<StepEffects, CycleError> {
    // Exactly what the separate flow would ask next, and nothing else.
    let next = || next_step(&batch.state, cx.input, cx.cfg());
    if let Some(answer) = folded.replan_decision
        && let Step::DecidePlanning(phase) = next()
    {
        let prompt = decision_prompt(cx, batch, phase)?;
        let ask = DecisionAsk {
            phase,
            trigger: None,
            prompt,
            answer: Some(answer),
        };
        let outcome = decide(cx, batch, ask, &mut fx.notices).await?;
        if outcome != DecisionOutcome::Continue {
            return Ok(outcome_effects(outcome, fx));
        }
    }
    if let Some(verdict) = folded.quality
        && next_step(&batch.state, cx.input, cx.cfg()) == Step::QualityJudge
    {
        let more = super::refinement::weigh(cx, batch, verdict);
        fx.notices.extend(more.notices);
    }
    Ok(fx)
}

/// Still invalid after the re-ask and the decision kept it: a person must look (level 3).
pub fn invalid_plan(batch: &mut Batch) -> StepEffects {
    let problems = work(batch).problems;
    let mut fx = StepEffects::default();
    crate::engine::phases::complete::human_needed(
        batch,
        "the plan is still invalid after a re-ask",
        problems,
        &mut fx.notices,
    );
    fx.end = Some(RunStatus::RequiresHumanIntervention);
    fx
}

/// The atomic switch: the draft becomes the current plan, with progress carried over per replan
/// type (seed 000 §11.4.3), all in one append.
pub fn commit_plan(batch: &mut Batch) -> Result<StepEffects, CycleError> {
    let w = work(batch);
    let Some(plan) = w.draft() else {
        return Err(CycleError::Fatal(
            "asked to commit a plan whose draft is incomplete".into(),
        ));
    };
    let version = batch.state.plan_version + 1;
    let carried = carry_over_from_state(&batch.state, &plan, w.replan_type);
    let previous_version = batch.state.plan_version;
    match &batch.state.plan {
        None => batch.push(EntryBody::Plan {
            version,
            plan: Box::new(plan),
        }),
        Some(old) => {
            let changes = plan_changes(old, &plan);
            batch.push(EntryBody::Revision {
                version,
                reason: w.reason.clone().unwrap_or_else(|| "replanned".into()),
                changes,
                updated_plan: Box::new(plan),
                replan_type: w.replan_type,
                trigger: w.trigger,
            });
        }
    }
    for id in carried.kept_done() {
        batch.push(EntryBody::TaskState {
            task_id: id.to_string(),
            state: TaskState::Done,
            replanning_info: None,
            note: Some(format!("carried over from plan v{previous_version}")),
        });
    }
    Ok(StepEffects::default())
}

fn plan_changes(old: &Plan, new: &Plan) -> Vec<RevisionChange> {
    let mut out = Vec::new();
    for t in &new.task_decomposition.subtasks {
        match old.subtask(&t.id) {
            None => out.push(RevisionChange::Structured {
                kind: "add_task".into(),
                details: format!("{}: {}", t.id, t.description),
            }),
            Some(o) if o != t => out.push(RevisionChange::Structured {
                kind: "modify_task".into(),
                details: format!("{}: {}", t.id, t.description),
            }),
            Some(_) => {}
        }
    }
    for t in &old.task_decomposition.subtasks {
        if new.subtask(&t.id).is_none() {
            out.push(RevisionChange::Structured {
                kind: "remove_task".into(),
                details: t.id.clone(),
            });
        }
    }
    if old.action_plan != new.action_plan {
        out.push(RevisionChange::Structured {
            kind: "modify_action".into(),
            details: "action plan regenerated".into(),
        });
    }
    out
}
