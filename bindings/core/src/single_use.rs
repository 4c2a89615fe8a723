//! Single-use states for the bindings: which rounds mint them, the `u` claim
//! in payloads an SDK writes itself (the Python SDK), and recording them in
//! the instance's replay store. The Rust boundary's rules, reasons and
//! metrics: a state with the `u` claim is accepted only once its record has
//! landed, and refused `replayed` or `replay store unavailable` otherwise.

use stateseal::{
    DataError, Error, RejectReason, RequestIdentity, SdkPayload, SingleUse, TokenFormat,
};

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
    /// As [`Running::seal`]; [`DataError::Seal`] when the round is single-use and
    /// the primary key is v1.
    pub fn seal_claims(&self, payload: &[u8]) -> Result<String, Error> {
        let Some(with_claim) = self.single_use_payload(payload)? else {
            return self.seal(payload);
        };
        let token = self.seal(&with_claim)?;
        if !token.starts_with(TokenFormat::V2.prefix()) {
            return Err(Error::Data(DataError::Seal(NEEDS_V2)));
        }
        Ok(token)
    }

    /// `payload` with a fresh `u` claim when it names a single-use round.
    /// Read as the SDK wrote it (WTF-8: a lone surrogate in an argument is
    /// kept, not a reason to skip the claim); a payload that still cannot be
    /// read is not sealed at all while single-use rounds are configured,
    /// since it might be one of theirs.
    fn single_use_payload(&self, payload: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        if !self.single_use_rounds {
            return Ok(None);
        }
        let unreadable = || {
            Error::Data(DataError::Seal(
                "the SDK's claims could not be read, and single-use rounds are configured: refusing to seal a state that might be one of theirs as multi-use",
            ))
        };
        let claims = SdkPayload::parse(payload).map_err(|_| unreadable())?;
        // No round at all is not a payload the SDK writes.
        if !(claims.has("m") && claims.has("t")) {
            return Err(unreadable());
        }
        if !self.names_single_use_round(&claims) {
            return Ok(None);
        }
        // A claim already there (the caller's own) would be shadowed by ours in
        // Python's reading but not in every reader's: refuse rather than guess.
        if claims.has("u") {
            return Err(Error::Data(DataError::Seal(
                "the payload already has a u claim",
            )));
        }
        let Some(body) = payload.strip_suffix(b"}") else {
            return Err(unreadable());
        };
        let claim = SingleUse::new_claim()?;
        let mut out = Vec::with_capacity(payload.len() + 32);
        out.extend_from_slice(body);
        out.extend_from_slice(b",\"u\":\"");
        out.extend_from_slice(claim.as_bytes());
        out.extend_from_slice(b"\"}");
        Ok(Some(out))
    }

    /// Whether the claims of `payload` name a round this instance treats as
    /// single-use while carrying no `u` claim: such a state (minted by an
    /// instance without the setting, or before it) must be refused.
    pub fn lacks_single_use_claim(&self, payload: &[u8], once: Option<&SingleUse>) -> bool {
        if !self.single_use_rounds || once.is_some() {
            return false;
        }
        SdkPayload::parse(payload)
            .ok()
            .is_some_and(|claims| self.names_single_use_round(&claims))
    }

    /// Whether the claims' `m` and `t` name a round single-use here (a target
    /// with a lone surrogate names none: no configured one can equal it).
    fn names_single_use_round(&self, claims: &SdkPayload) -> bool {
        claims.round().is_some_and(|(method, target)| {
            self.is_single_use(&RequestIdentity::for_call(method, target, None))
        })
    }

    /// Opens a token and returns its payload with the record it asks for
    /// (`None`: a multi-use state). The payload's other claims are the
    /// caller's to check before it records.
    ///
    /// # Errors
    /// As [`Running::unseal`]; `malformed` for an unreadable `u` claim;
    /// `single-use claim missing` for a state of a single-use round without one.
    pub fn unseal_claims(&self, token: &str) -> Result<(Vec<u8>, Option<SingleUse>), Error> {
        let payload = self.unseal(token)?;
        let once = SingleUse::of_claims(&payload, self.max_skew_duration())?;
        if self.lacks_single_use_claim(&payload, once.as_ref()) {
            return Err(Error::Rejected(RejectReason::MissingSingleUseClaim));
        }
        Ok((payload, once))
    }
}
