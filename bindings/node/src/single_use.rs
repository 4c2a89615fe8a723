//! A single-use state opened and not yet recorded: its text is released only
//! once the replay store has recorded it, on a thread of Node's pool (the
//! record is network I/O, bounded by the store's deadline), never on the
//! event loop. Multi-use states never come here.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use stateseal::{RejectReason, SingleUse};

use crate::Shared;

/// A single-use state awaiting its record (see `NativeEnvelope.open`).
#[napi]
pub struct NativeSingleUse {
    shared: Shared,
    /// Taken by the first `record()`: a state is recorded at most once per opening.
    pending: Mutex<Option<(SingleUse, String)>>,
}

impl NativeSingleUse {
    pub(crate) fn new(shared: Shared, once: SingleUse, text: String) -> Self {
        Self {
            shared,
            pending: Mutex::new(Some((once, text))),
        }
    }
}

/// What `record()` resolves to: the state, or the log-only reason it was refused
/// (`replayed`, `replay store unavailable`).
#[napi(object)]
pub struct Recorded {
    /// The state's text, once recorded.
    pub state: Option<String>,
    /// Why it is refused.
    pub reason: Option<String>,
}

/// Records one single-use state off the event loop.
pub struct RecordTask {
    shared: Shared,
    pending: Option<(SingleUse, String)>,
}

impl Task for RecordTask {
    type Output = std::result::Result<String, RejectReason>;
    type JsValue = Recorded;

    fn compute(&mut self) -> Result<Self::Output> {
        // Already recorded by an earlier call, or the codec closed: nothing may be accepted.
        let Some((once, text)) = self.pending.take() else {
            return Ok(Err(RejectReason::Replayed));
        };
        let Some(engine) = self.shared.load_full() else {
            return Ok(Err(RejectReason::ReplayStoreUnavailable));
        };
        let Some(running) = engine.running.as_ref() else {
            // Static keys have no replay store (and cannot open v2 tokens anyway).
            return Ok(Err(RejectReason::ReplayStoreUnavailable));
        };
        // Blocks this pool thread for at most the store's deadline.
        Ok(running.record(&once).map(|()| text))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Recorded> {
        Ok(match output {
            Ok(state) => Recorded {
                state: Some(state),
                reason: None,
            },
            Err(reason) => Recorded {
                state: None,
                reason: Some(reason.as_str().to_owned()),
            },
        })
    }
}

#[napi]
impl NativeSingleUse {
    /// Records the state in the replay store; resolves to its text, or to the reason it is refused.
    #[napi(ts_return_type = "Promise<Recorded>")]
    pub fn record(&self) -> AsyncTask<RecordTask> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        AsyncTask::new(RecordTask {
            shared: Arc::clone(&self.shared),
            pending,
        })
    }
}
