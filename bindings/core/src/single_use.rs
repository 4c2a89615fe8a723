//! Single-use states for the bindings: which rounds mint them, the `u` claim
//! in payloads an SDK writes itself (the Python SDK), and recording them in
//! the instance's replay store. The Rust boundary's rules, reasons and
//! metrics: a state with the `u` claim is accepted only once its record has
//! landed, and refused `replayed` or `replay store unavailable` otherwise.

use stateseal::{Error, RejectReason, RequestIdentity, SingleUse, TokenFormat};

use crate::Running;

/// What the `u` claim needs and a v1 key cannot give.
const NEEDS_V2: &str = "single-use states need a v2 key (a keyset key; `stateseal rotate` gives one): the Python SDK's codec opens v1 tokens and would not enforce single use";

impl Running {
    /// Whether states of the round (`method`, its tool or prompt name or
    /// resource URI) are minted single-use by this instance's configuration.
    pub fn is_single_use(&self, round: &RequestIdentity) -> bool {
        self.boundary
            .as_ref()
            .is_some_and(|b| b.is_single_use(round))
    }

    /// Records `once` in the replay store, blocking the calling thread on the
    /// instance's runtime for at most the store's deadline (250 ms for
    /// Redis by default). Never call it from the runtime's own threads.
    ///
    /// # Errors
    /// [`RejectReason::Replayed`] or [`RejectReason::ReplayStoreUnavailable`]
    /// (also once the instance is shut down): refuse the state.
    pub fn record(&self, once: &SingleUse) -> Result<(), RejectReason> {
        match (&self.boundary, &self.runtime) {
            (Some(boundary), Some(runtime)) => runtime.block_on(boundary.record(once)),
            _ => Err(RejectReason::ReplayStoreUnavailable),
        }
    }

    /// Seals a claims payload written by an SDK (compact JSON with `m` and
    /// `t`, as the Python SDK writes it), adding the `u` claim when the
    /// round it names is single-use here.
    ///
    /// # Errors
    /// As [`Running::seal`]; [`Error::Seal`] when the round is single-use and
    /// the primary key is v1.
    pub fn seal_claims(&self, payload: &[u8]) -> Result<String, Error> {
        let Some(with_claim) = self.single_use_payload(payload)? else {
            return self.seal(payload);
        };
        let token = self.seal(&with_claim)?;
        if !token.starts_with(TokenFormat::V2.prefix()) {
            return Err(Error::Seal(NEEDS_V2));
        }
        Ok(token)
    }

    /// `payload` with a fresh `u` claim when it names a single-use round.
    fn single_use_payload(&self, payload: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        if !self.single_use_rounds {
            return Ok(None);
        }
        // Not JSON, or no round named: not a state of a single-use round.
        let Ok(serde_json::Value::Object(claims)) = serde_json::from_slice(payload) else {
            return Ok(None);
        };
        let text = |key| claims.get(key).and_then(serde_json::Value::as_str);
        let (Some(method), Some(target)) = (text("m"), text("t")) else {
            return Ok(None);
        };
        if !self.is_single_use(&RequestIdentity::for_call(method, target, None)) {
            return Ok(None);
        }
        // A claim already there (the caller's own) would be shadowed by ours in
        // Python's reading but not in every reader's: refuse rather than guess.
        if claims.contains_key("u") {
            return Err(Error::Seal("the payload already has a u claim"));
        }
        let Some(body) = payload.strip_suffix(b"}") else {
            return Ok(None);
        };
        let claim = SingleUse::new_claim()?;
        let mut out = Vec::with_capacity(payload.len() + 32);
        out.extend_from_slice(body);
        out.extend_from_slice(b",\"u\":\"");
        out.extend_from_slice(claim.as_bytes());
        out.extend_from_slice(b"\"}");
        Ok(Some(out))
    }

    /// Opens a token and returns its payload with the record it asks for
    /// (`None`: a multi-use state). The payload's other claims are the
    /// caller's to check before it records.
    ///
    /// # Errors
    /// As [`Running::unseal`]; `malformed` for an unreadable `u` claim.
    pub fn unseal_claims(&self, token: &str) -> Result<(Vec<u8>, Option<SingleUse>), Error> {
        let payload = self.unseal(token)?;
        let once = SingleUse::of_claims(&payload, self.max_skew)?;
        Ok((payload, once))
    }
}
