//! Issue 35 on GitHub: the git-metadata attack of `security::git_metadata` (a hostile model
//! plants hooks, a `commondir`, fsmonitors, filter drivers and a gitlink through the detected
//! `make test`) in a single-job run and in split trust's agent job. No payload may run outside
//! the sandbox: the marker, written only by a process Landlock does not confine, never exists.

use super::{World, text};
use crate::security::git_metadata::hostile_steps;
use std::ffi::OsString;
use std::path::PathBuf;

/// The job's environment, with a temporary directory of its own: commands may write `$TMPDIR`,
/// so the marker's place (under `/tmp`) must not be it.
fn job_env(world: &World, number: u64) -> std::collections::BTreeMap<String, String> {
    let mut env = world.env("issues", &world.issue_opened(number, "alice"));
    let tmp = world.files.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    env.insert("TMPDIR".into(), tmp.display().to_string());
    env
}

fn attacked_world(marker: &std::path::Path) -> (World, u64) {
    let world = World::new(&hostile_steps(marker));
    world.checkout.write("Makefile", "test:\n\ttrue\n");
    world.checkout.commit_all("a Makefile");
    world.checkout.run_git(&["push", "-q", "origin", "main"]);
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    (world, number)
}

fn marker() -> PathBuf {
    PathBuf::from(format!("/tmp/replan-gh-git-marker-{}", fastrand::u64(..)))
}

fn assert_never_ran(marker: &std::path::Path, output: &std::process::Output) {
    let ran = std::fs::read_to_string(marker).ok();
    let _ = std::fs::remove_file(marker);
    assert_eq!(
        ran,
        None,
        "a payload ran outside the sandbox:\n{}",
        text(output)
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
}

/// The attack in a job run with `args` (after `run`): no payload ran, and the planting did.
fn attack(args: impl FnOnce(&World) -> Vec<OsString>) {
    let marker = marker();
    let (world, number) = attacked_world(&marker);
    let mut all = vec![OsString::from("run")];
    all.extend(args(&world));
    let output = world.run_args(&job_env(&world, number), &all);
    assert_never_ran(&marker, &output);
    let bodies: String = world
        .llm
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        bodies.contains("planted-42-everything"),
        "the planting command ran"
    );
}

#[test]
fn github_e2e_planted_git_metadata_never_runs_in_a_single_job() {
    attack(|_| Vec::new());
}

#[test]
fn github_e2e_planted_git_metadata_never_runs_in_the_split_agent_job() {
    attack(|world| {
        let dir = world.files.path().join("replan-bundle");
        vec!["--bundle".into(), dir.into()]
    });
}
