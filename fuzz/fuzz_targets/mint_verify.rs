//! Any state, sealed for real and echoed back: mint never panics, accepts
//! exactly the WTF-8 states, and verify returns the very bytes that were
//! minted — through the escaping scans, the claims writer, AES-256-GCM and
//! base64url, whatever the state's length or content.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stateseal::{AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, Secret};

fn envelope() -> &'static (Envelope, RequestIdentity) {
    static E: OnceLock<(Envelope, RequestIdentity)> = OnceLock::new();
    E.get_or_init(|| {
        let ring = KeyRing::from_secrets(&[Secret::new(vec![0x5a; 32]).expect("secret")]).expect("ring");
        let codec = Arc::new(AesGcmCodec::new(Arc::new(RingHandle::new(ring))));
        let env = Envelope::builder(codec, Some("svc")).build().expect("envelope");
        let id = RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{"k":[1,2.5]}}"#).expect("id");
        (env, id)
    })
}

fuzz_target!(|data: &[u8]| {
    let (env, id) = envelope();
    let now = 1_782_345_600.0;
    match env.mint_at(id, data, None, now) {
        Ok(token) => {
            let back = env.verify_at(id, &token, None, now + 1.0).expect("a freshly minted token verifies");
            assert_eq!(back.as_bytes(), data, "verify returns the minted state");
        }
        // Only non-WTF-8 bytes may be refused, and then whatever the length.
        Err(_) => assert!(std::str::from_utf8(data).is_err()),
    }
});
