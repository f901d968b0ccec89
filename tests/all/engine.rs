//! Engine scenario tests: the scripted LLM drives whole cycles; assertions look at what users and
//! later runs see — history entries, plan versions, checklist progress, notices, exit statuses.

mod fixtures;

mod budgets;
mod commands;
mod decisions;
mod demo;
mod execution;
mod gfm_render;
mod mermaid_graph;
mod plan_approval;
mod planning;
mod refinement;
mod report_snapshots;
mod resume;
pub(crate) mod verify;
