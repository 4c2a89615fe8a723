//! Walking a compact JSON object in a layout the caller already expects.
//!
//! The claims of every token either SDK mints have one layout (fixed key order,
//! no whitespace). Matching that layout literal by literal is several times
//! cheaper than the general parser, which must find, file and de-duplicate
//! every key and validate the whole document as UTF-8 first. A cursor never
//! decides a rejection: when the input strays from what the caller expects,
//! the caller hands it to the general parser, which gives the exact answer.

use std::borrow::Cow;

use super::decimal::read_short_decimal;
use super::parse::{Duplicates, Parser, Scalar};
use super::swar::is_plain_ascii;

/// A read position in a JSON document whose layout the caller walks.
pub(crate) struct Cursor<'a> {
    p: Parser<'a>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `input`.
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Self {
            p: Parser {
                s: input,
                i: 0,
                duplicates: Duplicates::Reject,
            },
        }
    }

    /// Consumes `lit` if the input continues with exactly these bytes.
    pub(crate) fn literal<const N: usize>(&mut self, lit: &[u8; N]) -> bool {
        self.p.eat(lit)
    }

    /// The byte offset of the read position.
    pub(crate) fn position(&self) -> usize {
        self.p.i
    }

    /// Whether the whole input has been consumed.
    pub(crate) fn at_end(&self) -> bool {
        self.p.i == self.p.s.len()
    }

    /// A JSON number (integer or float, JSON grammar exactly), as the general
    /// parser hands it over ([`Scalar::Int`] or [`Scalar::Float`]).
    pub(crate) fn number(&mut self) -> Option<Scalar<'a>> {
        // The times both SDKs mint read faster, and to the same double, this way.
        if let Some((f, len)) = read_short_decimal(&self.p.s[self.p.i..]) {
            self.p.i += len;
            return Some(Scalar::Float(f));
        }
        self.p.number_lexeme().ok().map(Scalar::from)
    }

    /// A string of printable ASCII without escapes, quotes excluded: its raw
    /// bytes are its value. `None` (position unchanged) for anything else.
    pub(crate) fn plain_string(&mut self) -> Option<&'a [u8]> {
        // Not a string at all: no search for a quote that may be far away.
        if self.p.s.get(self.p.i) != Some(&b'"') {
            return None;
        }
        let start = self.p.i + 1;
        // The first quote ends a plain string; anything before it that is not
        // plain (an escape included) makes it not plain.
        let end = start + memchr::memchr(b'"', self.p.s.get(start..)?)?;
        self.plain_string_ending_at(end)
    }

    /// Consumes the string literal of `expected` if `expected` is plain (see
    /// [`Cursor::plain_string`]) and the input continues with it: the same
    /// answer as `plain_string() == Some(expected)`, without searching for
    /// the closing quote. Position unchanged when it returns `false`.
    pub(crate) fn plain_string_eq(&mut self, expected: &[u8]) -> bool {
        let at = self.p.i;
        // A plain `expected` holds no quote, so its string's closing quote is right after it.
        let matches = self.plain_string_ending_at(at + 1 + expected.len()) == Some(expected);
        if !matches {
            self.p.i = at;
        }
        matches
    }

    /// [`Cursor::plain_string`] when the caller knows the string's closing
    /// quote is at `end`: one pass over the body instead of a search for the
    /// quote and a pass over the body. `None` (position unchanged) when the
    /// string does not end there or is not plain.
    pub(crate) fn plain_string_ending_at(&mut self, end: usize) -> Option<&'a [u8]> {
        let s = self.p.s;
        let start = self.p.i + 1;
        if s.get(self.p.i) != Some(&b'"') || s.get(end) != Some(&b'"') || end < start {
            return None;
        }
        // A plain body holds no quote, so the one at `end` is the first after `start`.
        let body = &s[start..end];
        if !is_plain_ascii(body) {
            return None;
        }
        self.p.i = end + 1;
        Some(body)
    }

    /// Any JSON string: its value as UTF-8 (WTF-8 where an escape made a lone
    /// surrogate), borrowed when it has no escapes. `None` for invalid JSON or
    /// raw bytes that are not UTF-8. `closing_quote_at`, when the caller knows
    /// where a plain string would end, saves the search for its closing quote.
    pub(crate) fn string(&mut self, closing_quote_at: Option<usize>) -> Option<Cow<'a, [u8]>> {
        let s = self.p.s;
        let at = self.p.i;
        let plain = closing_quote_at.and_then(|end| self.plain_string_ending_at(end));
        if let Some(plain) = plain.or_else(|| self.plain_string()) {
            return Some(Cow::Borrowed(plain));
        }
        self.p.i = at;
        if s.get(at) != Some(&b'"') {
            return None;
        }
        let value = self.p.string_cow().ok()?;
        // The scan does not decode, so the raw text must be checked here; escapes are
        // ASCII, so the raw text is UTF-8 exactly when every unescaped run is.
        if std::str::from_utf8(&s[at + 1..self.p.i - 1]).is_err() {
            // Decoded plaintext, refused: wiped, not just freed.
            if let Cow::Owned(mut decoded) = value {
                zeroize::Zeroize::zeroize(&mut decoded);
            }
            return None;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_a_layout() {
        let doc = br#"{"n":-0,"f":1.5e3,"s":"a\u00e9\"","p":"plain","i":12345678901234567890}"#;
        let mut c = Cursor::new(doc);
        assert!(c.literal(br#"{"n":"#));
        assert_eq!(c.number(), Some(Scalar::Int("0")));
        assert!(c.literal(br#","f":"#));
        assert_eq!(c.number(), Some(Scalar::Float(1500.0)));
        assert!(c.literal(br#","s":"#));
        assert_eq!(c.string(None).as_deref(), Some("aé\"".as_bytes()));
        assert!(!c.literal(b",\"x\""));
        assert!(c.literal(br#","p":"#));
        assert_eq!(c.plain_string(), Some(&b"plain"[..]));
        assert!(c.literal(br#","i":"#));
        assert_eq!(c.number(), Some(Scalar::Int("12345678901234567890")));
        assert!(!c.at_end());
        assert!(c.literal(b"}"));
        assert!(c.at_end());
    }

    #[test]
    fn plain_string_eq_is_plain_string_compared() {
        let docs: [&[u8]; 9] = [
            br#""abc","#,
            br#""abc"#,
            br#""ab"c""#,
            br#""a\"bc""#,
            b"\"caf\xc3\xa9\"",
            br#""""#,
            br#"abc"#,
            br#""abcd""#,
            br#""ab\c""#,
        ];
        let expected: [&[u8]; 7] = [
            b"abc",
            b"",
            b"ab",
            br#"a\"bc"#,
            b"caf\xc3\xa9",
            br#"ab\c"#,
            b"abcd",
        ];
        for doc in docs {
            for want in expected {
                let mut fast = Cursor::new(doc);
                let mut slow = Cursor::new(doc);
                let agreed = slow.plain_string() == Some(want);
                assert_eq!(fast.plain_string_eq(want), agreed, "{doc:?} {want:?}");
                let unchanged = if agreed { slow.position() } else { 0 };
                assert_eq!(fast.position(), unchanged, "{doc:?} {want:?}");
            }
        }
    }

    #[test]
    fn refuses_what_is_not_json_or_not_plain() {
        for (doc, plain_ok, string_ok) in [
            (&br#""abc""#[..], true, true),
            (br#""a\nb""#, false, true),
            (b"\"caf\xc3\xa9\"", false, true),
            (b"\"bad \xff\"", false, false),
            (b"\"tab\there\"", false, false),
            (br#""unterminated"#, false, false),
            (br#""bad \x escape""#, false, false),
            (b"abc", false, false),
        ] {
            assert_eq!(
                Cursor::new(doc).plain_string().is_some(),
                plain_ok,
                "{doc:?}"
            );
            assert_eq!(
                Cursor::new(doc).string(None).is_some(),
                string_ok,
                "{doc:?}"
            );
        }
        for bad in [&b"01"[..], b"-", b"1.", b".5", b"+1", b"NaN", b"Infinity"] {
            let mut c = Cursor::new(bad);
            // A number may stop early (the layout's next literal then fails), never read past JSON.
            let read = c.number();
            assert!(read.is_none() || !c.at_end(), "{bad:?}");
        }
    }
}
