//! The framework-agnostic boundary over raw JSON-RPC params and results,
//! checked against the Python SDK's boundary vectors.

use std::sync::Arc;

use serde_json::{Value as J, json};
use stateseal::boundary::{Boundary, FailureMode, WireError};
use stateseal::{Envelope, KeyRing, MintOptions, Principal, RingHandle, Secret};

use crate::vectors::{ring, vectors};

fn boundary(mode: FailureMode) -> Boundary {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::new(vec![3; 32]).expect("s")]).expect("ring"),
    ));
    let env = Envelope::builder(ring, Some("svc")).build().expect("env");
    Boundary::builder(Arc::new(env)).failure_mode(mode).build()
}

#[test]
fn null_non_string_and_non_carriers() {
    let b = boundary(FailureMode::Reject);
    let mut p = json!({"name": "t", "requestState": null});
    b.open_params("tools/call", &mut p, &Ok(None))
        .expect("null is absent");
    assert_eq!(p, json!({"name": "t"}));
    for bad in [json!(123), json!({"v": 1}), json!(true)] {
        let mut p = json!({"name": "t", "requestState": bad});
        assert_eq!(
            b.open_params("tools/call", &mut p, &Ok(None)).unwrap_err(),
            WireError::invalid_state()
        );
        let mut p = json!({"name": "t", "requestState": bad});
        boundary(FailureMode::TreatAsAbsent)
            .open_params("tools/call", &mut p, &Ok(None))
            .expect("dropped");
        assert_eq!(p, json!({"name": "t"}));
    }
    let mut p = json!({"requestState": "garbage"});
    b.open_params("tools/list", &mut p, &Ok(None))
        .expect("passthrough");
    assert_eq!(p, json!({"requestState": "garbage"}));
}

#[test]
fn seal_result_follows_the_python_seal_vectors() {
    let b = boundary(FailureMode::Reject);
    let round = b
        .open_params("tools/call", &mut json!({"name": "t"}), &Ok(None))
        .expect("round");
    let v = vectors();
    let mut checked = 0;
    for case in v["seal_errors"].as_array().expect("seal_errors") {
        let Some(result_json) = case["result_json"].as_str() else {
            continue;
        };
        let mut result: J = serde_json::from_str(result_json).expect("result");
        b.seal_result(&round, &mut result, &Ok(None))
            .expect("untouched");
        assert_eq!(
            result,
            serde_json::from_str::<J>(result_json).expect("json"),
            "{}",
            case["label"]
        );
        checked += 1;
    }
    assert_eq!(checked, 3);
    let mut result = json!({"resultType": "input_required", "requestState": "plain"});
    b.seal_result(&round, &mut result, &Ok(None))
        .expect("sealed");
    assert!(
        result["requestState"]
            .as_str()
            .expect("s")
            .starts_with("v1.")
    );
    // Principal source failure and an unloaded ring: -32603, and no plaintext left behind.
    let mut result = json!({"resultType": "input_required", "requestState": "plain"});
    assert_eq!(
        b.seal_result(
            &round,
            &mut result,
            &Err(stateseal::boundary::PrincipalError)
        ),
        Err(WireError::internal())
    );
    assert_eq!(result.get("requestState"), None);
    let empty = Boundary::new(Arc::new(
        Envelope::builder(Arc::new(RingHandle::empty()), Some("svc"))
            .build()
            .expect("env"),
    ));
    let mut result = json!({"resultType": "input_required", "requestState": "plain"});
    assert_eq!(
        empty.seal_result(&round, &mut result, &Ok(None)),
        Err(WireError::internal())
    );
    assert!(!result.to_string().contains("plain"));
}

/// The Python verify vectors through `open_params`, for every case `serde_json`
/// can parse (rmcp parses requests with it; the rest need the raw-JSON API).
#[test]
fn python_verify_vectors_through_open_params() {
    let v = vectors();
    let mut unparsable = Vec::new();
    let mut checked = 0;
    for case in v["verify"].as_array().expect("verify") {
        let label = case["label"].as_str().expect("label");
        let params: Result<J, _> = serde_json::from_str(case["params_json"].as_str().expect("p"));
        let state: Result<J, _> =
            serde_json::from_str(case["request_state_json"].as_str().expect("rs"));
        let principal: Result<J, _> =
            serde_json::from_str(case["principal_json"].as_str().expect("pj"));
        let (Ok(mut params), Ok(state), Ok(principal)) = (params, state, principal) else {
            unparsable.push(label);
            continue;
        };
        if case.get("payload_hex").is_some() || label.starts_with("final_char_dont_care") {
            continue; // crafted payloads: covered by vectors_verify.rs with the same envelope
        }
        let principal = match principal {
            J::Null => Ok(None),
            J::String(p) => Ok(Some(Principal::new(p.as_str()))),
            _ => Err(stateseal::boundary::PrincipalError),
        };
        params["requestState"] = state;
        let clock = Arc::new(stateseal::ManualClock::new(
            stateseal::UnixTime::from_secs_f64(case["now"].as_f64().expect("now"))
                .expect("a finite time"),
        ));
        let env = Envelope::builder(ring(&v, &case["ring"]), case["audience"].as_str())
            .clock(clock)
            .build()
            .expect("env");
        let outcome = Boundary::new(Arc::new(env))
            .open_params(case["method"].as_str().expect("m"), &mut params, &principal)
            .map(|_| params.get("requestState").cloned().unwrap_or(J::Null));
        let expected = case["expected"]["outcome"].as_str().expect("outcome");
        if label == "principal_non_string_on_verify" {
            assert!(outcome.is_err(), "a failing principal source denies");
            continue;
        }
        assert_eq!(
            outcome.is_ok(),
            expected == "accept",
            "{label}: {outcome:?}"
        );
        match outcome {
            Ok(seen) => {
                let want: J =
                    serde_json::from_str(case["expected"]["plaintext_json"].as_str().expect("pt"))
                        .expect("j");
                assert_eq!(seen, want, "{label}");
            }
            Err(e) => assert_eq!(e, WireError::invalid_state(), "{label}"),
        }
        checked += 1;
    }
    assert!(checked > 40, "{checked} vectors through open_params");
    // Exactly the cases with lone surrogates in params, state or principal: serde_json refuses them.
    assert_eq!(
        unparsable,
        ["surrogate_args_same", "surrogate_principal_mismatch"]
    );
}

#[test]
fn a_state_a_rust_handler_cannot_hold_is_rejected_and_any_other_comes_through_whole() {
    let b = boundary(FailureMode::Reject);
    let round =
        stateseal::RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).expect("round");
    let env = b.envelope();
    // A lone surrogate, as Python's SDK may mint it: valid, but not a Rust `String`.
    let lone = stateseal::json::parse(br#""a\ud800b""#, stateseal::json::Duplicates::Reject)
        .expect("json");
    let stateseal::json::Value::Str(lone) = lone else {
        panic!("a string")
    };
    let token = env
        .mint(&round, lone.as_bytes(), MintOptions::new())
        .expect("mint");
    assert_eq!(
        b.open(&round, Some(&token), &Ok(None)).unwrap_err(),
        WireError::invalid_state()
    );
    // Same key, the other failure mode: the echo is dropped as if absent.
    assert_eq!(
        boundary(FailureMode::TreatAsAbsent).open(&round, Some(&token), &Ok(None)),
        Ok(None)
    );
    for state in [
        "",
        "plain",
        "Zürich \u{1f600} \"quoted\"\n",
        &"x".repeat(20_000),
    ] {
        let token = env.mint(&round, state, MintOptions::new()).expect("mint");
        assert_eq!(
            b.open(&round, Some(&token), &Ok(None)),
            Ok(Some(state.to_owned()))
        );
    }
}
