//! A single-use state between `KeysetCodec.unseal` and its record.
//!
//! The SDK's boundary calls the codec before it checks the claims (expiry,
//! request binding, audience, principal), and a state must be recorded only
//! after every check passes (else a state refused for another reason would
//! be spent). So `unseal` hands the record to the [`PendingUse`] that
//! `stateseal.RequestStateBoundary` put in a `contextvars.ContextVar` for
//! this call, and the boundary records it once the SDK's `_unseal` returned.
//! With no slot in the variable (the SDK's own boundary, a direct call) the
//! state is refused: nothing would record it.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};
use stateseal::{RejectReason, SingleUse, UnixTime};
use stateseal_binding::Running;

use crate::invalid_state;

/// The `ContextVar` the Python package hands over at import.
static PENDING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Records the `ContextVar` holding the boundary's slot (once, at import).
#[pyfunction]
pub(crate) fn use_pending_var(py: Python<'_>, var: Bound<'_, PyAny>) {
    let _ = PENDING.set(py, var.unbind());
}

/// One opening's single-use record, if its state had one, and its `iat`
/// while a live revocation may cover it.
#[pyclass(module = "stateseal._native", frozen)]
pub(crate) struct PendingUse {
    slot: Mutex<Option<(SingleUse, Arc<Running>)>>,
    issued: Mutex<Option<(UnixTime, Arc<Running>)>>,
}

#[pymethods]
impl PendingUse {
    #[new]
    fn new() -> Self {
        Self {
            slot: Mutex::new(None),
            issued: Mutex::new(None),
        }
    }

    /// Whether the state opened under this slot is revoked for `principal`
    /// (the SDK's principal string; `None`: unbound). Asked after the SDK's
    /// checks passed and before the record.
    ///
    /// The principal crosses as WTF-8 (`surrogatepass`): the SDK binds and
    /// verifies a principal holding a lone surrogate, so this must take it
    /// too (a `str` argument would raise, and the round fail with -32603).
    fn revoked(&self, principal: Option<&Bound<'_, PyString>>) -> PyResult<bool> {
        let principal = match principal {
            Some(p) => Some(wtf8(p)?),
            None => None,
        };
        let taken = self
            .issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        Ok(taken.is_some_and(|(iat, running)| running.revoked(iat, principal.as_deref())))
    }

    /// Records the state opened under this slot, if it was single-use: `None`
    /// when there is nothing to record or the record landed, else the reason
    /// to refuse the state (`replayed`, `replay store unavailable`). The GIL
    /// is released meanwhile; the call blocks for at most the replay store's
    /// deadline (250 ms for Redis by default).
    fn record(&self, py: Python<'_>) -> Option<&'static str> {
        let taken = self
            .slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let (once, running) = taken?;
        py.detach(|| running.record(&once))
            .err()
            .map(RejectReason::as_str)
    }
}

/// A Python string's WTF-8 bytes: UTF-8, with a lone surrogate encoded as
/// the three bytes WTF-8 gives it (as the crate's JSON reads `\udXXX`).
fn wtf8(text: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    if let Ok(utf8) = text.to_str() {
        return Ok(utf8.as_bytes().to_vec());
    }
    let encoded = text.call_method1("encode", ("utf-8", "surrogatepass"))?;
    Ok(encoded.cast_into::<PyBytes>()?.as_bytes().to_vec())
}

/// The current boundary's slot, if a `stateseal.RequestStateBoundary` is opening this state.
fn current_slot<'py>(py: Python<'py>) -> PyResult<Option<Bound<'py, PendingUse>>> {
    let Some(var) = PENDING.get(py) else {
        return Ok(None);
    };
    let current = var.bind(py).call_method1("get", (py.None(),))?;
    Ok(current.cast_into::<PendingUse>().ok())
}

/// Gives a state's `iat` to the boundary opening it, which asks with the
/// principal once the SDK's checks passed; with no such boundary (the SDK's
/// own, a direct call) the principal is unknown and the state, which a live
/// revocation may cover, is refused.
pub(crate) fn hand_over_iat(py: Python<'_>, iat: UnixTime, running: Arc<Running>) -> PyResult<()> {
    let Some(slot) = current_slot(py)? else {
        return Err(invalid_state(py, RejectReason::Revoked.as_str().into()));
    };
    *slot
        .get()
        .issued
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((iat, running));
    Ok(())
}

/// Gives `once` to the slot of the boundary opening the state, or refuses the state.
pub(crate) fn hand_over(py: Python<'_>, once: SingleUse, running: Arc<Running>) -> PyResult<()> {
    let unavailable = || invalid_state(py, RejectReason::ReplayStoreUnavailable.as_str().into());
    let Some(var) = PENDING.get(py) else {
        return Err(unavailable());
    };
    let current = var.bind(py).call_method1("get", (py.None(),))?;
    let Ok(pending) = current.cast::<PendingUse>() else {
        return Err(unavailable());
    };
    let mut slot = pending
        .get()
        .slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // One state per opening: a second (a codec called twice under one slot) is refused.
    if slot.is_some() {
        return Err(unavailable());
    }
    *slot = Some((once, running));
    Ok(())
}
