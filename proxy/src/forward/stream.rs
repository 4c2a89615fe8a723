//! An upstream event stream on its way to the client: read incrementally
//! (bounded events), every event forwarded as it came unless its data is an
//! answer with a state (sealed, only its data lines rewritten) or is not
//! JSON (dropped: a lenient client parser could read a state nobody sealed).
//! If the stream fails, outgrows its bound or is cut mid-event, each request
//! still unanswered on it gets an error saying so, and the stream ends.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use futures_util::StreamExt as _;
use serde_json::Value;
use stateseal::boundary::PrincipalResult;
use tokio::sync::mpsc;

use super::reply::{event, upstream_failed};
use super::{Shared, lookup};
use crate::inbound::Rounds;
use crate::outbound::{Sealed, answered_ids, seal_value};
use crate::pending::Awaiting;
use crate::rpc_id::RpcId;
use crate::sse::{Event, Item, SseReader};

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

    pub(crate) fn find(&mut self, id: &RpcId) -> Option<Awaiting> {
        lookup(
            &self.shared.pending,
            &mut self.rounds,
            &self.principal,
            self.session.as_deref(),
            id,
        )
    }
}

/// The client's body: `upstream`'s events, sealed, after `leading` (the
/// proxy's own answers to a batch's refused members).
pub(crate) fn rewrite(
    shared: Arc<Shared>,
    upstream: reqwest::Response,
    find: Finder,
    unanswered: Vec<(RpcId, Value)>,
    leading: Vec<Value>,
) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let job = Job {
        shared,
        find,
        unanswered,
    };
    tokio::spawn(job.run(upstream, leading, tx));
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    }))
}

struct Job {
    shared: Arc<Shared>,
    find: Finder,
    unanswered: Vec<(RpcId, Value)>,
}

impl Job {
    async fn run(
        mut self,
        upstream: reqwest::Response,
        leading: Vec<Value>,
        tx: mpsc::Sender<Bytes>,
    ) {
        for answer in &leading {
            if tx.send(Bytes::from(event(answer))).await.is_err() {
                return;
            }
        }
        let mut reader = SseReader::new(self.shared.settings.max_event_bytes());
        let mut chunks = upstream.bytes_stream();
        let failure = loop {
            let items = match chunks.next().await {
                Some(Ok(chunk)) => match reader.feed(&chunk) {
                    Ok(items) => items,
                    Err(_) => break Some("sent an event larger than max_event_bytes"),
                },
                Some(Err(_)) => break Some("failed mid-stream"),
                None => break (reader.finish() > 0).then_some("closed the stream mid-event"),
            };
            for item in items {
                let bytes = match item {
                    Item::Raw(bytes) => bytes,
                    Item::Event(e) => match self.event(&e) {
                        Some(bytes) => bytes,
                        None => continue,
                    },
                };
                // The client went away: dropping the upstream's stream closes it too.
                if tx.send(Bytes::from(bytes)).await.is_err() {
                    return;
                }
            }
        };
        if let Some(why) = failure {
            metrics::counter!("stateseal_proxy_upstream_failures_total").increment(1);
            tracing::warn!("proxy: the upstream {why}");
            for error in upstream_failed(&self.unanswered, why) {
                if tx.send(Bytes::from(event(&error))).await.is_err() {
                    return;
                }
            }
        }
    }

    /// The bytes to forward for `e` (`None`: drop it).
    fn event(&mut self, e: &Event) -> Option<Vec<u8>> {
        let Some(data) = e.data().filter(|d| !d.is_empty()) else {
            return Some(e.bytes().to_vec());
        };
        let Ok(mut value) = serde_json::from_slice::<Value>(data) else {
            tracing::warn!("proxy: dropped an upstream event whose data is not JSON");
            return None;
        };
        for id in answered_ids(&value) {
            self.unanswered.retain(|(u, _)| *u != id);
        }
        let find = &mut self.find;
        match seal_value(&self.shared.boundary, &mut value, &mut |id| find.find(id)) {
            Sealed::Untouched => Some(e.bytes().to_vec()),
            Sealed::Changed => Some(e.with_data(&serde_json::to_vec(&value).unwrap_or_default())),
        }
    }
}
