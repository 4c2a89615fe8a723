//! # stateseal
//!
//! Seals the MCP multi-round-trip `requestState` (spec 2026-07-28, SEP-2322)
//! so a server can trust the echo a client sends back, inside a claims
//! envelope that binds each state to its expiry, request, audience and caller.
//! Keys from a keyset seal XAES-256-GCM `v2.` tokens (a 192-bit nonce: no
//! seal budget to count); static keys seal AES-256-GCM `v1.` tokens under
//! HKDF-SHA256 keys with a 4-byte key id, byte-compatible with the Python MCP
//! SDK (mcp 2.3.0), whose own codec opens `v1.` only: a fleet mixed with
//! Python SDK servers uses static `v1.` keys; stateseal's Python and Node
//! packages open both.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use stateseal::{Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, Secret};
//!
//! let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
//! let envelope = Envelope::builder(ring, Some("my-server"))
//!     .ttl(Duration::from_secs(300))
//!     .build()?;
//! let round = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{}}"#)?;
//! let token = envelope.mint(&round, "step-2", MintOptions::new())?;
//! let opened = envelope.open(&round, &token, OpenOptions::new())?;
//! assert_eq!(opened.state.as_str(), Some("step-2"));
//! # Ok::<(), stateseal::Error>(())
//! ```
//!
//! ## Layers and features
//!
//! The **data plane** (always built: codec, envelope, ring, boundary, and with
//! the `rmcp` feature the rmcp adapter) seals and verifies without I/O (a
//! single-use round's [`boundary::Boundary::admit`] alone awaits its replay
//! store). It
//! sees keys only through a [`RingHandle`]. The **key plane** (feature `keys`,
//! on by default: [`provider`], [`keyset`], [`rotation`], [`setup`]) fetches
//! data keys from a KMS, keeps the shared keyset, rotates, and swaps rings
//! into the handle; it brings tokio, moka, toml and time. A server that manages
//! its keys itself builds with `default-features = false` (plus `rmcp` if it
//! wants the adapter).
#![forbid(unsafe_code)]

pub mod boundary;
mod cipher;
mod clock;
mod codec;
mod envelope;
mod error;
mod future;
#[cfg(feature = "internals")]
pub mod json;
#[cfg(not(feature = "internals"))]
mod json;
mod key;
#[cfg(feature = "keys")]
pub mod keyset;
mod principal;
#[cfg(feature = "keys")]
pub mod provider;
mod random;
mod reason;
pub mod replay;
mod revocation;
mod ring;
#[cfg(feature = "rmcp")]
pub mod rmcp_adapter;
#[cfg(feature = "keys")]
pub mod rotation;
mod secret;
#[cfg(feature = "keys")]
pub mod setup;
#[cfg(feature = "keys")]
mod uri;

pub use cipher::aead::{AEAD_SETTING, AEAD_SPLIT_AT, AeadBackend, AeadChoice};
pub use clock::{Clock, ManualClock, SystemClock, UnixTime};
pub use codec::{
    AesGcmCodec, InPlaceCodec, NONCE_LEN, SEAL_HEADROOM, StateCodec, TAG_LEN, TOKEN_PREFIX,
    token_key_id,
};
pub use envelope::{
    CARRIER_METHODS, DEFAULT_MAX_TOKEN_LEN, DEFAULT_TTL, ENVELOPE_VERSION, Envelope,
    EnvelopeBuilder, FUTURE_SKEW, MintOptions, OpenOptions, Opened, PRINCIPAL_LABEL, Principal,
    RequestBatch, RequestIdentity, SdkPayload, SingleUse,
};
pub use error::{DataError, Error, ErrorClass, KeysetError, KeysetRefusal, ProviderError};
pub use json::Text;
#[cfg(feature = "deterministic-testing")]
pub use key::derived_key;
pub use key::{KDF_INFO, KDF_INFO_V2, KID_INFO, KID_INFO_V2, KID_LEN, KeyId, RingKey, TokenFormat};
#[cfg(feature = "keys")]
pub use keyset::{FileStore, KeyEntry, Keyset, KeysetStore, StoredKeyset};
#[cfg(feature = "keys")]
pub use provider::{KeyProvider, LocalProvider, ProviderRegistry};
pub use random::RandomSource;
pub use reason::RejectReason;
pub use revocation::{
    PRINCIPAL_DIGEST_LEN, REVOCATION_PRINCIPAL_LABEL, Revocation, RevocationList,
    RevocationSelector, hex_prefix, principal_digest,
};
pub use ring::{KeyRing, RingHandle};
#[cfg(feature = "keys")]
pub use rotation::{RotationScheduler, SchedulerConfig};
pub use secret::{MIN_SECRET_LEN, Secret};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The operations guide's examples, compiled as doctests.
#[doc = include_str!("../docs/operations.md")]
#[cfg(all(doctest, feature = "keys"))]
pub struct OperationsDoctests;

/// The provider guide's examples, compiled as doctests.
#[doc = include_str!("../docs/providers.md")]
#[cfg(all(doctest, feature = "keys"))]
pub struct ProvidersDoctests;
