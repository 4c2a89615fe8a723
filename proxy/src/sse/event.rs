//! One event: its bytes as they came, where its lines are, and its fields.

use std::ops::Range;

/// What a line of an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineKind {
    /// `:` and anything: kept, never read.
    Comment,
    /// `name: value` (or a bare `name`).
    Field,
}

/// Where one line of an event lies in its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    /// The whole line, with its end.
    all: Range<usize>,
    /// Where its content starts (past a byte-order mark).
    content: usize,
    /// A `data` line.
    data: bool,
}

/// An event being read: the lines so far.
#[derive(Debug, Default)]
pub(super) struct EventBuilder {
    bytes: Vec<u8>,
    lines: Vec<Line>,
    data: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    event_type: Option<Vec<u8>>,
    retry: Option<u64>,
}

impl EventBuilder {
    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The LF of a CRLF whose CR ended the last line.
    pub(super) fn extend_ending(&mut self, lf: &[u8]) {
        self.bytes.extend_from_slice(lf);
        if let Some(last) = self.lines.last_mut() {
            last.all.end = self.bytes.len();
        }
    }

    /// One more line: `line` (its first `skip` bytes a byte-order mark), then `ending`.
    pub(super) fn push(&mut self, line: &[u8], skip: usize, ending: &[u8], kind: LineKind) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(line);
        self.bytes.extend_from_slice(ending);
        let content = &line[skip..];
        let mut data = false;
        if kind == LineKind::Field {
            let (name, value) = match memchr::memchr(b':', content) {
                Some(i) => {
                    let value = &content[i + 1..];
                    (&content[..i], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (content, &b""[..]),
            };
            match name {
                b"data" => {
                    let buffer = self.data.get_or_insert_with(Vec::new);
                    buffer.extend_from_slice(value);
                    buffer.push(b'\n');
                    data = true;
                }
                b"id" if !value.contains(&0) => self.id = Some(value.to_vec()),
                b"event" => self.event_type = Some(value.to_vec()),
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    // A number too large for a u64 is no reconnection time.
                    if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                        self.retry = Some(ms);
                    }
                }
                _ => {}
            }
        }
        self.lines.push(Line {
            all: start..self.bytes.len(),
            content: start + skip,
            data,
        });
    }

    /// The event, ended by `blank` (the empty line and its end).
    pub(super) fn finish(mut self, blank: &[u8]) -> Event {
        let end = self.bytes.len();
        self.bytes.extend_from_slice(blank);
        if let Some(data) = &mut self.data {
            data.pop();
        }
        Event {
            bytes: self.bytes,
            lines: self.lines,
            blank: end,
            data: self.data,
            id: self.id,
            event_type: self.event_type,
            retry: self.retry,
        }
    }
}

/// A complete event, as it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    bytes: Vec<u8>,
    lines: Vec<Line>,
    /// Where the blank line that ended it starts.
    blank: usize,
    data: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    event_type: Option<Vec<u8>>,
    retry: Option<u64>,
}

impl Event {
    /// The event's bytes, its blank line included, exactly as they came.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its `data` lines joined with LF; `None` when it has none (a client
    /// dispatches no event then).
    pub fn data(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }

    /// Its last `id` (one with a NUL is ignored), which resumption names in `Last-Event-ID`.
    pub fn id(&self) -> Option<&[u8]> {
        self.id.as_deref()
    }

    /// Its last `event` (the type; `message` when `None`).
    pub fn event_type(&self) -> Option<&[u8]> {
        self.event_type.as_deref()
    }

    /// Its last `retry` in milliseconds, when one was all ASCII digits.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The event's bytes with `data` in place of its data: every other line
    /// (`id`, `event`, `retry`, comments, other fields) as it came and where
    /// it came, the new `data` lines where the first one was (before the
    /// blank line when it had none), split at CR, LF and CRLF so that no line
    /// of `data` can end the event or start a field.
    pub fn with_data(&self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + data.len());
        let mut written = false;
        let new_lines = |out: &mut Vec<u8>, ending: &[u8]| {
            for piece in split_lines(data) {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(piece);
                out.extend_from_slice(ending);
            }
        };
        for line in &self.lines {
            if !line.data {
                out.extend_from_slice(&self.bytes[line.all.clone()]);
            } else if !written {
                // Its byte-order mark, if it had one, and its own line end.
                out.extend_from_slice(&self.bytes[line.all.start..line.content]);
                new_lines(&mut out, line_ending(&self.bytes[line.all.clone()]));
                written = true;
            }
        }
        if !written {
            new_lines(&mut out, b"\n");
        }
        out.extend_from_slice(&self.bytes[self.blank..]);
        out
    }
}

/// The end of `line` (CRLF, CR or LF).
fn line_ending(line: &[u8]) -> &[u8] {
    if line.ends_with(b"\r\n") {
        &line[line.len() - 2..]
    } else {
        &line[line.len() - 1..]
    }
}

/// `data` cut at CR, LF and CRLF.
fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = data;
    while let Some(i) = memchr::memchr2(b'\r', b'\n', rest) {
        pieces.push(&rest[..i]);
        let skip = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        rest = &rest[i + skip..];
    }
    pieces.push(rest);
    pieces
}
