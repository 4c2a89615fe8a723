//! Each request's body, parsed once per request, and each round's identity
//! and principal, worked out once per round for both its verify and its mint:
//! the tables a binding's envelope keeps (the Node package's, whose calls
//! name bodies and rounds by number).
//!
//! The binding hands [`Requests`] a request's body once and gets back a
//! number, the body's handle. It names each round with the round's first
//! call (its verify, or its mint if it has none): a number of its own choosing
//! for the round, the body's handle, the round's method and JSON-RPC id and
//! the principal's parts; the round's later call passes that number alone.
//! The tables keep the latest bodies and rounds in slots; a handle whose
//! slot a later entry took is gone, and the binding hands the body (or names
//! the round) again. Nothing per request is a native object on the
//! JavaScript side: creating one (an `External` or a class instance, with
//! its finalizer and napi-rs's registries) cost more than sealing a small
//! state, and so did converting the body on every call, and a call of its own
//! to name each round.
//!
//! The tables are used on their envelope's thread only (not `Sync`).
//!
//! ```
//! use stateseal_binding::rounds::{PrincipalKey, RoundId, RoundKey, Requests};
//!
//! let requests = Requests::default();
//! let body = requests.parse(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{}}}"#);
//! let key = RoundKey {
//!     batch: requests.body(body).expect("kept"),
//!     method: "tools/call",
//!     id: RoundId::Number(7.0),
//!     principal: PrincipalKey::None,
//! };
//! let round = requests.name(1, &key);
//! assert!(round.identity.is_ok() && round.principal.is_none());
//! assert!(requests.round(1).is_some());
//! ```

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use stateseal::{Principal, RequestBatch, RequestIdentity};

/// Entries a table keeps at once: requests in flight on one event loop.
const SLOTS: usize = 256;

/// A body's handle is a number unique in the process (so it can never name
/// another table's entry) times [`SLOTS`], plus its slot; each table fills its
/// slots in turn, so an entry lasts [`SLOTS`] later entries of its own table.
/// Handles stay far below 2^53 (exact as JavaScript numbers). A round's
/// handle is the binding's: a count of the rounds it named on this envelope,
/// kept in the slot the count gives.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// A round as the binding names it: the request's parsed body, method, id and caller.
pub struct RoundKey<'a> {
    /// The HTTP body (one JSON-RPC message or a batch), parsed.
    pub batch: Rc<RequestBatch>,
    /// The round's method.
    pub method: &'a str,
    /// The round's JSON-RPC id.
    pub id: RoundId<'a>,
    /// The principal: a text of its own (as the Python SDK binds), or its parts.
    pub principal: PrincipalKey<'a>,
}

/// A round's JSON-RPC id as the binding passes it: a number as it is (the
/// common case, compared without writing it out and parsing it back), any
/// other id as its JSON text.
pub enum RoundId<'a> {
    /// A number id.
    Number(f64),
    /// Any other id, as `JSON.stringify` writes it.
    Json(&'a str),
}

/// A principal as the caller gave it.
pub enum PrincipalKey<'a> {
    /// Not bound to a caller.
    None,
    /// A text of its own.
    Text(&'a str),
    /// Client id, issuer, subject (as the Rust servers' `AuthenticatedPrincipal`).
    Parts(&'a str, Option<&'a str>, Option<&'a str>),
}

impl PrincipalKey<'_> {
    fn principal(&self) -> Option<Principal> {
        match self {
            Self::None => None,
            Self::Text(t) => Some(Principal::new((*t).to_owned())),
            Self::Parts(client, issuer, subject) => {
                Some(Principal::from_components(client, *issuer, *subject))
            }
        }
    }
}

/// One worked-out round: its identity (or why it has none, reported when the
/// round verifies or mints) and the principal its states bind to.
pub struct Round {
    /// The round's identity, or why the request has none (a malformed request).
    pub identity: Result<RequestIdentity, stateseal::Error>,
    /// The principal its states bind to.
    pub principal: Option<Principal>,
}

impl RoundKey<'_> {
    fn work_out(&self) -> Round {
        Round {
            identity: match &self.id {
                RoundId::Number(id) => self.batch.identity_by_number(self.method, *id),
                RoundId::Json(json) => self.batch.identity(self.method, json.as_bytes()),
            },
            principal: self.principal.principal(),
        }
    }
}

/// Entries by handle: the latest [`SLOTS`] kept. Used on its envelope's
/// thread only (envelopes live in a table of their thread's), so not locked.
struct Slots<T>(RefCell<Table<T>>);

struct Table<T> {
    slots: Vec<Slot<T>>,
    next: usize,
}

/// A slot of a table: the handle of the entry in it, and the entry.
type Slot<T> = Option<(u64, Rc<T>)>;

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Self(RefCell::new(Table {
            slots: (0..SLOTS).map(|_| None).collect(),
            next: 0,
        }))
    }
}

impl<T> Slots<T> {
    /// The table (each borrow ends within the method that takes it).
    fn table(&self) -> std::cell::RefMut<'_, Table<T>> {
        self.0.borrow_mut()
    }

    /// Keeps `entry` and returns its handle.
    fn keep(&self, entry: T) -> u64 {
        let mut table = self.table();
        let slot = table.next;
        table.next = (slot + 1) % SLOTS;
        let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) * SLOTS as u64 + slot as u64;
        table.slots[slot] = Some((handle, Rc::new(entry)));
        handle
    }

    /// Keeps `entry` under `handle`, a number the caller chose (unique among
    /// this table's handles): in the slot the number gives.
    fn keep_as(&self, handle: u64, entry: T) -> Rc<T> {
        let entry = Rc::new(entry);
        self.table().slots[slot_of(handle)] = Some((handle, Rc::clone(&entry)));
        entry
    }

    /// The entry of `handle`, unless a later entry took its slot.
    fn get(&self, handle: u64) -> Option<Rc<T>> {
        match &self.table().slots[slot_of(handle)] {
            Some((h, entry)) if *h == handle => Some(Rc::clone(entry)),
            _ => None,
        }
    }
}

fn slot_of(handle: u64) -> usize {
    (handle % SLOTS as u64) as usize
}

/// An envelope's parsed bodies and worked-out rounds.
#[derive(Default)]
pub struct Requests {
    bodies: Slots<RequestBatch>,
    rounds: Slots<Round>,
}

impl Requests {
    /// Parses `body` and returns its handle.
    pub fn parse(&self, body: &str) -> u64 {
        self.bodies.keep(RequestBatch::parse(body.as_bytes()))
    }

    /// The parsed body of `handle`, unless it is gone.
    pub fn body(&self, handle: u64) -> Option<Rc<RequestBatch>> {
        self.bodies.get(handle)
    }

    /// Works out the round `key` names and keeps it under `handle`.
    pub fn name(&self, handle: u64, key: &RoundKey<'_>) -> Rc<Round> {
        self.rounds.keep_as(handle, key.work_out())
    }

    /// The round of `handle`, unless it is gone.
    pub fn round(&self, handle: u64) -> Option<Rc<Round>> {
        self.rounds.get(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b","arguments":{}}}]"#;

    fn key<'a>(
        requests: &Requests,
        body: &str,
        id: &'a str,
        principal: PrincipalKey<'a>,
    ) -> RoundKey<'a> {
        RoundKey {
            batch: requests.body(requests.parse(body)).unwrap(),
            method: "tools/call",
            id: RoundId::Json(id),
            principal,
        }
    }

    #[test]
    fn a_handle_names_its_entry_until_a_later_entry_takes_its_slot() {
        let requests = Requests::default();
        let (first, second) = (1, 2);
        requests.name(first, &key(&requests, BODY, "1", PrincipalKey::None));
        let alice = PrincipalKey::Parts("c", None, Some("alice"));
        requests.name(second, &key(&requests, BODY, "2", alice));
        let (a, b) = (
            requests.round(first).unwrap(),
            requests.round(second).unwrap(),
        );
        // Each as the batch works it out on its own.
        let fresh = RequestBatch::parse(BODY.as_bytes()).identity("tools/call", b"2");
        assert_eq!(b.identity.as_ref().ok(), fresh.as_ref().ok());
        assert_ne!(a.identity.as_ref().ok(), b.identity.as_ref().ok());
        assert!(b.principal.is_some() && a.principal.is_none());
        // Another envelope's tables know none of these handles, and a round's
        // handle is not a body's.
        assert!(Requests::default().round(first).is_none());
        assert!(requests.body(first).is_none() && requests.body(second).is_none());
        // A body lasts SLOTS later bodies however many rounds are named meanwhile,
        // and a round SLOTS later rounds.
        let body = requests.parse(BODY);
        let batch = requests.body(body).unwrap();
        for n in 0..SLOTS as u64 - 1 {
            requests.name(
                3 + n,
                &RoundKey {
                    batch: Rc::clone(&batch),
                    method: "tools/call",
                    id: RoundId::Number(1.0),
                    principal: PrincipalKey::None,
                },
            );
            requests.parse(BODY);
        }
        assert!(requests.body(body).is_some());
        assert!(requests.round(first).is_none() && requests.round(second).is_some());
        requests.parse(BODY);
        assert!(requests.body(body).is_none());
        assert!(requests.round(0).is_none() && requests.round(u64::MAX).is_none());
    }

    #[test]
    fn a_malformed_round_stays_malformed() {
        let requests = Requests::default();
        for (h, (body, id)) in [("{", "1"), (BODY, "3"), (BODY, "\"1\"")]
            .into_iter()
            .enumerate()
        {
            let h = h as u64 + 1;
            requests.name(h, &key(&requests, body, id, PrincipalKey::None));
            assert!(requests.round(h).unwrap().identity.is_err(), "{body} {id}");
        }
    }
}
