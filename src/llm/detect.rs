//! Provider selection (seed 003 `createLLMProvider('auto')`): an explicit `llm.provider` wins;
//! otherwise the credentials in the environment decide, in this order: `ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY` (+ `OPENAI_BASE_URL`), the Azure OpenAI variables, then GitHub Models when
//! running in Actions with a `GITHUB_TOKEN`. Nothing found is an error listing what to set.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Llm;
use super::anthropic::{self, Anthropic, AnthropicSettings};
use super::budget::Budgeted;
use super::http::RetryPolicy;
use super::openai::{Auth, OpenAiCompatible, OpenAiSettings};
use super::scripted::ScriptedLlm;
use super::types::LlmError;
use crate::config::{LlmConfig, ProviderKind};

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const GITHUB_MODELS_BASE_URL: &str = "https://models.github.ai/inference";
pub const OLLAMA_BASE_URL: &str = "http://localhost:11434/v1";
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
pub const VLLM_BASE_URL: &str = "http://localhost:8000/v1";
pub const LLAMACPP_BASE_URL: &str = "http://localhost:8080/v1";
pub const AZURE_API_VERSION: &str = "2024-10-21";

pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-20250514";
pub const DEFAULT_GITHUB_MODELS_MODEL: &str = "openai/gpt-4o";
pub const DEFAULT_OPENROUTER_MODEL: &str = "openai/gpt-4o";

const NOTHING_FOUND: &str = "no LLM credentials found. Set one of:
  - ANTHROPIC_API_KEY (Anthropic)
  - OPENAI_API_KEY, and OPENAI_BASE_URL for another OpenAI-compatible server
  - AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_DEPLOYMENT (or llm.deployment)
  - in GitHub Actions: GITHUB_TOKEN, with `permissions: models: read` in the workflow, for GitHub Models
or choose one with llm.provider (openai, azure, github_models, anthropic, ollama, openrouter, vllm, llamacpp, scripted) in .github/replan.yml";

fn var<'a>(env: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

fn azure_missing(cfg: &LlmConfig, env: &BTreeMap<String, String>) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if var(
        env,
        cfg.api_key_env.as_deref().unwrap_or("AZURE_OPENAI_API_KEY"),
    )
    .is_none()
    {
        missing.push("AZURE_OPENAI_API_KEY");
    }
    if cfg.base_url.is_none() && var(env, "AZURE_OPENAI_ENDPOINT").is_none() {
        missing.push("AZURE_OPENAI_ENDPOINT");
    }
    if cfg.deployment.is_none() && var(env, "AZURE_OPENAI_DEPLOYMENT").is_none() {
        missing.push("AZURE_OPENAI_DEPLOYMENT (or llm.deployment)");
    }
    missing
}

/// Which provider `cfg` and `env` select.
pub fn detect_kind(
    cfg: &LlmConfig,
    env: &BTreeMap<String, String>,
) -> Result<ProviderKind, LlmError> {
    if cfg.provider != ProviderKind::Auto {
        return Ok(cfg.provider);
    }
    if cfg.scenario.is_some() {
        return Ok(ProviderKind::Scripted);
    }
    if var(env, "ANTHROPIC_API_KEY").is_some() {
        return Ok(ProviderKind::Anthropic);
    }
    if var(env, "OPENAI_API_KEY").is_some() {
        return Ok(ProviderKind::Openai);
    }
    let azure_missing = azure_missing(cfg, env);
    if azure_missing.is_empty() {
        return Ok(ProviderKind::Azure);
    }
    if var(env, "GITHUB_ACTIONS") == Some("true") && var(env, "GITHUB_TOKEN").is_some() {
        return Ok(ProviderKind::GithubModels);
    }
    let mut message = NOTHING_FOUND.to_string();
    if var(env, "AZURE_OPENAI_API_KEY").is_some() || var(env, "AZURE_OPENAI_ENDPOINT").is_some() {
        message.push_str(&format!(
            "\nAzure OpenAI is partly set up; still missing: {}",
            azure_missing.join(", ")
        ));
    }
    Err(LlmError::NotConfigured(message))
}

fn chat_completions_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else {
        format!("{base}/chat/completions")
    }
}

fn name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Auto => "auto",
        ProviderKind::Openai => "openai",
        ProviderKind::Azure => "azure",
        ProviderKind::GithubModels => "github_models",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Ollama => "ollama",
        ProviderKind::Openrouter => "openrouter",
        ProviderKind::Vllm => "vllm",
        ProviderKind::Llamacpp => "llamacpp",
        ProviderKind::Scripted => "scripted",
    }
}

/// Build the provider `cfg` and `env` select (without the budget wrapper).
pub fn create_provider(
    cfg: &LlmConfig,
    env: &BTreeMap<String, String>,
) -> Result<Box<dyn Llm>, LlmError> {
    let kind = detect_kind(cfg, env)?;
    let timeout = Duration::from_secs(cfg.timeout_seconds.max(1));
    let retry = RetryPolicy {
        // A model call waits out a longer `Retry-After` only this long, then tries again.
        max_rate_limit_wait: Duration::from_secs(60),
        ..RetryPolicy::new(cfg.max_retries)
    };
    let key_named = |default: &str| -> (String, Option<String>) {
        let name = cfg
            .api_key_env
            .clone()
            .unwrap_or_else(|| default.to_string());
        let value = var(env, &name).map(str::to_string);
        (name, value)
    };
    let required_key = |default: &str| -> Result<String, LlmError> {
        let (key_name, value) = key_named(default);
        value.ok_or_else(|| {
            LlmError::NotConfigured(format!(
                "llm.provider is {} but the environment variable {key_name} holding its API key is not set; set {key_name} (or llm.api_key_env to the variable that holds the key)",
                name(kind)
            ))
        })
    };
    let openai = |label: &str, base: String, model: Option<String>, auth: Auth| {
        let settings = OpenAiSettings {
            label: label.to_string(),
            url: chat_completions_url(&base),
            model,
            auth,
            headers: cfg.headers.clone(),
            structured_output: cfg.structured_output,
            timeout,
            retry,
            max_reply_bytes: cfg.max_reply_bytes,
        };
        OpenAiCompatible::new(settings).map(|p| Box::new(p) as Box<dyn Llm>)
    };
    let optional_bearer = |default: &str| match key_named(default).1 {
        Some(key) => Auth::Bearer(key),
        None => Auth::None,
    };
    let provider: Box<dyn Llm> = match kind {
        ProviderKind::Auto => unreachable!("detect_kind resolves auto"),
        ProviderKind::Scripted => {
            let Some(path) = &cfg.scenario else {
                return Err(LlmError::NotConfigured(
                    "llm.provider is scripted but llm.scenario is not set; set llm.scenario to a scenario YAML file".into(),
                ));
            };
            Box::new(ScriptedLlm::from_file(path)?)
        }
        ProviderKind::Anthropic => {
            let base = cfg
                .base_url
                .clone()
                .or_else(|| var(env, "ANTHROPIC_BASE_URL").map(str::to_string))
                .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
            Box::new(Anthropic::new(AnthropicSettings {
                base_url: base,
                model: cfg
                    .model
                    .clone()
                    .unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into()),
                api_key: required_key("ANTHROPIC_API_KEY")?,
                headers: cfg.headers.clone(),
                timeout,
                retry,
                structured_output: cfg.structured_output,
                max_reply_bytes: cfg.max_reply_bytes,
            })?)
        }
        ProviderKind::Openai => {
            let custom_base = cfg
                .base_url
                .clone()
                .or_else(|| var(env, "OPENAI_BASE_URL").map(str::to_string));
            // A self-hosted compatible server may need no key; api.openai.com always does.
            let auth = match &custom_base {
                Some(_) => optional_bearer("OPENAI_API_KEY"),
                None => Auth::Bearer(required_key("OPENAI_API_KEY")?),
            };
            let model = cfg
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
            openai(
                "openai",
                custom_base.unwrap_or_else(|| OPENAI_BASE_URL.into()),
                Some(model),
                auth,
            )?
        }
        ProviderKind::Azure => {
            let missing = azure_missing(cfg, env);
            if !missing.is_empty() {
                return Err(LlmError::NotConfigured(format!(
                    "llm.provider is azure but {} is not set",
                    missing.join(", ")
                )));
            }
            let key = required_key("AZURE_OPENAI_API_KEY")?;
            let endpoint = cfg
                .base_url
                .clone()
                .or_else(|| var(env, "AZURE_OPENAI_ENDPOINT").map(str::to_string))
                .unwrap_or_default();
            let deployment = cfg
                .deployment
                .clone()
                .or_else(|| var(env, "AZURE_OPENAI_DEPLOYMENT").map(str::to_string))
                .unwrap_or_default();
            let version = cfg
                .api_version
                .clone()
                .or_else(|| var(env, "AZURE_OPENAI_API_VERSION").map(str::to_string))
                .unwrap_or_else(|| AZURE_API_VERSION.into());
            let url = format!(
                "{}/openai/deployments/{deployment}/chat/completions?api-version={version}",
                endpoint.trim_end_matches('/')
            );
            let settings = OpenAiSettings {
                label: format!("azure {deployment}"),
                url,
                model: cfg.model.clone(),
                auth: Auth::Header {
                    name: "api-key".into(),
                    key,
                },
                headers: cfg.headers.clone(),
                structured_output: cfg.structured_output,
                timeout,
                retry,
                max_reply_bytes: cfg.max_reply_bytes,
            };
            Box::new(OpenAiCompatible::new(settings)?)
        }
        ProviderKind::GithubModels => {
            let token = required_key("GITHUB_TOKEN")?;
            let base = cfg
                .base_url
                .clone()
                .unwrap_or_else(|| GITHUB_MODELS_BASE_URL.into());
            let model = cfg
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_GITHUB_MODELS_MODEL.into());
            openai("github_models", base, Some(model), Auth::Bearer(token))?
        }
        ProviderKind::Openrouter => {
            let key = required_key("OPENROUTER_API_KEY")?;
            let base = cfg
                .base_url
                .clone()
                .unwrap_or_else(|| OPENROUTER_BASE_URL.into());
            let model = cfg
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_OPENROUTER_MODEL.into());
            openai("openrouter", base, Some(model), Auth::Bearer(key))?
        }
        ProviderKind::Ollama => {
            let Some(model) = cfg.model.clone() else {
                return Err(LlmError::NotConfigured(
                    "llm.provider is ollama but llm.model is not set; set llm.model to a pulled model (e.g. `llama3.1`)".into(),
                ));
            };
            let base = cfg
                .base_url
                .clone()
                .unwrap_or_else(|| OLLAMA_BASE_URL.into());
            openai(
                "ollama",
                base,
                Some(model),
                optional_bearer("OLLAMA_API_KEY"),
            )?
        }
        ProviderKind::Vllm => {
            let base = cfg.base_url.clone().unwrap_or_else(|| VLLM_BASE_URL.into());
            openai(
                "vllm",
                base,
                cfg.model.clone(),
                optional_bearer("VLLM_API_KEY"),
            )?
        }
        ProviderKind::Llamacpp => {
            let base = cfg
                .base_url
                .clone()
                .unwrap_or_else(|| LLAMACPP_BASE_URL.into());
            openai(
                "llamacpp",
                base,
                cfg.model.clone(),
                optional_bearer("LLAMACPP_API_KEY"),
            )?
        }
    };
    tracing::info!(provider = name(kind), describe = %provider.describe(), "LLM provider selected");
    Ok(provider)
}

/// The selected provider inside the cycle budget (clock starts now).
pub fn create_budgeted(
    cfg: &LlmConfig,
    env: &BTreeMap<String, String>,
) -> Result<Budgeted, LlmError> {
    Ok(Budgeted::new(create_provider(cfg, env)?, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn explicit_provider_wins_over_the_environment() {
        let cfg = LlmConfig {
            provider: ProviderKind::Ollama,
            ..Default::default()
        };
        let e = env(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(detect_kind(&cfg, &e).unwrap(), ProviderKind::Ollama);
    }

    #[test]
    fn auto_detection_follows_the_documented_order() {
        let cfg = LlmConfig::default();
        let all = [
            ("ANTHROPIC_API_KEY", "a"),
            ("OPENAI_API_KEY", "o"),
            ("AZURE_OPENAI_API_KEY", "z"),
            ("AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com"),
            ("AZURE_OPENAI_DEPLOYMENT", "d"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_TOKEN", "g"),
        ];
        let expected = [
            ProviderKind::Anthropic,
            ProviderKind::Openai,
            ProviderKind::Azure,
            // Azure's key gone: the endpoint and deployment alone do not select it.
            ProviderKind::GithubModels,
        ];
        // Drop the strongest credential one at a time (Azure needs all three of its variables).
        for (skip, want) in expected.iter().enumerate() {
            let e = env(&all[skip..]);
            assert_eq!(
                detect_kind(&cfg, &e).unwrap(),
                *want,
                "without the first {skip}"
            );
        }
        // Empty values count as unset; the token alone (no Actions) is not enough.
        let e = env(&[("ANTHROPIC_API_KEY", " "), ("GITHUB_TOKEN", "g")]);
        let err = detect_kind(&cfg, &e).unwrap_err().to_string();
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "AZURE_OPENAI_ENDPOINT",
            "GITHUB_TOKEN",
            "llm.provider",
        ] {
            assert!(err.contains(name), "{name} missing from: {err}");
        }
    }

    #[test]
    fn partial_azure_setup_is_named_in_the_error() {
        let e = env(&[("AZURE_OPENAI_API_KEY", "z")]);
        let err = detect_kind(&LlmConfig::default(), &e)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("still missing: AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_DEPLOYMENT"),
            "{err}"
        );
    }

    #[test]
    fn explicit_providers_name_the_missing_setting() {
        let cases = [
            (ProviderKind::Openai, "OPENAI_API_KEY"),
            (ProviderKind::Anthropic, "ANTHROPIC_API_KEY"),
            (ProviderKind::GithubModels, "GITHUB_TOKEN"),
            (ProviderKind::Openrouter, "OPENROUTER_API_KEY"),
            (ProviderKind::Azure, "AZURE_OPENAI_ENDPOINT"),
            (ProviderKind::Ollama, "llm.model"),
            (ProviderKind::Scripted, "llm.scenario"),
        ];
        for (kind, needle) in cases {
            let cfg = LlmConfig {
                provider: kind,
                ..Default::default()
            };
            let err = create_provider(&cfg, &BTreeMap::new())
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(needle), "{kind:?}: {err}");
        }
    }

    #[test]
    fn local_servers_need_no_key_and_describe_themselves() {
        let cfg = LlmConfig {
            provider: ProviderKind::Vllm,
            model: Some("qwen".into()),
            ..Default::default()
        };
        assert_eq!(
            create_provider(&cfg, &BTreeMap::new()).unwrap().describe(),
            "vllm qwen"
        );
        let cfg = LlmConfig {
            provider: ProviderKind::Llamacpp,
            ..Default::default()
        };
        let d = create_provider(&cfg, &BTreeMap::new()).unwrap().describe();
        assert_eq!(d, "llamacpp (http://localhost:8080/v1/chat/completions)");
    }
}
