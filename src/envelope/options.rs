//! What one mint or open is told beyond the round and the state: the
//! caller, the time, single use, and a buffer to reuse.

use super::{Principal, SingleUse};
use crate::clock::UnixTime;
use crate::json::Text;

/// How [`Envelope::mint`](crate::Envelope::mint) seals one state.
///
/// ```
/// use stateseal::{MintOptions, Principal, UnixTime};
/// let alice = Principal::new("alice");
/// let options = MintOptions::new()
///     .principal(&alice)
///     .single_use(true)
///     .at(UnixTime::from_secs(1_782_345_600));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct MintOptions<'a> {
    pub(super) principal: Option<&'a Principal>,
    pub(super) at: Option<UnixTime>,
    pub(super) single_use: bool,
}

impl<'a> MintOptions<'a> {
    /// No principal, the envelope's clock, a multi-use state.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds the state to the caller (`None`: to no caller).
    #[must_use]
    pub fn principal(mut self, principal: impl Into<Option<&'a Principal>>) -> Self {
        self.principal = principal.into();
        self
    }

    /// Mints at `now` instead of the envelope clock's time.
    #[must_use]
    pub fn at(mut self, now: UnixTime) -> Self {
        self.at = Some(now);
        self
    }

    /// Makes the state single-use: it carries a random id, and it opens only
    /// for a caller that records the id in a
    /// [`ReplayStore`](crate::replay::ReplayStore) before accepting it
    /// ([`OpenOptions::records_single_use`]; the
    /// [`Boundary`](crate::boundary::Boundary) does this for the tools,
    /// prompts and resources it is told are single-use). Needs a `v2.` key:
    /// the Python SDK's codec opens `v1.` tokens and ignores the id.
    #[must_use]
    pub fn single_use(mut self, single_use: bool) -> Self {
        self.single_use = single_use;
        self
    }
}

/// How [`Envelope::open`](crate::Envelope::open) checks one echo.
#[derive(Debug, Default)]
pub struct OpenOptions<'a> {
    pub(super) principal: Option<&'a Principal>,
    pub(super) at: Option<UnixTime>,
    pub(super) records_single_use: bool,
    pub(super) buffer: Vec<u8>,
}

impl<'a> OpenOptions<'a> {
    /// No principal, the envelope's clock, single-use states refused, a new buffer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The caller presenting the echo (`None`: no caller).
    #[must_use]
    pub fn principal(mut self, principal: impl Into<Option<&'a Principal>>) -> Self {
        self.principal = principal.into();
        self
    }

    /// Checks at `now` instead of the envelope clock's time.
    #[must_use]
    pub fn at(mut self, now: UnixTime) -> Self {
        self.at = Some(now);
        self
    }

    /// Whether the caller records single-use states: with `true`, a
    /// single-use state opens with its [`SingleUse`] record, and may be used
    /// only once that record has landed in the fleet's replay store (a
    /// record already there means a replay). With `false`, the default, a
    /// single-use state is refused with
    /// [`RejectReason::ReplayStoreUnavailable`](crate::RejectReason::ReplayStoreUnavailable).
    #[must_use]
    pub fn records_single_use(mut self, records: bool) -> Self {
        self.records_single_use = records;
        self
    }

    /// Decodes into `buffer`, reusing its capacity: for a binding that copies
    /// the state into its runtime's own string and keeps the state's buffer
    /// for its next call (wiped first: it held the plaintext).
    #[must_use]
    pub fn buffer(mut self, buffer: Vec<u8>) -> Self {
        self.buffer = buffer;
        self
    }
}

/// An echo that passed every check.
///
/// `Debug` shows neither the state nor the replay key.
#[derive(Debug)]
#[must_use = "the state is the handler's input; a single-use record must land before it is used"]
#[non_exhaustive]
pub struct Opened {
    /// The state the token carries.
    pub state: Text,
    /// What to record before using a single-use state
    /// ([`OpenOptions::records_single_use`]); `None` for a multi-use one.
    pub single_use: Option<SingleUse>,
}
