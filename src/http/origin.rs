//! Same origin = same scheme, host and port. A client sends its credentials to the origin of the
//! API root it was configured with and nowhere else: pagination links and redirects that leave it
//! are refused, never followed.

use reqwest::header::HeaderMap;
use url::Url;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    pub fn of(url: &Url) -> Self {
        Origin {
            scheme: url.scheme().to_ascii_lowercase(),
            host: url.host_str().unwrap_or_default().to_ascii_lowercase(),
            port: url.port_or_known_default(),
        }
    }

    pub fn contains(&self, url: &Url) -> bool {
        *self == Origin::of(url)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        match self.port {
            Some(port) if Some(port) != default_port(&self.scheme) => write!(f, ":{port}"),
            _ => Ok(()),
        }
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// A URL as it may appear in a message: without user name and password.
pub fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// The `rel="next"` target of a `Link` header (RFC 8288), as written.
pub fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all("link")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|part| {
            let (target, params) = part.split_once(';')?;
            params
                .split(';')
                .any(|p| {
                    let p = p.trim().replace(' ', "");
                    p == "rel=\"next\"" || p == "rel=next"
                })
                .then(|| {
                    target
                        .trim()
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .to_owned()
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let api = Origin::of(&url("https://api.github.com"));
        assert!(api.contains(&url("https://API.github.com:443/repos?page=2")));
        assert!(!api.contains(&url("http://api.github.com/repos")));
        assert!(!api.contains(&url("https://api.github.com:8443/repos")));
        assert!(!api.contains(&url("https://api.github.com.evil.example/repos")));
        assert_eq!(api.to_string(), "https://api.github.com");
        assert_eq!(
            Origin::of(&url("http://127.0.0.1:4321/x")).to_string(),
            "http://127.0.0.1:4321"
        );
    }

    #[test]
    fn shown_urls_lose_their_credentials() {
        assert_eq!(
            shown(&url("https://user:secret@evil.example/x?page=2")),
            "https://evil.example/x?page=2"
        );
    }

    #[test]
    fn the_next_link_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "link",
            "<https://api.github.com/x?page=1>; rel=\"prev\", <https://api.github.com/x?page=3>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("https://api.github.com/x?page=3")
        );
        assert_eq!(next_link(&HeaderMap::new()), None);
    }
}
