use super::*;
use std::sync::Arc;

use crate::key::TokenFormat;
use crate::reason::RejectReason;
use crate::ring::{KeyRing, RingHandle};
use crate::secret::Secret;

fn codec(keys: &[u8]) -> AesGcmCodec {
    let secrets: Vec<Secret> = keys
        .iter()
        .map(|b| Secret::new(vec![*b; 32]).unwrap())
        .collect();
    AesGcmCodec::new(Arc::new(RingHandle::new(
        KeyRing::from_secrets(&secrets).unwrap(),
    )))
}

fn v2_codec(keys: &[u8]) -> AesGcmCodec {
    let keys = keys
        .iter()
        .map(|b| {
            Arc::new(crate::RingKey::with_format(
                &Secret::new(vec![*b; 32]).unwrap(),
                TokenFormat::V2,
            ))
        })
        .collect();
    AesGcmCodec::new(Arc::new(RingHandle::new(KeyRing::from_keys(keys).unwrap())))
}

fn reason(r: Result<Vec<u8>, Error>) -> RejectReason {
    r.unwrap_err().reject_reason().unwrap()
}

#[test]
fn roundtrip_and_rotation() {
    let old = codec(b"o");
    let t = old.seal(b"hello").unwrap();
    assert_eq!(old.unseal(&t).unwrap(), b"hello");
    assert_ne!(t, old.seal(b"hello").unwrap(), "fresh nonce per token");
    let new_old = codec(b"no");
    assert_eq!(new_old.unseal(&t).unwrap(), b"hello");
    assert_eq!(reason(codec(b"n").unseal(&t)), RejectReason::UnknownKey);
    assert_eq!(old.ring().current().unwrap().primary().seal_count(), 2);
}

#[test]
fn seals_in_the_handed_over_buffer() {
    let c = codec(b"k");
    let in_place = c.in_place().expect("the built-in codec works in place");
    let mut buffer = vec![0xaa; SEAL_HEADROOM];
    buffer.extend_from_slice(b"payload");
    let token = in_place.seal_in_place_to_string(buffer).unwrap();
    assert_eq!(c.unseal(&token).unwrap(), b"payload");
    assert_eq!(
        in_place.seal_in_place_to_string(vec![0; SEAL_HEADROOM - 1]),
        Err(Error::Data(DataError::Seal(
            "buffer shorter than its headroom"
        )))
    );
    // Unsealing in place: the built-in codec's payload sits after its header.
    let (raw, at) = in_place
        .unseal_in_place(token.as_bytes(), Vec::new())
        .unwrap();
    assert_eq!(
        (&raw[at.clone()], at.start),
        (&b"payload"[..], KID_LEN + NONCE_LEN)
    );
}

/// The `_into` forms write and read the same tokens as the others, in the
/// caller's buffers: v1 and v2 keys, buffers kept from earlier calls
/// (longer, shorter, dirty), failures leaving no token behind.
#[test]
fn seals_and_opens_in_the_callers_buffers() {
    let v1 = codec(b"k");
    let v2 = v2_codec(b"x");
    let mut token = Vec::with_capacity(4096);
    let mut kept = vec![0x5a; 3000];
    for (c, prefix) in [(&v1, "v1."), (&v2, "v2.")] {
        for len in [0, 1, 63, 64, 1024, 2999, 5000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let at = token.as_ptr();
            let mut buffer = vec![0; SEAL_HEADROOM];
            buffer.extend_from_slice(&payload);
            c.seal_in_place(buffer, &mut token).unwrap();
            let text = std::str::from_utf8(&token).unwrap().to_owned();
            assert!(text.starts_with(prefix));
            if len < 2999 {
                assert_eq!(token.as_ptr(), at, "the token's buffer is reused");
            }
            // Opened by every form, including `unseal` of a token sealed the other way.
            assert_eq!(c.unseal(&text).unwrap(), payload);
            let (raw, range) = c.unseal_in_place(text.as_bytes(), kept).unwrap();
            assert_eq!(&raw[range], &payload[..]);
            kept = raw;
            let sealed = c.seal(&payload).unwrap();
            assert_eq!(sealed.len(), text.len());
            let (raw, range) = c.unseal_in_place(sealed.as_bytes(), kept).unwrap();
            assert_eq!(&raw[range], &payload[..]);
            kept = raw;
        }
    }
    // Refused as `unseal` refuses, whatever the kept buffer held.
    let good = String::from_utf8(token.clone()).unwrap();
    for (bad, why) in [
        (format!("v9.{}", &good[3..]), RejectReason::Malformed),
        (format!("{good}="), RejectReason::Malformed),
        (good[..good.len() - 1].to_owned(), RejectReason::Malformed),
        (String::from("v2.AAAA"), RejectReason::Malformed),
    ] {
        let refused = v2.unseal_in_place(bad.as_bytes(), vec![1; 64]).unwrap_err();
        assert_eq!(refused.reject_reason(), Some(why), "{bad}");
        assert_eq!(reason(v2.unseal(&bad)), why);
    }
    // Bytes no text holds: a byte past ASCII in the prefix or the body (alone, or the
    // first of a character's UTF-8) is malformed, never decoded around.
    let mut not_text = Vec::new();
    for at in [0, 1, 2, 3, good.len() / 2, good.len() - 1] {
        for byte in [0x80, 0xc3, 0xff] {
            let mut bad = good.clone().into_bytes();
            bad[at] = byte;
            not_text.push(bad);
        }
    }
    let mut accented = good.clone().into_bytes();
    accented.splice(10..11, "é".bytes());
    not_text.push(accented);
    for bad in not_text {
        let refused = v2.unseal_in_place(&bad, vec![1; 64]).unwrap_err();
        assert_eq!(
            refused.reject_reason(),
            Some(RejectReason::Malformed),
            "{bad:?}"
        );
    }
    assert_eq!(
        InPlaceCodec::unseal_in_place(&v1, good.as_bytes(), Vec::new())
            .unwrap_err()
            .reject_reason(),
        Some(RejectReason::UnknownKey)
    );
    // No ring: nothing sealed, no token left in the buffer.
    let unready = AesGcmCodec::new(Arc::new(RingHandle::empty()));
    let mut buffer = vec![0; SEAL_HEADROOM];
    buffer.push(b'p');
    assert_eq!(
        unready.seal_in_place(buffer, &mut token),
        Err(Error::Data(DataError::NotReady))
    );
    assert!(token.is_empty());
}

#[test]
fn every_bit_flip_rejects() {
    let c = codec(b"k");
    let t = c.seal(b"{}").unwrap();
    let raw = b64u_decode(&t.as_bytes()[3..]).unwrap();
    for i in 0..raw.len() {
        for bit in 0..8 {
            let mut r = raw.clone();
            r[i] ^= 1 << bit;
            let forged = format!("v1.{}", b64u_encode(&r));
            let why = reason(c.unseal(&forged));
            let expect = if i < KID_LEN {
                RejectReason::UnknownKey
            } else {
                RejectReason::Seal
            };
            assert_eq!(why, expect, "byte {i} bit {bit}");
        }
    }
}

#[test]
fn v2_tokens_round_trip_and_every_bit_flip_rejects() {
    let c = v2_codec(b"k");
    let t = c.seal(b"{}").unwrap();
    assert!(t.starts_with("v2."), "{t}");
    assert_eq!(c.unseal(&t).unwrap(), b"{}");
    let raw = b64u_decode(&t.as_bytes()[3..]).unwrap();
    assert_eq!(raw.len(), KID_LEN + 24 + 2 + TAG_LEN);
    for i in 0..raw.len() {
        for bit in 0..8 {
            let mut r = raw.clone();
            r[i] ^= 1 << bit;
            let forged = format!("v2.{}", b64u_encode(&r));
            let expect = if i < KID_LEN {
                RejectReason::UnknownKey
            } else {
                RejectReason::Seal
            };
            assert_eq!(reason(c.unseal(&forged)), expect, "byte {i} bit {bit}");
        }
    }
    let (buffer, at) = c.unseal_in_place(t.as_bytes(), Vec::new()).unwrap();
    assert_eq!((&buffer[at.clone()], at.start), (&b"{}"[..], KID_LEN + 24));
}

/// One secret as a v1 and as a v2 key: two keys, two ids, and a token
/// never opens under the other format's key, whatever its prefix says.
#[test]
fn a_token_opens_only_under_its_own_format() {
    let secret = Secret::new(vec![5; 32]).unwrap();
    let v1 = Arc::new(crate::RingKey::new(&secret));
    let v2 = Arc::new(crate::RingKey::with_format(&secret, TokenFormat::V2));
    assert_ne!(v1.kid(), v2.kid());
    let both = AesGcmCodec::new(Arc::new(RingHandle::new(
        KeyRing::from_keys(vec![v2.clone(), v1.clone()]).unwrap(),
    )));
    let old = AesGcmCodec::new(Arc::new(RingHandle::new(
        KeyRing::from_keys(vec![v1]).unwrap(),
    )));
    let t2 = both.seal(b"x").unwrap();
    let t1 = old.seal(b"y").unwrap();
    assert_eq!(both.unseal(&t1).unwrap(), b"y", "a mixed ring opens v1");
    assert_eq!(both.unseal(&t2).unwrap(), b"x");
    assert_eq!(reason(old.unseal(&t2)), RejectReason::UnknownKey);
    // The v2 body relabelled v1 (and back): the prefix is bound, so nothing opens.
    let relabelled = format!("v1.{}", &t2[3..]);
    assert!(both.unseal(&relabelled).is_err());
    let relabelled = format!("v2.{}", &t1[3..]);
    assert!(both.unseal(&relabelled).is_err());
    assert_eq!(
        token_key_id(&t2),
        Some(both.ring().current().unwrap().primary().kid())
    );
}

#[test]
fn a_v1_key_past_its_seal_limit_stops_before_sealing() {
    let c = codec(b"b");
    let key = c.ring().current().unwrap().primary().clone();
    key.set_seal_limit(2);
    assert_eq!(key.seal_limit(), Some(2));
    let _ = payload_buffer();
    c.seal(b"1").unwrap();
    c.seal(b"2").unwrap();
    let err = c.seal(b"3").unwrap_err();
    assert!(
        matches!(&err, Error::Data(DataError::SealBudgetExhausted { limit: 2, kid }) if *kid == key.kid().to_hex()),
        "{err}"
    );
    assert!(
        err.to_string().contains("v2 key, which carries no budget"),
        "{err}"
    );
    assert_eq!(key.seal_count(), 2, "the refused seal is not counted");
    // The refused payload's buffer (plaintext) is not kept for reuse.
    assert_eq!(payload_buffer().capacity(), 0);
    key.set_seal_limit(3);
    c.seal(b"3").unwrap();
}

#[test]
fn empty_ring_fails_closed() {
    let c = AesGcmCodec::new(Arc::new(RingHandle::empty()));
    assert_eq!(c.seal(b"x"), Err(Error::Data(DataError::NotReady)));
    let foreign = codec(b"z").seal(b"x").unwrap();
    assert_eq!(reason(c.unseal(&foreign)), RejectReason::UnknownKey);
}

#[test]
fn malformed_shapes() {
    let c = codec(b"k");
    for bad in [
        "", "v1.", "V1.AAAA", "v2.AAAA", "v3.AAAA", "v1.AAAA=", "v1.!!!!", "v2", "é",
    ] {
        assert_eq!(reason(c.unseal(bad)), RejectReason::Malformed, "{bad:?}");
    }
    let short = format!(
        "v1.{}",
        b64u_encode(&[0u8; KID_LEN + NONCE_LEN + TAG_LEN - 1])
    );
    assert_eq!(reason(c.unseal(&short)), RejectReason::Malformed);
    let short = format!("v2.{}", b64u_encode(&[0u8; KID_LEN + 24 + TAG_LEN - 1]));
    assert_eq!(
        reason(v2_codec(b"k").unseal(&short)),
        RejectReason::Malformed
    );
}
