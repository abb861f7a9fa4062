//! Where the probe's requests go, and their bytes on the wire (HTTP/1.1 POST with a JSON
//! body). Connections are in [`super::conn`].

use super::workload::Api;
use super::Target;
use anyhow::{bail, ensure, Context, Result};
use hyper::Uri;

/// Where and how requests are sent.
#[derive(Debug)]
pub struct Endpoint {
    /// `host:port` to connect to.
    pub address: String,
    path: String,
    /// Every header line of a request but its length.
    head: String,
}

impl Endpoint {
    /// Checks the target's URL and builds the endpoint path for `api`.
    pub fn new(target: &Target, api: Api) -> Result<Self> {
        let url = target.base_url.trim_end_matches('/');
        let uri: Uri = url.parse().with_context(|| {
            format!("invalid target URL `{url}` (expected e.g. http://127.0.0.1:8000)")
        })?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => bail!(
                "target URL `{url}`: scheme `{other}` is not supported; use http:// (put a \
                 TLS-terminating proxy in front of an https server)"
            ),
            None => bail!("target URL `{url}` has no scheme; write it like http://{url}"),
        }
        let authority = uri
            .authority()
            .with_context(|| format!("target URL `{url}` has no host"))?;
        let port = authority.port_u16().unwrap_or(80);
        let address = format!("{}:{port}", authority.host());
        let base = uri.path().trim_end_matches('/');
        let suffix = match api {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
        };
        let path = if base.ends_with("/v1") {
            format!("{base}/{suffix}")
        } else {
            format!("{base}/v1/{suffix}")
        };
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: text/event-stream, application/json\r\n"
        );
        if let Some(key) = &target.api_key {
            ensure!(
                key.bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b)),
                "the API key holds characters not allowed in an HTTP header"
            );
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        Ok(Endpoint {
            address,
            path,
            head,
        })
    }

    /// The bytes of a POST of `body` to the endpoint.
    pub fn request(&self, body: &[u8]) -> Vec<u8> {
        let length = format!("Content-Length: {}\r\n\r\n", body.len());
        let mut request = Vec::with_capacity(self.head.len() + length.len() + body.len());
        request.extend_from_slice(self.head.as_bytes());
        request.extend_from_slice(length.as_bytes());
        request.extend_from_slice(body);
        request
    }

    /// The URL path requests go to.
    pub fn path(&self) -> &str {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str, api: Api) -> Result<Endpoint> {
        let target = Target {
            base_url: url.into(),
            model: "m".into(),
            api_key: None,
        };
        Endpoint::new(&target, api)
    }

    #[test]
    fn paths_follow_the_api_and_a_v1_base() {
        let e = endpoint("http://127.0.0.1:8000", Api::Chat).unwrap();
        assert_eq!(
            (e.address.as_str(), e.path()),
            ("127.0.0.1:8000", "/v1/chat/completions")
        );
        let e = endpoint("http://localhost:9/v1/", Api::Completions).unwrap();
        assert_eq!(
            (e.address.as_str(), e.path()),
            ("localhost:9", "/v1/completions")
        );
    }

    #[test]
    fn unsupported_urls_are_explained() {
        let e = endpoint("https://x:1", Api::Chat).unwrap_err().to_string();
        assert!(e.contains("use http://"), "{e}");
        let e = endpoint("127.0.0.1:8000", Api::Chat)
            .unwrap_err()
            .to_string();
        assert!(e.contains("http://"), "{e}");
    }

    #[test]
    fn requests_carry_the_body_its_length_and_the_key() {
        let target = Target {
            base_url: "http://127.0.0.1:8000".into(),
            model: "m".into(),
            api_key: Some("sk-1".into()),
        };
        let request = Endpoint::new(&target, Api::Chat).unwrap().request(b"{}");
        let text = String::from_utf8(request).unwrap();
        assert!(text.starts_with("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"));
        assert!(
            text.contains("\r\nAuthorization: Bearer sk-1\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\nContent-Length: 2\r\n\r\n{}"), "{text}");
        let broken = Target {
            api_key: Some("sk\r\nX: 1".into()),
            ..target
        };
        let e = Endpoint::new(&broken, Api::Chat).unwrap_err().to_string();
        assert!(e.contains("API key"), "{e}");
    }
}
