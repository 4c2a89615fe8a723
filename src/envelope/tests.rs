//! The envelope with a codec of the caller's (claims are checked for every
//! codec; only the built-in one is offered the in-place forms).

use std::sync::Arc;
use std::sync::Mutex;

use super::{Envelope, MintOptions, OpenOptions, RequestIdentity};
use crate::codec::{StateCodec, b64u_decode, b64u_encode};
use crate::error::Error;
use crate::reason::RejectReason;
use crate::ring::RingHandle;

/// A codec with only `seal` and `unseal` (no in-place forms): the envelope
/// hands it the payload without the headroom, gives `unseal` text only
/// (bytes that are not UTF-8 are malformed before the codec sees them), and
/// still checks every claim.
#[test]
fn a_codec_without_in_place_forms_gets_the_bare_payload() {
    #[derive(Default)]
    struct Plain(Mutex<Vec<Vec<u8>>>);
    impl StateCodec for Plain {
        fn seal(&self, payload: &[u8]) -> Result<String, Error> {
            self.0.lock().unwrap().push(payload.to_vec());
            Ok(b64u_encode(payload))
        }
        fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
            b64u_decode(token.as_bytes()).ok_or(Error::Rejected(RejectReason::Malformed))
        }
    }
    let plain = Arc::new(Plain::default());
    assert!(plain.in_place().is_none());
    let envelope = Envelope::builder(Arc::new(RingHandle::empty()), Some("svc"))
        .codec(plain.clone())
        .build()
        .unwrap();
    let id = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).unwrap();
    let token = envelope.mint(&id, "abc", MintOptions::new()).unwrap();
    let sealed = plain.0.lock().unwrap().pop().unwrap();
    assert!(sealed.starts_with(b"{\"v\":1,"), "no headroom in front");
    let opened = envelope.open(&id, &token, OpenOptions::new()).unwrap();
    assert_eq!(opened.state.as_str(), Some("abc"));
    let mut into = b"stale".to_vec();
    envelope
        .mint_into(&id, "abc", MintOptions::new(), &mut into)
        .unwrap();
    let opened = envelope.open(&id, &into, OpenOptions::new()).unwrap();
    assert_eq!(opened.state.as_str(), Some("abc"));
    let other = RequestIdentity::from_json("tools/call", br#"{"name":"u"}"#).unwrap();
    let refused = envelope
        .open(&other, &token, OpenOptions::new())
        .unwrap_err();
    assert_eq!(refused.reject_reason(), Some(RejectReason::RequestBinding));
    let refused = envelope
        .open(&id, b"ab\xff", OpenOptions::new())
        .unwrap_err();
    assert_eq!(refused.reject_reason(), Some(RejectReason::Malformed));
}
