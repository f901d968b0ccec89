//! Unit tests: every default is the seed's value.

use super::*;

#[test]
fn planning_defaults_match_seed_001_section_9_1() {
    let p = Config::default().planning;
    assert!(p.enabled); // 001 §9.1 enabled: true
    assert_eq!(p.strategy, Strategy::ChainOfThought); // 001 §9.1 strategy
    assert_eq!(p.max_subtasks, 100); // 001 §9.1
    assert_eq!(p.decomposition_level, DecompositionLevel::Moderate); // 001 §9.1
    assert_eq!(p.mode, PlanningMode::SingleCall); // SPEC F5: one-call planning is the default
    assert!(p.reflection.enabled); // 001 §9.1
    assert!(p.reflection.trigger_on_error); // 001 §9.1
    assert_eq!(p.reflection.trigger_interval, 3); // 001 §9.1
    assert_eq!(p.revision.max_revisions, 3); // 001 §9.1
    assert_eq!(p.history.storage_type, "jsonl"); // 001 §9.1
}

#[test]
fn replanning_defaults_match_seed_000_section_12_1() {
    let r = Config::default().planning.replanning;
    assert!(r.enabled); // 000 §12.1
    assert_eq!(r.llm_decision.min_confidence_threshold, 0.5); // 000 §12.1
    assert!(r.llm_decision.require_user_confirmation_on_low_confidence); // 000 §12.1
    assert_eq!(r.llm_decision.user_confirmation_threshold, 0.3); // 000 §12.1
    assert_eq!(r.goal_understanding.max_clarification_requests, 2); // 000 §12.1
    assert!(r.goal_understanding.auto_assume_on_no_response); // 000 §12.1
    assert_eq!(r.goal_understanding.auto_assume_timeout_minutes, 30); // 000 §12.1
    assert_eq!(r.task_decomposition.max_redecomposition_attempts, 3); // 000 §12.1
    assert_eq!(r.action_sequence.max_regeneration_attempts, 3); // 000 §12.1
    assert_eq!(r.execution.max_action_retries, 3); // 000 §12.1
    assert_eq!(r.execution.max_partial_replans, 2); // 000 §12.1
    assert_eq!(r.reflection.max_plan_revisions, 2); // 000 §12.1
    assert_eq!(r.global.max_total_replans, 10); // 000 §12.1
    assert!(r.global.infinite_loop_detection); // 000 §12.1
    assert_eq!(r.global.same_trigger_max_count, 2); // 000 §12.1
}

#[test]
fn refinement_defaults_match_seed_002_table() {
    let r = Config::default().refinement;
    assert!(r.enabled);
    assert_eq!(r.max_refinement_attempts, 2); // 002 maxRefinementAttempts
    assert!(!r.refine_suggestions_on_success); // 002 refineSuggestionsOnSuccess
    assert_eq!(r.max_suggestion_replans, 1); // 002 maxSuggestionReplans
    assert!(r.enable_individual_fallback); // 002 enableIndividualFallback
    assert_eq!(r.delta_threshold, 5.0); // 002 deltaThreshold
    assert_eq!(r.delta_threshold_percent, 5.0); // 002 deltaThresholdPercent
    assert_eq!(r.task_count_change_threshold, 0.3); // 002 taskCountChangeThreshold
    assert_eq!(r.task_count_change_min_absolute, 2); // 002 taskCountChangeMinAbsolute
    assert_eq!(r.acceptable_score, 70.0); // our addition
}

#[test]
fn task_replanning_defaults_match_seed_004() {
    let r = Config::default().replanning;
    assert!(r.enabled); // 004 replanning.enabled
    assert_eq!(r.max_iterations, 3); // 004 replanning.maxIterations
    assert_eq!(r.min_new_subtasks, 3); // 004: 3-5 new subtasks
    assert_eq!(r.max_new_subtasks, 5);
    assert_eq!(r.alternatives_approval_threshold, 0.5);
}

#[test]
fn other_defaults() {
    let c = Config::default();
    assert_eq!(c.llm.provider, ProviderKind::Auto);
    assert_eq!(c.llm.timeout_seconds, 120);
    assert_eq!(c.llm.max_retries, 4);
    assert_eq!(
        c.llm.structured_output,
        crate::config::StructuredOutput::Auto
    );
    assert_eq!(c.tools.command_timeout_seconds, 300);
    assert_eq!(c.tools.output_cap_bytes, 65_536);
    assert_eq!(c.tools.read_cap_bytes, 262_144);
    assert_eq!(c.tools.search_max_results, 200);
    assert!(c.mcp_servers.is_empty());
    assert_eq!(c.history.branch, "replan-history"); // SPEC F4
    assert_eq!(c.history.retention_days, 90); // SPEC F4
    assert_eq!(c.history.directory, "planning_history");
    assert_eq!(c.history.commit_every, 20);
    for forge in [&c.github, &c.gitlab] {
        assert_eq!(forge.trigger_label, "replan");
        assert_eq!(forge.mention_handle, "@replan");
        assert_eq!(forge.min_permission, "write");
        assert_eq!(forge.min_access_level, 30);
    }
    assert!(c.user_config_api.is_none());
    assert_eq!(UserConfigApi::default().timeout_seconds, 10);
    assert_eq!(McpServerConfig::default().startup_timeout_seconds, 30);
}

#[test]
fn seed_002_camel_case_names_are_accepted() {
    let c: Config = serde_json::from_value(serde_json::json!({
        "refinement": {"maxRefinementAttempts": 4, "deltaThresholdPercent": 7.5},
        "replanning": {"maxIterations": 5}
    }))
    .unwrap();
    assert_eq!(c.refinement.max_refinement_attempts, 4);
    assert_eq!(c.refinement.delta_threshold_percent, 7.5);
    assert_eq!(c.replanning.max_iterations, 5);
}
