//! A wrapped data key as the keyset stores it. Managed HSM's A256GCM picks the
//! IV and returns it with the tag, and `Decrypt` needs the key version that
//! encrypted (a rotated HSM key keeps its old versions), so all three travel
//! with the ciphertext:
//!
//! `0x01 | len(version) | version | iv (12) | tag (16) | ciphertext (32)`

use stateseal::Error;
use stateseal::provider::{ErrorClass, kms_error};

const FORMAT: u8 = 1;
pub(crate) const IV_LEN: usize = 12;
pub(crate) const TAG_LEN: usize = 16;
const KEY_LEN: usize = 32;

/// The parts of one wrap.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Wrapped<'a> {
    pub version: &'a str,
    pub iv: &'a [u8],
    pub tag: &'a [u8],
    pub ciphertext: &'a [u8],
}

fn invalid(why: &str) -> Error {
    kms_error(
        crate::SCHEME,
        ErrorClass::Invalid,
        format!("wrapped key: {why}"),
    )
}

pub(crate) fn is_version(v: &str) -> bool {
    !v.is_empty() && v.len() <= 127 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl<'a> Wrapped<'a> {
    /// Joins the parts, checking each one's size.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, Error> {
        if !is_version(self.version) {
            return Err(invalid("the HSM named no usable key version"));
        }
        if (self.iv.len(), self.tag.len(), self.ciphertext.len()) != (IV_LEN, TAG_LEN, KEY_LEN) {
            return Err(invalid(
                "the HSM answered an IV, tag or ciphertext of an unexpected size",
            ));
        }
        let mut out = Vec::with_capacity(2 + self.version.len() + IV_LEN + TAG_LEN + KEY_LEN);
        out.push(FORMAT);
        out.push(u8::try_from(self.version.len()).map_err(|_| invalid("version too long"))?);
        out.extend_from_slice(self.version.as_bytes());
        out.extend_from_slice(self.iv);
        out.extend_from_slice(self.tag);
        out.extend_from_slice(self.ciphertext);
        Ok(out)
    }

    /// Splits a stored wrap.
    ///
    /// # Errors
    /// `Invalid` for anything but this format, exactly.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<Self, Error> {
        let [FORMAT, len, rest @ ..] = bytes else {
            return Err(invalid("not an azure-kv wrap (format byte)"));
        };
        let len = usize::from(*len);
        if rest.len() != len + IV_LEN + TAG_LEN + KEY_LEN {
            return Err(invalid("wrong length"));
        }
        let (version, rest) = rest.split_at(len);
        let version = std::str::from_utf8(version)
            .ok()
            .filter(|v| is_version(v))
            .ok_or_else(|| invalid("bad key version"))?;
        let (iv, rest) = rest.split_at(IV_LEN);
        let (tag, ciphertext) = rest.split_at(TAG_LEN);
        Ok(Self {
            version,
            iv,
            tag,
            ciphertext,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateseal::ProviderError;

    #[test]
    fn round_trip_and_exact_parsing() {
        let w = Wrapped {
            version: "0a1b2c3d",
            iv: &[1; IV_LEN],
            tag: &[2; TAG_LEN],
            ciphertext: &[3; KEY_LEN],
        };
        let bytes = w.encode().unwrap();
        assert_eq!(bytes.len(), 2 + 8 + 60);
        assert_eq!(Wrapped::decode(&bytes).unwrap(), w);
        let mut longer = bytes.clone();
        longer.push(0);
        let mut other_format = bytes.clone();
        other_format[0] = 2;
        let mut bad_version = bytes.clone();
        bad_version[2] = b'/';
        for bad in [
            &bytes[..bytes.len() - 1],
            &longer,
            &other_format,
            &bad_version,
            &[][..],
        ] {
            let e = Wrapped::decode(bad).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Provider(ProviderError::Kms {
                        class: ErrorClass::Invalid,
                        ..
                    })
                ),
                "{e}"
            );
        }
        let short_iv = Wrapped { iv: &[1; 16], ..w };
        assert!(short_iv.encode().is_err());
    }
}
