//! Keyset writes shared by servers and operators: create a keyset, and rotate
//! one. A rotation is first worked out and proven against the KMS
//! ([`plan_rotation`]), then written with one compare-and-swap
//! ([`RotationPlan::apply`]); a dry run stops after the plan.

use super::newest::write_keyset;
use super::proof::{prove_live_keys, prove_new_key};
use super::timeline::{RingPlan, RotateMode, ring_at, rotated};
use super::trust::{DEFAULT_KEYSET_VALIDITY, KeysetTrust, VerifiedKeyset, seal_with_new_mac_key};
use crate::clock::UnixTime;
use crate::error::{DataError, Error, KeysetError, ProviderError};
use crate::key::{KeyId, TokenFormat};
use crate::keyset::{
    KeyEntry, Keyset, KeysetStore, StoredKeyset, Timing, document_time, is_representable_secs,
    random_id,
};
use crate::provider::{ProviderRegistry, WrapContext};

/// How many keys may unseal at once after a forced rotation, unless the caller
/// allows more: steady state holds one, a rotation two, two forced rotations in
/// a row four. Each live key is a KMS unwrap on every instance.
pub const DEFAULT_MAX_LIVE_KEYS: usize = 4;

/// Writes a new authenticated keyset with one key, active from `now`, carrying
/// the fleet's timing profile (`stateseal init`): its MAC key is generated
/// under `kek` too, bound to (keyset id, `keyset-mac`).
///
/// The new key's wrap is round-tripped through the KMS before anything is written.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use stateseal::rotation::{Timing, init_keyset};
/// use stateseal::{FileStore, KeysetStore, LocalProvider, ProviderRegistry, UnixTime};
/// let dir = std::env::temp_dir().join(format!("stateseal-doc-init-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// LocalProvider::create_kek(&dir.join("kek"))?;
/// let mut registry = ProviderRegistry::with_defaults();
/// registry.allow_local_kek();
/// let store = FileStore::new(dir.join("keyset.json"));
/// let kek = format!("local://{}", dir.join("kek").display());
/// let doc = init_keyset(&store, &registry, &kek, Timing::default(), UnixTime::from_secs(1_782_345_600)).await?;
/// assert_eq!(doc.generation, 1);
/// assert_eq!(doc.timing, Some(Timing::default()));
/// assert!(doc.keys[0].kid.is_some());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
/// [`KeysetError::Conflict`] when the store already holds a keyset; [`Error::Config`]
/// for an invalid timing or time; provider and store errors.
pub async fn init_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    kek: &str,
    timing: Timing,
    now: UnixTime,
) -> Result<Keyset, Error> {
    let now = now.as_secs_f64();
    timing.validate()?;
    check_time(now)?;
    let now = document_time(now);
    if let Some(existing) = store.load().await? {
        return Err(Error::Keyset(KeysetError::Conflict {
            expected: None,
            found: Some(existing.generation()),
        }));
    }
    let id = random_id("ks_")?;
    let (new, _) = new_entry(registry, kek, &id, now).await?;
    let doc = Keyset {
        id,
        generation: first_generation(store).await?,
        keys: vec![new],
        timing: Some(timing),
        rotation_claim: None,
        revocations: Vec::new(),
    };
    let (stored, _) = seal_with_new_mac_key(
        registry,
        &doc,
        kek,
        UnixTime::from_finite_secs(now) + DEFAULT_KEYSET_VALIDITY,
    )
    .await?;
    write_keyset(store, None, &stored).await?;
    Ok(doc)
}

/// 1, or above the newest copy an earlier keyset left at this location, so
/// that writes of the new keyset update that copy. A copy's generation beyond
/// 2^53 (no legitimate writer gets there) is not honoured: a store writer must
/// not push a new keyset to the end of the generation range.
async fn first_generation(store: &dyn KeysetStore) -> Result<u64, Error> {
    const HONOURED: u64 = 1 << 53;
    let Some(copy) = store.newest_copy() else {
        return Ok(1);
    };
    Ok(match copy.load().await {
        Ok(Some(held)) if held.generation() < HONOURED => held.generation() + 1,
        Ok(_) | Err(Error::Keyset(KeysetError::Invalid { .. })) => 1,
        Err(e) => return Err(e),
    })
}

/// A rotation worked out and proven against the KMS, not yet written.
#[derive(Debug, Clone)]
pub struct RotationPlan {
    /// The verified document the rotation builds on (its generation is the
    /// compare-and-swap's; its MAC key tags the next one).
    pub base: VerifiedKeyset,
    /// The document the rotation writes.
    pub next: Keyset,
    /// The new entry's id.
    pub entry: String,
    /// The new key's id.
    pub kid: KeyId,
    /// The timing the timeline was planned with.
    pub timing: Timing,
    /// Entries the rotation drops from the document (retired on every instance's clock).
    pub pruned: Vec<String>,
    /// When the written document goes stale (default: `now` + 7 days).
    pub expires_at: UnixTime,
}

impl RotationPlan {
    /// The new entry, as written.
    pub fn new_entry(&self) -> Option<&KeyEntry> {
        self.next.entry(&self.entry)
    }

    /// When the entries the new key supersedes stop unsealing (the latest such time).
    pub fn retire_previous_at(&self) -> Option<UnixTime> {
        self.next
            .keys
            .iter()
            .filter(|e| e.entry != self.entry)
            .filter_map(|e| e.retire_at)
            .max()
    }

    /// The next document, tagged under the base's MAC key.
    ///
    /// # Errors
    /// [`Error::Config`] when the base was unauthenticated (upgrade it first).
    pub fn sealed(&self) -> Result<StoredKeyset, Error> {
        self.base.seal_next(&self.next, self.expires_at)
    }

    /// Writes the plan with one compare-and-swap on the base generation.
    ///
    /// # Errors
    /// [`KeysetError::Conflict`] when the store moved on since the plan; store errors;
    /// [`Error::Config`] for an unauthenticated base.
    pub async fn apply(&self, store: &dyn KeysetStore) -> Result<(), Error> {
        write_keyset(store, Some(self.base.doc.generation), &self.sealed()?).await
    }
}

/// Works out a rotation of `doc` at `now` and proves it before anything is
/// written: every live key unwraps with its KEK (to the key id the document
/// recorded), and the new key, generated under the primary's KEK, unwraps to
/// itself. A wrong KEK, a tampered wrapped key or an edited keyset id is
/// refused here rather than written.
///
/// `timing` is the document's profile when it has one and the caller passes
/// `None`. A forced rotation is refused when more than `max_live_keys` keys
/// would unseal at once.
///
/// # Errors
/// [`KeysetError::RotationInFlight`] (scheduled mode); [`KeysetError::RotationRefused`];
/// [`Error::Config`] for an invalid timing or time; provider errors.
pub async fn plan_rotation(
    base: &VerifiedKeyset,
    registry: &ProviderRegistry,
    timing: Option<Timing>,
    now: UnixTime,
    mode: RotateMode,
    max_live_keys: usize,
) -> Result<RotationPlan, Error> {
    let now = now.as_secs_f64();
    let doc = &base.doc;
    if !base.is_authenticated() {
        return Err(Error::Config(
            "the keyset is unauthenticated (stateseal.keyset/v1): convert it with `stateseal keyset upgrade` before rotating".into(),
        ));
    }
    let timing = timing.or(doc.timing).unwrap_or_default();
    timing.validate()?;
    check_time(now)?;
    let now = document_time(now);
    if mode == RotateMode::Scheduled
        && let Some(why) = super::timeline::in_flight(doc, now)
    {
        return Err(Error::Keyset(KeysetError::RotationInFlight(why)));
    }
    let plan = ring_at(doc, now);
    let live = plan.as_ref().map(|p| p.ring.clone()).unwrap_or_default();
    if mode == RotateMode::Forced && live.len() >= max_live_keys {
        return Err(Error::Keyset(KeysetError::RotationRefused(format!(
            "{} keys already unseal and the limit is {max_live_keys}; wait until older keys retire, or allow more live keys",
            live.len()
        ))));
    }
    prove_live_keys(doc, registry, &live).await?;
    // Under the primary's KEK; with every key retired, under the newest entry's.
    let kek = primary_kek(doc, plan.as_ref()).ok_or(Error::Data(DataError::NotReady))?;
    let (new, kid) = new_entry(registry, &kek, &doc.id, now).await?;
    let entry = new.entry.clone();
    let next = rotated(doc, new, now, &timing, mode)?;
    next.validate()?;
    let pruned = doc
        .keys
        .iter()
        .filter(|e| next.entry(&e.entry).is_none())
        .map(|e| e.entry.clone())
        .collect();
    Ok(RotationPlan {
        base: base.clone(),
        next,
        entry,
        kid,
        timing,
        pruned,
        expires_at: UnixTime::from_finite_secs(now) + DEFAULT_KEYSET_VALIDITY,
    })
}

/// The generation an operator's write carries: the next one, or the Unix time
/// in seconds when that is higher (see [`rotate_keyset`](super::rotate_keyset)).
///
/// ```
/// use stateseal::UnixTime;
/// use stateseal::rotation::operator_generation;
/// let now = UnixTime::from_millis(1_782_345_600_500);
/// assert_eq!(operator_generation(7, now), 1_782_345_600);
/// assert_eq!(operator_generation(1_782_345_600, now), 1_782_345_601);
/// ```
pub fn operator_generation(previous: u64, now: UnixTime) -> u64 {
    let now = now.as_secs_f64();
    previous.saturating_add(1).max(now.max(0.0) as u64)
}

/// The store's document as stored (not yet verified), or an error that says
/// how to create one.
///
/// # Errors
/// [`ProviderError::Store`] when the store holds no document; store errors.
pub async fn load_existing(store: &dyn KeysetStore) -> Result<StoredKeyset, Error> {
    store.load().await?.ok_or_else(|| {
        Error::Provider(ProviderError::Store {
            uri: store.uri().to_owned(),
            problem: "no keyset document; create one with `stateseal init`".into(),
        })
    })
}

/// The store's document, verified under `trust` at `now`: what every reader
/// and writer starts from.
///
/// # Errors
/// As [`load_existing`]; [`KeysetError::Refused`] naming the reason; provider
/// errors from the MAC key's unwrap.
pub async fn load_verified(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    now: UnixTime,
) -> Result<VerifiedKeyset, Error> {
    let stored = load_existing(store).await?;
    trust.open(registry, store.uri(), &stored, now).await
}

/// The KEK new keys go under: the primary's, or with every key retired, the
/// newest entry's.
pub(crate) fn primary_kek(doc: &Keyset, plan: Option<&RingPlan>) -> Option<String> {
    plan.and_then(|p| doc.entry(&p.primary))
        .or_else(|| doc.keys.last())
        .map(|e| e.kek.clone())
}

fn check_time(now: f64) -> Result<(), Error> {
    if is_representable_secs(now) {
        Ok(())
    } else {
        Err(Error::Config(
            "the time must be Unix seconds between 1970 and 9999 (not milliseconds)".into(),
        ))
    }
}

/// The format new keyset keys seal: `v2.` tokens carry no seal budget, so
/// servers need not write the keyset to seal with them.
pub const NEW_KEY_FORMAT: TokenFormat = TokenFormat::V2;

/// A new entry under `kek` (a [`NEW_KEY_FORMAT`] key), its wrap proven to
/// round-trip, and its key id.
async fn new_entry(
    registry: &ProviderRegistry,
    kek: &str,
    keyset_id: &str,
    now: f64,
) -> Result<(KeyEntry, KeyId), Error> {
    let entry = random_id("k_")?;
    let provider = registry.provider_for(kek)?;
    let ctx = WrapContext {
        keyset_id,
        entry_id: &entry,
    };
    let dk = provider.generate(kek, ctx).await?;
    let kid = prove_new_key(provider.as_ref(), kek, &dk, ctx, NEW_KEY_FORMAT).await?;
    let entry = KeyEntry {
        entry,
        kid: Some(kid),
        alg: NEW_KEY_FORMAT,
        kek: kek.to_owned(),
        wrapped: dk.wrapped,
        created_at: UnixTime::from_finite_secs(now),
        activate_at: UnixTime::from_finite_secs(now),
        retire_at: None,
        seals_reserved: 0,
    };
    Ok((entry, kid))
}
