//! Checklist render time for a 100-subtask plan revised 10 times (previous plans in `<details>`,
//! the mermaid graph, progress carried over).

use std::time::Instant;

use chrono::Utc;
use replan::history::entry::{Entry, EntryBody};
use replan::history::{SCHEMA_VERSION, SessionState, replay};
use replan::plan::{Plan, ReplanType, TaskState};
use replan::report::checklist::{ChecklistContext, render};
use serde_json::Value;

use crate::scenario::plan_json;
use crate::stats::Samples;

fn plan(n: usize, revision: usize) -> Plan {
    let mut v = plan_json(n);
    for t in v["task_decomposition"]["subtasks"]
        .as_array_mut()
        .expect("subtasks")
    {
        let d = t["description"].as_str().unwrap_or_default().to_owned();
        t["description"] = Value::String(format!("{d} (rev {revision})"));
    }
    let only = serde_json::json!({
        "goal_understanding": v["goal_understanding"],
        "task_decomposition": v["task_decomposition"],
        "action_plan": v["action_plan"],
    });
    serde_json::from_value(only).expect("a plan")
}

pub fn state(n: usize, revisions: usize) -> SessionState {
    let mut entries = Vec::new();
    let mut push = |body: EntryBody| {
        let seq = entries.len() as u64 + 1;
        entries.push(Entry {
            v: SCHEMA_VERSION,
            seq,
            ts: Utc::now(),
            run_id: "bench-1".into(),
            body,
        });
    };
    push(EntryBody::Plan {
        version: 1,
        plan: Box::new(plan(n, 0)),
    });
    for r in 1..=revisions {
        // Some progress before each revision, so carry-over has something to show.
        for t in 1..=(r * n / (revisions + 1)) {
            push(EntryBody::TaskState {
                task_id: format!("task_{t}"),
                state: TaskState::Done,
                replanning_info: None,
                note: None,
            });
        }
        push(EntryBody::Revision {
            version: r as u32 + 1,
            reason: format!("revision {r}: the notes of step {r} need another pass"),
            changes: vec![],
            updated_plan: Box::new(plan(n, r)),
            replan_type: ReplanType::PartialReplan,
            trigger: None,
        });
    }
    replay(&entries)
}

pub struct RenderRow {
    pub micros: Samples,
    pub bytes: usize,
    pub revision_count: u32,
}

pub fn measure(n: usize, revisions: usize, iterations: usize) -> RenderRow {
    let state = state(n, revisions);
    let ctx = ChecklistContext {
        run_url: Some("https://github.com/octo/widgets/actions/runs/1".into()),
        model: Some("openai/gpt-4o".into()),
        per_thread: Default::default(),
    };
    let body = render(&state, &ctx);
    let mut micros = Samples::default();
    for _ in 0..iterations {
        let start = Instant::now();
        std::hint::black_box(render(std::hint::black_box(&state), &ctx));
        micros.push(start.elapsed().as_secs_f64() * 1e6);
    }
    RenderRow {
        micros,
        bytes: body.len(),
        revision_count: state.revision_count(),
    }
}
