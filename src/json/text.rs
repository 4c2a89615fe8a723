//! `Text`: a JSON string value as Python holds it, lone surrogates included.

use std::fmt;

/// A string as Python's `json.loads` produces it: any sequence of code points,
/// including unpaired surrogates (`"\ud800"`), stored as WTF-8.
///
/// Valid UTF-8 is valid WTF-8, and WTF-8 byte order is code-point order, so
/// sorting `Text` sorts keys exactly as Python's `sort_keys=True` does. A
/// lone surrogate is encoded as its 3-byte generalized UTF-8 form, which is
/// also what Python's `encode("utf-8", "surrogatepass")` produces.
///
/// ```
/// use stateseal::json::Text;
/// let t = Text::from("Zürich");
/// assert_eq!(t.as_str(), Some("Zürich"));
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Text(Vec<u8>);

impl Text {
    /// The WTF-8 bytes (UTF-8 when [`Text::as_str`] is `Some`).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text as `&str`, or `None` when it holds a lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// Appends one code point (a surrogate code point is allowed).
    pub(crate) fn push_code_point(&mut self, cp: u32) {
        let b = &mut self.0;
        match cp {
            0..=0x7f => b.push(cp as u8),
            0x80..=0x7ff => {
                b.extend_from_slice(&[0xc0 | (cp >> 6) as u8, 0x80 | (cp & 0x3f) as u8])
            }
            0x800..=0xffff => b.extend_from_slice(&[
                0xe0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3f) as u8,
                0x80 | (cp & 0x3f) as u8,
            ]),
            _ => b.extend_from_slice(&[
                0xf0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3f) as u8,
                0x80 | ((cp >> 6) & 0x3f) as u8,
                0x80 | (cp & 0x3f) as u8,
            ]),
        }
    }

    /// Empty text with room for `capacity` bytes.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Overwrites the bytes (all the capacity) with zeros before they are
    /// freed: for plaintext that is not handed on.
    pub(crate) fn wipe(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }

    /// The WTF-8 bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The text as a `String` without copying it, or the text back when it
    /// holds a lone surrogate (which a Rust `String` cannot).
    ///
    /// ```
    /// use stateseal::json::Text;
    /// assert_eq!(Text::from("state").into_string().ok().as_deref(), Some("state"));
    /// ```
    ///
    /// # Errors
    /// The unchanged text when it is not UTF-8.
    pub fn into_string(self) -> Result<String, Self> {
        String::from_utf8(self.0).map_err(|e| Self(e.into_bytes()))
    }

    /// Text from bytes the caller has checked to be WTF-8.
    pub(crate) fn from_wtf8_unchecked(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// Appends bytes the caller has checked to be UTF-8.
    pub(crate) fn push_utf8_bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Decodes one code point of well-formed WTF-8 at `bytes[i]`: (code point, width).
pub(crate) fn decode_at(bytes: &[u8], i: usize) -> (u32, usize) {
    let b0 = u32::from(bytes[i]);
    let cont = |k: usize| u32::from(bytes[i + k] & 0x3f);
    match b0 {
        0..=0x7f => (b0, 1),
        0xc0..=0xdf => (((b0 & 0x1f) << 6) | cont(1), 2),
        0xe0..=0xef => (((b0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3),
        _ => (
            ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        ),
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self(s.as_bytes().to_vec())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self(s.into_bytes())
    }
}

impl fmt::Debug for Text {
    // Text carries states and principals: never print its content.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Text(<{} bytes>)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogates_encode_like_surrogatepass() {
        let mut t = Text::default();
        t.push_code_point(0x74);
        t.push_code_point(0xd800);
        assert_eq!(t.as_bytes(), &[0x74, 0xed, 0xa0, 0x80]);
        assert!(t.as_str().is_none());
        assert_eq!(decode_at(t.as_bytes(), 1), (0xd800, 3));
        assert_eq!(t.clone().into_string(), Err(t.clone()));
        let mut u = Text::default();
        u.push_code_point(0x1f600);
        assert_eq!(u.clone().into_string().as_deref(), Ok("😀"));
        assert_eq!(u.as_str(), Some("😀"));
        assert_eq!(format!("{u:?}"), "Text(<4 bytes>)");
    }
}
