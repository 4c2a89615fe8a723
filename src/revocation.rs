//! Revoking issued states without a rotation: which verified states a
//! revocation list refuses.
//!
//! Entries come from the authenticated keyset document (the key plane writes,
//! vets and prunes them) and travel inside the [`KeyRing`](crate::KeyRing) the
//! scheduler publishes, so the check costs no lock, no await and no network.
//! A state is covered when it was issued (`iat`) before an entry's `before`
//! and the entry selects it: every state, the caller's client id, or the
//! caller's principal. Only states that passed every other check get here.

use std::collections::HashMap;
use std::fmt;

use sha2::{Digest, Sha256};

use crate::clock::UnixTime;
use crate::json::push_wtf8;
use crate::principal::Principal;

/// Label hashed in front of a principal in a revocation entry.
///
/// The digest is unkeyed: whoever can read the keyset store can test a guessed
/// principal against it. It keeps principals out of the document in the clear,
/// no more (a keyed digest would need a key every verifier holds and every
/// write keeps, which the document's MAC key is not: `keyset upgrade` replaces it).
pub const REVOCATION_PRINCIPAL_LABEL: &[u8] = b"stateseal/revocation/principal:";

/// Length of a principal digest.
pub const PRINCIPAL_DIGEST_LEN: usize = 32;

/// What a revocation entry selects.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RevocationSelector {
    /// Every state.
    All,
    /// States bound to a principal whose client id (the first component of
    /// [`Principal::from_components`]' `[client_id, issuer, subject]`) is this.
    ClientId(String),
    /// States bound to the principal with this digest ([`principal_digest`]).
    Principal([u8; PRINCIPAL_DIGEST_LEN]),
}

impl fmt::Debug for RevocationSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("All"),
            Self::ClientId(id) => f.debug_tuple("ClientId").field(id).finish(),
            // A prefix identifies the entry; the whole digest is a guessing oracle's input.
            Self::Principal(d) => write!(f, "Principal({}…)", hex_prefix(d)),
        }
    }
}

/// One revocation: the states `selector` selects that were issued before `before`.
#[derive(Debug, Clone, PartialEq)]
pub struct Revocation {
    /// Whose states.
    pub selector: RevocationSelector,
    /// States with an `iat` at or before this are refused (at: a coarse
    /// clock gives a state minted in the same tick as the revocation an
    /// `iat` equal to it).
    pub before: UnixTime,
}

impl Revocation {
    /// `principal`'s states issued before `before`.
    pub fn principal(principal: &Principal, before: UnixTime) -> Self {
        Self {
            selector: RevocationSelector::Principal(principal_digest(principal.as_bytes())),
            before,
        }
    }

    /// The states of every principal with `client_id`, issued before `before`.
    pub fn client_id(client_id: &str, before: UnixTime) -> Self {
        Self {
            selector: RevocationSelector::ClientId(client_id.to_owned()),
            before,
        }
    }

    /// Every state issued before `before`.
    pub fn all_before(before: UnixTime) -> Self {
        Self {
            selector: RevocationSelector::All,
            before,
        }
    }

    /// `principal`, `client_id` or `all`: the document's `kind`.
    pub fn kind(&self) -> &'static str {
        match self.selector {
            RevocationSelector::All => "all",
            RevocationSelector::ClientId(_) => "client_id",
            RevocationSelector::Principal(_) => "principal",
        }
    }

    /// Whether this entry covers a state issued at `iat` for `principal`.
    pub fn covers(&self, iat: UnixTime, principal: Option<&Principal>) -> bool {
        RevocationList::new(std::slice::from_ref(self))
            .covers(iat, principal.map(Principal::as_bytes))
    }
}

/// `SHA-256(REVOCATION_PRINCIPAL_LABEL ‖ principal)`: how an entry names a principal.
pub fn principal_digest(principal: &[u8]) -> [u8; PRINCIPAL_DIGEST_LEN] {
    Sha256::new()
        .chain_update(REVOCATION_PRINCIPAL_LABEL)
        .chain_update(principal)
        .finalize()
        .into()
}

/// The first eight hex digits of a digest: what status output and logs show.
pub fn hex_prefix(digest: &[u8]) -> String {
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// The entries, indexed for the verify path.
#[derive(Clone, Default)]
pub struct RevocationList {
    /// No entry covers an `iat` at or past this (`-inf` when empty): the common case costs one comparison.
    latest: f64,
    all_before: f64,
    /// Client id as `Principal::from_components` renders it (a quoted JSON string) → latest `before`.
    clients: HashMap<Vec<u8>, f64>,
    principals: HashMap<[u8; PRINCIPAL_DIGEST_LEN], f64>,
    len: usize,
}

impl fmt::Debug for RevocationList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RevocationList")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl RevocationList {
    /// The list of `entries`.
    pub fn new(entries: &[Revocation]) -> Self {
        let mut list = Self {
            latest: f64::NEG_INFINITY,
            all_before: f64::NEG_INFINITY,
            len: entries.len(),
            ..Self::default()
        };
        let later = |slot: &mut f64, before: f64| *slot = slot.max(before);
        for r in entries {
            let before = r.before.as_secs_f64();
            later(&mut list.latest, before);
            match &r.selector {
                RevocationSelector::All => later(&mut list.all_before, before),
                RevocationSelector::ClientId(id) => {
                    let mut key = Vec::with_capacity(id.len() + 2);
                    push_wtf8(id.as_bytes(), &mut key);
                    later(list.clients.entry(key).or_insert(f64::NEG_INFINITY), before);
                }
                RevocationSelector::Principal(d) => {
                    later(
                        list.principals.entry(*d).or_insert(f64::NEG_INFINITY),
                        before,
                    );
                }
            }
        }
        list
    }

    /// How many entries it was built from.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether some entry could cover a state issued at `iat`, whoever
    /// presents it: for a verifier that cannot see the principal (a codec
    /// under an SDK's own boundary), which then refuses it.
    pub fn may_cover(&self, iat: UnixTime) -> bool {
        iat.as_secs_f64() <= self.latest
    }

    /// Whether a verified state issued at `iat`, presented by `principal`
    /// (its bytes, as [`Principal::as_bytes`] gives them), is revoked.
    pub fn covers(&self, iat: UnixTime, principal: Option<&[u8]>) -> bool {
        self.covers_secs(iat.as_secs_f64(), principal)
    }

    /// [`RevocationList::covers`] of a claim's `iat` in seconds.
    pub(crate) fn covers_secs(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        // A NaN `iat` is covered by nothing (the claims check refused it already).
        if iat.is_nan() || iat > self.latest {
            return false;
        }
        if iat <= self.all_before {
            return true;
        }
        let Some(p) = principal else {
            return false;
        };
        if let Some(id) = client_id_of(p)
            && self.clients.get(id).is_some_and(|&b| iat <= b)
        {
            return true;
        }
        !self.principals.is_empty()
            && self
                .principals
                .get(&principal_digest(p))
                .is_some_and(|&b| iat <= b)
    }
}

/// The quoted client id at the front of a `[client_id, issuer, subject]`
/// principal, as `Principal::from_components` writes it; `None` for a
/// principal of another form.
fn client_id_of(p: &[u8]) -> Option<&[u8]> {
    if p.first() != Some(&b'[') || p.get(1) != Some(&b'"') {
        return None;
    }
    let mut i = 2;
    while i < p.len() {
        match p[i] {
            b'\\' => i += 2,
            b'"' => return (p.get(i + 1) == Some(&b',')).then(|| &p[1..=i]),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> UnixTime {
        UnixTime::from_secs_f64(secs).unwrap()
    }

    #[test]
    fn entries_select_by_time_client_and_principal() {
        let alice = Principal::from_components("app-1", Some("https://as"), Some("alice"));
        let bob = Principal::from_components("app-1", Some("https://as"), Some("bob"));
        let carol = Principal::from_components("app-\"2\"", None, Some("carol"));
        let list = RevocationList::new(&[
            Revocation::principal(&alice, at(100.0)),
            Revocation::client_id("app-\"2\"", at(50.0)),
        ]);
        let covers = |iat, p: &Principal| list.covers(at(iat), Some(p.as_bytes()));
        assert!(covers(99.9, &alice) && covers(100.0, &alice) && !covers(100.001, &alice));
        assert!(!covers(10.0, &bob), "another principal of the same client");
        assert!(covers(49.0, &carol) && covers(50.0, &carol) && !covers(50.001, &carol));
        assert!(
            !list.covers(at(10.0), None) && !list.covers_secs(f64::NAN, Some(alice.as_bytes()))
        );
        assert!(
            !covers(10.0, &Principal::new("app-1")),
            "not the components form"
        );
        let all = RevocationList::new(&[Revocation::all_before(at(10.0))]);
        assert!(
            all.covers(at(9.0), None)
                && all.covers(at(10.0), None)
                && !all.covers(at(10.001), None)
        );
        assert!(RevocationList::default().is_empty());
        assert!(!RevocationList::new(&[]).covers(UnixTime::EPOCH, None));
        assert_eq!(
            client_id_of(br#"["a\"b",null,null]"#),
            Some(&br#""a\"b""#[..])
        );
        assert_eq!(client_id_of(br#"["a"]"#), None);
        let entry = Revocation::principal(&alice, at(100.0));
        let RevocationSelector::Principal(d) = &entry.selector else {
            unreachable!()
        };
        let full: String = d.iter().map(|b| format!("{b:02x}")).collect();
        assert!(
            !format!("{entry:?}").contains(&full),
            "Debug shows a prefix only"
        );
        assert!(entry.covers(at(1.0), Some(&alice)) && !entry.covers(at(1.0), Some(&bob)));
    }
}
