//! The binding probe of the provider contract: a wrapped key unwraps only
//! under the [`WrapContext`] it was wrapped for.
//!
//! Why it is a rule and not a nicety: the keyset's MAC key is a wrapped key
//! like any other, unwrapped for (keyset id, `keyset-mac`). If a provider
//! ignored the context, someone who can write the store and knows any one key
//! wrapped under the same KEK (a data key that leaked and was rotated out, a
//! key of a staging keyset under the same KEK) would put that key's wrapped
//! bytes where the MAC key's go, tag a document of their own with the key
//! they know, and the fleet would adopt it. The last case here is exactly that
//! forgery, through the real keyset verification.

use crate::instant;
use std::path::Path;

use stateseal::keyset::{KeysetPins, MAC_PURPOSE, MacKey, MacKeyRef, NEWEST_COPY_SUFFIX};
use stateseal::provider::WrapContext;
use stateseal::rotation::{KeysetTrust, Timing, TrustPolicy, init_keyset};
use stateseal::{
    Error, ErrorClass, FileStore, KeyProvider, KeysetError, KeysetRefusal, KeysetStore,
    ProviderRegistry,
};
use stateseal::{Secret, StoredKeyset};

use crate::keysets::FAR_FUTURE;

/// The keyset id the direct probes wrap for.
const KEYSET: &str = "ks_contract";
const T0: f64 = 1_782_345_600.0;

pub(crate) fn ctx<'a>(keyset_id: &'a str, entry_id: &'a str) -> WrapContext<'a> {
    WrapContext {
        keyset_id,
        entry_id,
    }
}

pub(crate) fn class(r: Result<Secret, Error>) -> Option<ErrorClass> {
    r.err().and_then(|e| e.kms_class())
}

/// Unwrapping `wrapped` (made for `from`) under `to` must be refused as `Invalid`.
async fn refused_elsewhere(
    provider: &dyn KeyProvider,
    kek: &str,
    wrapped: &[u8],
    (from, to): (WrapContext<'_>, WrapContext<'_>),
    case: &str,
) {
    let moved = provider.unwrap(kek, wrapped, to).await;
    let got = match &moved {
        Ok(_) => "the key".to_owned(),
        Err(e) => format!("error {e}"),
    };
    assert_eq!(
        class(moved),
        Some(ErrorClass::Invalid),
        "provider contract {kek}: binding: {case}: a key wrapped for {}/{} must not unwrap for {}/{} (expected an Invalid error, got {got}); bind the wrap to WrapContext::associated_data()",
        from.keyset_id,
        from.entry_id,
        to.keyset_id,
        to.entry_id,
    );
}

/// The forgery through a keyset in `dir` (what an unbound provider allows),
/// then every direct probe (the finer mistakes: one id left out, the ids run
/// together, the purpose ignored).
pub(crate) async fn probe(registry: &ProviderRegistry, kek: &str, dir: &Path) {
    let provider = registry.provider_for(kek).expect("provider");
    let provider = provider.as_ref();
    let data = ctx(KEYSET, "k_a");
    let dk = provider.generate(kek, data).await.expect("generate");
    assert_eq!(
        dk.plaintext.expose().len(),
        32,
        "provider contract {kek}: generate: a data key is 32 bytes"
    );
    assert!(
        !dk.wrapped.windows(32).any(|w| w == dk.plaintext.expose()),
        "provider contract {kek}: generate: the wrapped key carries the key in the clear"
    );
    let back = provider
        .unwrap(kek, &dk.wrapped, data)
        .await
        .unwrap_or_else(|e| panic!("provider contract {kek}: unwrap: the key just wrapped: {e}"));
    assert_eq!(
        back.expose(),
        dk.plaintext.expose(),
        "provider contract {kek}: unwrap: a wrapped key unwraps to itself"
    );
    forged_mac_key(registry, provider, kek, dir).await;
    let moves = [
        (ctx("ks_other", "k_a"), "keyset"),
        (ctx(KEYSET, "k_b"), "entry"),
        (
            ctx(KEYSET, MAC_PURPOSE),
            "purpose (a data key as the MAC key)",
        ),
        // The two ids run together give the same bytes: a separator is needed.
        (ctx("ks_contractk", "_a"), "separator"),
    ];
    for (to, case) in moves {
        refused_elsewhere(provider, kek, &dk.wrapped, (data, to), case).await;
    }
    let mac = ctx(KEYSET, MAC_PURPOSE);
    let mac_key = provider.generate(kek, mac).await.expect("generate");
    for (to, case) in [
        (ctx("ks_other", MAC_PURPOSE), "MAC key of another keyset"),
        (ctx(KEYSET, "k_a"), "purpose (the MAC key as a data key)"),
    ] {
        refused_elsewhere(provider, kek, &mac_key.wrapped, (mac, to), case).await;
    }
}

/// A store writer who knows one data key of the keyset (it leaked) makes it
/// the MAC key of a document they wrote: the pinned fleet must refuse it.
async fn forged_mac_key(
    registry: &ProviderRegistry,
    provider: &dyn KeyProvider,
    kek: &str,
    dir: &Path,
) {
    let path = dir.join("binding-probe.json");
    let clean = || {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(dir.join(format!("binding-probe.json{NEWEST_COPY_SUFFIX}")));
    };
    clean();
    let store = FileStore::new(&path);
    let doc = init_keyset(&store, registry, kek, Timing::default(), instant(T0))
        .await
        .unwrap_or_else(|e| panic!("provider contract {kek}: init: {e}"));
    let entry = &doc.keys[0];
    let leaked = provider
        .unwrap(kek, &entry.wrapped, ctx(&doc.id, &entry.entry))
        .await
        .expect("unwrap the keyset's key");
    // The attacker's document: the leaked key never retires.
    let mut forged = doc.clone();
    forged.generation += 1;
    forged.keys[0].retire_at = None;
    let reference = MacKeyRef {
        kek: kek.to_owned(),
        wrapped: entry.wrapped.clone(),
    };
    let key = MacKey::from_secret(&leaked).expect("mac key");
    let stored = StoredKeyset::seal(&forged, FAR_FUTURE, &reference, &key).expect("seal");
    let trust = KeysetTrust::new(TrustPolicy {
        pins: Some(KeysetPins::new(&doc.id, [kek]).expect("pins")),
        ..TrustPolicy::default()
    });
    let verdict = trust
        .open_ignoring_expiry(registry, store.uri(), &stored)
        .await;
    clean();
    match verdict {
        Err(Error::Keyset(KeysetError::Refused {
            reason: KeysetRefusal::Mac,
            ..
        })) => {}
        Ok(_) => panic!(
            "provider contract {kek}: binding: forged MAC key: a document tagged with a leaked data key, its wrap put where the MAC key's goes, was adopted by a pinned fleet"
        ),
        Err(e) => panic!(
            "provider contract {kek}: binding: forged MAC key: the document must be refused as `mac` (a data key's wrap unwrapped as the MAC key must be an Invalid error), got {e}"
        ),
    }
}
