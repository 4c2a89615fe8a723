//! Both backends: same bytes, each other's tokens, no plaintext after a failed open.

use super::*;

#[test]
fn settings_parse_and_bad_values_name_the_accepted_ones() {
    assert_eq!(
        AeadBackend::parse("aws-lc").unwrap(),
        Some(AeadBackend::AwsLc)
    );
    assert_eq!(
        AeadBackend::parse(" ring ").unwrap(),
        Some(AeadBackend::Ring)
    );
    assert_eq!(AeadBackend::parse("auto").unwrap(), None);
    let e = AeadBackend::parse("openssl").unwrap_err().to_string();
    assert!(
        e.contains("STATESEAL_AEAD") && e.contains("auto, aws-lc, ring or split"),
        "{e}"
    );
    assert!(
        !e.contains("openssl"),
        "a setting's value is not echoed: {e}"
    );
}

#[test]
fn the_choice_is_made_once_and_a_different_setting_is_refused() {
    let chosen = AeadBackend::selected();
    let other = AeadBackend::ALL.into_iter().find(|b| *b != chosen).unwrap();
    let e = AeadBackend::select(Some(other)).unwrap_err().to_string();
    assert!(e.contains(&format!("already seals with {chosen}")), "{e}");
    assert_eq!(AeadBackend::select(Some(chosen)).unwrap(), chosen);
    assert_eq!(AeadBackend::select(None).unwrap(), chosen);
    assert_eq!(AeadBackend::selected(), chosen);
}

#[test]
fn both_backends_give_the_same_bytes_and_open_each_other() {
    let key = [0x42; 32];
    let keys = AeadBackend::ALL.map(|b| GcmKey::new(b, &key).unwrap());
    let sized = AeadBackend::ALL.map(|b| GcmKey::sized(b, &key, 64).unwrap());
    let all: Vec<&GcmKey> = keys.iter().chain(&sized).collect();
    for len in [
        0,
        1,
        15,
        16,
        17,
        64,
        255,
        1024,
        AEAD_SPLIT_AT - 1,
        AEAD_SPLIT_AT,
        16 * 1024 + 3,
    ] {
        for pair in all.windows(2) {
            same_bytes(pair[0], pair[1], len);
        }
        same_bytes(all[0], all[all.len() - 1], len);
    }
}

/// `a` and `b` seal `len` bytes alike and open each other's.
fn same_bytes(a: &GcmKey, b: &GcmKey, len: usize) {
    let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let nonce = [len as u8; 12];
    let (mut x, mut y) = (plain.clone(), plain.clone());
    let tx = a.seal(nonce, b"v1.abcd", &mut x).unwrap();
    let ty = b.seal(nonce, b"v1.abcd", &mut y).unwrap();
    assert_eq!((&x, tx), (&y, ty), "{len} bytes");
    x.extend_from_slice(&tx);
    y.extend_from_slice(&ty);
    assert_eq!(b.open(nonce, b"v1.abcd", &mut x), Some(len));
    assert_eq!(a.open(nonce, b"v1.abcd", &mut y), Some(len));
    assert_eq!((&x[..len], &y[..len]), (&plain[..], &plain[..]));
}

#[test]
fn split_hands_messages_to_aws_lc_from_its_threshold_on() {
    let split = GcmKey::new(AeadBackend::Split, &[3; 32]).unwrap();
    assert!(matches!(split.for_len(0), key::Lib::Ring(_)));
    assert!(matches!(
        split.for_len(AEAD_SPLIT_AT - 1),
        key::Lib::Ring(_)
    ));
    assert!(matches!(split.for_len(AEAD_SPLIT_AT), key::Lib::AwsLc(_)));
    // A key prepared for one length holds that length's library only.
    let small = GcmKey::sized(AeadBackend::Split, &[3; 32], 100).unwrap();
    let large = GcmKey::sized(AeadBackend::Split, &[3; 32], AEAD_SPLIT_AT).unwrap();
    assert_eq!(
        (small.backend(), large.backend()),
        (AeadBackend::Ring, AeadBackend::AwsLc)
    );
}

#[test]
fn a_failed_open_leaves_no_plaintext_under_either_backend() {
    for b in AeadBackend::ALL {
        let k = GcmKey::new(b, &[9; 32]).unwrap();
        let mut buf = b"secret plaintext".to_vec();
        let tag = k.seal([1; 12], b"ad", &mut buf).unwrap();
        buf.extend_from_slice(&tag);
        let last = buf.len() - 1;
        buf[last] ^= 1;
        assert_eq!(k.open([1; 12], b"ad", &mut buf), None, "{b}");
        assert!(buf.iter().all(|&x| x == 0), "{b}: {buf:?}");
        assert_eq!(k.backend(), b);
    }
}
