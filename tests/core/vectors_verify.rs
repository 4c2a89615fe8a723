//! The `verify` vectors: every echo the Python SDK was shown, and its verdict.
//!
//! The boundary steps that precede verification (carrier methods only, JSON
//! null counts as absent, non-string echo rejected) are applied here as the
//! Python boundary applies them; the envelope does the rest.

use serde_json::Value as J;
use stateseal::json::{Duplicates, Value, parse};
use stateseal::{
    CARRIER_METHODS, Envelope, OpenOptions, Principal, RejectReason, RequestIdentity, UnixTime,
};

use crate::vectors::{ring, vectors};

/// Where stateseal is deliberately stricter than Python (README, "Differences
/// from the Python SDK"): label → (our reason, why), from
/// `tests/data/stricter-than-python-mcp-2.3.0.json` (the Node package's test reads it too).
fn stricter() -> Vec<(String, String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/stricter-than-python-mcp-2.3.0.json");
    let data: J = serde_json::from_slice(&std::fs::read(&path).expect("read the stricter list"))
        .expect("JSON");
    data["stricter"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            let field = |k: &str| e[k].as_str().expect("a string").to_owned();
            (field("label"), field("reason"), field("why"))
        })
        .collect()
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Accept(String),
    Reject(String),
}

fn verdict_of(expected: &J) -> Verdict {
    match expected["outcome"].as_str() {
        Some("accept") => Verdict::Accept(
            expected["plaintext_json"]
                .as_str()
                .expect("plaintext")
                .to_owned(),
        ),
        _ => {
            assert_eq!(expected["error"]["code"], -32602);
            assert_eq!(
                expected["error"]["message"],
                "Invalid or expired requestState"
            );
            let log = expected["log"].as_str().expect("log");
            Verdict::Reject(log.split_once(": ").expect("reason").1.to_owned())
        }
    }
}

/// The verdict stateseal reaches for one echo.
fn run(v: &J, case: &J, token_override: Option<&str>) -> Verdict {
    let method = case["method"].as_str().expect("method");
    let rs_json = token_override
        .map(|t| format!("\"{t}\""))
        .unwrap_or_else(|| case["request_state_json"].as_str().expect("rs").to_owned());
    let echo = parse(rs_json.as_bytes(), Duplicates::LastWins).expect("echo json");
    if !CARRIER_METHODS.contains(&method) {
        return Verdict::Accept(rs_json); // passes through untouched
    }
    let token = match echo {
        Value::Null => return Verdict::Accept("null".into()),
        Value::Str(t) => t,
        _ => return Verdict::Reject(RejectReason::NonStringState.as_str().into()),
    };
    let principal = match parse(
        case["principal_json"].as_str().expect("p").as_bytes(),
        Duplicates::Reject,
    )
    .expect("p")
    {
        Value::Null => None,
        Value::Str(t) => Some(Principal::new(t)),
        _ => return Verdict::Reject(RejectReason::PrincipalBindingError.as_str().into()),
    };
    let envelope = Envelope::builder(ring(v, &case["ring"]), case["audience"].as_str())
        .build()
        .expect("envelope");
    let id = RequestIdentity::from_json(
        method,
        case["params_json"].as_str().expect("params").as_bytes(),
    )
    .expect("identity");
    let Some(token) = token.as_str() else {
        return Verdict::Reject("malformed".into());
    };
    match envelope
        .open(
            &id,
            token,
            OpenOptions::new()
                .principal(principal.as_ref())
                .at(UnixTime::from_secs_f64(case["now"].as_f64().expect("now"))
                    .expect("a finite time")),
        )
        .map(|o| o.state)
    {
        Ok(state) => Verdict::Accept(Value::Str(state).to_canonical_json()),
        Err(e) => Verdict::Reject(e.reject_reason().expect("a rejection").as_str().into()),
    }
}

#[test]
fn every_verify_vector() {
    let v = vectors();
    let cases = v["verify"].as_array().expect("verify");
    assert_eq!(cases.len(), 74);
    let stricter = stricter();
    let mut stricter_seen = Vec::new();
    for case in cases {
        let label = case["label"].as_str().expect("label");
        let python = verdict_of(&case["expected"]);
        let ours = run(&v, case, None);
        if let Some((_, reason, _why)) = stricter.iter().find(|(l, ..)| l == label) {
            assert_eq!(
                ours,
                Verdict::Reject(reason.clone()),
                "{label}: stricter verdict"
            );
            stricter_seen.push(label);
            continue;
        }
        // Python's plaintext_json for an accepted state is json.dumps of it: compare as Text.
        let normalise = |verdict: Verdict| match verdict {
            Verdict::Accept(json) => Verdict::Accept(
                match parse(json.as_bytes(), Duplicates::LastWins).expect("plaintext") {
                    Value::Str(t) => Value::Str(t).to_canonical_json(),
                    other => other.to_canonical_json(),
                },
            ),
            r => r,
        };
        assert_eq!(normalise(ours), normalise(python), "{label}");
    }
    assert_eq!(
        stricter_seen.len(),
        stricter.len(),
        "every listed difference is exercised"
    );
}

#[test]
fn all_63_final_char_substitutions() {
    let v = vectors();
    let case = v["verify"]
        .as_array()
        .expect("verify")
        .iter()
        .find(|c| c["label"] == "final_char_dont_care_bit_alias")
        .expect("case");
    let valid = case["valid_token"].as_str().expect("valid_token");
    assert_eq!(
        run(&v, case, Some(valid)),
        verdict_of(&case["valid_token_verdict"])
    );
    let subs = case["all_63_final_char_substitutions_reason"]
        .as_object()
        .expect("subs");
    assert_eq!(subs.len(), 63);
    for (ch, reason) in subs {
        let forged = format!("{}{ch}", &valid[..valid.len() - 1]);
        assert_eq!(
            run(&v, case, Some(&forged)),
            Verdict::Reject(reason.as_str().expect("r").into()),
            "final {ch}"
        );
    }
}
