//! The work branch of a GitHub Actions run reaches an HTTP `origin` without `git push`: Replan
//! packs the save and speaks git's smart HTTP with the header the checkout configured, as
//! actions/checkout leaves it.

use super::{World, text};
use crate::support::git_http::GitHttp;

#[test]
fn github_e2e_the_work_branch_goes_over_smart_http_with_the_checkouts_header() {
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
        assert_eq!(push.status, 200);
        let agent = push.header("user-agent").unwrap_or_default();
        assert!(
            agent.starts_with("replan/"),
            "pushed by git, not Replan: {agent}"
        );
    }
    let log = text(&output);
    assert!(
        !log.contains("eC1hY2Nlc3MtdG9rZW46"),
        "the header stays out of the log"
    );
}
