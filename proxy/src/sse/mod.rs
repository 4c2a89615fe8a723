//! Server-sent events read incrementally, as the WHATWG HTML standard's
//! "event stream interpretation" reads them, for a proxy that rewrites the
//! data of some events and forwards every other byte as it came.
//!
//! [`SseReader::feed`] takes the upstream's bytes in whatever chunks they
//! arrive and hands back [`Item`]s: [`Item::Raw`] bytes that belong to no
//! event (comments and heartbeats between events, stray blank lines, the
//! LF of a CRLF split across chunks whose CR ended an event), which a proxy forwards at once,
//! and each complete [`Event`] with its exact bytes and its fields. Lines end
//! with CR, LF or CRLF; a byte-order mark at the start of the stream is read
//! past (and kept in the bytes); `data` lines join with LF; `id` values with a
//! NUL are ignored, as are `retry` values that are not ASCII digits. An event
//! is held only until its blank line, and never past the reader's bound: what
//! a reader refuses or is left with at the end of a stream is never handed out
//! as bytes, so a proxy cannot forward an event it did not see whole.
//!
//! ```
//! use stateseal_proxy::sse::{Item, SseReader};
//!
//! let mut reader = SseReader::new(64 * 1024);
//! let mut items = reader.feed(b": ping\r\n\r\nid: 7\ndata: {\"a\":").unwrap();
//! items.extend(reader.feed(b"1}\n\n").unwrap());
//! assert!(matches!(&items[0], Item::Raw(b) if b.as_slice() == b": ping\r\n\r\n"));
//! let Item::Event(event) = &items[1] else { panic!("an event") };
//! assert_eq!(event.data(), Some(&br#"{"a":1}"#[..]));
//! assert_eq!(event.id(), Some(&b"7"[..]));
//! assert_eq!(event.bytes(), b"id: 7\ndata: {\"a\":1}\n\n");
//! assert_eq!(
//!     event.with_data(br#"{"a":2}"#),
//!     b"id: 7\ndata: {\"a\":2}\n\n".to_vec()
//! );
//! assert_eq!(reader.finish(), 0);
//! ```

mod event;

pub use event::Event;

use event::{EventBuilder, LineKind};

/// The UTF-8 byte-order mark a stream may start with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What [`SseReader::feed`] hands back, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Bytes outside every event: forward them as they are.
    Raw(Vec<u8>),
    /// A complete event: its bytes and fields.
    Event(Event),
}

/// Why a stream was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event (or one line) grew past the reader's bound before it ended.
    #[error("a server-sent event is larger than {limit} bytes")]
    EventTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

/// An incremental reader of one event stream.
#[derive(Debug)]
pub struct SseReader {
    limit: usize,
    /// The line so far, without its end.
    line: Vec<u8>,
    /// The previous line ended with CR: an LF first in the next bytes ends it too.
    after_cr: bool,
    /// No line has ended yet: a byte-order mark may start the first one.
    at_start: bool,
    /// The event so far (its lines, with their ends), if one has begun.
    event: EventBuilder,
}

impl SseReader {
    /// A reader that refuses any event (or line) of more than `limit` bytes.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event: EventBuilder::default(),
        }
    }

    /// Reads `chunk`, the next bytes of the stream.
    ///
    /// # Errors
    /// [`SseError::EventTooLarge`] when the event in progress outgrows the
    /// bound; the reader then holds nothing and the stream should end.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Item>, SseError> {
        let mut items = Vec::new();
        let mut rest = chunk;
        if rest.is_empty() {
            return Ok(items);
        }
        if self.after_cr && rest[0] == b'\n' {
            // The LF of a CRLF split across chunks: its line has ended already,
            // so the LF goes where that line went.
            if self.event.is_empty() {
                raw(&mut items, b"\n");
            } else {
                self.bound(1)?;
                self.event.extend_ending(b"\n");
            }
            rest = &rest[1..];
        }
        self.after_cr = false;
        while let Some(end) = memchr::memchr2(b'\r', b'\n', rest) {
            let ending = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            self.line.extend_from_slice(&rest[..end]);
            self.bound(ending)?;
            let line = std::mem::take(&mut self.line);
            self.end_line(line, &rest[end..end + ending], &mut items);
            self.after_cr = rest[end] == b'\r' && ending == 1 && end + 1 == rest.len();
            rest = &rest[end + ending..];
        }
        self.line.extend_from_slice(rest);
        self.bound(0)?;
        Ok(items)
    }

    /// The end of the stream: the bytes of an event (or line) it left
    /// unfinished, which the reader drops, as a client would.
    #[must_use]
    pub fn finish(self) -> usize {
        self.event.len() + self.line.len()
    }

    /// Refuses the event in progress once it, the line so far and `more`
    /// bytes would pass the bound.
    fn bound(&mut self, more: usize) -> Result<(), SseError> {
        if self.event.len() + self.line.len() + more > self.limit {
            self.line = Vec::new();
            self.event = EventBuilder::default();
            return Err(SseError::EventTooLarge { limit: self.limit });
        }
        Ok(())
    }

    fn end_line(&mut self, mut line: Vec<u8>, ending: &[u8], items: &mut Vec<Item>) {
        let mut skip = 0;
        if std::mem::take(&mut self.at_start) && line.starts_with(BOM) {
            skip = BOM.len();
        }
        let content = &line[skip..];
        let kind = if content.is_empty() {
            None
        } else if content[0] == b':' {
            Some(LineKind::Comment)
        } else {
            Some(LineKind::Field)
        };
        match kind {
            None if self.event.is_empty() => {
                line.extend_from_slice(ending);
                raw(items, &line);
            }
            None => {
                line.extend_from_slice(ending);
                let builder = std::mem::take(&mut self.event);
                items.push(Item::Event(builder.finish(&line)));
            }
            // A comment between events is forwarded at once: heartbeats flow.
            Some(LineKind::Comment) if self.event.is_empty() => {
                line.extend_from_slice(ending);
                raw(items, &line);
            }
            Some(kind) => self.event.push(&line, skip, ending, kind),
        }
    }
}

/// Appends `bytes` to the last [`Item::Raw`] of `items`, or as a new one.
fn raw(items: &mut Vec<Item>, bytes: &[u8]) {
    if let Some(Item::Raw(last)) = items.last_mut() {
        last.extend_from_slice(bytes);
    } else {
        items.push(Item::Raw(bytes.to_vec()));
    }
}

#[cfg(test)]
mod tests;
