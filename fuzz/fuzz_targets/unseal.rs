//! Any echoed token: unseal never panics, and no forged token opens.
//!
//! The first input byte picks the shape, so the fuzzer reaches every check:
//! raw text, text behind the `v1.` or `v2.` prefix, and base64url bodies that
//! carry the ring's real key ids (so they get as far as the AES-GCM and
//! XAES-256-GCM tag checks). The ring holds a v2 key and a v1 key.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stateseal::{AesGcmCodec, KeyId, KeyRing, RingHandle, RingKey, Secret, StateCodec, TokenFormat};

fn codec() -> &'static (AesGcmCodec, KeyId, KeyId) {
    static CODEC: OnceLock<(AesGcmCodec, KeyId, KeyId)> = OnceLock::new();
    CODEC.get_or_init(|| {
        let secret = Secret::new(vec![0x61; 32]).expect("secret");
        let v1 = Arc::new(RingKey::new(&secret));
        let v2 = Arc::new(RingKey::with_format(&Secret::new(vec![0x62; 32]).expect("secret"), TokenFormat::V2));
        let (k1, k2) = (v1.kid(), v2.kid());
        let ring = KeyRing::from_keys(vec![v2, v1]).expect("ring");
        (AesGcmCodec::new(Arc::new(RingHandle::new(ring))), k1, k2)
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
    let (codec, k1, k2) = codec();
    let token = match mode % 5 {
        0 => String::from_utf8_lossy(rest).into_owned(),
        1 => format!("v1.{}", String::from_utf8_lossy(rest)),
        2 => format!("v2.{}", String::from_utf8_lossy(rest)),
        m => {
            let (prefix, kid) = if m == 3 { ("v1.", k1) } else { ("v2.", k2) };
            let mut body = kid.to_bytes().to_vec();
            body.extend_from_slice(rest);
            format!("{prefix}{}", b64url(&body))
        }
    };
    if let Ok(payload) = codec.unseal(&token) {
        panic!("a fuzzed token opened ({} bytes)", payload.len());
    }
});
