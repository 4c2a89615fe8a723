//! Decrypted plaintext is wiped before its memory is freed whenever a state
//! is refused (expired, other arguments, other principal, other audience, a
//! revoked principal, a spent single-use state, a multi-use state of a
//! single-use round) and when the state had escapes (decoded into a second
//! buffer): exactly what an attacker presents, and what a later heap
//! disclosure would otherwise find.
//!
//! Observed from outside the allocator, without `unsafe`: after each refusal
//! the test reads its own writable memory through `/proc/self/mem` and looks
//! for a random marker that only the sealed state held. The marker is kept
//! XOR-masked, so the search itself leaves no copy; the test's own copy of
//! the state is wiped after minting, and a scan right after minting is the
//! control that the minter leaves none either. Its own binary (one test), so
//! no other test's threads move the heap while it is read.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Duration;

use stateseal::boundary::Boundary;
use stateseal::replay::{MemoryReplayStore, ReplayStore};

use stateseal::{
    Envelope, Error, KeyRing, ManualClock, MintOptions, OpenOptions, Opened, Principal,
    RequestIdentity, Revocation, RevocationList, RingHandle, RingKey, Secret, TokenFormat,
    UnixTime,
};
use zeroize::Zeroize;

const NOW: UnixTime = UnixTime::from_secs(1_782_345_600);
const MASK: u8 = 0x5a;

/// A random marker, held only masked.
struct Marker(Vec<u8>);

impl Marker {
    fn new() -> Self {
        let raw = Secret::generate().expect("rng");
        let hex: String = raw.expose().iter().map(|b| format!("{b:02x}")).collect();
        let mut bytes = hex.into_bytes();
        let masked = bytes.iter().map(|b| b ^ MASK).collect();
        bytes.zeroize();
        Self(masked)
    }

    /// A state holding the marker, `escaped` with JSON escapes around it.
    fn state(&self, escaped: bool) -> Vec<u8> {
        // The marker well inside the state: a freed chunk's first bytes are
        // the allocator's own (its free-list links), the rest as it was.
        let mut s = Vec::with_capacity(self.0.len() + 96);
        s.extend_from_slice(&[b'.'; 64]);
        s.extend_from_slice(if escaped { b"q\"\\\n<" } else { b"plain<" });
        s.extend(self.0.iter().map(|b| b ^ MASK));
        s.push(b'>');
        s
    }

    /// Where in this process's writable memory the marker is, but for this
    /// thread's stack (the test runs on one thread): vector code may spill a
    /// register of plaintext there, which no library controls, and the next
    /// call overwrites it; the heap is where freed plaintext would stay.
    fn found(&self) -> Vec<String> {
        let here = 0u8;
        let stack = std::ptr::addr_of!(here) as usize as u64;
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let mut mem = std::fs::File::open("/proc/self/mem").expect("mem");
        let mut hits = Vec::new();
        let mut chunk = vec![0u8; 1 << 20];
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
                continue;
            };
            let name = fields.nth(3).unwrap_or("");
            if !perms.starts_with("rw") || name.starts_with("[v") {
                continue;
            }
            let Some((lo, hi)) = range.split_once('-') else {
                continue;
            };
            let (lo, hi) = (
                u64::from_str_radix(lo, 16).expect("addr"),
                u64::from_str_radix(hi, 16).expect("addr"),
            );
            if (lo..hi).contains(&stack) {
                continue;
            }
            let mut at = lo;
            // Chunks overlap by the marker's length, so none is missed at a seam.
            let step = (chunk.len() - self.0.len()) as u64;
            while at < hi {
                let len = ((hi - at) as usize).min(chunk.len());
                let read = mem
                    .seek(SeekFrom::Start(at))
                    .and_then(|_| mem.read_exact(&mut chunk[..len]));
                if read.is_ok() && self.within(&chunk[..len]) {
                    hits.push(format!("{line} (near {at:#x})"));
                }
                at += step;
            }
        }
        chunk.zeroize();
        hits
    }

    fn within(&self, hay: &[u8]) -> bool {
        let n = self.0.len();
        let first = self.0[0] ^ MASK;
        hay.windows(n)
            .any(|w| w[0] == first && w.iter().zip(&self.0).all(|(a, b)| *a == b ^ MASK))
    }
}

fn keys(format: TokenFormat, key: &Secret) -> KeyRing {
    let key = RingKey::with_format(key, format);
    KeyRing::from_keys(vec![Arc::new(key)]).expect("ring")
}

fn ring(format: TokenFormat, key: &Secret) -> Arc<RingHandle> {
    Arc::new(RingHandle::new(keys(format, key)))
}

/// The same key with a live revocation covering every state minted up to `NOW`.
fn revoking_all(format: TokenFormat, key: &Secret) -> Arc<RingHandle> {
    let revocations = RevocationList::new(&[Revocation::all_before(NOW)]);
    Arc::new(RingHandle::new(
        keys(format, key).with_revocations(revocations),
    ))
}

fn envelope(ring: Arc<RingHandle>, audience: &str, clock: &Arc<ManualClock>) -> Envelope {
    Envelope::builder(ring, Some(audience))
        .ttl(Duration::from_secs(60))
        .clock(clock.clone())
        .build()
        .expect("envelope")
}

fn id(n: u32) -> RequestIdentity {
    let params = format!(r#"{{"name":"transfer","arguments":{{"n":{n}}}}}"#);
    RequestIdentity::from_json("tools/call", params.as_bytes()).expect("id")
}

/// Mints `state` (then wipes the test's copy) and checks that no copy is left.
fn mint(
    env: &Envelope,
    marker: &Marker,
    escaped: bool,
    once: bool,
    p: Option<&Principal>,
) -> String {
    let mut state = marker.state(escaped);
    let token = if once {
        env.mint(
            &id(1),
            &state,
            MintOptions::new().principal(p).at(NOW).single_use(true),
        )
    } else {
        env.mint(&id(1), &state, MintOptions::new().principal(p).at(NOW))
    }
    .expect("mint");
    state.zeroize();
    drop(state);
    assert_eq!(
        marker.found(),
        Vec::<String>::new(),
        "the minter left the plaintext"
    );
    token
}

#[tokio::test(flavor = "current_thread")]
async fn refused_and_escaped_states_leave_no_plaintext_in_memory() {
    let alice = Principal::from_components("client", Some("https://issuer.example"), Some("alice"));
    let mallory =
        Principal::from_components("client", Some("https://issuer.example"), Some("mallory"));
    let clock = Arc::new(ManualClock::new(NOW - Duration::from_secs(10)));
    for format in [TokenFormat::V1, TokenFormat::V2] {
        for escaped in [false, true] {
            let marker = Marker::new();
            let key = Secret::generate().expect("rng");
            let env = envelope(ring(format, &key), "bank", &clock);
            let case = |what: &str| format!("{format:?}, escaped {escaped}: {what}");
            let clean = |what: &str| {
                assert_eq!(marker.found(), Vec::<String>::new(), "{}", case(what));
            };
            // The envelope's refusals.
            let token = mint(&env, &marker, escaped, false, Some(&alice));
            let other_audience = envelope(ring(format, &key), "other", &clock);
            let revoking = envelope(revoking_all(format, &key), "bank", &clock);
            type Open<'e> = Box<dyn Fn() -> Result<Opened, Error> + 'e>;
            let refusals: [(&str, Open<'_>); 6] = [
                (
                    "expired",
                    Box::new(|| {
                        env.open(
                            &id(1),
                            &token,
                            OpenOptions::new()
                                .principal(&alice)
                                .at(NOW + Duration::from_secs(61))
                                .records_single_use(true),
                        )
                    }),
                ),
                (
                    "other arguments",
                    Box::new(|| {
                        env.open(
                            &id(2),
                            &token,
                            OpenOptions::new()
                                .principal(&alice)
                                .at(NOW)
                                .records_single_use(true),
                        )
                    }),
                ),
                (
                    "other principal",
                    Box::new(|| {
                        env.open(
                            &id(1),
                            &token,
                            OpenOptions::new()
                                .principal(&mallory)
                                .at(NOW)
                                .records_single_use(true),
                        )
                    }),
                ),
                (
                    "no principal",
                    Box::new(|| {
                        env.open(
                            &id(1),
                            &token,
                            OpenOptions::new().at(NOW).records_single_use(true),
                        )
                    }),
                ),
                (
                    "other audience",
                    Box::new(|| {
                        other_audience.open(
                            &id(1),
                            &token,
                            OpenOptions::new()
                                .principal(&alice)
                                .at(NOW)
                                .records_single_use(true),
                        )
                    }),
                ),
                (
                    "revoked",
                    Box::new(|| {
                        revoking.open(
                            &id(1),
                            &token,
                            OpenOptions::new()
                                .principal(&alice)
                                .at(NOW)
                                .records_single_use(true),
                        )
                    }),
                ),
            ];
            for (what, open) in refusals {
                assert!(open().is_err(), "{}", case(what));
                clean(what);
            }
            let bytes = env.open(
                &id(2),
                token.as_bytes(),
                OpenOptions::new()
                    .principal(&alice)
                    .at(NOW)
                    .records_single_use(true)
                    .buffer(Vec::new()),
            );
            assert!(bytes.is_err());
            clean("the caller's buffer");
            // Accepted: the state is the caller's; once it wipes it, none is left.
            let Opened { state, .. } = env
                .open(
                    &id(1),
                    &token,
                    OpenOptions::new()
                        .principal(&alice)
                        .at(NOW)
                        .records_single_use(true),
                )
                .expect("opens");
            state.into_bytes().zeroize();
            clean("accepted, then wiped by its caller");
            // The boundary's refusals after the envelope accepted: a
            // multi-use state of a single-use round, a spent single-use state.
            clock.set(NOW - Duration::from_secs(10));
            let store: Arc<dyn ReplayStore> =
                Arc::new(MemoryReplayStore::with_clock(clock.clone()));
            let strict = Boundary::builder(Arc::new(envelope(ring(format, &key), "bank", &clock)))
                .replay_store(store)
                .single_use("tools/call", "transfer")
                .build();
            clock.set(NOW);
            let signed_in = Ok(Some(alice.clone()));
            assert!(
                strict
                    .admit(&id(1), Some(&token), &signed_in)
                    .await
                    .is_err()
            );
            clean("multi-use state of a single-use round");
            if format == TokenFormat::V2 {
                let once = mint(&env, &marker, escaped, true, Some(&alice));
                let first = strict.admit(&id(1), Some(&once), &signed_in).await;
                let mut first = first.expect("first presentation").expect("a state");
                first.zeroize();
                assert!(strict.admit(&id(1), Some(&once), &signed_in).await.is_err());
                clean("spent single-use state");
            }
        }
    }
}
