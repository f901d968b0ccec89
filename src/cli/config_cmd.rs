//! `replan config [--explain] [--json]`.

use super::args::ConfigArgs;
use super::workspace::load_config;
use crate::app::exit::{CliError, Exit};
use crate::config::{explain_json, explain_text};

pub async fn run(args: ConfigArgs) -> Result<Exit, CliError> {
    let (opts, loaded) = load_config(&args.workspace, None).await?;
    if args.json {
        let value = if args.explain {
            explain_json(&loaded)
        } else {
            serde_json::to_value(&loaded.config).map_err(|e| CliError::failure(e.to_string()))?
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else if args.explain {
        if let Some(file) = &loaded.file {
            println!("# repository file: {}", file.display());
        }
        print!("{}", explain_text(&loaded));
        for line in crate::app::instructions::explain(&opts.workspace, &loaded.config.instructions)
        {
            println!("{line}");
        }
    } else {
        let yaml = serde_saphyr::to_string(&loaded.config)
            .map_err(|e| CliError::failure(e.to_string()))?;
        print!("{yaml}");
    }
    Ok(Exit::Ok)
}
