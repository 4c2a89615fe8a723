//! The single-use claim `u`: a 128-bit random id sealed inside the state,
//! and what a verifier must record before it accepts the state.

use std::fmt;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::clock::UnixTime;
use crate::codec::{b64u_decode, b64u_encode};
use crate::error::Error;
use crate::random::RandomSource;

/// Label hashed in front of every replay key.
const REPLAY_KEY_LABEL: &[u8] = b"stateseal/single-use:";
const ID_LEN: usize = 16;

/// A single-use state's id (never logged: `Debug` is redacted).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct SingleUseId([u8; ID_LEN]);

impl SingleUseId {
    pub(crate) fn generate(random: &RandomSource) -> Result<Self, Error> {
        let mut id = [0u8; ID_LEN];
        random.fill(&mut id)?;
        Ok(Self(id))
    }

    /// The claim's text: unpadded base64url of the 16 bytes.
    pub(crate) fn encode(&self) -> String {
        b64u_encode(&self.0)
    }

    /// The id in a claim's text; `None` unless it is 16 bytes in canonical base64url.
    pub(crate) fn parse(text: &[u8]) -> Option<Self> {
        let raw = b64u_decode(text)?;
        Some(Self(raw.try_into().ok()?))
    }
}

impl fmt::Debug for SingleUseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SingleUseId(<redacted>)")
    }
}

/// What a verifier records, atomically and fleet-wide, before it accepts a
/// single-use state: the key (a digest of the service's audience and the
/// state's id, so a store shared by services keeps them apart and a store
/// reader learns no id) and how long to keep it (the state's expiry plus the
/// skew allowance: no verifier accepts the state after that).
///
/// Returned by [`Envelope::open`](crate::Envelope::open); a
/// [`ReplayStore`](crate::replay::ReplayStore) records it.
#[derive(Clone, PartialEq)]
#[must_use = "a single-use state may be used only once its record has landed"]
pub struct SingleUse {
    key: String,
    issued_at: UnixTime,
    keep_until: UnixTime,
    max_skew: Duration,
}

impl SingleUse {
    /// The record of `id`; `None` unless `iat` and `exp` are finite (a
    /// record kept until an instant no clock reaches is no record).
    pub(crate) fn new(
        id: &SingleUseId,
        audience: Option<&str>,
        (iat, exp): (f64, f64),
        max_skew: Duration,
    ) -> Option<Self> {
        let mut h = Sha256::new().chain_update(REPLAY_KEY_LABEL);
        if let Some(aud) = audience {
            // Length-prefixed: no audience can end where another's id begins.
            h.update((aud.len() as u64).to_be_bytes());
            h.update(aud.as_bytes());
        }
        h.update(id.0);
        Some(Self {
            key: h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            issued_at: UnixTime::from_secs_f64(iat)?,
            keep_until: UnixTime::from_secs_f64(exp)? + max_skew,
            max_skew,
        })
    }

    /// The replay key: 64 hex digits.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Until when the record must be kept.
    pub fn keep_until(&self) -> UnixTime {
        self.keep_until
    }

    /// When the state was issued (its `iat`, on the minter's clock).
    pub fn issued_at(&self) -> UnixTime {
        self.issued_at
    }

    /// The skew allowance the verifier applied: how far the
    /// minter's clock may have been ahead of the verifier's. A shared store
    /// that lost its records at its epoch refuses every state whose `iat` is
    /// not past the epoch by more than this.
    pub fn max_skew(&self) -> Duration {
        self.max_skew
    }
}

/// For codecs under an SDK that writes the claims itself (the Python SDK's
/// `RequestStateSecurity` builds them and hands our codec the payload): the
/// same `u` claim and replay key as [`Envelope`](crate::Envelope), so a state
/// minted by a Rust server is recorded under the same key by a Python one.
impl SingleUse {
    /// A fresh value for the `u` claim (22 base64url characters).
    ///
    /// # Errors
    /// [`DataError::Random`](crate::DataError::Random) when the operating system's random source fails.
    pub fn new_claim() -> Result<String, Error> {
        Ok(SingleUseId::generate(&RandomSource::default())?.encode())
    }

    /// The record a claims payload asks for once its other claims have been
    /// checked (by the caller): `None` without a `u` claim. The audience is
    /// the payload's `aud`, which the caller has checked is its own; the
    /// payload is read as Python's `json.loads` reads it (last duplicate wins).
    ///
    /// # Errors
    /// [`RejectReason::Malformed`](crate::RejectReason::Malformed) for a payload that is not a JSON object,
    /// a `u` that is not an id, or a single-use state without a finite numeric `iat` and `exp`.
    pub fn of_claims(payload: &[u8], max_skew: Duration) -> Result<Option<Self>, Error> {
        let malformed = || Error::Rejected(crate::reason::RejectReason::Malformed);
        // Most states are multi-use: no parse unless the claim's name is there at all.
        if !payload.windows(3).any(|w| w == b"\"u\"") {
            return Ok(None);
        }
        // The same reading as the bindings' (an object, WTF-8, last duplicate wins).
        let claims = super::SdkPayload::parse(payload)?;
        let id = match claims.get("u") {
            None | Some(crate::json::Value::Null) => return Ok(None),
            Some(crate::json::Value::Str(t)) => {
                SingleUseId::parse(t.as_bytes()).ok_or_else(malformed)?
            }
            Some(_) => return Err(malformed()),
        };
        let iat = claims.number("iat").ok_or_else(malformed)?;
        let exp = claims.number("exp").ok_or_else(malformed)?;
        let audience = match claims.get("aud") {
            None | Some(crate::json::Value::Null) => None,
            Some(crate::json::Value::Str(t)) => Some(t.as_str().ok_or_else(malformed)?),
            Some(_) => return Err(malformed()),
        };
        Self::new(&id, audience, (iat, exp), max_skew)
            .map(Some)
            .ok_or_else(malformed)
    }
}

impl fmt::Debug for SingleUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleUse")
            .field("key", &"<redacted>")
            .field("issued_at", &self.issued_at)
            .field("keep_until", &self.keep_until)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKEW: Duration = Duration::from_secs(60);

    #[test]
    fn ids_round_trip_and_only_canonical_16_bytes_parse() {
        let id = SingleUseId::generate(&RandomSource::default()).unwrap();
        let text = id.encode();
        assert_eq!(text.len(), 22);
        assert_eq!(SingleUseId::parse(text.as_bytes()), Some(id));
        assert_eq!(SingleUseId::parse(&text.as_bytes()[..21]), None);
        assert_eq!(SingleUseId::parse(b"AAAAAAAAAAAAAAAAAAAAAAAA"), None);
        assert_eq!(format!("{id:?}"), "SingleUseId(<redacted>)");
    }

    #[test]
    fn claims_give_the_envelopes_record() {
        let id = SingleUseId::parse(SingleUse::new_claim().unwrap().as_bytes()).unwrap();
        let payload = format!(
            r#"{{"v":1,"iat":1,"exp":100.5,"m":"tools/call","t":"x","a":"d","s":"\"u\"","aud":"svc","u":"{}"}}"#,
            id.encode()
        );
        let once = SingleUse::of_claims(payload.as_bytes(), SKEW)
            .unwrap()
            .unwrap();
        assert_eq!(
            once,
            SingleUse::new(&id, Some("svc"), (1.0, 100.5), SKEW).unwrap()
        );
        // A state that only mentions the name, and payloads without the claim.
        let plain = br#"{"v":1,"exp":1,"s":"\"u\":1"}"#;
        assert_eq!(SingleUse::of_claims(plain, SKEW).unwrap(), None);
        assert_eq!(SingleUse::of_claims(b"not json", SKEW).unwrap(), None);
        for bad in [
            &br#"{"exp":1,"u":"short"}"#[..],
            br#"{"u":"AAAAAAAAAAAAAAAAAAAAAA"}"#,
            b"[\"u\"]",
        ] {
            assert!(SingleUse::of_claims(bad, SKEW).is_err());
        }
        // An expiry no clock reaches would keep no record: refused, not kept forever.
        let endless = payload.replace("100.5", "1e400");
        assert_eq!(
            SingleUse::of_claims(endless.as_bytes(), SKEW),
            Err(Error::Rejected(crate::reason::RejectReason::Malformed))
        );
    }

    #[test]
    fn keys_differ_per_audience_and_id() {
        let random = RandomSource::default();
        let (a, b) = (
            SingleUseId::generate(&random).unwrap(),
            SingleUseId::generate(&random).unwrap(),
        );
        let key = |id, aud| SingleUse::new(id, aud, (40.0, 100.0), SKEW).unwrap();
        assert_eq!(key(&a, Some("svc")), key(&a, Some("svc")));
        assert_ne!(key(&a, Some("svc")).key(), key(&b, Some("svc")).key());
        assert_ne!(key(&a, Some("svc")).key(), key(&a, Some("other")).key());
        assert_ne!(key(&a, Some("svc")).key(), key(&a, None).key());
        assert_eq!(key(&a, None).keep_until(), UnixTime::from_secs(160));
        assert_eq!(
            (key(&a, None).issued_at(), key(&a, None).max_skew()),
            (UnixTime::from_secs(40), SKEW)
        );
        assert!(!format!("{:?}", key(&a, None)).contains(key(&a, None).key()));
    }
}
