//! Rounds whose answer may come on another stream: a client that lost a
//! POST's event stream resumes it with `GET` and `Last-Event-ID`, and the
//! upstream replays the answer there. The proxy keeps each carrier round of a
//! session until its answer is sealed, so the replayed answer is sealed under
//! the identity (and for the caller) of the request it answers. Bounded in
//! entries and age; an answer whose round was forgotten is refused, never
//! forwarded with its plaintext.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use stateseal::boundary::{PrincipalResult, Round};

use crate::rpc_id::RpcId;

/// The most rounds kept across all sessions.
const MAX_ENTRIES: usize = 65_536;
/// How long a round waits for its answer on another stream.
const MAX_AGE: Duration = Duration::from_secs(3600);

type Key = (String, RpcId);

/// A carrier round and the caller it was opened for.
pub(crate) type Awaiting = (Round, PrincipalResult);

/// The rounds awaiting their answers, by session and request id.
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<Inner>);

#[derive(Debug, Default)]
struct Inner {
    rounds: HashMap<Key, (Instant, Awaiting)>,
    order: VecDeque<(Instant, Key)>,
}

impl Pending {
    /// Keeps `round` for the answer to `id` in `session`, as of `now`.
    pub(crate) fn insert_at(&self, session: &str, id: RpcId, round: Awaiting, now: Instant) {
        let mut inner = self.lock();
        inner.expire_at(now);
        while inner.rounds.len() >= MAX_ENTRIES {
            let Some((at, key)) = inner.order.pop_front() else {
                break;
            };
            inner.remove_if_from(&key, at);
        }
        let key = (session.to_owned(), id);
        inner.order.push_back((now, key.clone()));
        inner.rounds.insert(key, (now, round));
    }

    /// The round the answer to `id` in `session` seals under, forgotten once taken.
    pub(crate) fn take(&self, session: &str, id: &RpcId) -> Option<Awaiting> {
        let mut inner = self.lock();
        inner
            .rounds
            .remove(&(session.to_owned(), id.clone()))
            .map(|(_, a)| a)
    }

    /// Forgets every round of `session` (it was deleted).
    pub(crate) fn forget_session(&self, session: &str) {
        self.lock().rounds.retain(|(s, _), _| s != session);
    }

    /// How many rounds are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().rounds.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave the maps half-updated in a way that matters here.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Inner {
    fn expire_at(&mut self, now: Instant) {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_duration_since(*at) < MAX_AGE {
                break;
            }
            if let Some((at, key)) = self.order.pop_front() {
                self.remove_if_from(&key, at);
            }
        }
        if self.order.len() > 2 * MAX_ENTRIES {
            // Keys answered long ago linger in `order`; drop the ones no longer kept.
            let rounds = &self.rounds;
            self.order
                .retain(|(at, key)| rounds.get(key).is_some_and(|(t, _)| t == at));
        }
    }

    /// Removes `key` if it is still the entry inserted at `at`.
    fn remove_if_from(&mut self, key: &Key, at: Instant) {
        if self.rounds.get(key).is_some_and(|(t, _)| *t == at) {
            self.rounds.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round() -> Awaiting {
        let boundary = stateseal::boundary::Boundary::new(std::sync::Arc::new(
            stateseal::Envelope::builder(
                std::sync::Arc::new(stateseal::RingHandle::new(
                    stateseal::KeyRing::ephemeral().expect("ring"),
                )),
                Some("t"),
            )
            .build()
            .expect("envelope"),
        ));
        let mut params = serde_json::json!({"name": "deploy"});
        (
            boundary
                .open_params("tools/call", &mut params, &Ok(None))
                .expect("round"),
            Ok(None),
        )
    }

    fn id(n: u32) -> RpcId {
        RpcId::of(&serde_json::json!(n)).expect("id")
    }

    #[test]
    fn a_round_is_taken_once_by_its_session_and_id() {
        let p = Pending::default();
        let t0 = Instant::now();
        p.insert_at("s1", id(1), round(), t0);
        assert!(p.take("s2", &id(1)).is_none(), "another session's answer");
        assert!(p.take("s1", &id(2)).is_none());
        assert!(p.take("s1", &id(1)).is_some());
        assert!(p.take("s1", &id(1)).is_none(), "taken once");
        p.insert_at("s1", id(1), round(), t0);
        p.insert_at("s1", id(2), round(), t0);
        p.insert_at("s2", id(1), round(), t0);
        p.forget_session("s1");
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn rounds_expire_and_the_oldest_give_way() {
        let p = Pending::default();
        let t0 = Instant::now();
        p.insert_at("s", id(1), round(), t0);
        p.insert_at("s", id(2), round(), t0 + MAX_AGE);
        assert!(p.take("s", &id(1)).is_none(), "an hour old: forgotten");
        assert!(p.take("s", &id(2)).is_some());
        let one = round();
        for n in 0..(MAX_ENTRIES as u32 + 10) {
            p.insert_at("s", id(n), one.clone(), t0 + MAX_AGE);
        }
        assert_eq!(p.len(), MAX_ENTRIES);
        assert!(p.take("s", &id(0)).is_none(), "the oldest gave way");
        assert!(p.take("s", &id(MAX_ENTRIES as u32 + 9)).is_some());
    }
}
