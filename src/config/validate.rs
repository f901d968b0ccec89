//! Range and consistency checks the types cannot express.

use super::error::ConfigError;
use super::source::{Provenance, Source};
use super::{Config, GITHUB_PERMISSIONS, GITLAB_ACCESS_LEVELS, ProviderKind};

/// A broken rule: the key, what is wrong, and how to fix it.
struct Problem {
    key: String,
    /// For a rule between two keys: the other one, blamed instead when only it was changed.
    other: Option<String>,
    message: String,
    fix: String,
}

/// The first problem of `config`, naming its key and the source of the offending value.
pub(crate) fn validate(config: &Config, provenance: &Provenance) -> Result<(), ConfigError> {
    match problems(config).into_iter().next() {
        None => Ok(()),
        Some(p) => {
            let mut key = p.key;
            // Blame the side the user changed: the default side is not what they need to fix.
            if let Some(other) = p.other
                && provenance.source_of(&key) == Source::Default
            {
                key = other;
            }
            Err(ConfigError::InvalidValue {
                origin: provenance.source_of(&key),
                key,
                message: p.message,
                fix: p.fix,
            })
        }
    }
}

#[derive(Default)]
struct Checks(Vec<Problem>);

impl Checks {
    fn fail(&mut self, key: &str, message: String, fix: &str) {
        self.0.push(Problem {
            key: key.to_owned(),
            other: None,
            message,
            fix: fix.to_owned(),
        });
    }

    /// A rule between `key` and `other` is broken.
    fn fail_pair(&mut self, key: &str, other: &str, message: String, fix: &str) {
        self.fail(key, message, fix);
        if let Some(last) = self.0.last_mut() {
            last.other = Some(other.to_owned());
        }
    }

    fn range(&mut self, key: &str, value: f64, min: f64, max: f64) {
        if !(value.is_finite() && (min..=max).contains(&value)) {
            self.fail(
                key,
                format!("{value} is outside {min}..={max}"),
                &format!("use a number from {min} to {max}"),
            );
        }
    }

    fn non_negative(&mut self, key: &str, value: f64) {
        if !(value.is_finite() && value >= 0.0) {
            self.fail(
                key,
                format!("{value} is negative or not finite"),
                "use a number >= 0",
            );
        }
    }

    fn at_least_one<T: Into<u64> + Copy>(&mut self, key: &str, value: T) {
        if value.into() < 1 {
            self.fail(key, "0 is not allowed".to_owned(), "use 1 or more");
        }
    }

    /// A directory inside the history branch or the local directory: relative and without `..`,
    /// so a repository's config cannot make Replan write outside its place.
    fn contained_dir(&mut self, key: &str, value: &str) {
        let path = std::path::Path::new(value);
        let escapes = path.is_absolute()
            || value.starts_with(['/', '\\'])
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            || value.split(['/', '\\']).any(|part| part == "..");
        if escapes {
            self.fail(
                key,
                format!("`{value}` leaves the history's place (absolute, or with `..`)"),
                "use a relative directory such as planning_history; pass --local-dir on the command line for a directory elsewhere",
            );
        }
    }

    fn not_empty(&mut self, key: &str, value: &str) {
        if value.trim().is_empty() {
            self.fail(
                key,
                "the value is empty".to_owned(),
                "give a non-empty value",
            );
        }
    }

    fn env_var_name(&mut self, key: &str, value: Option<&str>) {
        let Some(name) = value else { return };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            // Deliberately not echoing the value: it may be a pasted secret.
            self.fail(
                key,
                "this is not an environment variable name".to_owned(),
                "give the NAME of the variable holding the secret (e.g. OPENAI_API_KEY), never the secret itself",
            );
        }
    }

    fn http_url(&mut self, key: &str, value: &str) {
        let ok = url::Url::parse(value).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
        if !ok {
            self.fail(
                key,
                format!("`{value}` is not an http(s) URL"),
                "give a full URL such as https://example.com/api",
            );
        }
    }
}

fn problems(c: &Config) -> Vec<Problem> {
    let mut k = Checks::default();

    let p = &c.planning;
    k.at_least_one("planning.max_subtasks", p.max_subtasks);
    if p.history.storage_type != "jsonl" {
        k.fail(
            "planning.history.storage_type",
            format!("`{}` is not supported", p.history.storage_type),
            "use jsonl",
        );
    }

    let d = &p.replanning.llm_decision;
    let min_key = "planning.replanning.llm_decision.min_confidence_threshold";
    let user_key = "planning.replanning.llm_decision.user_confirmation_threshold";
    k.range(min_key, d.min_confidence_threshold, 0.0, 1.0);
    k.range(user_key, d.user_confirmation_threshold, 0.0, 1.0);
    if d.user_confirmation_threshold > d.min_confidence_threshold {
        k.fail_pair(
            user_key,
            min_key,
            format!(
                "{} is above min_confidence_threshold {} (decisions below the user threshold are skipped, between the two they ask the user)",
                d.user_confirmation_threshold, d.min_confidence_threshold
            ),
            "make user_confirmation_threshold <= min_confidence_threshold",
        );
    }
    k.at_least_one(
        "planning.replanning.goal_understanding.auto_assume_timeout_minutes",
        p.replanning.goal_understanding.auto_assume_timeout_minutes,
    );
    k.at_least_one(
        "planning.replanning.global.same_trigger_max_count",
        p.replanning.global.same_trigger_max_count,
    );

    let r = &c.refinement;
    k.non_negative("refinement.delta_threshold", r.delta_threshold);
    k.range(
        "refinement.delta_threshold_percent",
        r.delta_threshold_percent,
        0.0,
        100.0,
    );
    k.non_negative(
        "refinement.task_count_change_threshold",
        r.task_count_change_threshold,
    );
    k.range(
        "refinement.acceptable_score",
        r.acceptable_score,
        0.0,
        100.0,
    );

    let t = &c.replanning;
    k.at_least_one("replanning.min_new_subtasks", t.min_new_subtasks);
    if t.min_new_subtasks > t.max_new_subtasks {
        k.fail_pair(
            "replanning.max_new_subtasks",
            "replanning.min_new_subtasks",
            format!(
                "{} is below min_new_subtasks {}",
                t.max_new_subtasks, t.min_new_subtasks
            ),
            "make max_new_subtasks >= min_new_subtasks",
        );
    }
    k.range(
        "replanning.alternatives_approval_threshold",
        t.alternatives_approval_threshold,
        0.0,
        1.0,
    );

    let l = &c.llm;
    k.at_least_one("llm.timeout_seconds", l.timeout_seconds);
    k.env_var_name("llm.api_key_env", l.api_key_env.as_deref());
    if let Some(base_url) = &l.base_url {
        k.http_url("llm.base_url", base_url);
    }
    if l.provider == ProviderKind::Scripted && l.scenario.is_none() {
        k.fail_pair(
            "llm.scenario",
            "llm.provider",
            "the scripted provider needs a scenario file".to_owned(),
            "set llm.scenario to a scenario file, or choose another llm.provider",
        );
    }
    if let Some(cost) = l.budget.max_cost_usd {
        k.non_negative("llm.budget.max_cost_usd", cost);
    }
    if let Some(cost) = l.budget.per_thread_usd {
        k.non_negative("llm.budget.per_thread_usd", cost);
        if l.prices.is_empty() {
            // Without a price every call is counted at $0 and the cap would never be reached.
            k.fail_pair(
                "llm.budget.per_thread_usd",
                "llm.prices",
                "a dollar cap needs the model's price, and llm.prices is empty".to_owned(),
                "add llm.prices.<model>.input_per_mtok and output_per_mtok, or cap tokens with llm.budget.per_thread_tokens",
            );
        }
    }
    for (model, price) in &l.prices {
        k.non_negative(
            &format!("llm.prices.{model}.input_per_mtok"),
            price.input_per_mtok,
        );
        k.non_negative(
            &format!("llm.prices.{model}.output_per_mtok"),
            price.output_per_mtok,
        );
    }

    let tools = &c.tools;
    k.at_least_one(
        "tools.command_timeout_seconds",
        tools.command_timeout_seconds,
    );
    k.at_least_one("tools.output_cap_bytes", tools.output_cap_bytes);
    k.at_least_one("tools.read_cap_bytes", tools.read_cap_bytes);
    k.at_least_one("tools.search_max_results", tools.search_max_results);
    for (name, server) in &c.mcp_servers {
        k.not_empty(&format!("mcp_servers.{name}.command"), &server.command);
        k.at_least_one(
            &format!("mcp_servers.{name}.startup_timeout_seconds"),
            server.startup_timeout_seconds,
        );
    }

    k.at_least_one("execution.max_parallel", c.execution.max_parallel);
    for (key, message) in super::verify::problems(&c.verify) {
        k.fail(&key, message, "see `verify` in docs/config-reference.md");
    }

    let p = &c.publish;
    k.at_least_one("publish.max_manifest_bytes", p.max_manifest_bytes);
    k.at_least_one("publish.max_history_bytes", p.max_history_bytes);

    let h = &c.history;
    k.at_least_one("history.retention_days", h.retention_days);
    k.at_least_one("history.commit_every", h.commit_every);
    k.at_least_one("history.append_timeout_seconds", h.append_timeout_seconds);
    k.not_empty("history.directory", &h.directory);
    k.contained_dir("history.directory", &h.directory);
    let bad_branch = h.branch.is_empty()
        || h.branch.contains("..")
        || h.branch.starts_with(['-', '/'])
        || h.branch.ends_with(['/', '.'])
        || h.branch
            .chars()
            .any(|c| c.is_whitespace() || "~^:?*[\\".contains(c));
    if bad_branch {
        k.fail(
            "history.branch",
            format!("`{}` is not a valid git branch name", h.branch),
            "use a plain branch name such as replan-history",
        );
    }

    for (forge, f) in [("github", &c.github), ("gitlab", &c.gitlab)] {
        k.not_empty(&format!("{forge}.trigger_label"), &f.trigger_label);
        if !f.mention_handle.starts_with('@') || f.mention_handle.len() < 2 {
            k.fail(
                &format!("{forge}.mention_handle"),
                format!("`{}` is not a mention", f.mention_handle),
                "start it with @, e.g. @replan",
            );
        }
    }
    if !GITHUB_PERMISSIONS.contains(&c.github.min_permission.as_str()) {
        k.fail(
            "github.min_permission",
            format!("`{}` is not a GitHub permission", c.github.min_permission),
            &format!("use one of: {}", GITHUB_PERMISSIONS.join(", ")),
        );
    }
    if !GITLAB_ACCESS_LEVELS.contains(&c.gitlab.min_access_level) {
        k.fail(
            "gitlab.min_access_level",
            format!("{} is not a GitLab access level", c.gitlab.min_access_level),
            "use 10 (guest), 20 (reporter), 30 (developer), 40 (maintainer) or 50 (owner)",
        );
    }

    for file in &c.instructions.files {
        let path = std::path::Path::new(file);
        let escapes = file.trim().is_empty()
            || path.is_absolute()
            || file.starts_with(['/', '\\'])
            || file
                .split(['/', '\\'])
                .any(|part| part == ".." || part == ".");
        if escapes {
            k.fail(
                "instructions.files",
                format!("`{file}` is not a path inside the repository"),
                "list paths from the repository root without `..`, e.g. AGENTS.md or docs/AGENTS.md",
            );
        }
    }

    if let Some(api) = &c.user_config_api {
        k.http_url("user_config_api.url", &api.url);
        k.env_var_name("user_config_api.token_env", api.token_env.as_deref());
        k.at_least_one("user_config_api.timeout_seconds", api.timeout_seconds);
    }
    k.0
}
