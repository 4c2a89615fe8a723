//! The AEAD primitives under both token formats: AES-256-GCM (`aead`, with its
//! backend choice) and XAES-256-GCM (`xaes`, C2SP), below the key ring and the codec.
//!
//! They are a floor of their own so that the ring's keys ([`crate::key`]) and the
//! token format ([`crate::codec`]) can both build on them without importing each other.

pub(crate) mod aead;
pub(crate) mod xaes;

/// Authentication tag length in bytes (both formats).
pub const TAG_LEN: usize = 16;
