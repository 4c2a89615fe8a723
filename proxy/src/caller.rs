//! Who sent a request: the principal every state of its rounds is bound to.
//!
//! With OAuth the `stateseal-oauth` middleware has validated the bearer JWT
//! and put the [`AuthenticatedPrincipal`] in the request's extensions; with a
//! trusted gateway the claims come in the configured header; unbound, no one.
//! A request whose caller cannot be established is refused here, before any
//! state is opened or the upstream is called (fail closed).

use base64::Engine as _;
use http::{HeaderMap, HeaderName, Request};
use serde_json::Value;
use stateseal::Principal;
use stateseal::boundary::{AuthenticatedPrincipal, PrincipalResult};

use crate::settings::PrincipalMode;

/// How this proxy identifies callers.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// The OAuth middleware's principal, from the request's extensions.
    OAuth,
    /// The claims a gateway put in this header.
    Header(HeaderName),
    /// Nobody: states bound to the round only.
    Unbound,
}

/// Why no caller could be established (never says who was claimed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unidentified {
    /// The gateway's header is absent: the request did not come through it.
    Missing,
    /// The header is there but holds no claims the proxy can use.
    Malformed,
}

impl Caller {
    pub(crate) fn from_mode(mode: &PrincipalMode) -> Self {
        match mode {
            PrincipalMode::OAuth(_) => Self::OAuth,
            PrincipalMode::Header(h) => Self::Header(h.clone()),
            PrincipalMode::Unbound => Self::Unbound,
        }
    }

    /// The header the caller's claims come in, which no client copy of may
    /// reach the upstream.
    pub(crate) fn header(&self) -> Option<&HeaderName> {
        match self {
            Self::Header(h) => Some(h),
            _ => None,
        }
    }

    /// The principal of `request`.
    pub(crate) fn identify<B>(
        &self,
        request: &Request<B>,
    ) -> Result<PrincipalResult, Unidentified> {
        match self {
            Self::Unbound => Ok(Ok(None)),
            // The middleware refused every request without a valid token before this.
            Self::OAuth => match request.extensions().get::<AuthenticatedPrincipal>() {
                Some(p) => Ok(Ok(Some(p.to_principal()))),
                None => Err(Unidentified::Missing),
            },
            Self::Header(name) => from_header(request.headers(), name).map(|p| Ok(Some(p))),
        }
    }
}

/// The principal in a gateway's claims header: one value, a JSON object or
/// its base64url (padded or not), with `client_id` (or `azp`), and `iss` and
/// `sub` when present.
fn from_header(headers: &HeaderMap, name: &HeaderName) -> Result<Principal, Unidentified> {
    let mut values = headers.get_all(name).iter();
    let value = values.next().ok_or(Unidentified::Missing)?;
    if values.next().is_some() {
        return Err(Unidentified::Malformed);
    }
    let text = value.as_bytes().trim_ascii();
    let json = if text.first() == Some(&b'{') {
        text.to_vec()
    } else {
        let unpadded = text
            .strip_suffix(b"==")
            .or_else(|| text.strip_suffix(b"="))
            .unwrap_or(text);
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(unpadded)
            .map_err(|_| Unidentified::Malformed)?
    };
    let claims: Value = serde_json::from_slice(&json).map_err(|_| Unidentified::Malformed)?;
    let text = |key: &str| match claims.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.as_str())),
        Some(_) => Err(Unidentified::Malformed),
    };
    let client = match text("client_id")? {
        Some(c) => c,
        None => text("azp")?.ok_or(Unidentified::Malformed)?,
    };
    Ok(Principal::from_components(
        client,
        text("iss")?,
        text("sub")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(values: &[&str]) -> Result<Principal, Unidentified> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("x-jwt-payload", v.parse().expect("header value"));
        }
        from_header(&headers, &HeaderName::from_static("x-jwt-payload"))
    }

    #[test]
    fn a_gateways_claims_are_read_as_json_or_base64url() {
        let expected = Principal::from_components("app", Some("https://as.example"), Some("alice"));
        let json = r#"{"iss":"https://as.example","sub":"alice","client_id":"app","exp":1}"#;
        assert_eq!(principal(&[json]), Ok(expected.clone()));
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        assert_eq!(principal(&[&b64]), Ok(expected.clone()));
        let padded = base64::engine::general_purpose::URL_SAFE.encode(json);
        assert_eq!(principal(&[&padded]), Ok(expected));
        let azp = r#"{"iss":"https://as.example","sub":"alice","azp":"app"}"#;
        assert_eq!(
            principal(&[azp]),
            Ok(Principal::from_components(
                "app",
                Some("https://as.example"),
                Some("alice")
            ))
        );
    }

    #[test]
    fn no_claims_or_unusable_claims_identify_no_one() {
        assert_eq!(principal(&[]), Err(Unidentified::Missing));
        for bad in [
            "not base64 !",
            "e30",                 // {} : no client
            r#"{"sub":"alice"}"#,  // no client
            r#"{"client_id":7}"#,  // not a string
            r#"{"client_id":""}"#, // empty
            r#"{"client_id":"a","sub":["x"]}"#,
            "[1,2]",
        ] {
            assert_eq!(principal(&[bad]), Err(Unidentified::Malformed), "{bad}");
        }
        let one = r#"{"client_id":"a"}"#;
        assert_eq!(
            principal(&[one, one]),
            Err(Unidentified::Malformed),
            "two copies: which one?"
        );
    }
}
