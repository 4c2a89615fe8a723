//! One HTTP request's JSON-RPC messages for the envelope: parsed once per
//! request however many rounds it carries (`stateseal::RequestBatch`).

use napi_derive::napi;
use stateseal::RequestBatch;

/// The requests of one HTTP body (see the JavaScript `handler()`).
#[napi]
pub struct NativeRequest {
    pub(crate) batch: RequestBatch,
}

#[napi]
impl NativeRequest {
    /// Parses an HTTP body (one JSON-RPC message or a batch); never throws:
    /// a body that is not JSON-RPC makes every round of it malformed.
    #[napi(factory)]
    pub fn parse(body: String) -> Self {
        Self {
            batch: RequestBatch::parse(body.as_bytes()),
        }
    }
}
