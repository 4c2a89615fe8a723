//! A request's floats reach the arguments digest as the exact doubles Python
//! reads. rmcp parses requests with serde_json; without `float_roundtrip` about
//! one random double in ten comes out 1 ULP off, so a state minted by a Python
//! server in the same fleet would be rejected here.

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use stateseal::boundary::AuthenticatedPrincipal;
use stateseal::{Envelope, KeyRing, MintOptions, RequestIdentity, RingHandle, Secret};

use crate::http::{post, request_meta, serve};

/// Random finite doubles, as shortest round-trip text (exponent form).
fn random_float_text(n: usize) -> Vec<String> {
    let mut bits = vec![0u8; 8 * n];
    getrandom::fill(&mut bits).expect("rng");
    bits.chunks_exact(8)
        .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
        .filter(|f| f.is_finite())
        .map(|f| format!("{f:e}"))
        .collect()
}

#[test]
fn request_floats_parse_to_the_doubles_python_reads() {
    let mut bits = [0u8; 8 * 4000];
    getrandom::fill(&mut bits).expect("rng");
    let values: Vec<f64> = bits
        .chunks_exact(8)
        .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
        .filter(|f| f.is_finite())
        .collect();
    // Shortest round-trip text, with and without an exponent, as json.dumps may write it.
    let text: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i % 2 == 0 {
                format!("{v:e}")
            } else {
                format!("{v:?}")
            }
        })
        .collect();
    let params = format!(r#"{{"name":"t","arguments":{{"x":[{}]}}}}"#, text.join(","));
    let message = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);

    let parsed: ClientJsonRpcMessage = serde_json::from_str(&message).expect("rmcp parses it");
    let JsonRpcMessage::Request(request) = parsed else {
        panic!("not a request")
    };
    let ClientRequest::CallToolRequest(call) = request.request else {
        panic!("not tools/call")
    };
    let args = call.params.arguments.clone().expect("arguments");
    let got: Vec<u64> = args["x"]
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("number").to_bits())
        .collect();
    let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
    let off = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(off, 0, "{off} of {} doubles parsed inexactly", want.len());

    // And so the digest the boundary computes equals the exact parser's.
    let through_rmcp = serde_json::to_value(&call.params).expect("params");
    let served = RequestIdentity::from_serde("tools/call", &through_rmcp).expect("identity");
    let exact = RequestIdentity::from_json("tools/call", params.as_bytes()).expect("identity");
    assert_eq!(served.args_digest(), exact.args_digest());
}

/// A mixed fleet through the rmcp server over HTTP: states minted over the
/// exact request text (as a Python server digests it) for arguments full of
/// random doubles, echoed to the Rust server, which parses the request with
/// serde_json through rmcp, and must accept every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn states_minted_over_the_exact_text_verify_through_the_rmcp_server() {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().expect("rng")]).expect("ring"),
    ));
    let envelope = |ring: &Arc<RingHandle>| {
        Envelope::builder(ring.clone(), Some("svc"))
            .build()
            .expect("env")
    };
    let other_member = envelope(&ring);
    let (addr, server) = serve(envelope(&ring)).await;
    let alice = AuthenticatedPrincipal {
        client_id: "example-client".into(),
        issuer: Some("https://auth.example".into()),
        subject: Some("alice".into()),
    }
    .to_principal();
    let meta = request_meta().to_string();
    for round in 0..20 {
        let args = format!(
            r#"{{"env":"prod","x":[{}]}}"#,
            random_float_text(100).join(",")
        );
        let params = format!(r#"{{"name":"deploy","arguments":{args}}}"#);
        let id = RequestIdentity::from_json("tools/call", params.as_bytes()).expect("identity");
        let state = other_member
            .mint(
                &id,
                "confirm:minted elsewhere",
                MintOptions::new().principal(&alice),
            )
            .expect("mint");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy","arguments":{args},"requestState":"{state}","inputResponses":{{"confirm":{{"action":"accept"}}}},"_meta":{meta}}}}}"#
        );
        let a = addr.clone();
        let answer = tokio::task::spawn_blocking(move || post(&a, "alice-token", "deploy", &body))
            .await
            .expect("join");
        assert!(answer.get("error").is_none(), "round {round}: {answer}");
        assert!(answer.get("result").is_some(), "round {round}: {answer}");
    }
    server.abort();
}
