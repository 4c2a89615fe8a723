//! An upstream event stream on its way to the client: read incrementally
//! (bounded events), every event forwarded as it came unless its data is an
//! answer with a state (sealed, only its data lines rewritten) or is not
//! JSON, or names a member twice (dropped: a lenient client parser could
//! read a state nobody sealed). If the stream fails, outgrows its bound or
//! is cut mid-event, or ends after an event was dropped, each request still
//! unanswered on it gets an error saying so, and the stream ends. An
//! upstream's chunk goes out as one chunk, once its events are whole.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use std::pin::Pin;

use futures_util::{Stream, StreamExt as _};
use serde_json::Value;
use stateseal::boundary::PrincipalResult;

use super::Shared;
use super::reply::{event, upstream_failed};
use crate::inbound::Rounds;
use crate::json_write;
use crate::outbound::{Sealed, answered_ids, may_hold_state, seal_value};
use crate::pending::Awaiting;
use crate::rpc_id::RpcId;
use crate::sse::{Event, Item, SseReader};
use crate::strict::{self, Unreadable};

/// Finds the round an answer seals under.
pub(crate) struct Finder {
    shared: Arc<Shared>,
    rounds: Rounds,
    principal: PrincipalResult,
    session: Option<String>,
}

impl Finder {
    /// A POST's answers: its own rounds first.
    pub(crate) fn for_post(
        shared: Arc<Shared>,
        rounds: Rounds,
        principal: PrincipalResult,
        session: Option<String>,
    ) -> Self {
        Self {
            shared,
            rounds,
            principal,
            session,
        }
    }

    /// A GET stream's answers: the session's rounds only.
    pub(crate) fn for_get(shared: Arc<Shared>, session: Option<String>) -> Self {
        Self::for_post(shared, Rounds::default(), Ok(None), session)
    }

    /// The round and caller the answer to `id` seals under: the POST's own
    /// rounds, else (a resumed stream) the session's, taken once either way.
    pub(crate) fn find(&mut self, id: &RpcId) -> Option<Awaiting> {
        let kept = (self.session.as_deref()).and_then(|s| self.shared.pending.take(s, id));
        self.rounds
            .take(id)
            .map(|r| (r, self.principal.clone()))
            .or(kept)
    }
}

/// The client's body: `upstream`'s events, sealed, after `leading` (the
/// proxy's own answers to a batch's refused members). Pulled as the client
/// reads: a client that goes away drops the upstream's stream with it.
pub(crate) fn rewrite(
    shared: Arc<Shared>,
    upstream: reqwest::Response,
    find: Finder,
    unanswered: Vec<(RpcId, Value)>,
    leading: Vec<Value>,
) -> Body {
    let out = leading.iter().flat_map(event).collect();
    let reader = SseReader::new(shared.settings.max_event_bytes());
    let job = Job {
        shared,
        find,
        unanswered,
        reader,
        chunks: Box::pin(upstream.bytes_stream()),
        out,
        done: false,
        dropped: None,
    };
    Body::from_stream(futures_util::stream::unfold(job, |mut job| async move {
        let bytes = job.next().await?;
        Some((Ok::<_, Infallible>(bytes), job))
    }))
}

type Chunks = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct Job {
    shared: Arc<Shared>,
    find: Finder,
    unanswered: Vec<(RpcId, Value)>,
    reader: SseReader,
    chunks: Chunks,
    /// What is ready for the client.
    out: Vec<u8>,
    done: bool,
    /// Why an event was dropped, if one was: it may have been an answer.
    dropped: Option<&'static str>,
}

impl Job {
    /// The next bytes for the client (`None`: the end).
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if !self.out.is_empty() {
                return Some(Bytes::from(std::mem::take(&mut self.out)));
            }
            if self.done {
                return None;
            }
            match self.chunks.next().await {
                Some(Ok(chunk)) => match self.reader.feed(&chunk) {
                    Ok(items) => {
                        for item in items {
                            match item {
                                Item::Raw(bytes) => self.out.extend_from_slice(&bytes),
                                Item::Event(e) => {
                                    if let Some(bytes) = self.event(&e) {
                                        self.out.extend_from_slice(&bytes);
                                    }
                                }
                            }
                        }
                    }
                    Err(_) => self.fail("sent an event larger than max_event_bytes"),
                },
                Some(Err(_)) => self.fail("failed mid-stream"),
                None => {
                    let left = std::mem::replace(&mut self.reader, SseReader::new(0)).finish();
                    if left > 0 {
                        self.fail("closed the stream mid-event");
                    } else if let Some(why) = self.dropped.filter(|_| !self.unanswered.is_empty()) {
                        // A request whose answer may have been the dropped event is told so.
                        self.fail(why);
                    }
                    self.done = true;
                }
            }
        }
    }

    /// The stream ends: each request still unanswered on it gets an error saying `why`.
    fn fail(&mut self, why: &str) {
        metrics::counter!("stateseal_proxy_upstream_failures_total").increment(1);
        tracing::warn!("proxy: the upstream {why}");
        for error in upstream_failed(&self.unanswered, why) {
            self.out.extend_from_slice(&event(&error));
        }
        self.done = true;
    }

    /// The bytes to forward for `e` (`None`: drop it).
    fn event(&mut self, e: &Event) -> Option<Vec<u8>> {
        let Some(data) = e.data().filter(|d| !d.is_empty()) else {
            return Some(e.bytes().to_vec());
        };
        // Nothing owed on this stream and nothing that can be a state: as it came.
        if self.unanswered.is_empty() && !may_hold_state(data) {
            return Some(e.bytes().to_vec());
        }
        let mut value = match strict::from_slice(data) {
            Ok(value) => value,
            // Nor one that names a member twice: a client could read the other copy.
            Err(why) => {
                tracing::warn!(
                    "proxy: dropped an upstream event whose data cannot be read as JSON"
                );
                self.dropped = Some(match why {
                    Unreadable::NotJson => "sent an event that is not JSON",
                    Unreadable::Duplicate => "sent an event that names a member twice",
                });
                return None;
            }
        };
        for id in answered_ids(&value) {
            self.unanswered.retain(|(u, _)| *u != id);
        }
        let find = &mut self.find;
        match seal_value(&self.shared.boundary, &mut value, &mut |id| find.find(id)) {
            Sealed::Untouched => Some(e.bytes().to_vec()),
            Sealed::Changed => Some(e.with_data(&json_write::to_vec(&value, data.len()))),
        }
    }
}
