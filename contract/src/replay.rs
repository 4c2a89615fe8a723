//! What every [`ReplayStore`] must do, run by each store's own tests: record
//! a state once and refuse it after, atomically under racing presentations,
//! keep apart states and services, keep a record no longer than asked, and
//! refuse a state issued before the store's epoch (the time since which it
//! holds every record).
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! use std::sync::Arc;
//! use stateseal::replay::MemoryReplayStore;
//!
//! stateseal_contract::replay::run(Arc::new(MemoryReplayStore::new())).await;
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use stateseal::replay::{Recorded, ReplayStore};
use stateseal::{
    Clock, Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, RingKey,
    Secret, SingleUse, SystemClock, TokenFormat, UnixTime,
};

/// The skew allowance of the contract's envelopes.
pub const SKEW: Duration = Duration::from_secs(1);

/// States to record: single-use states minted and opened by an envelope of
/// `audience`, as a boundary would.
pub struct States {
    envelope: Envelope,
    round: RequestIdentity,
}

impl States {
    /// An envelope of `audience` on a fresh `v2.` key.
    ///
    /// # Panics
    /// When the envelope cannot be built.
    pub fn new(audience: &str) -> Self {
        let key = Arc::new(RingKey::with_format(
            &Secret::generate().expect("secret"),
            TokenFormat::V2,
        ));
        let ring = Arc::new(RingHandle::new(
            KeyRing::from_keys(vec![key]).expect("ring"),
        ));
        let envelope = Envelope::builder(ring, Some(audience))
            .max_skew(SKEW)
            .build()
            .expect("envelope");
        let round =
            RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#).expect("round");
        Self { envelope, round }
    }

    /// A fresh single-use state's record, minted at `minted` and opened one second later.
    ///
    /// # Panics
    /// When minting or opening fails.
    pub fn record_at(&self, minted: UnixTime) -> SingleUse {
        let token = self
            .envelope
            .mint(
                &self.round,
                b"s",
                MintOptions::new().at(minted).single_use(true),
            )
            .expect("mint");
        let opened = self
            .envelope
            .open(
                &self.round,
                &token,
                OpenOptions::new()
                    .at(minted + Duration::from_secs(1))
                    .records_single_use(true),
            )
            .expect("open");
        opened.single_use.expect("a single-use state")
    }

    /// A fresh single-use state's record, minted past the epoch of any store
    /// made before this call: [`SKEW`] and a second ahead of now (a store
    /// refuses states issued up to the skew allowance after its epoch, and
    /// tests do not wait for time to pass).
    pub fn record(&self) -> SingleUse {
        self.record_at(SystemClock.now() + SKEW + Duration::from_secs(1))
    }
}

/// Runs every rule against `store` (made before this call, empty of these
/// states; records expire on the system clock).
///
/// # Panics
/// On the first rule the store breaks, saying which.
pub async fn run(store: Arc<dyn ReplayStore>) {
    store
        .prepare()
        .await
        .expect("the store connects and sets its epoch");
    let bank = States::new("bank");
    // Once, then refused.
    let once = bank.record();
    assert_eq!(
        store.record(&once).await,
        Ok(Recorded::First),
        "a new state is recorded"
    );
    assert_eq!(
        store.record(&once).await,
        Ok(Recorded::Replay),
        "a second presentation is a replay"
    );
    // Other states and other services are independent.
    let other = bank.record();
    assert_ne!(other.key(), once.key());
    assert_eq!(
        store.record(&other).await,
        Ok(Recorded::First),
        "another state is its own"
    );
    let shop = States::new("shop");
    assert_eq!(store.record(&shop.record()).await, Ok(Recorded::First));
    // Racing presentations of one state: exactly one is recorded.
    for _ in 0..20 {
        let once = bank.record();
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let (store, once) = (store.clone(), once.clone());
                tokio::spawn(async move { store.record(&once).await })
            })
            .collect();
        let mut first = 0;
        for r in racers {
            let verdict = r.await.expect("racer").expect("recorded or refused");
            first += usize::from(verdict == Recorded::First);
        }
        assert_eq!(
            first, 1,
            "exactly one of 8 racing presentations is recorded"
        );
    }
    // A record is kept no longer than asked: one whose time has passed
    // (minted long ago) does not refuse the state again.
    let now = SystemClock.now();
    let old = bank.record_at(now - Duration::from_secs(7200));
    assert!(old.keep_until() < now);
    assert_eq!(store.record(&old).await, Ok(Recorded::First));
    assert_eq!(
        store.record(&old).await,
        Ok(Recorded::First),
        "a record past keep_until is gone"
    );
    // Issued before the store's epoch (and still live): a record of it may
    // have been lost, so it is refused however often it comes.
    let before = bank.record_at(now - Duration::from_secs(10));
    assert!(before.keep_until() > now);
    for _ in 0..2 {
        assert_eq!(
            store.record(&before).await,
            Ok(Recorded::BeforeEpoch),
            "a state issued before the store's epoch is refused"
        );
    }
    assert!(!store.uri().is_empty());
}
