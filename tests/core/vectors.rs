//! Every case of `tests/data/python-mcp-2.3.0.json` (produced by the real
//! Python SDK) except `verify` and the keys, which have files of their own
//! (`vectors_verify`, `vectors_keys`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as J;
use stateseal::json::{Duplicates, Text, Value, parse};
use stateseal::{
    AesGcmCodec, DataError, Envelope, Error, KeyRing, MintOptions, OpenOptions, Principal,
    RandomSource, RequestIdentity, RingHandle, Secret, StateCodec, UnixTime,
};

pub(crate) fn vectors() -> J {
    let path = std::env::var_os("STATESEAL_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/python-mcp-2.3.0.json")
        });
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&raw).expect("vectors are JSON")
}

pub(crate) fn s<'a>(v: &'a J, k: &str) -> &'a str {
    v[k].as_str()
        .unwrap_or_else(|| panic!("field {k} is not a string in {v}"))
}

/// The ring secrets by label, as the Python generator defined them.
pub(crate) fn secret(v: &J, label: &str) -> Secret {
    let keys = v["keys"].as_array().expect("keys");
    let k = keys
        .iter()
        .find(|k| k["label"] == label)
        .unwrap_or_else(|| panic!("no key {label}"));
    Secret::new(hex::decode(s(k, "secret_hex")).expect("hex")).expect("valid secret")
}

pub(crate) fn ring(v: &J, labels: &J) -> Arc<RingHandle> {
    let secrets: Vec<Secret> = labels
        .as_array()
        .expect("ring")
        .iter()
        .map(|l| secret(v, l.as_str().expect("label")))
        .collect();
    Arc::new(RingHandle::new(
        KeyRing::from_secrets(&secrets).expect("ring builds"),
    ))
}

/// A JSON text that holds one string (possibly with lone surrogates) → `Text`.
pub(crate) fn text(json: &str) -> Text {
    match parse(json.as_bytes(), Duplicates::Reject).expect("json string") {
        Value::Str(t) => t,
        other => panic!("expected a JSON string, got {other:?}"),
    }
}

/// The vectors run under each backend (`STATESEAL_AEAD`, scripts/test.sh):
/// this checks that the setting took.
#[test]
fn the_aead_backend_is_the_one_set() {
    let key = stateseal::RingKey::new(&Secret::new(vec![1; 32]).expect("secret"));
    match std::env::var("STATESEAL_AEAD") {
        Ok(v) => {
            let set = stateseal::AeadBackend::parse(&v).expect("a valid setting");
            let want = set.unwrap_or(stateseal::AeadBackend::for_this_cpu().0);
            assert_eq!(stateseal::AeadBackend::selected(), want);
            assert_eq!(key.backend(), want);
        }
        Err(_) => {
            assert_eq!(
                stateseal::AeadBackend::selected(),
                stateseal::AeadBackend::for_this_cpu().0
            );
            assert_eq!(
                stateseal::AeadBackend::selected_by(),
                stateseal::AeadChoice::Cpu
            );
        }
    }
}

#[test]
fn request_identity_matches_stdlib_json_path() {
    let v = vectors();
    let cases = v["request_identity"].as_array().expect("request_identity");
    assert_eq!(cases.len(), 52);
    let mut refused = Vec::new();
    for case in cases {
        let label = s(case, "label");
        let method = s(case, "method");
        let wire = s(case, "wire_params").as_bytes();
        let expect = &case["stdlib_json_loads"];
        match RequestIdentity::from_json(method, wire) {
            Ok(id) => {
                assert_eq!(
                    id.target(),
                    &text(s(expect, "target_json")),
                    "{label}: target"
                );
                assert_eq!(
                    id.args_digest(),
                    s(expect, "args_digest"),
                    "{label}: digest"
                );
            }
            Err(Error::Data(DataError::UnsupportedParams)) => refused.push(label.to_owned()),
            Err(e) => panic!("{label}: {e}"),
        }
        // Independently: the canonical JSON of `arguments or {}` is Python's, byte for byte.
        let params = parse(wire, Duplicates::LastWins).expect("params parse");
        let empty = Value::Object(vec![]);
        let args = if method == "resources/read" {
            &empty
        } else {
            params
                .get("arguments")
                .filter(|a| a.is_truthy())
                .unwrap_or(&empty)
        };
        assert_eq!(
            args.to_canonical_json(),
            s(expect, "args_canonical_json"),
            "{label}: canonical"
        );
    }
    // Deliberate difference (README): a target given as a JSON object or array is
    // refused instead of being bound by its Python repr.
    assert_eq!(refused, ["name_object"]);
}

#[test]
fn float_repr_matches_python() {
    let v = vectors();
    let cases = v["float_repr"].as_array().expect("float_repr");
    assert_eq!(cases.len(), 190);
    for case in cases {
        let bits = u64::from_str_radix(s(case, "bits_hex"), 16).expect("bits");
        let f = Value::Float(f64::from_bits(bits));
        assert_eq!(f.to_canonical_json(), s(case, "python_json"), "{bits:016x}");
        let repr = f.python_str().expect("scalar");
        assert_eq!(repr.as_str(), Some(s(case, "python_repr")), "{bits:016x}");
    }
}

#[test]
fn string_escapes_match_python() {
    let v = vectors();
    for case in v["string_escapes"].as_array().expect("string_escapes") {
        let label = s(case, "label");
        let want = s(case, "python_json");
        let t = match case.get("utf8_hex") {
            Some(h) => Text::from(
                String::from_utf8(hex::decode(h.as_str().expect("hex")).expect("hex"))
                    .expect("utf8"),
            ),
            None => {
                let t = text(want);
                assert_eq!(
                    hex::encode(t.as_bytes()),
                    s(case, "surrogatepass_utf8_hex"),
                    "{label}"
                );
                t
            }
        };
        assert_eq!(Value::Str(t).to_canonical_json(), want, "{label}");
    }
}

#[test]
fn principal_components_render_like_python() {
    let v = vectors();
    let cases = v["principal_components"]
        .as_array()
        .expect("principal_components");
    // The inputs are the Python AccessToken fields the generator used for each label.
    let inputs: [(&str, Option<&str>, Option<&str>); 5] = [
        ("client-123", None, None),
        ("client-123", None, Some("alice")),
        ("client-123", Some("https://as.example"), Some("alice")),
        ("c", None, Some("élève-😀")),
        ("c", Some("42"), None),
    ];
    assert_eq!(cases.len(), inputs.len());
    for (case, (client, iss, sub)) in cases.iter().zip(inputs) {
        let p = Principal::from_components(client, iss, sub);
        assert_eq!(
            p.as_bytes(),
            s(case, "principal_string").as_bytes(),
            "{}",
            case["label"]
        );
    }
}

fn principal_of(json: &str) -> Option<Principal> {
    match parse(json.as_bytes(), Duplicates::Reject).expect("principal json") {
        Value::Null => None,
        Value::Str(t) => Some(Principal::new(t)),
        other => panic!("principal must be a string or null, got {other:?}"),
    }
}

#[test]
fn seal_is_byte_exact_with_python() {
    let v = vectors();
    let cases = v["seal"].as_array().expect("seal");
    assert_eq!(cases.len(), 10);
    for case in cases {
        let label = s(case, "label");
        let draws: Vec<Vec<u8>> = case["urandom_draws_hex_in_order"]
            .as_array()
            .expect("draws")
            .iter()
            .map(|d| hex::decode(d.as_str().expect("hex")).expect("hex"))
            .collect();
        let principal = principal_of(s(case, "principal_json"));
        // Python draws the principal salt first, then the nonce.
        let (salt, nonce) = match draws.as_slice() {
            [salt, nonce] => (vec![salt.clone()], vec![nonce.clone()]),
            [nonce] => (vec![], vec![nonce.clone()]),
            other => panic!("{label}: {} draws", other.len()),
        };
        let ring = ring(&v, &case["ring"]);
        let codec = Arc::new(
            AesGcmCodec::new(ring.clone()).with_random_source(RandomSource::scripted(nonce)),
        );
        let audience = case["effective_audience"].as_str();
        let envelope = Envelope::builder(ring, audience)
            .codec(codec.clone())
            .ttl(Duration::from_secs_f64(case["ttl"].as_f64().expect("ttl")))
            .random_source(RandomSource::scripted(salt))
            .build()
            .expect("envelope");
        let id = RequestIdentity::from_json(s(case, "method"), s(case, "wire_params").as_bytes())
            .expect("identity");
        assert_eq!(
            id.target(),
            &text(s(case, "expected_target_json")),
            "{label}"
        );
        assert_eq!(id.args_digest(), s(case, "expected_args_digest"), "{label}");
        let state = text(s(case, "state_json"));
        let now =
            UnixTime::from_secs_f64(case["now"].as_f64().expect("now")).expect("a finite time");
        let token = envelope
            .mint(
                &id,
                state.as_bytes(),
                MintOptions::new().principal(principal.as_ref()).at(now),
            )
            .expect("mint");
        assert_eq!(token, s(case, "token"), "{label}: token");
        let payload = codec.unseal(&token).expect("unseal");
        assert_eq!(
            String::from_utf8(payload).expect("ascii"),
            s(case, "payload_exact"),
            "{label}: payload"
        );
        let back = envelope
            .open(
                &id,
                &token,
                OpenOptions::new().principal(principal.as_ref()).at(now),
            )
            .map(|o| o.state)
            .expect("roundtrip");
        assert_eq!(back, state, "{label}: roundtrip");
    }
}

/// `seal_errors/codec_seal_raises`: a codec that fails produces an error, never a token.
#[test]
fn failing_codec_never_yields_plaintext() {
    struct Broken;
    impl StateCodec for Broken {
        fn seal(&self, _: &[u8]) -> Result<String, Error> {
            Err(Error::Data(DataError::Seal("kms unavailable")))
        }
        fn unseal(&self, _: &str) -> Result<Vec<u8>, Error> {
            Err(Error::Data(DataError::Seal("kms unavailable")))
        }
    }
    let envelope = Envelope::builder(Arc::new(RingHandle::empty()), Some("svc"))
        .codec(Arc::new(Broken))
        .build()
        .expect("envelope");
    let id = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).expect("id");
    assert_eq!(
        envelope.mint(&id, "secret-state", MintOptions::new()),
        Err(Error::Data(DataError::Seal("kms unavailable")))
    );
    // An unexpected unseal failure of a custom codec still rejects (fail closed).
    assert_eq!(
        envelope
            .open(&id, "anything", OpenOptions::new())
            .map(|o| o.state)
            .unwrap_err()
            .reject_reason(),
        Some(stateseal::RejectReason::CodecError)
    );
}
