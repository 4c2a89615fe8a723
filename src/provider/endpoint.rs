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

/// The variable that lets a Google API endpoint override name a host outside
/// `googleapis.com` (a proxy, a private name): `STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1`.
pub const ALLOW_CUSTOM_ENDPOINTS_VAR: &str = "STATESEAL_ALLOW_CUSTOM_ENDPOINTS";

/// Whether the variables opt in to custom Google API endpoints
/// ([`ALLOW_CUSTOM_ENDPOINTS_VAR`]: `1`/`true` yes; unset, `0`/`false` no).
///
/// # Errors
/// [`Error::Config`] naming the variable for any other value.
pub fn custom_endpoints_allowed(var: &impl Fn(&str) -> Option<String>) -> Result<bool, Error> {
    match var(ALLOW_CUSTOM_ENDPOINTS_VAR).as_deref() {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(other) => Err(Error::Config(format!(
            "{ALLOW_CUSTOM_ENDPOINTS_VAR}={other:?}: expected 1 or 0"
        ))),
    }
}

/// The variable both Google providers (Cloud KMS, Cloud Storage) read for
/// whose credentials their requests carry.
pub const GCP_CREDENTIALS_VAR: &str = "STATESEAL_GCP_CREDENTIALS";

/// Whether the variables ask for unauthenticated Google API requests
/// ([`GCP_CREDENTIALS_VAR`]: `anonymous` yes, for an emulator; unset or `adc`
/// no, Application Default Credentials).
///
/// ```
/// use stateseal::provider::gcp_anonymous_credentials;
/// let vars = |v: &'static str| move |k: &str| (k == "STATESEAL_GCP_CREDENTIALS").then(|| v.to_owned());
/// assert!(gcp_anonymous_credentials(&vars("anonymous"))?);
/// assert!(!gcp_anonymous_credentials(&|_: &str| None)?);
/// assert!(gcp_anonymous_credentials(&vars("oauth")).is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
///
/// # Errors
/// [`Error::Config`] naming the variable for any other value, without the
/// value: a variable named for credentials may have been given one (a key
/// file's contents), and errors end up in logs.
pub fn gcp_anonymous_credentials(var: &impl Fn(&str) -> Option<String>) -> Result<bool, Error> {
    match var(GCP_CREDENTIALS_VAR).as_deref() {
        None | Some("adc") => Ok(false),
        Some("anonymous") => Ok(true),
        Some(_) => Err(Error::Config(format!(
            "{GCP_CREDENTIALS_VAR}: expected adc or anonymous (the value given is not repeated here; a service account key goes in GOOGLE_APPLICATION_CREDENTIALS)"
        ))),
    }
}

/// Checks a Google API endpoint override: as [`check_endpoint`], and, unless
/// `allow_custom`, on loopback or under `googleapis.com` (regional,
/// `private.`, `restricted.` and Private Service Connect `*.p.googleapis.com`
/// included), since every request carries the service account's
/// cloud-platform token.
///
/// ```
/// use stateseal::provider::check_google_endpoint;
/// assert!(check_google_endpoint("gcs", "https://storage.googleapis.com", false).is_ok());
/// assert!(check_google_endpoint("gcs", "https://restricted.googleapis.com", false).is_ok());
/// assert!(check_google_endpoint("gcs", "http://127.0.0.1:4443", false).is_ok());
/// assert!(check_google_endpoint("gcs", "https://proxy.example", false).is_err());
/// assert!(check_google_endpoint("gcs", "https://proxy.example", true).is_ok());
/// ```
///
/// # Errors
/// [`Error::Config`] naming the provider, the endpoint and the opt-in.
pub fn check_google_endpoint(what: &str, url: &str, allow_custom: bool) -> Result<(), Error> {
    check_endpoint(what, url)?;
    if allow_custom || is_loopback_http(url) || is_googleapis(url) {
        return Ok(());
    }
    Err(Error::Config(format!(
        "{what}: endpoint {url:?} is not a googleapis.com host, and every request carries the cloud-platform token; set {ALLOW_CUSTOM_ENDPOINTS_VAR}=1 if you mean it"
    )))
}

/// Whether `url` is `https://` to a host under `googleapis.com` (no user info, which would hide the host).
fn is_googleapis(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = authority
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    host.len() > ".googleapis.com".len() && host.ends_with(".googleapis.com")
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

    #[test]
    fn google_endpoints_stay_at_google_unless_allowed() {
        for ok in [
            "https://cloudkms.googleapis.com",
            "https://europe-west1-cloudkms.googleapis.com/",
            "https://private.googleapis.com",
            "https://restricted.googleapis.com:443",
            "https://storage-x.p.googleapis.com/path",
            "https://STORAGE.GOOGLEAPIS.COM.",
            "http://127.0.0.1:4443",
        ] {
            assert!(check_google_endpoint("gcs", ok, false).is_ok(), "{ok}");
        }
        for bad in [
            "https://kms.invalid",
            "https://googleapis.com",
            "https://googleapis.com.invalid",
            "https://evilgoogleapis.com",
            "https://storage.googleapis.com@evil.invalid",
            "https://evil.invalid/storage.googleapis.com",
        ] {
            let e = check_google_endpoint("gcs", bad, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(ALLOW_CUSTOM_ENDPOINTS_VAR), "{bad}: {e}");
            assert!(check_google_endpoint("gcs", bad, true).is_ok(), "{bad}");
        }
        // The opt-in never allows plain HTTP off loopback.
        assert!(check_google_endpoint("gcs", "http://kms.invalid", true).is_err());
    }

    /// A credentials variable holding anything unexpected, a key file's
    /// contents say, is refused by name alone.
    #[test]
    fn gcp_credentials_refused_without_their_value() {
        let key = r#"{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----MIIEv"}"#;
        for given in [key, "oauth", "ADC"] {
            let e = gcp_anonymous_credentials(&|k: &str| {
                (k == GCP_CREDENTIALS_VAR).then(|| given.to_owned())
            })
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("STATESEAL_GCP_CREDENTIALS: expected adc or anonymous"),
                "{e}"
            );
            assert!(!e.contains(given), "the value is echoed: {e}");
            assert!(!e.contains("PRIVATE KEY"), "{e}");
        }
        for (given, anonymous) in [
            (None, false),
            (Some("adc"), false),
            (Some("anonymous"), true),
        ] {
            let var = |k: &str| {
                (k == GCP_CREDENTIALS_VAR)
                    .then(|| given.map(str::to_owned))
                    .flatten()
            };
            assert_eq!(
                gcp_anonymous_credentials(&var).unwrap(),
                anonymous,
                "{given:?}"
            );
        }
    }
}
