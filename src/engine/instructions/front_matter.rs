//! The front matter of a `.github/instructions/*.instructions.md` file: the `applyTo` globs that
//! say which files it is for (Copilot's format: a comma-separated string, or a list).

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    #[serde(rename = "applyTo", default)]
    apply_to: Option<Globs>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Globs {
    One(String),
    Many(Vec<String>),
}

/// The body after the front matter, and the `applyTo` globs (`None` when the file names none).
/// A front matter that is not YAML is an error naming what is wrong.
pub fn split(text: &str) -> Result<(&str, Option<Vec<String>>), String> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((text, None));
    };
    let Some((yaml, body)) = closing(rest) else {
        return Err("its front matter has no closing `---` line".into());
    };
    let parsed: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| format!("its front matter is not YAML: {e}"))?
    };
    let globs = parsed.apply_to.map(|g| match g {
        Globs::One(s) => s.split(',').map(str::to_owned).collect(),
        Globs::Many(v) => v,
    });
    let globs = globs.map(|g| {
        g.into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    });
    Ok((body, globs))
}

/// The YAML before the closing `---` line and the text after it.
fn closing(rest: &str) -> Option<(&str, &str)> {
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_to_is_a_comma_separated_string_or_a_list() {
        let (body, globs) =
            split("---\napplyTo: \"**/*.rs, docs/**\"\n---\nUse rustfmt.\n").unwrap();
        assert_eq!(body, "Use rustfmt.\n");
        assert_eq!(globs.unwrap(), ["**/*.rs", "docs/**"]);
        let (_, globs) = split("---\ndescription: x\napplyTo:\n  - a/**\n---\nbody").unwrap();
        assert_eq!(globs.unwrap(), ["a/**"]);
    }

    #[test]
    fn no_front_matter_or_no_apply_to_names_no_globs() {
        assert_eq!(split("# Title\n").unwrap(), ("# Title\n", None));
        assert_eq!(split("---\ndescription: d\n---\nx").unwrap(), ("x", None));
    }

    #[test]
    fn an_unclosed_front_matter_is_an_error() {
        assert!(split("---\napplyTo: x\n").unwrap_err().contains("closing"));
    }
}
