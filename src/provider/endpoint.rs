//! The one rule for endpoints a provider talks to: TLS, unless the host is a
//! loopback address. Bearer tokens, signed requests and (on wrap) plaintext
//! data keys travel over these connections.

use std::net::IpAddr;

use crate::error::Error;

/// Whether `url` is `http://` to a loopback IP literal (`127.0.0.0/8`, `[::1]`).
///
/// Host names never count, not even `localhost`: a name is resolved, and a
/// resolver can be told anything. A prefix test is not enough either:
/// `http://127.0.0.1.evil.example` is not a loopback address.
pub fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, port)) if port.is_empty() || port.starts_with(':') => host,
            _ => return false,
        },
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks an endpoint override for provider `what`: `https://…`, or `http://`
/// to a loopback address (a local emulator or test server).
///
/// ```
/// use stateseal::provider::check_endpoint;
/// assert!(check_endpoint("gcp-kms", "https://kms.internal.example").is_ok());
/// assert!(check_endpoint("gcp-kms", "http://127.0.0.1:9011").is_ok());
/// let e = check_endpoint("gcp-kms", "http://127.0.0.1.evil.example").unwrap_err();
/// assert!(e.to_string().contains("https://"));
/// ```
///
/// # Errors
/// [`Error::Config`] naming the provider and the endpoint.
pub fn check_endpoint(what: &str, url: &str) -> Result<(), Error> {
    if url.starts_with("https://") && url.len() > "https://".len() {
        return Ok(());
    }
    if is_loopback_http(url) {
        return Ok(());
    }
    Err(Error::Config(format!(
        "{what}: endpoint {url:?} must be https://…, or http:// to a loopback address such as 127.0.0.1 (credentials and keys travel over it)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_means_a_loopback_ip_literal() {
        for ok in [
            "http://127.0.0.1",
            "http://127.0.0.1:8200",
            "http://127.1.2.3:1/path",
            "http://[::1]:9000",
            "http://[::1]",
            "http://127.0.0.1?x",
        ] {
            assert!(is_loopback_http(ok), "{ok}");
        }
        for bad in [
            "http://127.0.0.1.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://localhost:8200",
            "http://10.0.0.1:8200",
            "http://user@127.0.0.1:1",
            "http://127.0.0.1@evil.example",
            "http://[::1].evil:1",
            "http://[::ffff:8.8.8.8]:1",
            "https://127.0.0.1",
            "127.0.0.1:8200",
            "http://",
        ] {
            assert!(!is_loopback_http(bad), "{bad}");
        }
        assert!(check_endpoint("x", "https://").is_err());
        assert!(check_endpoint("x", "ftp://127.0.0.1").is_err());
    }
}
