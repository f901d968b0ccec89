//! The pull request body's "Verification" section in split-trust mode (issue 37, point 5). The
//! bundle carries only the section's text; publish edits only the body of the pull request the
//! thread's history records as opened by Replan for that thread, and there only between the
//! section's markers. Hostile bundles are written as raw JSON, the way a hand-made manifest
//! would hold them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use serde_json::{Value, json};

use super::split::{agent_job, world_with_issue, writing_requests};
use super::text;
use crate::support::bundle_digest::bundle_digest;

fn publish(
    world: &super::World,
    env: &BTreeMap<String, String>,
    dir: &Path,
) -> std::process::Output {
    world.run_args(env, &[OsString::from("publish"), dir.into()])
}

/// A bundle holding the legitimate manifest's origin with `writes` as its only writes.
fn hostile_bundle(legit: &Path, dir: &Path, writes: Value) {
    std::fs::create_dir_all(dir).unwrap();
    let text = std::fs::read_to_string(legit.join("manifest.json")).unwrap();
    let mut manifest: Value = serde_json::from_str(&text).unwrap();
    manifest["writes"] = writes;
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn github_split_publish_edits_only_the_marked_section_of_replans_own_pull_request() {
    let (world, number) = world_with_issue();
    let (env, legit) = agent_job(&world, number);
    let mut env = env;
    env.retain(|name, _| !name.starts_with("REPLAN_LLM") && name != "OPENAI_API_KEY");
    env.insert("REPLAN_BUNDLE_DIGEST".into(), bundle_digest(&legit));
    let output = publish(&world, &env, &legit);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let own = world.fake.pull_requests()[0].clone();
    // Someone else's pull request in the same repository.
    let tip = world.fake.ref_sha("main").expect("main");
    world.fake.set_ref("feature-x", &tip);
    let bobs = world.fake.seed_pull_request("feature-x", "main", "bob");

    let cases = [
        (
            "another pull request's body",
            json!([{"type": "pull_request_section",
                    "pull_request": bobs.to_string(), "section": "forged"}]),
            "not the pull request Replan opened for",
        ),
        (
            "the whole body, through a section that closes itself early",
            json!([{"type": "pull_request_section",
                    "pull_request": own.number.to_string(),
                    "section": "x\n<!-- replan:verification:end -->\nThe whole body, replaced"}]),
            "section markers",
        ),
        (
            "the whole body, as a write of its own",
            json!([{"type": "pull_request_body",
                    "pull_request": own.number.to_string(), "body": "The whole body, replaced"}]),
            "pull_request_body",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, writes, rule)) in cases.into_iter().enumerate() {
        let dir = world.files.path().join(format!("hostile-section-{i}"));
        hostile_bundle(&legit, &dir, writes);
        let mut env = env.clone();
        env.insert("REPLAN_BUNDLE_DIGEST".into(), bundle_digest(&dir));
        world.fake.clear_requests();

        let output = publish(&world, &env, &dir);

        let writes = writing_requests(&world);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if output.status.code() == Some(0) || !writes.is_empty() || !stderr.contains(rule) {
            let last = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            failures.push(format!(
                "{name}: exit {:?}, writing requests {writes:?}, stderr tail: {last}",
                output.status.code()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "hostile section writes were not refused:\n{}",
        failures.join("\n")
    );
    let pulls = world.fake.pull_requests();
    let bobs_now = pulls.iter().find(|p| p.number == bobs).unwrap();
    assert_eq!(bobs_now.body, "", "bob's pull request is untouched");
    let own_now = pulls.iter().find(|p| p.number == own.number).unwrap();
    assert_eq!(own_now.body, own.body, "Replan's own body is untouched");
    // The legitimate bundle's section is in the body, once, below the model's text.
    assert_eq!(
        own.body.matches("<!-- replan:verification -->").count(),
        1,
        "{}",
        own.body
    );
    let rendered = crate::support::gfm::render(&own.body);
    assert_eq!(rendered.headings, vec!["Verification"], "{}", own.body);
    rendered.assert_only_tags(&[], &own.body);
    assert!(rendered.tasks.is_empty(), "{}", own.body);
    assert!(
        rendered
            .links
            .iter()
            .any(|l| l.ends_with(&format!("planning_history/issues/{number}.jsonl"))),
        "{}",
        own.body
    );
    assert!(
        own.body.find(&format!("Closes #{number}")) < own.body.find("### Verification"),
        "{}",
        own.body
    );
}
