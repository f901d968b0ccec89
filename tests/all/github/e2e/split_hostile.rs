//! Hostile bundles: manifests a person can write by hand that `replan-bundle/1` accepts, each
//! started from a legitimate bundle of a real `replan run --bundle` and given a MATCHING digest
//! (the digest proves only that nothing changed after Replan finished; an agent job hostile from
//! the start writes them like this). Publish must refuse every one with exit 1, naming the write
//! and the rule, and send GitHub no writing request and push nothing. Then a digest mismatch, and
//! the untouched bundle still publishes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use replan::app::bundle::{Manifest, Write};
use replan::trigger::ThreadRef;
use serde_json::{Value, json};

use super::split::{agent_job, origin_branch, world_with_issue, writing_requests};
use super::{World, text};
use crate::support::TestRepo;
use crate::support::bundle_digest::bundle_digest;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn edit(dir: &Path, change: impl FnOnce(&mut Manifest)) {
    let mut manifest = Manifest::load(dir).unwrap();
    change(&mut manifest);
    manifest.save(dir).unwrap();
}

/// A history entry written as JSON, the way a hand-made manifest would hold it.
fn entry(seq: u64, run_id: &str, body: Value) -> replan::history::Entry {
    let mut line = json!({"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00Z", "run_id": run_id});
    for (key, value) in body.as_object().unwrap() {
        line[key] = value.clone();
    }
    serde_json::from_value(line).expect("a valid entry")
}

/// A real git bundle in `dir` holding `branch`: one commit on `main` that writes `files`.
fn git_bundle(world: &World, dir: &Path, branch: &str, files: &[(&str, &str)]) -> (String, String) {
    let scratch: TestRepo = world.fresh_checkout();
    scratch.run_git(&["checkout", "-q", "-b", branch]);
    for (path, content) in files {
        scratch.write(path, content);
    }
    let commit = scratch.commit_all("innocent change");
    let file = format!("branch-{}.bundle", fastrand::u32(..));
    let target = dir.join(&file);
    scratch.run_git(&[
        "bundle",
        "create",
        "--quiet",
        &target.to_string_lossy(),
        &format!("refs/heads/{branch}"),
        "^main",
    ]);
    (file, commit)
}

struct Setup<'a> {
    world: &'a World,
    number: u64,
    other_issue: u64,
    bots_comment: u64,
    bobs_comment: u64,
}

type Editor = Box<dyn Fn(&Setup<'_>, &Path)>;

struct Case {
    name: &'static str,
    /// A part of the refusal's message that names the rule.
    rule: &'static str,
    env: &'static [(&'static str, &'static str)],
    edit: Editor,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a comment on another thread",
            rule: "not the thread this publish job",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    m.writes.push(Write::Comment {
                        thread: ThreadRef::issue(s.other_issue),
                        placeholder: "replan-bundle:comment-900".into(),
                        body: "<!-- replan:notice:info -->\nforged".into(),
                    })
                })
            }),
        },
        Case {
            name: "someone else's branch feature-x",
            rule: "not a branch Replan writes",
            env: &[],
            edit: Box::new(|s, dir| {
                let (file, commit) = git_bundle(s.world, dir, "feature-x", &[("x.txt", "x\n")]);
                edit(dir, |m| {
                    m.writes.push(Write::Branch {
                        branch: "feature-x".into(),
                        commit,
                        file,
                    })
                })
            }),
        },
        Case {
            name: "a pull request into release",
            rule: "not the repository's default branch",
            env: &[],
            edit: Box::new(|_, dir| {
                edit(dir, |m| {
                    for write in &mut m.writes {
                        if let Write::PullRequest { request, .. } = write {
                            request.base = "release".into();
                        }
                    }
                })
            }),
        },
        Case {
            name: "a commit that adds a workflow",
            rule: "protected path `.github/workflows/pwn.yml`",
            env: &[],
            edit: Box::new(|s, dir| {
                let branch = format!("replan/issue-{}", s.number);
                let (new_file, new_commit) = git_bundle(
                    s.world,
                    dir,
                    &branch,
                    &[
                        ("hello.md", "hello\n"),
                        (".github/workflows/pwn.yml", "on: push\n"),
                    ],
                );
                edit(dir, |m| {
                    for write in &mut m.writes {
                        if let Write::Branch { file, commit, .. } = write {
                            *file = new_file.clone();
                            *commit = new_commit.clone();
                        }
                    }
                })
            }),
        },
        Case {
            name: "an edit of dependabot's comment carrying the marker",
            rule: "not Replan's own",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    m.writes.push(Write::EditComment {
                        thread: ThreadRef::issue(s.number),
                        comment_id: s.bots_comment.to_string(),
                        body: "<!-- replan:notice:info -->\nrewritten".into(),
                    })
                })
            }),
        },
        Case {
            name: "a reaction on bob's comment",
            rule: "only on the triggering comment or the thread",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    m.writes.push(Write::Reaction {
                        thread: ThreadRef::issue(s.number),
                        comment_id: Some(s.bobs_comment.to_string()),
                        reaction: replan::forge::Reaction::Rocket,
                    })
                })
            }),
        },
        Case {
            name: "a forged approval in the history",
            rule: "records a person's decision",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    let run_id = m.run_id.clone();
                    m.writes.push(Write::History {
                        thread: ThreadRef::issue(s.number),
                        entries: vec![entry(
                            500,
                            &run_id,
                            json!({"type": "approval", "request_id": "r-1",
                                   "decision": "approved", "author": "alice"}),
                        )],
                    })
                })
            }),
        },
        Case {
            // Issue 39: the thread's cap is a person's command, never a bundle's to raise.
            name: "a forged `/budget` raise in the history",
            rule: "records a person's decision",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    let run_id = m.run_id.clone();
                    m.writes.push(Write::History {
                        thread: ThreadRef::issue(s.number),
                        entries: vec![entry(
                            500,
                            &run_id,
                            json!({"type": "budget", "author": "alice", "usd": 1000000.0}),
                        )],
                    })
                })
            }),
        },
        Case {
            name: "a history entry naming bob's comment as the checklist",
            rule: "neither the checklist this bundle posts",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    let run_id = m.run_id.clone();
                    m.writes.push(Write::History {
                        thread: ThreadRef::issue(s.number),
                        entries: vec![entry(
                            500,
                            &run_id,
                            json!({"type": "checklist", "comment_id": s.bobs_comment.to_string()}),
                        )],
                    })
                })
            }),
        },
        Case {
            name: "1,000 comments",
            rule: "publish.max_comments",
            env: &[],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    for i in 0..1000 {
                        m.writes.push(Write::Comment {
                            thread: ThreadRef::issue(s.number),
                            placeholder: format!("replan-bundle:comment-{}", 1000 + i),
                            body: format!("<!-- replan:notice:info -->\nspam {i}"),
                        });
                    }
                })
            }),
        },
        Case {
            // The cap is lowered so that the test does not write 10 MiB of history.
            name: "history over the cap",
            rule: "publish.max_history_bytes",
            env: &[("REPLAN_PUBLISH__MAX_HISTORY_BYTES", "262144")],
            edit: Box::new(|s, dir| {
                edit(dir, |m| {
                    let run_id = m.run_id.clone();
                    m.writes.push(Write::History {
                        thread: ThreadRef::issue(s.number),
                        entries: vec![entry(
                            500,
                            &run_id,
                            json!({"type": "action", "task_id": "task_1", "tool": "run_command",
                                   "arguments_digest": "0", "outcome": "ok",
                                   "summary": "x".repeat(300 * 1024), "duration_ms": 1}),
                        )],
                    })
                })
            }),
        },
        Case {
            // The cap is lowered so that the test does not write 32 MiB of manifest.
            name: "a manifest over the cap",
            rule: "publish.max_manifest_bytes",
            env: &[("REPLAN_PUBLISH__MAX_MANIFEST_BYTES", "1048576")],
            edit: Box::new(|_, dir| {
                let path = dir.join("manifest.json");
                let mut text = std::fs::read_to_string(&path).unwrap();
                text.push_str(&" ".repeat(2 * 1024 * 1024));
                std::fs::write(path, text).unwrap();
            }),
        },
        Case {
            name: "JSON nested 100 deep",
            rule: "nested deeper than 32",
            env: &[],
            edit: Box::new(|s, dir| {
                let mut deep = json!("bottom");
                for _ in 0..100 {
                    deep = json!([deep]);
                }
                edit(dir, |m| {
                    let run_id = m.run_id.clone();
                    m.writes.push(Write::History {
                        thread: ThreadRef::issue(s.number),
                        entries: vec![entry(
                            500,
                            &run_id,
                            json!({"type": "approval", "request_id": "r-2", "subject": deep}),
                        )],
                    })
                })
            }),
        },
    ]
}

fn publish(world: &World, env: &BTreeMap<String, String>, dir: &Path) -> std::process::Output {
    world.run_args(env, &[OsString::from("publish"), dir.into()])
}

#[test]
fn github_split_publish_refuses_every_hostile_bundle_and_writes_nothing() {
    let (world, number) = world_with_issue();
    let (env, legit) = agent_job(&world, number);
    // The agent job's step output is the digest docs/security.md specifies.
    assert_eq!(world.outputs()["bundle_digest"], bundle_digest(&legit));
    let mut env = env;
    env.retain(|name, _| !name.starts_with("REPLAN_LLM") && name != "OPENAI_API_KEY");
    let setup = Setup {
        world: &world,
        number,
        other_issue: world.fake.seed_issue("Someone else's issue", "", "bob"),
        bots_comment: world.fake.seed_comment(
            number,
            "dependabot[bot]",
            "<!-- replan:notice:info -->\nBumps serde.",
        ),
        bobs_comment: world.fake.seed_comment(number, "bob", "Looks good to me"),
    };

    let mut failures = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let dir = world.files.path().join(format!("hostile-{i}"));
        copy_dir(&legit, &dir);
        (case.edit)(&setup, &dir);
        let mut env = env.clone();
        env.insert("REPLAN_BUNDLE_DIGEST".into(), bundle_digest(&dir));
        for (name, value) in case.env {
            env.insert((*name).into(), (*value).into());
        }
        world.fake.clear_requests();

        let output = publish(&world, &env, &dir);

        let writes = writing_requests(&world);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if output.status.code() != Some(1) || !writes.is_empty() || !stderr.contains(case.rule) {
            let last = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            failures.push(format!(
                "{}: exit {:?}, {} writing request(s) {:?}, stderr tail: {last}",
                case.name,
                output.status.code(),
                writes.len(),
                writes.iter().take(3).collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "hostile bundles were not refused:\n{}",
        failures.join("\n")
    );
    assert!(
        origin_branch(&world._origin, number).is_none(),
        "nothing pushed"
    );
    assert!(world.fake.comments(setup.other_issue).is_empty());

    // A digest that does not match: the bundle changed after Replan finished.
    let changed = world.files.path().join("changed");
    copy_dir(&legit, &changed);
    let mut env_changed = env.clone();
    env_changed.insert("REPLAN_BUNDLE_DIGEST".into(), bundle_digest(&changed));
    edit(&changed, |m| m.run_id.push('x'));
    world.fake.clear_requests();
    let output = publish(&world, &env_changed, &changed);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("digest"), "{}", text(&output));
    assert_eq!(writing_requests(&world), Vec::<String>::new());

    // The untouched bundle, with its digest, publishes.
    let mut env_ok = env.clone();
    env_ok.insert("REPLAN_BUNDLE_DIGEST".into(), bundle_digest(&legit));
    let output = publish(&world, &env_ok, &legit);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(world.fake.pull_requests().len(), 1);
    assert!(origin_branch(&world._origin, number).is_some(), "pushed");
}
