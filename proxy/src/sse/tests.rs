use super::*;

/// `stream` fed in `chunks` (split at those offsets): the items, and what finish drops.
fn read(stream: &[u8], cuts: &[usize]) -> (Vec<Item>, usize) {
    let mut reader = SseReader::new(1024);
    let mut items = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain([stream.len()].iter()) {
        items.extend(reader.feed(&stream[at..cut]).expect("within the bound"));
        at = cut;
    }
    (items, reader.finish())
}

fn events(items: &[Item]) -> Vec<&Event> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Event(e) => Some(e),
            Item::Raw(_) => None,
        })
        .collect()
}

/// What each event says: data, id, type, retry.
type Fields = (
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<u64>,
);

fn fields(items: &[Item]) -> Vec<Fields> {
    events(items)
        .iter()
        .map(|e| {
            let own = |b: Option<&[u8]>| b.map(<[u8]>::to_vec);
            (own(e.data()), own(e.id()), own(e.event_type()), e.retry())
        })
        .collect()
}

/// Every byte handed back, in order.
fn bytes(items: &[Item]) -> Vec<u8> {
    items
        .iter()
        .flat_map(|i| match i {
            Item::Raw(b) => b.clone(),
            Item::Event(e) => e.bytes().to_vec(),
        })
        .collect()
}

const MIXED: &[u8] = b"\xEF\xBB\xBF: hello\r\n\r\nid: 1\revent: message\r\ndata: {\"a\":\r\ndata: 1}\n\n: ping\n\nretry: 3000\ndata:x\r\r\ndata\n\n";

#[test]
fn every_chunking_hands_back_every_byte_and_the_same_events() {
    let (whole, dropped) = read(MIXED, &[]);
    assert_eq!(dropped, 0);
    assert_eq!(bytes(&whole), MIXED);
    let got: Vec<_> = events(&whole)
        .iter()
        .map(|e| (e.data().map(<[u8]>::to_vec), e.id().map(<[u8]>::to_vec)))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(b"{\"a\":\n1}".to_vec()), Some(b"1".to_vec())),
            (Some(b"x".to_vec()), None),
            (Some(Vec::new()), None),
        ]
    );
    // Cut anywhere, once or twice (CRLFs and the byte-order mark split included).
    for i in 0..=MIXED.len() {
        for j in i..=MIXED.len() {
            let (items, dropped) = read(MIXED, &[i, j]);
            assert_eq!(dropped, 0, "cut at {i}, {j}");
            assert_eq!(bytes(&items), MIXED, "cut at {i}, {j}");
            // The same events (a blank line's LF cut off after its CR comes
            // back as Raw after the event, so compare what the events say).
            assert_eq!(fields(&items), fields(&whole), "cut at {i}, {j}");
        }
    }
}

#[test]
fn cr_lf_and_crlf_end_lines_alike() {
    for ending in ["\r", "\n", "\r\n"] {
        let stream = format!("event: e{ending}id: 9{ending}data: a{ending}data: b{ending}{ending}");
        let (items, _) = read(stream.as_bytes(), &[]);
        let [Item::Event(e)] = items.as_slice() else {
            panic!("{ending:?}: {items:?}")
        };
        assert_eq!(e.data(), Some(&b"a\nb"[..]), "{ending:?}");
        assert_eq!(e.event_type(), Some(&b"e"[..]));
        assert_eq!(e.id(), Some(&b"9"[..]));
        assert_eq!(e.bytes(), stream.as_bytes());
    }
}

#[test]
fn a_crlf_split_after_the_cr_is_one_line_end_not_a_blank_line() {
    // Were the LF a blank line of its own, the event would end early.
    let (items, dropped) = read(b"data: a\r\ndata: b\r\n\r\n", &[8, 18]);
    assert_eq!(dropped, 0);
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.data(), Some(&b"a\nb"[..]));
    assert_eq!(e.bytes(), b"data: a\r\ndata: b\r\n\r\n");
    // An empty chunk between the CR and the LF changes nothing.
    let mut reader = SseReader::new(64);
    let mut items = reader.feed(b"data: a\r").unwrap();
    items.extend(reader.feed(b"").unwrap());
    items.extend(reader.feed(b"\n\n").unwrap());
    assert_eq!(bytes(&items), b"data: a\r\n\n");
    assert_eq!(events(&items).len(), 1);
}

#[test]
fn comments_between_events_are_handed_back_at_once() {
    let mut reader = SseReader::new(64);
    // A heartbeat is forwarded as soon as its line ends, not with the next event.
    assert_eq!(
        reader.feed(b": keep-alive\n").unwrap(),
        vec![Item::Raw(b": keep-alive\n".to_vec())]
    );
    assert_eq!(reader.feed(b"\n").unwrap(), vec![Item::Raw(b"\n".to_vec())]);
    // Inside an event a comment is part of it.
    let items = reader.feed(b"data: a\n: note\ndata: b\n\n").unwrap();
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.data(), Some(&b"a\nb"[..]));
    assert_eq!(e.bytes(), b"data: a\n: note\ndata: b\n\n");
}

#[test]
fn fields_read_as_the_standard_says() {
    let (items, _) = read(
        b"data:x\ndata:  y\ndata\nid: a\0b\nretry: 12a\nretry: 250\nunknown: 1\nDATA: z\n\n",
        &[],
    );
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    // One space after the colon goes, a second stays; a bare name is an empty value.
    assert_eq!(e.data(), Some(&b"x\n y\n"[..]));
    // An id with a NUL is ignored; retry must be all digits; names are case-sensitive.
    assert_eq!(e.id(), None);
    assert_eq!(e.retry(), Some(250));
    assert_eq!(e.event_type(), None);
    // A block without data is no event for a client, and still an Event here, kept whole.
    let (items, _) = read(b"id: 5\n\n", &[]);
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!((e.data(), e.id()), (None, Some(&b"5"[..])));
}

#[test]
fn a_byte_order_mark_counts_only_at_the_start() {
    let (items, _) = read(b"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n", &[1]);
    let got: Vec<_> = events(&items)
        .iter()
        .map(|e| e.data().map(<[u8]>::to_vec))
        .collect();
    // The second mark makes its line a field named "\u{feff}data", which is no data.
    assert_eq!(got, vec![Some(b"a".to_vec()), None]);
}

#[test]
fn an_event_past_the_bound_is_refused_and_nothing_of_it_comes_back() {
    let mut reader = SseReader::new(16);
    assert_eq!(reader.feed(b"data: 0123").unwrap(), vec![]);
    let err = reader.feed(b"456789\n").unwrap_err();
    assert_eq!(err, SseError::EventTooLarge { limit: 16 });
    assert_eq!(
        err.to_string(),
        "a server-sent event is larger than 16 bytes"
    );
    // A line with no end yet is bounded too.
    let mut reader = SseReader::new(16);
    assert!(reader.feed(&[b'x'; 17]).is_err());
    // Within the bound, an event of exactly 16 bytes (its blank line counted) passes.
    let mut reader = SseReader::new(16);
    assert_eq!(
        events(&reader.feed(b"data: 01234567\n\n").unwrap()).len(),
        1
    );
}

#[test]
fn an_unfinished_event_is_dropped_at_the_end() {
    let mut reader = SseReader::new(64);
    let items = reader
        .feed(b": ok\n\ndata: {\"requestState\":\"plain\"}\n")
        .unwrap();
    assert_eq!(items, vec![Item::Raw(b": ok\n\n".to_vec())]);
    // The upstream closed mid-event: its bytes are counted, never handed back.
    assert_eq!(
        reader.finish(),
        b"data: {\"requestState\":\"plain\"}\n".len()
    );
}

#[test]
fn with_data_replaces_the_data_lines_and_keeps_every_other_line() {
    let (items, _) = read(
        b"id: 4\r\n: c\r\ndata: old\r\nevent: m\r\ndata: more\r\n\r\n",
        &[],
    );
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(
        e.with_data(b"new"),
        b"id: 4\r\n: c\r\ndata: new\r\nevent: m\r\n\r\n".to_vec()
    );
    // New data with line breaks becomes several data lines, never a field or a blank line.
    assert_eq!(
        e.with_data(b"a\nb\r\nc\rid: 5"),
        b"id: 4\r\n: c\r\ndata: a\r\ndata: b\r\ndata: c\r\ndata: id: 5\r\nevent: m\r\n\r\n"
            .to_vec()
    );
    let (items, _) = read(b"id: 1\n\n", &[]);
    let [Item::Event(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.with_data(b"{}"), b"id: 1\ndata: {}\n\n".to_vec());
    // Read back, the rewritten event carries exactly the new data.
    let (again, _) = read(&e.with_data(b"x\ny"), &[]);
    assert_eq!(events(&again)[0].data(), Some(&b"x\ny"[..]));
}
