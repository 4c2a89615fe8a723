//! This thread's envelopes by number: what a frame names an envelope by.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::EnvelopeCore;
use crate::frame::{Frame, Slot};
use crate::{Code, fail};

/// A number for each envelope, unique in the process (so one thread's number
/// never names another thread's envelope).
static NEXT_ENVELOPE: AtomicU64 = AtomicU64::new(1);

/// This thread's envelopes by number.
type Envelopes = HashMap<u64, Rc<EnvelopeCore>, BuildHasherDefault<NumberHasher>>;

thread_local! {
    /// This thread's envelopes; each leaves when JavaScript drops its ticket.
    static ENVELOPES: RefCell<Envelopes> = RefCell::new(Envelopes::default());
}

/// Hashes an envelope's number with one multiplication (Fibonacci hashing),
/// for the lookup every call makes: the numbers come from the process's own
/// counter, never from a caller, so the flooding SipHash guards against
/// cannot happen here.
#[derive(Default)]
struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64((self.0 << 8) | u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// What JavaScript holds of an envelope: while it is reachable, the envelope
/// stays in this thread's table under its number.
pub struct EnvelopeTicket {
    number: u64,
    pub(super) core: Rc<EnvelopeCore>,
}

impl EnvelopeTicket {
    pub(crate) fn new(core: EnvelopeCore) -> Self {
        let number = NEXT_ENVELOPE.fetch_add(1, Ordering::Relaxed);
        let core = Rc::new(core);
        ENVELOPES.with(|t| t.borrow_mut().insert(number, Rc::clone(&core)));
        Self { number, core }
    }
}

impl Drop for EnvelopeTicket {
    fn drop(&mut self) {
        // Finalized on its own thread; at the thread's exit its table may be gone already.
        let _ = ENVELOPES.try_with(|t| t.borrow_mut().remove(&self.number));
    }
}

/// The envelope a frame names, if it is one of this thread's.
pub(super) fn envelope_of(frame: &Frame<'_>) -> std::result::Result<Rc<EnvelopeCore>, Error<Code>> {
    let number = frame.whole(Slot::Envelope)?;
    ENVELOPES
        .with(|t| t.borrow().get(&number).cloned())
        .ok_or_else(|| fail(Code::Config, "frame: no such envelope on this thread"))
}

/// The envelope's number, for JavaScript to write into its frame.
#[napi]
pub fn envelope_number(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeTicket>,
) -> f64 {
    envelope.number as f64
}
