//! A simulated fleet: four instances in one process, each with its own
//! scheduler and skewed clock, sharing one file store, under continuous
//! multi-round traffic through three full rotations. Time is simulated: no test sleeps.

use stateseal_testkit::instant;
use stateseal_testkit::keysets;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use stateseal::rotation::{Phase, RotateMode, SchedulerConfig, Timing, init_keyset, ring_at};
use stateseal::{
    Envelope, FileStore, KeysetStore, LocalProvider, ManualClock, MintOptions, OpenOptions,
    ProviderRegistry, RejectReason, RequestIdentity, RingHandle, RotationScheduler,
};

/// A small deterministic PRNG (xorshift64*), so a failure replays from its seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub(crate) fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub(crate) struct Instance {
    pub(crate) scheduler: RotationScheduler,
    pub(crate) envelope: Envelope,
    /// This instance's clock minus true time.
    pub(crate) offset: f64,
    pub(crate) next_refresh: f64,
    /// Refresh interval multiplier (a late instance refreshes less often).
    pub(crate) lateness: f64,
}

pub(crate) fn temp_dir(tag: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("stateseal-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The default registry plus the `local` provider these tests' keysets use.
pub(crate) fn local_registry() -> ProviderRegistry {
    let mut registry = ProviderRegistry::with_defaults();
    registry.allow_local_kek();
    registry
}

/// A temporary directory with a fresh `local://` KEK and a `file://` store
/// holding a keyset initialised at `t0` through `registry`, with `timing` as its profile.
pub(crate) async fn local_keyset(
    tag: &str,
    registry: &ProviderRegistry,
    timing: Timing,
    t0: f64,
) -> (std::path::PathBuf, Arc<dyn KeysetStore>) {
    let dir = temp_dir(tag);
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
    init_keyset(
        store.as_ref(),
        registry,
        &format!("local://{}", kek.display()),
        timing,
        instant(t0),
    )
    .await
    .expect("init");
    (dir, store)
}

pub(crate) fn instance(
    store: Arc<dyn KeysetStore>,
    config: &SchedulerConfig,
    offset: f64,
    lateness: f64,
) -> Instance {
    let ring = Arc::new(RingHandle::empty());
    let scheduler = RotationScheduler::new(
        config.clone(),
        store,
        local_registry(),
        ring.clone(),
        Arc::new(ManualClock::new(instant(0.0))),
    )
    .expect("scheduler");
    let envelope = Envelope::builder(ring, Some("fleet"))
        .ttl(config.timing.ttl)
        .build()
        .expect("env");
    Instance {
        scheduler,
        envelope,
        offset,
        next_refresh: 0.0,
        lateness,
    }
}

struct Conversation {
    token: String,
    round: u32,
    due: f64,
    id: RequestIdentity,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_rotates_three_times_with_zero_rejections() {
    let seed = std::env::var("STATESEAL_FLEET_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_u64);
    let mut rng = Rng::new(seed);
    let dir = temp_dir("fleet");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
    let timing = Timing::new(
        Duration::from_secs(30),
        Duration::from_secs(60),
        Duration::from_secs(600),
    );
    let config = SchedulerConfig::builder()
        .timing(timing)
        .rotation_period(None)
        .build()
        .expect("config");
    let t0 = 1_782_345_600.0;
    let registry = local_registry();
    init_keyset(
        store.as_ref(),
        &registry,
        &format!("local://{}", kek.display()),
        timing,
        instant(t0),
    )
    .await
    .expect("init");

    // Offsets within ±S/2 keep every pair of clocks within S of each other.
    let mut fleet: Vec<Instance> = [(-30.0, 1.0), (30.0, 1.0), (-12.5, 1.0), (4.0, 1.8)]
        .into_iter()
        .map(|(off, late)| instance(store.clone(), &config, off, late))
        .collect();
    for inst in &mut fleet {
        inst.scheduler
            .refresh_at(instant(t0 + inst.offset))
            .await
            .expect("first refresh");
        inst.next_refresh = t0 + rng.range(0.0, timing.refresh_interval.as_secs_f64());
    }

    let tools = ["deploy", "rollback", "scale"];
    let mut conversations: Vec<Conversation> = Vec::new();
    let (mut rounds, mut unexpected, mut attacks, mut attacks_rejected) = (0u64, 0u64, 0u64, 0u64);
    let mut rotations = 0;
    let mut phases_seen = BTreeSet::new();
    let mut retired_tokens: Vec<(String, RequestIdentity, f64)> = Vec::new();
    let end = t0 + 4000.0;
    let mut t = t0;
    while t < end {
        t += 1.0;
        // Refreshes, jittered ±10%; the late instance refreshes at 1.8 R for the whole run.
        for inst in &mut fleet {
            if t >= inst.next_refresh {
                inst.scheduler
                    .refresh_at(instant(t + inst.offset))
                    .await
                    .expect("refresh");
                let jitter = if inst.lateness > 1.0 {
                    1.0
                } else {
                    rng.range(0.9, 1.1)
                };
                inst.next_refresh =
                    t + timing.refresh_interval.as_secs_f64() * inst.lateness * jitter;
            }
        }
        // An operator rotates whenever the previous rotation has completed.
        let doc = keysets::content(&*store, &registry).await;
        let phase = ring_at(&doc, t).expect("plan").phase;
        phases_seen.insert(phase as u8);
        if phase == Phase::Three && rotations < 3 && t > t0 + 100.0 {
            let who = rng.below(fleet.len());
            let now = t + fleet[who].offset;
            match fleet[who]
                .scheduler
                .rotate_at(instant(now), RotateMode::Scheduled)
                .await
            {
                Ok(_) => rotations += 1,
                // That instance's clock is behind: on its clock the last rotation is still in flight.
                Err(stateseal::Error::Keyset(stateseal::KeysetError::RotationInFlight(_))) => {
                    continue;
                }
                Err(e) => panic!("rotate: {e}"),
            }
            // A token minted under the old key, to replay after that key retires.
            let id =
                RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{}}"#)
                    .expect("id");
            let token = fleet[who]
                .envelope
                .mint(&id, b"old-key-state", MintOptions::new().at(instant(now)))
                .expect("mint");
            // The key this rotation retires is the one with the latest retire time.
            let retire = keysets::content(&*store, &registry)
                .await
                .keys
                .iter()
                .filter_map(|k| k.retire_at.map(stateseal::UnixTime::as_secs_f64))
                .fold(f64::NEG_INFINITY, f64::max);
            retired_tokens.push((token, id, retire));
        }
        // Traffic: start a conversation, and answer each open one after a random delay within the TTL.
        let who = rng.below(fleet.len());
        let tool = tools[rng.below(tools.len())];
        let id = RequestIdentity::from_serde(
            "tools/call",
            &serde_json::json!({"name": tool, "arguments": {"n": rng.below(5)}}),
        )
        .expect("id");
        let now = t + fleet[who].offset;
        let token = fleet[who]
            .envelope
            .mint(&id, b"round-1", MintOptions::new().at(instant(now)))
            .expect("mint");
        // Echo delays stay below T minus the largest clock difference, so every round is valid.
        conversations.push(Conversation {
            token,
            round: 1,
            due: t + rng.range(0.0, 0.85 * timing.ttl.as_secs_f64()),
            id,
        });
        let mut still_open = Vec::new();
        for mut c in conversations.drain(..) {
            if t < c.due {
                still_open.push(c);
                continue;
            }
            let who = rng.below(fleet.len());
            let now = t + fleet[who].offset;
            let inst = &fleet[who];
            // Attack: the same token replayed to another tool is rejected.
            attacks += 1;
            let other =
                RequestIdentity::from_json("tools/call", br#"{"name":"other","arguments":{}}"#)
                    .expect("id");
            if inst
                .envelope
                .open(&other, &c.token, OpenOptions::new().at(instant(now)))
                .map(|o| o.state)
                .is_err()
            {
                attacks_rejected += 1;
            }
            match inst
                .envelope
                .open(&c.id, &c.token, OpenOptions::new().at(instant(now)))
                .map(|o| o.state)
            {
                Ok(state) => {
                    rounds += 1;
                    assert_eq!(state.as_str(), Some(format!("round-{}", c.round).as_str()));
                    if c.round < 4 {
                        c.round += 1;
                        c.token = inst
                            .envelope
                            .mint(
                                &c.id,
                                format!("round-{}", c.round).as_bytes(),
                                MintOptions::new().at(instant(now)),
                            )
                            .expect("mint");
                        c.due = t + rng.range(0.0, 0.85 * timing.ttl.as_secs_f64());
                        still_open.push(c);
                    }
                }
                Err(e) => {
                    unexpected += 1;
                    eprintln!("t={} instance {who}: valid round rejected: {e}", t - t0);
                }
            }
        }
        conversations = still_open;
        // Attack: a state past its TTL by more than the clock skew is rejected everywhere.
        if ((t - t0) as u64).is_multiple_of(97) {
            let id =
                RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{}}"#)
                    .expect("id");
            let old = fleet[1].envelope.mint(
                &id,
                b"stale",
                MintOptions::new().at(instant(
                    t + fleet[1].offset
                        - timing.ttl.as_secs_f64()
                        - timing.max_skew.as_secs_f64()
                        - 1.0,
                )),
            );
            if let Ok(old) = old {
                attacks += 1;
                let who = rng.below(fleet.len());
                if fleet[who]
                    .envelope
                    .open(
                        &id,
                        &old,
                        OpenOptions::new().at(instant(t + fleet[who].offset)),
                    )
                    .map(|o| o.state)
                    .is_err()
                {
                    attacks_rejected += 1;
                }
            }
        }
    }
    // States under a retired key are rejected as `unknown key` once every instance passed the retire time.
    for (token, id, retire) in &retired_tokens {
        for inst in &fleet {
            let now = retire + 61.0 + inst.offset;
            inst.scheduler
                .refresh_at(instant(now))
                .await
                .expect("refresh");
            let err = inst
                .envelope
                .open(id, token, OpenOptions::new().at(instant(now)))
                .map(|o| o.state)
                .expect_err("retired key");
            assert_eq!(err.reject_reason(), Some(RejectReason::UnknownKey));
        }
    }
    eprintln!(
        "fleet: seed {seed:#x}, {rounds} rounds, {unexpected} unexpected rejections, {attacks_rejected}/{attacks} attacks rejected, phases {phases_seen:?}, kms calls {:?}",
        fleet
            .iter()
            .map(|i| i.scheduler.kms_calls())
            .collect::<Vec<_>>()
    );
    assert_eq!(unexpected, 0, "valid rounds were rejected");
    assert_eq!(attacks, attacks_rejected, "an attack was accepted");
    assert_eq!(rotations, 3);
    assert_eq!(phases_seen, BTreeSet::from([1, 2, 3]));
    assert!(rounds > 10_000, "{rounds} rounds");
    for inst in &fleet {
        // O(keys), not O(requests): four keys, at most one re-unwrap each after max_key_age.
        assert!(
            inst.scheduler.kms_calls() <= 8,
            "kms calls {}",
            inst.scheduler.kms_calls()
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
