//! A secret value with the name it is known by (the environment variable that held it), so a
//! refusal can say *which* secret it found without ever showing it.

/// What a value is called when nothing named it (a value handed to the redactor directly).
pub const UNNAMED: &str = "a configured secret value";

/// A secret value and the variable (or setting) it came from. `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct NamedSecret {
    pub name: String,
    pub value: String,
}

impl NamedSecret {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        NamedSecret {
            name: name.into(),
            value: value.into(),
        }
    }
}

impl std::fmt::Debug for NamedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedSecret")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Anything the secret set accepts: a bare value (named [`UNNAMED`]) or a [`NamedSecret`].
pub trait SecretInput {
    fn value(&self) -> &str;
    fn name(&self) -> Option<&str>;
}

impl SecretInput for NamedSecret {
    fn value(&self) -> &str {
        &self.value
    }
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

impl SecretInput for &NamedSecret {
    fn value(&self) -> &str {
        &self.value
    }
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

macro_rules! unnamed {
    ($($t:ty),*) => {$(
        impl SecretInput for $t {
            fn value(&self) -> &str {
                self
            }
            fn name(&self) -> Option<&str> {
                None
            }
        }
    )*};
}

unnamed!(&str, String, &String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_value() {
        let secret = NamedSecret::new("GITHUB_TOKEN", "ghs_value123456");
        let shown = format!("{secret:?} {:?}", vec![secret.clone()]);
        assert!(shown.contains("GITHUB_TOKEN"), "{shown}");
        assert!(!shown.contains("ghs_value123456"), "{shown}");
    }
}
