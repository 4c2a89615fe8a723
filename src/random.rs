//! Where nonces and principal salts come from.
//!
//! Every draw asks the kernel (`getrandom(2)`) directly. The kernel holds the
//! generator state, so a `fork`ed child can never repeat its parent's nonces,
//! which a user-space generator would risk; a 12-byte draw costs a few hundred
//! nanoseconds, measured in `benches/codec.rs`.

use crate::error::{DataError, Error};

/// Fills `buf` from the operating system's CSPRNG.
pub(crate) fn fill_os(buf: &mut [u8]) -> Result<(), Error> {
    getrandom::fill(buf).map_err(|_| Error::Data(DataError::Random))
}

/// A source of random bytes for nonces and salts.
///
/// Production code always uses the operating system. The
/// `deterministic-testing` feature exposes `RandomSource::Scripted` so the
/// Python SDK's byte-exact vectors (which fix the nonce and salt) can be
/// reproduced; it must never be enabled in a server.
#[derive(Debug, Default)]
pub enum RandomSource {
    /// `getrandom(2)` on every draw.
    #[default]
    Os,
    /// Replays the given draws in order, then fails closed (testing only).
    #[cfg(feature = "deterministic-testing")]
    Scripted(std::sync::Mutex<std::collections::VecDeque<Vec<u8>>>),
}

impl RandomSource {
    /// A scripted source that hands out `draws` in order (testing only).
    #[cfg(feature = "deterministic-testing")]
    pub fn scripted(draws: Vec<Vec<u8>>) -> Self {
        Self::Scripted(std::sync::Mutex::new(draws.into()))
    }

    pub(crate) fn fill(&self, buf: &mut [u8]) -> Result<(), Error> {
        match self {
            Self::Os => fill_os(buf),
            #[cfg(feature = "deterministic-testing")]
            Self::Scripted(draws) => {
                let mut draws = draws.lock().map_err(|_| Error::Data(DataError::Random))?;
                match draws.pop_front() {
                    Some(d) if d.len() == buf.len() => {
                        buf.copy_from_slice(&d);
                        Ok(())
                    }
                    _ => Err(Error::Data(DataError::Random)),
                }
            }
        }
    }
}
