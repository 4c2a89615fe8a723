//! Any state, sealed for real and echoed back: mint never panics, accepts
//! exactly the WTF-8 states, and verify returns the very bytes that were
//! minted — through the escaping scans, the claims writer, AES-256-GCM or
//! XAES-256-GCM (the first input byte picks v1 or v2) and base64url,
//! whatever the state's length or content.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use stateseal::{
    Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, RingKey, Secret,
    TokenFormat, UnixTime,
};

fn envelopes() -> &'static ([Envelope; 2], RequestIdentity) {
    static E: OnceLock<([Envelope; 2], RequestIdentity)> = OnceLock::new();
    E.get_or_init(|| {
        let secret = Secret::new(vec![0x5a; 32]).expect("secret");
        let env = |format| {
            let ring = KeyRing::from_keys(vec![Arc::new(RingKey::with_format(&secret, format))]).expect("ring");
            Envelope::builder(Arc::new(RingHandle::new(ring)), Some("svc")).build().expect("envelope")
        };
        let id = RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{"k":[1,2.5]}}"#).expect("id");
        ([env(TokenFormat::V1), env(TokenFormat::V2)], id)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else { return };
    let (envs, id) = envelopes();
    let env = &envs[usize::from(pick & 1)];
    let now = UnixTime::from_secs(1_782_345_600);
    match env.mint(id, data, MintOptions::new().at(now)) {
        Ok(token) => {
            let back = env.open(id, &token, OpenOptions::new().at(now + Duration::from_secs(1))).map(|o| o.state).expect("a freshly minted token verifies");
            assert_eq!(back.as_bytes(), data, "verify returns the minted state");
        }
        // Only non-WTF-8 bytes may be refused, and then whatever the length.
        Err(_) => assert!(std::str::from_utf8(data).is_err()),
    }
});
