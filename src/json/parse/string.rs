//! Strings: escape-free runs borrowed or copied whole, escapes decoded
//! (`\uXXXX` pairs into one code point, a lone surrogate kept as WTF-8).

use std::borrow::Cow;

use super::super::swar::unescaped_run;
use super::super::text::Text;
use super::Parser;
use crate::error::Error;

impl<'a> Parser<'a> {
    fn hex4(&mut self) -> Result<u32, Error> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(|| self.err())?;
        let mut v = 0u32;
        for &c in h {
            let d = (c as char).to_digit(16).ok_or_else(|| self.err())?;
            v = (v << 4) | d;
        }
        self.i += 4;
        Ok(v)
    }

    pub(super) fn string(&mut self) -> Result<Text, Error> {
        Ok(match self.string_cow()? {
            Cow::Borrowed(b) => {
                let mut t = Text::default();
                t.push_utf8_bytes(b);
                t
            }
            Cow::Owned(t) => Text::from_wtf8_unchecked(t),
        })
    }

    /// A string, borrowed from the input when it has no escapes.
    pub(in crate::json) fn string_cow(&mut self) -> Result<Cow<'a, [u8]>, Error> {
        self.i += 1; // opening quote
        let start = self.i;
        self.scan_unescaped();
        let s: &'a [u8] = self.s;
        if s.get(self.i) == Some(&b'"') {
            self.i += 1;
            return Ok(Cow::Borrowed(&s[start..self.i - 1]));
        }
        // Room for the whole decoded string at once (it is never longer than
        // its raw text): a buffer that grew would leave copies of what was
        // decoded so far in the memory it released, and a state's plaintext
        // passes through here. A string that fails to decode is wiped.
        let mut out = Text::with_capacity(raw_end(s, self.i) - start);
        out.push_utf8_bytes(&s[start..self.i]);
        match self.string_rest(&mut out) {
            Ok(()) => Ok(Cow::Owned(out.into_bytes())),
            Err(e) => {
                out.wipe();
                Err(e)
            }
        }
    }

    fn scan_unescaped(&mut self) {
        self.i += unescaped_run(self.s, self.i);
        while let Some(&b) = self.s.get(self.i) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                break;
            }
            self.i += 1;
        }
    }

    /// Continues a string at an escape, a quote, or an error.
    fn string_rest(&mut self, out: &mut Text) -> Result<(), Error> {
        loop {
            match self.s.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    let esc = *self.s.get(self.i).ok_or_else(|| self.err())?;
                    self.i += 1;
                    let cp = match esc {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => self.unicode_escape()?,
                        _ => {
                            self.i -= 1;
                            return Err(self.err());
                        }
                    };
                    out.push_code_point(cp);
                }
                // Raw control characters and end of input are errors (strict=True).
                _ => return Err(self.err()),
            }
            let run = self.i;
            self.scan_unescaped();
            // The input was checked to be UTF-8 and runs end at ASCII bytes, so the run is UTF-8.
            out.push_utf8_bytes(&self.s[run..self.i]);
        }
    }

    /// After `\u`: one code point, combining a high surrogate with an escaped low one.
    fn unicode_escape(&mut self) -> Result<u32, Error> {
        let hi = self.hex4()?;
        if (0xd800..0xdc00).contains(&hi) && self.s[self.i..].starts_with(b"\\u") {
            let save = self.i;
            self.i += 2;
            match self.hex4() {
                Ok(lo) if (0xdc00..0xe000).contains(&lo) => {
                    return Ok(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
                }
                _ => self.i = save,
            }
        }
        Ok(hi)
    }
}

/// Where the string whose text continues at `from` ends (just past its
/// closing quote; the input's end when it has none).
fn raw_end(s: &[u8], mut from: usize) -> usize {
    while let Some(&b) = s.get(from) {
        match b {
            b'"' => return from + 1,
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
    s.len()
}
