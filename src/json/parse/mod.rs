//! A JSON parser with the semantics of Python's `json.loads`.
//!
//! It exists because `serde_json` cannot hold what Python accepts and the
//! Python SDK digests: lone surrogate escapes, `NaN`/`Infinity`, integers of
//! any size kept exact. Differences, all stricter: input must be valid UTF-8
//! without a BOM, nesting is capped at [`MAX_DEPTH`], and claims parsing can
//! refuse duplicate keys (`Duplicates::Reject`).

mod string;

use std::borrow::Cow;
use std::collections::HashMap;

use super::text::Text;
use super::value::Value;
use crate::error::{DataError, Error};

/// Deepest nesting accepted (Python's recursion limit is about 1000).
pub const MAX_DEPTH: usize = 512;
/// Most digits in an integer literal (Python's `int_max_str_digits` default).
pub const MAX_INT_DIGITS: usize = 4300;

/// Objects up to this many members find duplicate keys by scanning; larger ones by hashing.
const LINEAR_SCAN_MEMBERS: usize = 16;

/// What to do with a repeated object key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duplicates {
    /// Keep the last value at the first key's position (a Python `dict`).
    LastWins,
    /// Refuse the document.
    Reject,
}

/// Parses `input` as one JSON document.
///
/// # Errors
/// [`DataError::InvalidJson`] with the byte offset of the first problem.
pub fn parse(input: &[u8], duplicates: Duplicates) -> Result<Value, Error> {
    if std::str::from_utf8(input).is_err() {
        return Err(Error::Data(DataError::InvalidJson { offset: 0 }));
    }
    let mut p = Parser {
        s: input,
        i: 0,
        duplicates,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err());
    }
    Ok(v)
}

/// A number as scanned: floats parsed, integers kept as their lexeme.
pub(super) enum Number<'a> {
    Float(f64),
    Int(&'a str),
    NegZero,
}

/// A member value of a flat object, borrowed from the input where possible.
#[derive(Debug, PartialEq)]
pub(crate) enum Scalar<'a> {
    Null,
    Bool(bool),
    /// An integer's lexeme (`-0` reads as `0`).
    Int(&'a str),
    Float(f64),
    /// String bytes (UTF-8, or WTF-8 when an escape made a lone surrogate).
    Str(Cow<'a, [u8]>),
    /// An array or object (validated, not kept).
    Nested,
}

impl<'a> From<Number<'a>> for Scalar<'a> {
    fn from(n: Number<'a>) -> Self {
        match n {
            Number::Float(f) => Scalar::Float(f),
            Number::Int(t) => Scalar::Int(t),
            Number::NegZero => Scalar::Int("0"),
        }
    }
}

/// Members of a flat object, keys and values borrowed from the input where possible.
#[cfg(test)]
pub(crate) type FlatObject<'a> = Vec<(Cow<'a, [u8]>, Scalar<'a>)>;

/// Parses a JSON object whose members are read once by key (the claims), without
/// building a [`Value`]: keys and escape-free strings are borrowed from `input`.
/// Duplicate keys are refused.
#[cfg(test)]
pub(crate) fn parse_flat_object(input: &[u8]) -> Result<FlatObject<'_>, Error> {
    let mut members: FlatObject<'_> = Vec::with_capacity(10);
    parse_flat_object_with(input, |key, value, at| {
        if members.iter().any(|(k, _)| *k == key) {
            return Err(Error::Data(DataError::InvalidJson { offset: at }));
        }
        members.push((key, value));
        Ok(())
    })?;
    Ok(members)
}

/// [`parse_flat_object`] handing each member to `visit` (key, value, key offset)
/// instead of collecting them; `visit` owns duplicate detection.
pub(crate) fn parse_flat_object_with<'a>(
    input: &'a [u8],
    mut visit: impl FnMut(Cow<'a, [u8]>, Scalar<'a>, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    if std::str::from_utf8(input).is_err() {
        return Err(Error::Data(DataError::InvalidJson { offset: 0 }));
    }
    let mut p = Parser {
        s: input,
        i: 0,
        duplicates: Duplicates::Reject,
    };
    p.ws();
    if !p.eat(b"{") {
        return Err(p.err());
    }
    p.ws();
    let mut closed = p.eat(b"}");
    while !closed {
        p.ws();
        if p.s.get(p.i) != Some(&b'"') {
            return Err(p.err());
        }
        let key_at = p.i;
        let key = p.string_cow()?;
        p.ws();
        if !p.eat(b":") {
            return Err(p.err());
        }
        p.ws();
        let value = match p.s.get(p.i) {
            Some(b'"') => Scalar::Str(p.string_cow()?),
            Some(b'-' | b'0'..=b'9') if !p.s[p.i..].starts_with(b"-Infinity") => {
                p.number_lexeme()?.into()
            }
            _ => match p.value(1)? {
                Value::Null => Scalar::Null,
                Value::Bool(b) => Scalar::Bool(b),
                Value::Float(f) => Scalar::Float(f),
                _ => Scalar::Nested,
            },
        };
        visit(key, value, key_at)?;
        p.ws();
        if p.eat(b"}") {
            closed = true;
        } else if !p.eat(b",") {
            return Err(p.err());
        }
    }
    p.ws();
    if p.i == input.len() {
        Ok(())
    } else {
        Err(p.err())
    }
}

pub(super) struct Parser<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    pub(super) duplicates: Duplicates,
}

impl<'a> Parser<'a> {
    fn err(&self) -> Error {
        Error::Data(DataError::InvalidJson { offset: self.i })
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// Consumes `lit` if the input continues with exactly these bytes.
    pub(super) fn eat<const N: usize>(&mut self, lit: &[u8; N]) -> bool {
        // A fixed-size comparison: a few loads inline, not a call to memcmp.
        let matches = self
            .s
            .get(self.i..self.i + N)
            .and_then(|head| <&[u8; N]>::try_from(head).ok())
            .is_some_and(|head| head == lit);
        if matches {
            self.i += N;
        }
        matches
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(self.err());
        }
        match self.s.get(self.i) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'n') if self.eat(b"null") => Ok(Value::Null),
            Some(b't') if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(b'N') if self.eat(b"NaN") => Ok(Value::Float(f64::NAN)),
            Some(b'I') if self.eat(b"Infinity") => Ok(Value::Float(f64::INFINITY)),
            Some(b'-') if self.eat(b"-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.s.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, Error> {
        Ok(match self.number_lexeme()? {
            Number::Float(f) => Value::Float(f),
            Number::Int(text) => Value::Int(text.to_owned()),
            Number::NegZero => Value::Int("0".to_owned()),
        })
    }

    /// Scans a number: a float is parsed, an integer is returned as its lexeme.
    pub(super) fn number_lexeme(&mut self) -> Result<Number<'a>, Error> {
        let start = self.i;
        let negative = self.eat(b"-");
        let int_start = self.i;
        match self.s.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err()),
        }
        let int_digits = self.i - int_start;
        let mut is_float = false;
        // A fraction or exponent that does not complete is not part of the number
        // (Python's regex backtracks), which then fails as trailing data.
        if self.s.get(self.i) == Some(&b'.') && matches!(self.s.get(self.i + 1), Some(b'0'..=b'9'))
        {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            let save = self.i;
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                self.i = save;
            } else {
                is_float = true;
            }
        }
        let s: &'a [u8] = self.s;
        let lexeme = std::str::from_utf8(&s[start..self.i]).map_err(|_| self.err())?;
        if is_float {
            return lexeme.parse().map(Number::Float).map_err(|_| self.err());
        }
        if int_digits > MAX_INT_DIGITS {
            return Err(self.err());
        }
        // Python's int("-0") is 0: the only non-canonical spelling JSON allows.
        Ok(if negative && int_digits == 1 && s[int_start] == b'0' {
            Number::NegZero
        } else {
            Number::Int(lexeme)
        })
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b"]") {
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(b"]") {
                return Ok(Value::Array(items));
            }
            return Err(self.err());
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.i += 1;
        let mut members: Vec<(Text, Value)> = Vec::new();
        let mut index: Option<HashMap<Text, usize>> = None;
        self.ws();
        if self.eat(b"}") {
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err());
            }
            let key_at = self.i;
            let key = self.string()?;
            self.ws();
            if !self.eat(b":") {
                return Err(self.err());
            }
            self.ws();
            let value = self.value(depth + 1)?;
            let found = match &index {
                Some(index) => index.get(&key).copied(),
                None => members.iter().position(|(k, _)| *k == key),
            };
            match found {
                Some(_) if self.duplicates == Duplicates::Reject => {
                    return Err(Error::Data(DataError::InvalidJson { offset: key_at }));
                }
                Some(i) => members[i].1 = value,
                None => {
                    if let Some(index) = &mut index {
                        index.insert(key.clone(), members.len());
                    }
                    members.push((key, value));
                    // Past a few members a linear scan per key would make a large
                    // object of short keys quadratic: index the keys from here on.
                    if index.is_none() && members.len() > LINEAR_SCAN_MEMBERS {
                        index = Some(
                            members
                                .iter()
                                .enumerate()
                                .map(|(i, (k, _))| (k.clone(), i))
                                .collect(),
                        );
                    }
                }
            }
            self.ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(b"}") {
                return Ok(Value::Object(members));
            }
            return Err(self.err());
        }
    }
}

#[cfg(test)]
mod tests;
