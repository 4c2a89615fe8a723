//! The specification's vectors and the batching's properties.

use sha3::Shake128;
use sha3::digest::{ExtendableOutput, Update, XofReader};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

use super::*;

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

/// Encrypts `in_out` in place and appends the tag (the vectors' layout).
fn seal_appending(x: &XaesKey, nonce: &[u8; NONCE_LEN], aad: &[u8], in_out: &mut Vec<u8>) {
    let tag = x.seal(nonce, aad, in_out).expect("seal");
    in_out.extend_from_slice(&tag);
}

/// The specification's two vectors, intermediate values included (the
/// second has L's top bit set, so K1 takes the reduction), under each backend.
#[test]
fn the_specification_vectors() {
    for backend in AeadBackend::ALL {
        specification_vectors(backend);
    }
}

fn specification_vectors(backend: AeadBackend) {
    for (key, l, k1, kx, aad, ciphertext) in [
        (
            [1u8; 32],
            "7298caa565031eadc6ce23d23ea66378",
            "e531954aca063d5b8d9c47a47d4cc6f0",
            "c8612c9ed53fe43e8e005b828a1631a0bbcb6ab2f46514ec4f439fcfd0fa969b",
            "",
            "ce546ef63c9cc60765923609b33a9a1974e96e52daf2fcf7075e2271",
        ),
        (
            [3u8; 32],
            "91c08762876dccf9ba204a33768fa5fe",
            "23810ec50edb99f374409466ed1f4b7b",
            "e9c621d4cdd9b11b00a6427ad7e559aeedd66b3857646677748f8ca796cb3fd8",
            "c2sp.org/XAES-256-GCM",
            "986ec1832593df5443a179437fd083bf3fdb41abd740a21f71eb769d",
        ),
    ] {
        let x = XaesKey::new(&key, backend).expect("key");
        let mut zero = [0u8; BLOCK];
        x.block
            .less_safe_encrypt(&mut zero, EncryptionContext::None)
            .expect("block");
        assert_eq!(zero.to_vec(), hex(l), "L");
        assert_eq!(x.k1.to_vec(), hex(k1), "K1");
        let nonce: [u8; NONCE_LEN] = *b"ABCDEFGHIJKLMNOPQRSTUVWX";
        // Kx, through AES-256-GCM under it: the same ciphertext as the vector.
        let direct = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &hex(kx)).expect("kx"));
        let mut by_kx = b"XAES-256-GCM".to_vec();
        direct
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(*b"MNOPQRSTUVWX"),
                Aad::from(aad.as_bytes()),
                &mut by_kx,
            )
            .expect("seal");
        let mut sealed = b"XAES-256-GCM".to_vec();
        seal_appending(&x, &nonce, aad.as_bytes(), &mut sealed);
        assert_eq!(sealed, hex(ciphertext), "{backend}");
        assert_eq!(by_kx, sealed, "Kx");
        let n = x.open(&nonce, aad.as_bytes(), &mut sealed).expect("open");
        assert_eq!(&sealed[..n], b"XAES-256-GCM");
    }
}

/// The specification's accumulated randomized test: inputs from one
/// SHAKE-128 stream, every ciphertext into another, 10 000 iterations,
/// under each backend.
#[test]
fn the_accumulated_vector() {
    for backend in AeadBackend::ALL {
        accumulated_vector(backend);
    }
}

fn accumulated_vector(backend: AeadBackend) {
    let mut source = Shake128::default().finalize_xof();
    let mut first = [0u8; 16];
    source.read(&mut first);
    assert_eq!(first.to_vec(), hex("7f9c2ba4e88f827d616045507605853e"));
    let mut source = Shake128::default().finalize_xof();
    let mut sink = Shake128::default();
    for _ in 0..10_000 {
        let mut key = [0u8; 32];
        let mut nonce = [0u8; NONCE_LEN];
        let mut len = [0u8; 1];
        source.read(&mut key);
        source.read(&mut nonce);
        source.read(&mut len);
        let mut plaintext = vec![0u8; usize::from(len[0])];
        source.read(&mut plaintext);
        source.read(&mut len);
        let mut aad = vec![0u8; usize::from(len[0])];
        source.read(&mut aad);
        let x = XaesKey::new(&key, backend).expect("key");
        let mut sealed = plaintext.clone();
        seal_appending(&x, &nonce, &aad, &mut sealed);
        sink.update(&sealed);
        let n = x.open(&nonce, &aad, &mut sealed).expect("open");
        assert_eq!(&sealed[..n], &plaintext[..]);
    }
    let mut got = [0u8; 32];
    sink.finalize_xof().read(&mut got);
    assert_eq!(
        got.to_vec(),
        hex("e6b9edf2df6cec60c8cbd864e2211b597fb69a529160cd040d56c0c210081939"),
        "{backend}"
    );
}

/// A thread shares a nonce's first half across exactly one batch of
/// seals, draws every second half afresh, and another thread (or key)
/// gets its own batch; every token opens as a plain XAES-256-GCM message.
#[test]
fn a_batch_shares_the_first_half_and_nothing_else() {
    let x = XaesKey::new(&[5u8; 32], AeadBackend::selected()).expect("key");
    let seal = |x: &XaesKey| {
        let mut nonce = [0u8; NONCE_LEN];
        let mut sealed = b"state".to_vec();
        let tag = x
            .seal_fresh(&RandomSource::Os, &mut nonce, b"aad", &mut sealed)
            .expect("seal");
        sealed.extend_from_slice(&tag);
        let n = x.open(&nonce, b"aad", &mut sealed.clone()).expect("open");
        assert_eq!(n, 5);
        nonce
    };
    let nonces: Vec<_> = (0..2 * BATCH + 1).map(|_| seal(&x)).collect();
    let prefixes: Vec<&[u8]> = nonces.iter().map(|n| &n[..PREFIX_LEN]).collect();
    let batch = BATCH as usize;
    for (i, p) in prefixes.iter().enumerate() {
        assert_eq!(*p, prefixes[i / batch * batch], "seal {i}");
    }
    assert_ne!(prefixes[0], prefixes[batch]);
    assert_ne!(prefixes[batch], prefixes[2 * batch]);
    let mut second: Vec<&[u8]> = nonces.iter().map(|n| &n[PREFIX_LEN..]).collect();
    second.sort_unstable();
    second.dedup();
    assert_eq!(second.len(), nonces.len(), "a second half repeated");
    let other_thread = std::thread::scope(|s| s.spawn(|| seal(&x)).join().expect("thread"));
    assert_ne!(other_thread[..PREFIX_LEN], nonces[2 * batch][..PREFIX_LEN]);
    let other_key = XaesKey::new(&[5u8; 32], AeadBackend::selected()).expect("key");
    assert_ne!(
        seal(&other_key)[..PREFIX_LEN],
        nonces[2 * batch][..PREFIX_LEN]
    );
}

/// A thread keeps the derived keys of the last halves whose tokens
/// opened, never one from a forged token, and a kept key still refuses
/// any tampering.
#[test]
fn opened_halves_are_kept_only_for_authentic_tokens() {
    let x = XaesKey::new(&[6u8; 32], AeadBackend::selected()).expect("key");
    let kept = |x: &XaesKey, nonce: &[u8; NONCE_LEN]| {
        x.opening
            .get()
            .is_some_and(|o| o.borrow().find(&nonce[..PREFIX_LEN]).is_some())
    };
    let nonce = [4u8; NONCE_LEN];
    let mut sealed = b"state".to_vec();
    seal_appending(&x, &nonce, b"aad", &mut sealed);
    let mut forged = sealed.clone();
    forged[0] ^= 1;
    assert!(x.open(&nonce, b"aad", &mut forged).is_err());
    assert!(!kept(&x, &nonce), "a forged token's half was kept");
    assert_eq!(
        x.open(&nonce, b"aad", &mut sealed.clone()).expect("open"),
        5
    );
    assert!(kept(&x, &nonce));
    // Through the kept key: the same refusals as a fresh derivation.
    for i in 0..sealed.len() {
        let mut t = sealed.clone();
        t[i] ^= 1;
        assert!(x.open(&nonce, b"aad", &mut t).is_err(), "byte {i}");
    }
    let mut other = nonce;
    other[PREFIX_LEN] ^= 1;
    assert!(x.open(&other, b"aad", &mut sealed.clone()).is_err());
    // Kept oldest first: four more halves push the first one out.
    for b in 10..10 + OPENED as u8 {
        let n = [b; NONCE_LEN];
        let mut t = b"s".to_vec();
        seal_appending(&x, &n, b"", &mut t);
        x.open(&n, b"", &mut t).expect("open");
    }
    assert!(!kept(&x, &nonce));
}

#[test]
fn a_changed_byte_anywhere_is_refused() {
    let x = XaesKey::new(&[7u8; 32], AeadBackend::selected()).expect("key");
    let nonce = [9u8; NONCE_LEN];
    let mut sealed = b"state".to_vec();
    seal_appending(&x, &nonce, b"aad", &mut sealed);
    for i in 0..sealed.len() {
        let mut t = sealed.clone();
        t[i] ^= 1;
        assert!(x.open(&nonce, b"aad", &mut t).is_err(), "byte {i}");
    }
    for i in 0..NONCE_LEN {
        let mut n = nonce;
        n[i] ^= 1;
        assert!(
            x.open(&n, b"aad", &mut sealed.clone()).is_err(),
            "nonce byte {i}"
        );
    }
    assert!(x.open(&nonce, b"aaD", &mut sealed.clone()).is_err());
    assert_eq!(format!("{x:?}"), "XaesKey(<redacted>)");
}
