//! Any decrypted payload as claims: verification never panics, and whatever it
//! accepts really binds the request, audience and expiry it was checked against.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stateseal::json::{Duplicates, Value, parse};
use stateseal::{
    Envelope, DataError, Error, OpenOptions, RejectReason, RequestIdentity, RingHandle, StateCodec, UnixTime,
};

/// A codec that "opens" every token to its own bytes, so the fuzzer drives the claims checks.
struct Plain;

impl StateCodec for Plain {
    fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        String::from_utf8(payload.to_vec()).map_err(|_| Error::Data(DataError::Seal("not utf-8")))
    }
    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        Ok(token.as_bytes().to_vec())
    }
}

fn envelope() -> &'static (Envelope, RequestIdentity) {
    static E: OnceLock<(Envelope, RequestIdentity)> = OnceLock::new();
    E.get_or_init(|| {
        let env = Envelope::builder(Arc::new(RingHandle::empty()), Some("svc"))
            .codec(Arc::new(Plain))
            .build()
            .expect("envelope");
        let id = RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("id");
        (env, id)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = std::str::from_utf8(data) else { return };
    let (env, id) = envelope();
    let now = UnixTime::from_secs(1_782_345_600);
    match env.open(id, payload, OpenOptions::new().at(now)).map(|o| o.state) {
        Ok(_) => {
            // Anything accepted must bind this request, audience and time (checked independently).
            let claims = parse(payload.as_bytes(), Duplicates::Reject).expect("accepted claims parse");
            let is = |k: &str, want: &str| matches!(claims.get(k), Some(Value::Str(t)) if t.as_str() == Some(want));
            assert!(is("m", "tools/call") && is("t", "t") && is("aud", "svc") && is("a", id.args_digest()));
            assert!(matches!(claims.get("v"), Some(Value::Int(v)) if v == "1"));
            let exp = match claims.get("exp") {
                Some(Value::Float(f)) => *f,
                Some(Value::Int(i)) => i.parse().expect("int"),
                other => panic!("accepted exp {other:?}"),
            };
            assert!(exp > now.as_secs_f64() && exp.is_finite());
        }
        Err(e) => assert!(e.reject_reason().is_some() && e.reject_reason() != Some(RejectReason::CodecError)),
    }
});
