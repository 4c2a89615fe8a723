//! What every [`ReplayStore`] must do, run by each store's own tests: record
//! a state once and refuse it after, atomically under racing presentations,
//! keep apart states and services, and keep a record no longer than asked.
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

use stateseal::replay::ReplayStore;
use stateseal::{
    AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, RingKey, Secret, SingleUse,
    SystemClock, TokenFormat,
};

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
        let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some(audience))
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
    pub fn record_at(&self, minted: f64) -> SingleUse {
        let token = self
            .envelope
            .mint_single_use_at(&self.round, b"s", None, minted)
            .expect("mint");
        let (_, once) = self
            .envelope
            .open_at(&self.round, &token, None, minted + 1.0)
            .expect("open");
        once.expect("a single-use state")
    }

    /// A fresh single-use state's record, minted now.
    pub fn record(&self) -> SingleUse {
        self.record_at(stateseal::Clock::now(&SystemClock))
    }
}

/// Runs every rule against `store` (empty of these states; records expire on
/// the system clock).
///
/// # Panics
/// On the first rule the store breaks, saying which.
pub async fn run(store: Arc<dyn ReplayStore>) {
    let bank = States::new("bank");
    // Once, then refused.
    let once = bank.record();
    assert_eq!(
        store.record(&once).await,
        Ok(true),
        "a new state is recorded"
    );
    assert_eq!(
        store.record(&once).await,
        Ok(false),
        "a second presentation is a replay"
    );
    // Other states and other services are independent.
    let other = bank.record();
    assert_ne!(other.key(), once.key());
    assert_eq!(
        store.record(&other).await,
        Ok(true),
        "another state is its own"
    );
    let shop = States::new("shop");
    assert_eq!(store.record(&shop.record()).await, Ok(true));
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
            first += usize::from(r.await.expect("racer").expect("recorded or refused"));
        }
        assert_eq!(
            first, 1,
            "exactly one of 8 racing presentations is recorded"
        );
    }
    // A record is kept no longer than asked: one whose time has passed
    // (minted long ago) does not refuse the state again.
    let now = stateseal::Clock::now(&SystemClock);
    let old = bank.record_at(now - 7200.0);
    assert!(old.keep_until() < now);
    assert_eq!(store.record(&old).await, Ok(true));
    assert_eq!(
        store.record(&old).await,
        Ok(true),
        "a record past keep_until is gone"
    );
    assert!(!store.uri().is_empty());
}
