//! The native half of the Python package `stateseal` (`stateseal._native`):
//! a codec over a keyset-backed ring, for the Python MCP SDK's
//! `RequestStateCodec` protocol. The Python half (`python/stateseal`) is the
//! documented API; this module is its engine.
//!
//! Seal and unseal release the GIL and never touch the network: the rotation
//! scheduler refreshes the ring on a background runtime, as in a Rust server.

#![forbid(unsafe_code)]

mod pending;
mod settings;

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use stateseal::{Error, UnixTime};

use stateseal_binding::{Recipe, Running, reason};

/// The exception seal and unseal raise: the SDK's `InvalidRequestState`
/// (the Python package hands it over at import).
static INVALID_STATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub(crate) fn invalid_state(py: Python<'_>, why: String) -> PyErr {
    match INVALID_STATE.get(py) {
        Some(ty) => PyErr::from_type(ty.bind(py).clone(), why),
        None => PyRuntimeError::new_err(why),
    }
}

/// Records the exception type seal and unseal raise (once, at import).
#[pyfunction]
fn use_error_type(py: Python<'_>, ty: Bound<'_, PyType>) {
    let _ = INVALID_STATE.set(py, ty.unbind());
}

/// A keyset-backed codec (see the Python class `stateseal.KeysetCodec`).
#[pyclass(module = "stateseal._native", frozen)]
struct NativeCodec {
    recipe: Recipe,
    running: ArcSwapOption<Running>,
    /// Held while a forked child starts its own instance.
    restarting: Mutex<()>,
}

impl NativeCodec {
    fn started(py: Python<'_>, recipe: Recipe) -> PyResult<Self> {
        let running = py
            .detach(|| Running::start(&recipe))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(Self {
            recipe,
            running: ArcSwapOption::from(Some(Arc::new(running))),
            restarting: Mutex::new(()),
        })
    }

    /// This process's instance. In a child after `os.fork()` the inherited one
    /// has no threads and shares the parent's seal counters, so the child
    /// starts its own (nonces come from the kernel on every seal either way).
    fn current(&self, py: Python<'_>) -> PyResult<Arc<Running>> {
        let pid = std::process::id();
        let running = self
            .running
            .load_full()
            .ok_or_else(|| invalid_state(py, "the codec is closed".to_owned()))?;
        if running.pid == pid {
            return Ok(running);
        }
        // The first call in a forked child starts its instance. The lock is
        // taken with the GIL released: a thread holding the GIL while waiting
        // for it would deadlock against the thread starting the instance.
        py.detach(|| self.restart(pid)).map_err(|e| {
            invalid_state(
                py,
                match e {
                    Error::Config(m) if m == CLOSED => m,
                    other => format!("not ready after fork: {other}"),
                },
            )
        })
    }

    /// Starts this process's own instance once (called without the GIL).
    fn restart(&self, pid: u32) -> Result<Arc<Running>, Error> {
        let _one = self.restarting.lock().unwrap_or_else(|p| p.into_inner());
        let now = self
            .running
            .load_full()
            .ok_or_else(|| Error::Config(CLOSED.to_owned()))?;
        if now.pid == pid {
            return Ok(now);
        }
        let fresh = Arc::new(Running::start(&self.recipe)?);
        if let Some(inherited) = self.running.swap(Some(Arc::clone(&fresh))) {
            Running::abandon(inherited);
        }
        Ok(fresh)
    }
}

/// Releases an instance: this process's is shut down; one inherited across
/// `fork` is abandoned, since dropping it would act on the parent's runtime
/// through the descriptors they share (deregistering the parent's sockets from
/// its epoll set, waking its threads).
fn release(running: Arc<Running>) {
    if running.pid == std::process::id() {
        drop(running);
    } else {
        Running::abandon(running);
    }
}

impl Drop for NativeCodec {
    fn drop(&mut self) {
        if let Some(running) = self.running.swap(None) {
            release(running);
        }
    }
}

/// What a closed codec says.
const CLOSED: &str = "the codec is closed";

#[pymethods]
impl NativeCodec {
    /// Starts a codec on the keyset in `store`; blocks until the ring is ready.
    #[staticmethod]
    #[pyo3(signature = (store, settings=None))]
    fn start(py: Python<'_>, store: &str, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let recipe = settings::recipe(store, settings)?;
        Self::started(py, recipe)
    }

    /// Starts a codec from the `STATESEAL_*` environment variables.
    #[staticmethod]
    fn from_env(py: Python<'_>) -> PyResult<Self> {
        let recipe = settings::recipe_from_env()?;
        Self::started(py, recipe)
    }

    /// Seals `payload` under the ring's primary key, with the single-use
    /// claim when the SDK's claims (`m`, `t`) name a single-use round.
    fn seal(&self, py: Python<'_>, payload: &[u8]) -> PyResult<String> {
        let running = self.current(py)?;
        py.detach(|| running.seal_claims(payload))
            .map_err(|e| invalid_state(py, reason(&e)))
    }

    /// Opens a token sealed under any key of the ring. A token longer than
    /// the Rust envelope's limit (1 MiB) is refused as malformed before it is
    /// decoded: the echo is attacker-controlled and unbounded. A single-use
    /// state is handed to the `stateseal.RequestStateBoundary` opening it (to
    /// record once the SDK's claim checks pass), and refused with `replay
    /// store unavailable` outside one: nothing else would record it.
    fn unseal<'py>(
        &self,
        py: Python<'py>,
        token: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        // A token is ASCII: one that is not even UTF-8 (a lone surrogate) is
        // malformed, refused as such rather than raised as an encoding error.
        let Ok(token) = token.to_str() else {
            return Err(invalid_state(
                py,
                reason(&Error::Rejected(stateseal::RejectReason::Malformed)),
            ));
        };
        if token.len() > stateseal::DEFAULT_MAX_TOKEN_LEN {
            return Err(invalid_state(
                py,
                reason(&Error::Rejected(stateseal::RejectReason::Malformed)),
            ));
        }
        let running = self.current(py)?;
        let (payload, once) = py
            .detach(|| running.unseal_claims(token))
            .map_err(|e| invalid_state(py, reason(&e)))?;
        // Looked up by the boundary once the SDK's checks pass (with the principal).
        let candidate = running
            .revocation_candidate(&payload)
            .map_err(|e| invalid_state(py, reason(&e)))?;
        if let Some(iat) = candidate {
            pending::hand_over_iat(py, iat, Arc::clone(&running))?;
        }
        if let Some(once) = once {
            // Recorded by the boundary once the SDK's checks pass; anywhere else, refused.
            pending::hand_over(py, once, running)?;
        }
        Ok(PyBytes::new(py, &payload))
    }

    /// The scheduler's view: readiness, generation, phase, ring, refreshes.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let running = self.current(py)?;
        let protection = running
            .protection()
            .ok_or_else(|| PyValueError::new_err("the codec is closed"))?;
        let st = protection.status();
        let d = PyDict::new(py);
        d.set_item("ready", st.ready)?;
        d.set_item("generation", st.generation)?;
        d.set_item("phase", st.phase.map(|p| p as u8))?;
        d.set_item("primary", st.ring.first())?;
        d.set_item("ring", st.ring)?;
        d.set_item("last_refresh", st.last_refresh.map(UnixTime::as_secs_f64))?;
        d.set_item(
            "last_store_read",
            st.last_store_read.map(UnixTime::as_secs_f64),
        )?;
        d.set_item("last_error", st.last_error)?;
        d.set_item("kms_calls", st.kms_calls)?;
        d.set_item("unauthenticated", st.unauthenticated)?;
        d.set_item("expires_at", st.expires_at.map(UnixTime::as_secs_f64))?;
        d.set_item("ttl", running.ttl)?;
        d.set_item("pid", running.pid)?;
        Ok(d)
    }

    /// Stops the background refresh; later seals and unseals raise.
    fn close(&self) {
        if let Some(running) = self.running.swap(None) {
            release(running);
        }
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeCodec>()?;
    m.add_function(wrap_pyfunction!(use_error_type, m)?)?;
    m.add_class::<pending::PendingUse>()?;
    m.add_function(wrap_pyfunction!(pending::use_pending_var, m)?)?;
    Ok(())
}
