//! Seed 002 plan refinement: the quality judge's accept / replan / reject decision and the
//! structure check between a plan and its refined version.

pub mod decision;
pub mod structure;

pub use decision::{
    RefinementDecision, RefinementInput, RefinementVerdict, is_stagnated, make_refinement_decision,
    quality_ok,
};
pub use structure::{
    StructureProblem, StructureValidation, choose_refined_plan, fallback_per_task,
    validate_structure,
};
