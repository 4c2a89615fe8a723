//! A request's floats reach the arguments digest as the exact doubles Python
//! reads. rmcp parses requests with serde_json; without `float_roundtrip` about
//! one random double in ten comes out 1 ULP off, so a state minted by a Python
//! server in the same fleet would be rejected here.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use stateseal::RequestIdentity;

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
