use super::*;

fn p(s: &str) -> Result<Value, Error> {
    parse(s.as_bytes(), Duplicates::LastWins)
}

#[test]
fn python_literals_and_numbers() {
    assert!(matches!(p("NaN").unwrap(), Value::Float(f) if f.is_nan()));
    assert!(matches!(p("-Infinity").unwrap(), Value::Float(f) if f == f64::NEG_INFINITY));
    assert!(matches!(p("1e400").unwrap(), Value::Float(f) if f == f64::INFINITY));
    assert!(matches!(p("-0").unwrap(), Value::Int(ref s) if s == "0"));
    assert!(matches!(p("1E2").unwrap(), Value::Float(f) if f == 100.0));
    for bad in [
        "01",
        "1.",
        ".5",
        "+1",
        "1e",
        "[1,]",
        "{\"a\":1,}",
        "\"\t\"",
        "\"\\x\"",
        "nul",
        "\u{feff}1",
    ] {
        assert!(p(bad).is_err(), "{bad:?} must fail");
    }
}

#[test]
fn surrogates() {
    let Value::Str(t) = p(r#""\ud83d\ude00""#).unwrap() else {
        panic!()
    };
    assert_eq!(t.as_str(), Some("😀"));
    let Value::Str(t) = p(r#""\ude00\ud83d""#).unwrap() else {
        panic!()
    };
    assert_eq!(t.as_bytes(), &[0xed, 0xb8, 0x80, 0xed, 0xa0, 0xbd]);
}

#[test]
fn duplicates_and_depth() {
    let Value::Object(m) = p(r#"{"a":1,"b":0,"a":2}"#).unwrap() else {
        panic!()
    };
    assert_eq!(m.len(), 2);
    assert!(matches!(&m[0].1, Value::Int(s) if s == "2"));
    assert!(parse(br#"{"a":1,"a":2}"#, Duplicates::Reject).is_err());
    let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
    assert!(p(&deep).is_err());
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(p(&ok).is_ok());
}

#[test]
fn duplicates_in_large_objects() {
    let members: Vec<String> = (0..100).map(|i| format!("\"k{i}\":{i}")).collect();
    let body = members.join(",");
    let Value::Object(m) = p(&format!("{{{body}}}")).unwrap() else {
        panic!()
    };
    assert_eq!(m.len(), 100);
    for late in [3, 16, 17, 50, 99] {
        let doc = format!("{{{body},\"k{late}\":\"again\"}}");
        assert!(
            parse(doc.as_bytes(), Duplicates::Reject).is_err(),
            "k{late}"
        );
        let Value::Object(m) = p(&doc).unwrap() else {
            panic!()
        };
        assert_eq!(m.len(), 100, "last wins in place");
        assert!(matches!(&m[late].1, Value::Str(t) if t.as_str() == Some("again")));
    }
}

#[test]
fn flat_object_borrows_and_refuses_duplicates() {
    let m = parse_flat_object(br#" {"a":"x","b\u0041":-0,"c":[1,{"d":2}],"e":1.5,"f":null,"g":true,"h":"\ud800","i":-Infinity} "#).unwrap();
    assert_eq!(m.len(), 8);
    assert!(matches!(&m[0].0, Cow::Borrowed(b"a")));
    assert!(matches!(&m[0].1, Scalar::Str(Cow::Borrowed(b"x"))));
    assert_eq!(&*m[1].0, b"bA");
    assert_eq!(m[1].1, Scalar::Int("0"));
    assert_eq!(m[2].1, Scalar::Nested);
    assert_eq!(m[3].1, Scalar::Float(1.5));
    assert_eq!(m[4].1, Scalar::Null);
    assert_eq!(m[5].1, Scalar::Bool(true));
    assert!(matches!(&m[6].1, Scalar::Str(Cow::Owned(b)) if b[..] == [0xed, 0xa0, 0x80]));
    assert_eq!(m[7].1, Scalar::Float(f64::NEG_INFINITY));
    assert!(parse_flat_object(br#"{"a":1,"\u0061":2}"#).is_err());
    assert_eq!(parse_flat_object(b" {} ").unwrap().len(), 0);
    for bad in [
        &b"[1]"[..],
        b"null",
        b"{\"a\":1} x",
        b"\xef\xbb\xbf{}",
        b"{\"a\":1,}",
        b"{\"a\" 1}",
        b"{",
    ] {
        assert!(parse_flat_object(bad).is_err(), "{bad:?}");
    }
}
