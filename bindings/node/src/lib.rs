//! The native half of the Node package `stateseal` (`bindings/node`): a codec
//! over a keyset-backed ring (or static keys, as the Python SDK's codec), and
//! the Rust envelope's claims for the TypeScript MCP SDK's
//! `RequestStateCodec`. The JavaScript half (`index.cjs` and the modules it
//! loads) is the documented API; this module is its engine.
//!
//! Seal, unseal, mint and verify are synchronous and never touch the
//! network: the rotation scheduler refreshes the ring on threads of its own
//! (they never keep the event loop alive), as in a Rust server. Errors carry
//! a stable `code` and a log-only reason as their message: never a key, a
//! token, a state or a principal.

// `deny`, not `forbid`: napi-rs's registration code (module constructors) is
// generated with `#[allow(unsafe_code)]`; nothing written here may use unsafe.
#![deny(unsafe_code)]

mod envelope;
mod frame;
mod settings;
mod single_use;
mod text;

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use stateseal::{AesGcmCodec, KeyRing, RingHandle, StateCodec, UnixTime};
use stateseal_binding::{Running, reason};

use envelope::EnvelopeCore;
pub use envelope::{
    EnvelopeTicket, envelope_mint, envelope_mint_named, envelope_number, envelope_open,
    envelope_open_named, envelope_parse, envelope_verify,
};
pub use frame::frame_attach;
pub use single_use::{NativeSingleUse, Recorded};

/// What a failure is, as JavaScript's `err.code`.
#[derive(Debug, Clone, Copy)]
pub enum Code {
    /// A token refused: the message is its reason (`mac`, `expired`, …).
    Rejected,
    /// Sealing is not possible now (no ring, sealing stopped, random source).
    Unavailable,
    /// The codec was closed.
    Closed,
    /// A setting or argument that cannot work.
    Config,
    /// A round handle whose slot a later round took (internal: the JavaScript
    /// half names the round again).
    Round,
    /// Another frame is attached on this thread (internal: the JavaScript half
    /// attaches its own again).
    Frame,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::Rejected => "ERR_STATESEAL_REJECTED",
            Code::Unavailable => "ERR_STATESEAL_UNAVAILABLE",
            Code::Closed => "ERR_STATESEAL_CLOSED",
            Code::Config => "ERR_STATESEAL_CONFIG",
            Code::Round => "ERR_STATESEAL_ROUND",
            Code::Frame => "ERR_STATESEAL_FRAME",
        }
    }
}

pub(crate) fn fail(code: Code, message: impl Into<String>) -> Error<Code> {
    Error::new(code, message.into())
}

/// A stateseal error as a JavaScript error: refusals by reason, the rest by kind.
pub(crate) fn thrown(e: &stateseal::Error) -> Error<Code> {
    match e {
        stateseal::Error::Rejected(_) => fail(Code::Rejected, reason(e)),
        stateseal::Error::Config(m) if m == CLOSED => fail(Code::Closed, CLOSED),
        stateseal::Error::Config(m) => fail(Code::Config, m.clone()),
        // A state the envelope cannot carry (too large, not UTF-8): the caller's to fix.
        stateseal::Error::Data(stateseal::DataError::Seal(_)) => fail(Code::Config, reason(e)),
        _ => fail(Code::Unavailable, reason(e)),
    }
}

/// What a closed codec says.
pub(crate) const CLOSED: &str = "the codec is closed";

/// What seals: a keyset instance with its scheduler, or a static ring.
pub(crate) struct Engine {
    pub(crate) codec: Arc<AesGcmCodec>,
    pub(crate) ttl: Option<f64>,
    /// Kept for its scheduler (status, and stopping it on close) and its
    /// single-use rounds and replay store.
    pub(crate) running: Option<Running>,
}

impl Drop for Engine {
    /// Stops the scheduler, then empties the ring: envelopes hold the codec
    /// until JavaScript collects them, and keep no keys meanwhile.
    fn drop(&mut self) {
        drop(self.running.take());
        self.codec.ring().clear();
    }
}

/// Whether the raw `unseal` may hand `payload` out. Fail closed: this path
/// records nothing and sees no principal, so it refuses a payload with the
/// single-use claim (the codec from `createStatesealCodec` accepts it once
/// recorded), one of a single-use round without the claim, and one a live
/// revocation may cover (as the Python codec refuses it outside its boundary).
fn raw_verdict(engine: &Engine, payload: &[u8]) -> std::result::Result<(), stateseal::Error> {
    let refused = |r| Err(stateseal::Error::Rejected(r));
    let once = stateseal::SingleUse::of_claims(payload, std::time::Duration::ZERO)?;
    if once.is_some() {
        return refused(stateseal::RejectReason::ReplayStoreUnavailable);
    }
    let Some(running) = &engine.running else {
        return Ok(()); // static keys: no rounds, no revocations
    };
    if running.lacks_single_use_claim(payload, None) {
        return refused(stateseal::RejectReason::MissingSingleUseClaim);
    }
    if running.revocation_candidate(payload)?.is_some() {
        return refused(stateseal::RejectReason::Revoked);
    }
    Ok(())
}

/// The engine while the codec is open; `None` once closed.
pub(crate) type Shared = Arc<ArcSwapOption<Engine>>;

pub(crate) fn open(shared: &Shared) -> std::result::Result<Arc<Engine>, Error<Code>> {
    shared.load_full().ok_or_else(|| fail(Code::Closed, CLOSED))
}

/// `call` on the engine while the codec is open, borrowed for the call (as
/// [`open`], without taking a count of it: the per-round calls' way).
pub(crate) fn with_open<R>(
    shared: &Shared,
    call: impl FnOnce(&Engine) -> std::result::Result<R, Error<Code>>,
) -> std::result::Result<R, Error<Code>> {
    match &*shared.load() {
        Some(engine) => call(engine),
        None => Err(fail(Code::Closed, CLOSED)),
    }
}

/// A codec (see the JavaScript class `KeysetCodec`).
#[napi]
pub struct NativeCodec {
    shared: Shared,
}

/// Starts a keyset codec off the event loop (the first ring may take a store read and KMS calls).
pub struct StartTask {
    recipe: stateseal_binding::Recipe,
}

impl Task for StartTask {
    type Output = Running;
    type JsValue = NativeCodec;

    fn compute(&mut self) -> Result<Running> {
        Running::start(&self.recipe).map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
    }

    fn resolve(&mut self, _env: Env, running: Running) -> Result<NativeCodec> {
        let ring = running
            .protection()
            .map(|p| p.scheduler().ring())
            .ok_or_else(|| Error::new(Status::GenericFailure, "the scheduler stopped"))?;
        let engine = Engine {
            codec: Arc::new(AesGcmCodec::new(ring)),
            ttl: Some(running.ttl),
            running: Some(running),
        };
        Ok(NativeCodec {
            shared: Arc::new(ArcSwapOption::from_pointee(engine)),
        })
    }
}

#[napi]
impl NativeCodec {
    /// Starts a codec on the keyset in `store` with settings (a JSON object,
    /// camelCase names); resolves once the ring is ready.
    #[napi(ts_return_type = "Promise<NativeCodec>")]
    pub fn start(store: String, settings_json: String) -> Result<AsyncTask<StartTask>> {
        let recipe = settings::recipe(&store, &settings_json)
            .map_err(|m| Error::new(Status::InvalidArg, m))?;
        Ok(AsyncTask::new(StartTask { recipe }))
    }

    /// Starts a codec from the `STATESEAL_*` variables.
    #[napi(ts_return_type = "Promise<NativeCodec>")]
    pub fn from_env() -> Result<AsyncTask<StartTask>> {
        let recipe = stateseal_binding::recipe_from_env(settings::AUDIENCE)
            .map_err(|m| Error::new(Status::InvalidArg, m))?;
        Ok(AsyncTask::new(StartTask { recipe }))
    }

    /// A codec over static keys (each at least 32 bytes; the first seals), byte
    /// for byte the Python SDK's codec: `v1.` tokens, no keyset, no rotation.
    #[napi(factory)]
    pub fn from_keys(keys: Vec<Buffer>) -> std::result::Result<Self, Error<Code>> {
        stateseal::AeadBackend::select_from_env().map_err(|e| fail(Code::Config, e.to_string()))?;
        let ring = KeyRing::from_bytes(keys.iter().map(|k| k.to_vec()).collect())
            .map_err(|e| fail(Code::Config, e.to_string()))?;
        let engine = Engine {
            codec: Arc::new(AesGcmCodec::new(Arc::new(RingHandle::new(ring)))),
            ttl: None,
            running: None,
        };
        Ok(Self {
            shared: Arc::new(ArcSwapOption::from_pointee(engine)),
        })
    }

    /// Seals `payload` under the ring's primary key.
    #[napi]
    pub fn seal(&self, payload: Buffer) -> std::result::Result<String, Error<Code>> {
        open(&self.shared)?
            .codec
            .seal(&payload)
            .map_err(|e| thrown(&e))
    }

    /// Opens a token sealed under any key of the ring. A token longer than
    /// the envelope's limit (1 MiB) is refused before it is decoded, and a
    /// single-use state (`replay store unavailable`) after.
    #[napi]
    pub fn unseal(&self, token: String) -> std::result::Result<Buffer, Error<Code>> {
        if token.len() > stateseal::DEFAULT_MAX_TOKEN_LEN {
            return Err(thrown(&stateseal::Error::Rejected(
                stateseal::RejectReason::Malformed,
            )));
        }
        let engine = open(&self.shared)?;
        let mut payload = engine.codec.unseal(&token).map_err(|e| thrown(&e))?;
        let verdict = raw_verdict(&engine, &payload);
        match verdict {
            Ok(()) => Ok(Buffer::from(payload)),
            Err(e) => {
                zeroize::Zeroize::zeroize(&mut payload);
                Err(thrown(&e))
            }
        }
    }

    /// The state lifetime T of the keyset (`null` for static keys).
    #[napi(getter)]
    pub fn ttl(&self) -> std::result::Result<Option<f64>, Error<Code>> {
        Ok(open(&self.shared)?.ttl)
    }

    /// The scheduler's view, as JSON (`null` for static keys).
    #[napi]
    pub fn status(&self) -> std::result::Result<Option<String>, Error<Code>> {
        let engine = open(&self.shared)?;
        let Some(p) = engine.running.as_ref().and_then(Running::protection) else {
            return Ok(None);
        };
        let st = p.status();
        Ok(Some(
            serde_json::json!({
                "ready": st.ready,
                "generation": st.generation,
                "phase": st.phase.map(|p| p as u8),
                "primary": st.ring.first(),
                "ring": st.ring,
                "lastRefresh": st.last_refresh.map(UnixTime::as_secs_f64),
                "lastStoreRead": st.last_store_read.map(UnixTime::as_secs_f64),
                "lastError": st.last_error,
                "kmsCalls": st.kms_calls,
                "unauthenticated": st.unauthenticated,
                "expiresAt": st.expires_at.map(UnixTime::as_secs_f64),
                "ttl": engine.ttl,
            })
            .to_string(),
        ))
    }

    /// An envelope over this codec: the Rust envelope's claims for `audience`, states living `ttl` seconds.
    #[napi(ts_return_type = "ExternalObject<'Envelope'>")]
    pub fn envelope(
        &self,
        audience: Option<String>,
        ttl: f64,
    ) -> std::result::Result<External<EnvelopeTicket>, Error<Code>> {
        EnvelopeCore::new(Arc::clone(&self.shared), audience, ttl)
            .map(|core| External::new(EnvelopeTicket::new(core)))
    }

    /// Stops the background refresh; later calls throw `ERR_STATESEAL_CLOSED`.
    #[napi]
    pub fn close(&self) {
        // Dropping the engine shuts its runtime down without waiting on I/O in flight
        // (a single-use record on a pool thread may hold it a moment longer).
        drop(self.shared.swap(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_engine_leaves_its_envelopes_no_keys() {
        let ring = KeyRing::from_bytes(vec![vec![7; 32]]).unwrap();
        let shared: Shared = Arc::new(ArcSwapOption::from_pointee(Engine {
            codec: Arc::new(AesGcmCodec::new(Arc::new(RingHandle::new(ring)))),
            ttl: None,
            running: None,
        }));
        let core = EnvelopeCore::new(Arc::clone(&shared), Some("svc".into()), 60.0).unwrap();
        let codec = Arc::clone(&open(&shared).unwrap().codec);
        assert!(codec.seal(b"s").is_ok());
        // As `NativeCodec::close`: the envelope still holds the codec, but not its keys.
        drop(shared.swap(None));
        assert!(codec.ring().current().is_none());
        assert!(matches!(
            codec.seal(b"s"),
            Err(stateseal::Error::Data(stateseal::DataError::NotReady))
        ));
        drop(core);
    }
}
