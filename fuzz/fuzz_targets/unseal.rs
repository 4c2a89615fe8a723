//! Any echoed token: unseal never panics, and no forged token opens.
//!
//! The first input byte picks the shape, so the fuzzer reaches every check:
//! raw text, text behind the `v1.` prefix, and base64url bodies that carry the
//! ring's real key id (so they get as far as the AES-GCM tag check).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stateseal::{AesGcmCodec, KeyId, KeyRing, RingHandle, Secret, StateCodec};

fn codec() -> &'static (AesGcmCodec, KeyId) {
    static CODEC: OnceLock<(AesGcmCodec, KeyId)> = OnceLock::new();
    CODEC.get_or_init(|| {
        let secret = Secret::new(vec![0x61; 32]).expect("secret");
        let kid = KeyId::of(&secret);
        let ring = KeyRing::from_secrets(&[secret]).expect("ring");
        (AesGcmCodec::new(Arc::new(RingHandle::new(ring))), kid)
    })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64url(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (codec, kid) = codec();
    let token = match mode % 3 {
        0 => String::from_utf8_lossy(rest).into_owned(),
        1 => format!("v1.{}", String::from_utf8_lossy(rest)),
        _ => {
            let mut body = kid.to_bytes().to_vec();
            body.extend_from_slice(rest);
            format!("v1.{}", b64url(&body))
        }
    };
    if let Ok(payload) = codec.unseal(&token) {
        panic!("a fuzzed token opened ({} bytes)", payload.len());
    }
});
