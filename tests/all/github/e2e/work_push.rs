//! A GitHub Actions checkout made with `persist-credentials: true` holds the job's token in
//! `.git/config`, where every command can read it. Replan takes it out before the model acts and
//! still pushes the work branch to the HTTP `origin` that demands it, from memory.

use super::{World, text};
use crate::support::git_http::GitHttp;

#[test]
fn github_e2e_the_checkouts_token_leaves_git_config_and_still_pushes_the_work_branch() {
    let world = World::new("");
    let number = world.alices_issue("Add a hello file", "Please add hello.md.");
    // base64("x-access-token:ghs_checkout_token"), as actions/checkout writes it.
    let authorization = "basic eC1hY2Nlc3MtdG9rZW46Z2hzX2NoZWNrb3V0X3Rva2Vu";
    let origin = world._origin.path();
    let name = origin.file_name().unwrap().to_str().unwrap();
    let http = GitHttp::start(origin.parent().unwrap(), authorization);
    world
        .checkout
        .run_git(&["remote", "set-url", "origin", &http.url(name)]);
    let key = format!("http.{}.extraheader", http.url(""));
    world
        .checkout
        .run_git(&["config", &key, &format!("AUTHORIZATION: {authorization}")]);

    let output = world.run(&world.env("issues", &world.issue_opened(number, "alice")));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let branch = format!("replan/work/issue-{number}");
    assert_eq!(
        world._origin.show(&format!("{branch}:hello.md")),
        world.checkout.read("hello.md"),
        "the finished task's file is on the work branch"
    );
    let work_pushes: Vec<_> = http
        .requests()
        .into_iter()
        .filter(|r| r.line().ends_with("/git-receive-pack") && r.body.contains(&branch))
        .collect();
    assert!(!work_pushes.is_empty(), "{:#?}", http.requests());
    for push in &work_pushes {
        assert_eq!(push.status, 200, "pushed with the checkout's header");
    }
    let config = world.checkout.read(".git/config");
    assert!(
        !config.contains("eC1hY2Nlc3MtdG9rZW46") && !config.contains("extraheader"),
        "the token left the checkout's config: {config}"
    );
    // Registered with the runner as a mask (`::add-mask::`, which the runner hides), shown
    // nowhere else.
    let log: String = text(&output)
        .lines()
        .filter(|l| !l.starts_with("::add-mask::"))
        .collect();
    assert!(
        !log.contains("eC1hY2Nlc3MtdG9rZW46") && !log.contains("ghs_checkout_token"),
        "the header stays out of the log: {log}"
    );
}
