//! The boundary: verify every echoed `requestState` before a handler runs, seal
//! every outgoing one. Framework-agnostic; the rmcp adapter is built on it.
//!
//! Threat model: every byte of a request is client-controlled, the echoed
//! `requestState` included. The boundary acts only on the three carriers
//! (`tools/call`, `prompts/get`, `resources/read`) and lets every other method
//! through untouched. Inbound, an echo is replaced by the plaintext the server
//! minted, or the request is refused with one frozen error (`-32602`) whose
//! real reason goes to the log only, so a prober learns nothing; `null` counts
//! as absent (stripping the field is in any client's power anyway). Outbound,
//! an `input_required` result's state is sealed in a fresh envelope bound to
//! this round; if sealing fails for any reason the answer is `-32603` and the
//! plaintext never reaches the wire. The caller's identity comes from the
//! server's auth layer, never from the client-asserted `_meta`.

mod json;
mod single_use;

pub use json::Round;

use std::sync::Arc;

use single_use::SingleUseRounds;

use crate::envelope::{
    CARRIER_METHODS, Envelope, MintOptions, OpenOptions, Opened, Principal, RequestIdentity,
    SingleUse,
};
use crate::error::Error;
use crate::reason::RejectReason;
use crate::replay::ReplayStore;

/// What to do with an echo that fails verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureMode {
    /// Refuse the request with `-32602 "Invalid or expired requestState"` (the spec's and the default).
    #[default]
    Reject,
    /// Run the handler as if no state was echoed, so it starts a fresh round (logged at warn).
    TreatAsAbsent,
}

/// A JSON-RPC error the boundary answers with. Its text never carries the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct WireError {
    /// JSON-RPC error code.
    pub code: i32,
    /// The frozen message.
    pub message: &'static str,
    /// The frozen data, if any.
    pub data: Option<serde_json::Value>,
}

impl WireError {
    /// `-32602 "Invalid or expired requestState"`, data `{"reason":"invalid_request_state"}`.
    pub fn invalid_state() -> Self {
        Self {
            code: -32602,
            message: "Invalid or expired requestState",
            data: Some(serde_json::json!({"reason": "invalid_request_state"})),
        }
    }

    /// `-32603 "Internal error"`, no data.
    pub fn internal() -> Self {
        Self {
            code: -32603,
            message: "Internal error",
            data: None,
        }
    }
}

/// The caller's identity as the server's auth layer established it, or the
/// failure to establish it (which denies, in both directions).
pub type PrincipalResult = Result<Option<Principal>, PrincipalError>;

/// A principal source failed; the state is denied. Carries no identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrincipalError;

/// The identity an HTTP auth layer established, inserted into the request's
/// extensions for the boundary to bind states to. `Debug` is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthenticatedPrincipal {
    /// The OAuth client id.
    pub client_id: String,
    /// The token issuer, when known.
    pub issuer: Option<String>,
    /// The subject (end user), when known.
    pub subject: Option<String>,
}

impl AuthenticatedPrincipal {
    /// The principal string the Python SDK binds: `["client_id","issuer","subject"]`.
    pub fn to_principal(&self) -> Principal {
        Principal::from_components(
            &self.client_id,
            self.issuer.as_deref(),
            self.subject.as_deref(),
        )
    }
}

impl std::fmt::Debug for AuthenticatedPrincipal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthenticatedPrincipal(<redacted>)")
    }
}

/// Seals and opens `requestState` for one service.
///
/// ```
/// use std::sync::Arc;
/// use stateseal::boundary::{Boundary, WireError};
/// use stateseal::{Envelope, KeyRing, RequestIdentity, RingHandle, Secret};
///
/// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
/// let envelope = Envelope::builder(ring, Some("my-server")).build()?;
/// let boundary = Boundary::new(Arc::new(envelope));
/// let round = RequestIdentity::from_json("tools/call", br#"{"name":"deploy"}"#)?;
/// let sealed = boundary.seal(&round, "step-2", &Ok(None)).expect("sealed");
/// assert_eq!(boundary.open(&round, Some(&sealed), &Ok(None)), Ok(Some("step-2".to_owned())));
/// assert_eq!(boundary.open(&round, Some("forged"), &Ok(None)), Err(WireError::invalid_state()));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Boundary {
    envelope: Arc<Envelope>,
    failure_mode: FailureMode,
    single_use: SingleUseRounds,
}

/// Builds a [`Boundary`] (every setting has a valid default).
#[derive(Debug, Clone)]
#[must_use]
pub struct BoundaryBuilder {
    envelope: Arc<Envelope>,
    failure_mode: FailureMode,
    single_use: SingleUseRounds,
}

impl BoundaryBuilder {
    /// What a bad echo does (default [`FailureMode::Reject`]).
    pub fn failure_mode(mut self, mode: FailureMode) -> Self {
        self.failure_mode = mode;
        self
    }

    /// Where single-use states are recorded (default: none, and every
    /// single-use state is refused with reason `replay store unavailable`).
    pub fn replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.single_use.store = Some(store);
        self
    }

    /// Makes the states of one tool (`"tools/call"`, its name), prompt
    /// (`"prompts/get"`, its name) or resource (`"resources/read"`, its URI)
    /// single-use: each verifies once, fleet-wide. For irreversible actions;
    /// a client whose answer was lost must start the flow again.
    pub fn single_use(mut self, method: &str, target: &str) -> Self {
        self.single_use.add(method, target);
        self
    }

    /// The boundary.
    pub fn build(self) -> Boundary {
        Boundary {
            envelope: self.envelope,
            failure_mode: self.failure_mode,
            single_use: self.single_use,
        }
    }
}

impl Boundary {
    /// A boundary over `envelope` (TTL and audience live there) with every
    /// default: bad echoes are rejected. Short for `Boundary::builder(envelope).build()`.
    pub fn new(envelope: Arc<Envelope>) -> Self {
        Self::builder(envelope).build()
    }

    /// A builder over `envelope`, for the failure mode.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use stateseal::{Envelope, KeyRing, RingHandle};
    /// use stateseal::boundary::{Boundary, FailureMode};
    /// # let ring = Arc::new(RingHandle::new(KeyRing::ephemeral()?));
    /// # let envelope = Envelope::builder(ring, Some("svc")).build()?;
    /// let boundary = Boundary::builder(Arc::new(envelope))
    ///     .failure_mode(FailureMode::TreatAsAbsent)
    ///     .build();
    /// assert_eq!(boundary.failure_mode(), FailureMode::TreatAsAbsent);
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn builder(envelope: Arc<Envelope>) -> BoundaryBuilder {
        BoundaryBuilder {
            envelope,
            failure_mode: FailureMode::Reject,
            single_use: SingleUseRounds::default(),
        }
    }

    /// The failure mode.
    pub fn failure_mode(&self) -> FailureMode {
        self.failure_mode
    }

    /// The envelope.
    pub fn envelope(&self) -> &Arc<Envelope> {
        &self.envelope
    }

    /// Whether `method` may carry `requestState`.
    pub fn is_carrier(method: &str) -> bool {
        CARRIER_METHODS.contains(&method)
    }

    /// Where single-use states are recorded (`None`: every single-use state is refused).
    pub fn replay_store(&self) -> Option<&Arc<dyn ReplayStore>> {
        self.single_use.store.as_ref()
    }

    /// Whether the last single-use record failed (the store was unreachable,
    /// slow or refused): readiness detail, since multi-use states are
    /// unaffected and the instance stays ready.
    pub fn replay_store_failing(&self) -> bool {
        self.single_use.failing()
    }

    /// Why the replay store failed last (its error, with no credentials or
    /// keys), while [`Boundary::replay_store_failing`]: readiness detail.
    pub fn replay_store_problem(&self) -> Option<String> {
        self.single_use.lock_problem().clone()
    }

    /// Connects the replay store before the first single-use state arrives
    /// ([`ReplayStore::prepare`]: its settings are checked and a new store's
    /// epoch set). A failure is logged and shows in
    /// [`Boundary::replay_store_problem`]; records try again.
    pub async fn prepare_replay_store(&self) {
        self.single_use.prepare().await;
    }

    /// Whether states of `round` are minted single-use.
    pub fn is_single_use(&self, round: &RequestIdentity) -> bool {
        self.single_use.covers(round)
    }

    /// Records a single-use state opened outside [`Boundary::admit`] (the
    /// language bindings open states through their SDK's own checks), with
    /// the same metrics and log: `Err(Replayed)` when it was recorded
    /// already, `Err(ReplayStoreUnavailable)` when the store failed or there is none.
    ///
    /// # Errors
    /// As above; the state must then be refused.
    pub async fn record(&self, single_use: &SingleUse) -> Result<(), RejectReason> {
        self.single_use.record(single_use).await
    }

    /// [`Boundary::open`] for every state, single-use ones included: a
    /// single-use state is accepted once its record lands in the replay
    /// store (reason `replayed` when it was there, `replay store
    /// unavailable` when the store failed or there is none). Multi-use
    /// states never reach the store.
    ///
    /// # Errors
    /// As [`Boundary::open`].
    pub async fn admit(
        &self,
        round: &RequestIdentity,
        echoed: Option<&str>,
        principal: &PrincipalResult,
    ) -> Result<Option<String>, WireError> {
        let Some(token) = echoed else { return Ok(None) };
        let verdict = match principal {
            Err(PrincipalError) => Err(RejectReason::PrincipalBindingError),
            Ok(p) => match self.envelope.open(
                round,
                token,
                OpenOptions::new()
                    .principal(p.as_ref())
                    .records_single_use(true),
            ) {
                Ok(Opened {
                    state,
                    single_use: Some(once),
                    ..
                }) => match self.single_use.record(&once).await {
                    Ok(()) => plaintext(Ok(state)),
                    Err(reason) => refuse(state, reason),
                },
                // A round this instance treats as single-use accepts nothing
                // else: a multi-use state of it (minted by an instance without
                // the setting, or before it) would verify any number of times.
                Ok(Opened { state, .. }) if self.single_use.covers(round) => {
                    refuse(state, RejectReason::MissingSingleUseClaim)
                }
                other => plaintext(other.map(|opened| opened.state)),
            },
        };
        self.decide(round.method(), verdict)
    }

    /// Verifies an echoed state (`None`: nothing echoed) and returns the
    /// plaintext the handler should see (`None`: no state). Refuses
    /// single-use states (reason `replay store unavailable`): they need
    /// [`Boundary::admit`], which records them.
    ///
    /// # Errors
    /// [`WireError::invalid_state`] in `Reject` mode; never in `TreatAsAbsent` mode.
    pub fn open(
        &self,
        round: &RequestIdentity,
        echoed: Option<&str>,
        principal: &PrincipalResult,
    ) -> Result<Option<String>, WireError> {
        let Some(token) = echoed else { return Ok(None) };
        let verdict = match principal {
            Err(PrincipalError) => Err(RejectReason::PrincipalBindingError),
            Ok(p) => {
                match self
                    .envelope
                    .open(round, token, OpenOptions::new().principal(p.as_ref()))
                {
                    // As in `admit`: a multi-use state of a single-use round is refused.
                    Ok(opened) if self.single_use.covers(round) => {
                        refuse(opened.state, RejectReason::MissingSingleUseClaim)
                    }
                    verified => plaintext(verified.map(|opened| opened.state)),
                }
            }
        };
        self.decide(round.method(), verdict)
    }

    /// Applies the failure mode to a verdict.
    fn decide(
        &self,
        method: &str,
        verdict: Result<String, RejectReason>,
    ) -> Result<Option<String>, WireError> {
        match verdict {
            Ok(state) => Ok(Some(state)),
            Err(reason) => match self.failure_mode {
                FailureMode::Reject => {
                    tracing::warn!(method, reason = reason.as_str(), "requestState rejected");
                    Err(WireError::invalid_state())
                }
                FailureMode::TreatAsAbsent => {
                    tracing::warn!(
                        method,
                        reason = reason.as_str(),
                        "requestState rejected; treating it as absent"
                    );
                    Ok(None)
                }
            },
        }
    }

    /// Seals a handler's plaintext state for the round `round`.
    ///
    /// # Errors
    /// [`WireError::internal`] when the principal source failed, the ring is
    /// not loaded, or the codec failed. The plaintext is never returned.
    pub fn seal(
        &self,
        round: &RequestIdentity,
        state: &str,
        principal: &PrincipalResult,
    ) -> Result<String, WireError> {
        let Ok(p) = principal else {
            tracing::error!(
                method = round.method(),
                "refusing to seal requestState: principal binding error"
            );
            return Err(WireError::internal());
        };
        let options = MintOptions::new()
            .principal(p.as_ref())
            .single_use(self.single_use.covers(round));
        self.envelope.mint(round, state, options).map_err(|e: Error| {
            tracing::error!(method = round.method(), error = %e, "refusing to seal requestState");
            WireError::internal()
        })
    }
}

/// The plaintext a handler receives from a verified state, or why it is refused.
fn plaintext(verified: Result<crate::json::Text, Error>) -> Result<String, RejectReason> {
    match verified {
        // Python can mint a lone surrogate; a Rust handler cannot receive one.
        Ok(text) => text
            .into_string()
            .or_else(|text| refuse(text, RejectReason::UnrepresentableState)),
        Err(e) => Err(e.reject_reason().unwrap_or(RejectReason::CodecError)),
    }
}

/// A state refused after it was decrypted: its plaintext wiped, not just freed.
fn refuse<T>(mut state: crate::json::Text, reason: RejectReason) -> Result<T, RejectReason> {
    state.wipe();
    Err(reason)
}
