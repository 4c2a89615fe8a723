//! The thread's spare seal buffer.
//!
//! A payload of about 1 KiB or more is above the C library allocator's small
//! per-thread caches (glibc's tcache ends at 1032 bytes), where an allocation
//! and its release cost more than sealing a kilobyte does. So the built-in
//! codec keeps the buffer it sealed in, and the thread's next payload is
//! written into it: measured at 1 KiB states, mint ~530 -> ~466 ns.
//!
//! Only sealed buffers are kept: by then the payload was encrypted in place,
//! so a kept buffer holds what the token discloses anyway (key id, nonce,
//! ciphertext, tag), never plaintext. Buffers that failed to seal are
//! dropped, as before.

use std::cell::Cell;

/// Buffers above this capacity are released, not kept: one large state must
/// not pin its memory to the thread for good.
const KEEP_AT_MOST: usize = 64 * 1024;

thread_local! {
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// An empty buffer, with the capacity of the thread's last sealed one if kept.
pub(crate) fn payload_buffer() -> Vec<u8> {
    // `try_with` fails only while the thread is exiting: then a new buffer.
    SPARE.try_with(Cell::take).unwrap_or_default()
}

/// Keeps `sealed` for the thread's next payload. Only for a buffer that holds
/// no plaintext (its payload was encrypted in place).
pub(crate) fn keep_sealed(mut sealed: Vec<u8>) {
    if sealed.capacity() <= KEEP_AT_MOST {
        sealed.clear();
        let _ = SPARE.try_with(|spare| spare.set(sealed));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{AesGcmCodec, InPlaceCodec, SEAL_HEADROOM, StateCodec, TAG_LEN};
    use super::*;
    use crate::error::{DataError, Error};
    use crate::ring::{KeyRing, RingHandle};
    use crate::secret::Secret;

    #[test]
    fn a_kept_buffer_comes_back_empty_and_large_ones_are_let_go() {
        let mut sealed = Vec::with_capacity(2048);
        sealed.extend_from_slice(&[7; 1500]);
        let at = sealed.as_ptr();
        keep_sealed(sealed);
        let again = payload_buffer();
        assert!(again.is_empty());
        assert_eq!((again.as_ptr(), again.capacity()), (at, 2048));
        // Taken: the next caller on this thread gets a new buffer, not a shared one.
        assert_eq!(payload_buffer().capacity(), 0);
        keep_sealed(Vec::with_capacity(KEEP_AT_MOST + 1));
        assert_eq!(payload_buffer().capacity(), 0);
    }

    #[test]
    fn a_sealed_buffer_is_kept_for_the_next_payload_and_a_failed_one_is_not() {
        let c = AesGcmCodec::new(Arc::new(RingHandle::new(
            KeyRing::from_secrets(&[Secret::new(vec![3; 32]).unwrap()]).unwrap(),
        )));
        let _ = payload_buffer();
        let token = c.seal(&[b'p'; 3000]).unwrap();
        let kept = payload_buffer();
        assert!(kept.is_empty() && kept.capacity() >= 3000 + SEAL_HEADROOM + TAG_LEN);
        // A payload written into the kept buffer seals and opens like any other.
        let mut again = kept;
        again.resize(SEAL_HEADROOM, 0);
        again.extend_from_slice(b"next");
        let next = c.seal_in_place_to_string(again).unwrap();
        assert_eq!(c.unseal(&next).unwrap(), b"next");
        assert_eq!(c.unseal(&token).unwrap(), vec![b'p'; 3000]);
        // No ring loaded: the seal fails before encrypting, and its buffer (plaintext) is not kept.
        let _ = payload_buffer();
        let unready = AesGcmCodec::new(Arc::new(RingHandle::empty()));
        assert!(matches!(
            unready.seal(&[b's'; 3000]),
            Err(Error::Data(DataError::NotReady))
        ));
        assert_eq!(payload_buffer().capacity(), 0);
    }
}
