//! `GcsPreconditionFront`: what Cloud Storage's XML API documents for object
//! reads and writes, in front of the `fake-gcs-server` emulator, which keeps
//! the objects and their generations.
//!
//! The emulator misses two things the GCS store depends on, both supplied
//! here as the XML API documents them:
//!
//! - routing: `object_store` percent-encodes the whole object path
//!   (`/stateseal%2Dkeys/fleet%2Fkeyset%2Ejson`); the front decodes it and
//!   forwards reads to the emulator's XML API and writes to its JSON upload;
//! - conditional reads: `GET` with `If-None-Match` naming the object's
//!   current ETag is answered `304 Not Modified` with no body;
//! - preconditions: `PUT` with `x-goog-if-generation-match: 0` on an existing
//!   object, or with a generation that is not the current one, is answered
//!   `412 Precondition Failed` and changes nothing. Writes are serialised so
//!   the check and the write are one step, as they are in GCS.
//!
//! Any other request (another method, a query string) gets `501`, so a
//! client that starts sending something new fails loudly rather than being
//! answered wrongly. It runs on a thread of its own (usable from synchronous
//! tests, the CLI's subprocess tests and the examples) and stops on drop.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::fake_gcs::{Api, FakeGcs, encode};
use crate::served::Served;

const PRECONDITION_FAILED: &str = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold.</Message></Error>";

/// The front, on `http://127.0.0.1:<port>` ([`GcsPreconditionFront::endpoint`]).
pub struct GcsPreconditionFront {
    /// `http://127.0.0.1:<port>`, for `STATESEAL_GCS_ENDPOINT`.
    pub endpoint: String,
    shared: Arc<Shared>,
    _served: Served,
}

struct Shared {
    api: Api,
    down: AtomicBool,
    refused: AtomicUsize,
    writes: AtomicUsize,
    not_modified: AtomicUsize,
    /// Held from the precondition check to the end of the write.
    writing: Mutex<()>,
}

impl GcsPreconditionFront {
    /// Starts a front for `gcs`.
    pub fn start(gcs: &FakeGcs) -> Self {
        let shared = Arc::new(Shared {
            api: gcs.api(),
            down: AtomicBool::new(false),
            refused: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            not_modified: AtomicUsize::new(0),
            writing: Mutex::new(()),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let served = Served::start(app);
        Self {
            endpoint: served.url.clone(),
            shared,
            _served: served,
        }
    }

    /// While `true`, every request is answered `503 Service Unavailable`.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    /// Writes refused with `412` so far.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Reads answered `304 Not Modified` so far.
    pub fn not_modified(&self) -> usize {
        self.shared.not_modified.load(Ordering::SeqCst)
    }

    /// Writes that landed so far.
    pub fn writes(&self) -> usize {
        self.shared.writes.load(Ordering::SeqCst)
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if shared.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "the front is down").into_response();
    }
    if uri.query().is_some() {
        return not_implemented(&method, &uri);
    }
    let Some((bucket, object)) = bucket_and_object(uri.path()) else {
        return (StatusCode::BAD_REQUEST, "expected /<bucket>/<object>").into_response();
    };
    // The emulator is reached with blocking I/O.
    tokio::task::spawn_blocking(move || match method {
        Method::GET | Method::HEAD => shared.read(&method, &headers, &bucket, &object),
        Method::PUT => shared.write(&headers, &bucket, &object, &body),
        _ => not_implemented(&method, &uri),
    })
    .await
    .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

fn not_implemented(method: &Method, uri: &Uri) -> Response {
    (
        StatusCode::NOT_IMPLEMENTED,
        format!("not implemented by the precondition front: {method} {uri}"),
    )
        .into_response()
}

impl Shared {
    fn read(&self, method: &Method, headers: &HeaderMap, bucket: &str, object: &str) -> Response {
        let path: Vec<String> = object.split('/').map(encode).collect();
        let r = self.api.read(bucket, &path.join("/"));
        let mut out = HeaderMap::new();
        for name in [
            "etag",
            "last-modified",
            "content-type",
            "x-goog-generation",
            "x-goog-metageneration",
            "x-goog-hash",
        ] {
            if let Some(v) = r.header(name).and_then(|v| v.parse().ok()) {
                out.insert(name, v);
            }
        }
        let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY);
        let unchanged = status == StatusCode::OK
            && headers
                .get("if-none-match")
                .is_some_and(|wanted| out.get("etag").is_some_and(|etag| etag == wanted));
        if unchanged {
            self.not_modified.fetch_add(1, Ordering::SeqCst);
            return (StatusCode::NOT_MODIFIED, out).into_response();
        }
        let body = if *method == Method::HEAD {
            Vec::new()
        } else {
            r.body
        };
        (status, out, body).into_response()
    }

    fn write(&self, headers: &HeaderMap, bucket: &str, object: &str, body: &[u8]) -> Response {
        let wanted = match headers.get("x-goog-if-generation-match") {
            None => None,
            Some(v) => match v.to_str().ok().and_then(|v| v.parse::<u64>().ok()) {
                Some(g) => Some(g),
                None => {
                    return (StatusCode::BAD_REQUEST, "bad x-goog-if-generation-match")
                        .into_response();
                }
            },
        };
        let _one_writer = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(wanted) = wanted {
            // Generation 0 stands for "no live object".
            let current = self.api.generation(bucket, object).unwrap_or(0);
            if wanted != current {
                self.refused.fetch_add(1, Ordering::SeqCst);
                return (StatusCode::PRECONDITION_FAILED, PRECONDITION_FAILED).into_response();
            }
        }
        let r = self.api.upload(bucket, object, body);
        if r.status != 200 {
            let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY);
            return (status, r.body).into_response();
        }
        let Some(generation) = r.generation() else {
            return (
                StatusCode::BAD_GATEWAY,
                "the emulator returned no generation",
            )
                .into_response();
        };
        self.writes.fetch_add(1, Ordering::SeqCst);
        let etag = format!("\"{}\"", r.etag().unwrap_or_default());
        (
            StatusCode::OK,
            [
                ("etag", etag),
                ("x-goog-generation", generation.to_string()),
                ("x-goog-metageneration", "1".to_owned()),
            ],
        )
            .into_response()
    }
}

/// `/<bucket>/<object>` with either part percent-encoded (as `object_store`
/// sends it: every byte but letters and digits).
fn bucket_and_object(path: &str) -> Option<(String, String)> {
    let (bucket, object) = path.strip_prefix('/')?.split_once('/')?;
    let (bucket, object) = (decode(bucket)?, decode(object)?);
    (!bucket.is_empty() && !object.is_empty()).then_some((bucket, object))
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_gcs::{Reply, request};

    fn put(front: &GcsPreconditionFront, path: &str, generation: Option<u64>, body: &str) -> Reply {
        let addr = front.endpoint.trim_start_matches("http://");
        let g = generation.map(|g| g.to_string());
        let headers: Vec<(&str, &str)> = g
            .iter()
            .map(|g| ("x-goog-if-generation-match", g.as_str()))
            .collect();
        request(addr, "PUT", path, &headers, body.as_bytes()).expect("put")
    }

    #[test]
    fn preconditions_hold_where_the_emulator_alone_ignores_them() {
        let dir = std::env::temp_dir().join(format!("stateseal-front-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let gcs = FakeGcs::start(&dir);
        gcs.create_bucket("bkt");
        // The emulator alone: a second create-only upload lands (the measured gap).
        let create_only =
            "/upload/storage/v1/b/bkt/o?uploadType=media&name=bare&ifGenerationMatch=0";
        for _ in 0..2 {
            assert_eq!(gcs.api().call("POST", create_only, &[], b"x").status, 200);
        }

        let front = GcsPreconditionFront::start(&gcs);
        let first = put(&front, "/bkt/fleet%2Fk%2Ejson", Some(0), "one");
        assert_eq!(first.status, 200);
        let g1: u64 = first
            .header("x-goog-generation")
            .expect("generation")
            .parse()
            .expect("u64");
        assert!(first.header("etag").is_some());
        // Create-only on an existing object, and a generation that is not the current one.
        for stale in [Some(0), Some(g1 + 1), Some(g1 - 1)] {
            let r = put(&front, "/bkt/fleet%2Fk%2Ejson", stale, "lost");
            assert_eq!(r.status, 412, "{stale:?}");
            assert!(String::from_utf8_lossy(&r.body).contains("PreconditionFailed"));
        }
        let second = put(&front, "/bkt/fleet%2Fk%2Ejson", Some(g1), "two");
        assert_eq!(second.status, 200);
        assert_ne!(
            second.header("x-goog-generation"),
            first.header("x-goog-generation")
        );
        assert_eq!((front.refused(), front.writes()), (3, 2));
        // Nothing the refused writes carried landed; reads see the last write and its generation.
        let read = request(
            front.endpoint.trim_start_matches("http://"),
            "GET",
            "/bkt/fleet%2Fk%2Ejson",
            &[],
            b"",
        )
        .expect("get");
        assert_eq!(
            (read.status, read.body.as_slice()),
            (200, b"two".as_slice())
        );
        assert_eq!(
            read.header("x-goog-generation"),
            second.header("x-goog-generation")
        );
        // Unsupported requests fail loudly; a down front answers 503.
        let addr = front.endpoint.trim_start_matches("http://");
        assert_eq!(
            request(addr, "DELETE", "/bkt/x", &[], b"")
                .expect("delete")
                .status,
            501
        );
        assert_eq!(
            request(addr, "GET", "/bkt/x?generation=1", &[], b"")
                .expect("get")
                .status,
            501
        );
        front.set_down(true);
        assert_eq!(
            request(addr, "GET", "/bkt/fleet%2Fk%2Ejson", &[], b"")
                .expect("get")
                .status,
            503
        );
        drop(front);
        drop(gcs);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn object_store_paths_decode() {
        assert_eq!(
            bucket_and_object("/stateseal%2Dkeys/fleet%2Fkeyset%2Ejson"),
            Some(("stateseal-keys".to_owned(), "fleet/keyset.json".to_owned()))
        );
        assert_eq!(
            bucket_and_object("/b/plain/path.json"),
            Some(("b".to_owned(), "plain/path.json".to_owned()))
        );
        for bad in ["/", "/bucket", "/bucket/", "/b/%zz", "/b/%4"] {
            assert_eq!(bucket_and_object(bad), None, "{bad}");
        }
    }
}
