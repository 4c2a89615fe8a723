//! Live interop with the real Python SDK (`mcp==2.3.0`, installed by `scripts/py-env.sh`):
//! random nonces and the real clock, both directions, every carrier, with and
//! without audience and principal, and tampered tokens rejected on both sides.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use serde_json::{Value as J, json};
use stateseal::{
    Envelope, KeyRing, MintOptions, OpenOptions, Principal, RequestIdentity, RingHandle, Secret,
};

struct PythonSdk {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl PythonSdk {
    fn start() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = match std::env::var("STATESEAL_PYTHON") {
            Ok(p) => p,
            Err(_) => {
                // Creates the venv with the real SDK on first use (no silent skip).
                let out = Command::new(root.join("scripts/py-env.sh"))
                    .output()
                    .expect("run scripts/py-env.sh");
                assert!(
                    out.status.success(),
                    "scripts/py-env.sh failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8(out.stdout)
                    .expect("utf8")
                    .trim()
                    .to_owned()
            }
        };
        let mut child = Command::new(python)
            .arg(root.join("scripts/py_interop.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the Python SDK driver");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn call(&mut self, req: &J) -> J {
        self.call_text(&req.to_string())
    }

    /// Sends a request line as written, so Python parses the numbers in it itself.
    fn call_text(&mut self, req: &str) -> J {
        writeln!(self.stdin, "{req}").expect("write to python");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read from python");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("python answered {line:?}: {e}"))
    }
}

impl Drop for PythonSdk {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh key as the Python driver takes it (hex) and as a Rust ring.
fn shared_key() -> (String, Arc<RingHandle>) {
    let secret = Secret::generate().expect("rng");
    let key_hex = hex::encode(secret.expose());
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[secret]).expect("ring"),
    ));
    (key_hex, ring)
}

fn tamper(token: &str) -> String {
    let mid = token.len() / 2;
    let c = if &token[mid..=mid] == "A" { "B" } else { "A" };
    format!("{}{c}{}", &token[..mid], &token[mid + 1..])
}

#[test]
fn rust_and_python_accept_each_others_states() {
    let mut py = PythonSdk::start();
    let (key_hex, ring) = shared_key();
    let rounds = [
        (
            "tools/call",
            json!({"name": "deploy", "arguments": {"env": "prod", "n": [1, 2.5, 1e16], "ü": "😀"}}),
        ),
        (
            "prompts/get",
            json!({"name": "brief", "arguments": {"topic": "x"}}),
        ),
        ("resources/read", json!({"uri": "file:///srv/été.txt"})),
    ];
    let mut checked = 0;
    for (method, params) in &rounds {
        for audience in [None, Some("svc-é")] {
            for principal in [None, Some(r#"["client-1","https://as.example","alice"]"#)] {
                let envelope = Envelope::builder(ring.clone(), audience)
                    .build()
                    .expect("env");
                let id = RequestIdentity::from_serde(method, params).expect("identity");
                let p = principal.map(Principal::new);
                let base = json!({"key_hex": key_hex, "audience": audience, "principal": principal, "method": method, "params": params});
                let state = format!("state for {method} \"quoted\" ✓");

                // Rust mints, Python verifies.
                let token = envelope
                    .mint(&id, &state, MintOptions::new().principal(p.as_ref()))
                    .expect("mint");
                let mut req = base.clone();
                req["op"] = json!("verify");
                req["token"] = json!(token);
                assert_eq!(
                    py.call(&req),
                    json!({"ok": true, "state": state}),
                    "{method} {audience:?} {principal:?}"
                );
                req["token"] = json!(tamper(&token));
                assert_eq!(
                    py.call(&req)["ok"],
                    false,
                    "python accepted a tampered rust token"
                );

                // Python mints, Rust verifies.
                let mut req = base.clone();
                req["op"] = json!("mint");
                req["state"] = json!(state);
                let py_token = py.call(&req)["token"].as_str().expect("token").to_owned();
                let back = envelope
                    .open(&id, &py_token, OpenOptions::new().principal(p.as_ref()))
                    .map(|o| o.state)
                    .expect("rust verifies python's state");
                assert_eq!(back.as_str(), Some(state.as_str()));
                let err = envelope
                    .open(
                        &id,
                        tamper(&py_token),
                        OpenOptions::new().principal(p.as_ref()),
                    )
                    .map(|o| o.state)
                    .expect_err("tampered python token");
                assert!(err.reject_reason().is_some());

                // A state bound to one caller is refused to another, on both sides.
                if let Some(p) = &p {
                    let other = Principal::new(r#"["client-1","https://as.example","mallory"]"#);
                    assert_ne!(&other, p);
                    assert!(
                        envelope
                            .open(&id, &py_token, OpenOptions::new().principal(&other))
                            .map(|o| o.state)
                            .is_err()
                    );
                    let mut req = base.clone();
                    req["op"] = json!("verify");
                    req["token"] = json!(token);
                    req["principal"] = json!(r#"["client-1","https://as.example","mallory"]"#);
                    assert_eq!(py.call(&req), json!({"ok": false, "reason": "principal"}));
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
}

/// Arguments are digested as Python's `json.dumps` writes them, so every float
/// must print as Python's `repr`: random bit patterns and timestamp-like values,
/// minted in Rust, must verify in Python.
#[test]
fn random_float_arguments_digest_as_python_does() {
    let mut py = PythonSdk::start();
    let (key_hex, ring) = shared_key();
    let envelope = Envelope::builder(ring, None).build().expect("env");
    let mut floats = 0;
    for round in 0..40 {
        let mut bits = [0u8; 8 * 100];
        getrandom::fill(&mut bits).expect("rng");
        let values: Vec<f64> = bits
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .map(|b| match b % 3 {
                0 => f64::from_bits(b),
                1 => (b % 10_000_000_000_000) as f64 / 1e6,
                _ => (b % 1_000_000) as f64 * 10f64.powi((b % 40) as i32 - 20),
            })
            .filter(|f| f.is_finite())
            .collect();
        floats += values.len();
        let params = json!({"name": "t", "arguments": {"x": values, "round": round}});
        let id = RequestIdentity::from_serde("tools/call", &params).expect("identity");
        let token = envelope.mint(&id, "s", MintOptions::new()).expect("mint");
        let req = json!({"op": "verify", "key_hex": key_hex, "audience": null, "principal": null,
                         "method": "tools/call", "params": params, "token": token});
        assert_eq!(
            py.call(&req),
            json!({"ok": true, "state": "s"}),
            "round {round}"
        );
    }
    assert!(floats > 3000, "{floats}");
}

/// The other direction, as a server meets it: Python mints over arguments full
/// of random doubles, and the Rust side reads the request text with serde_json
/// (as rmcp does) before verifying. Every state must verify.
#[test]
fn python_minted_states_with_random_floats_verify_after_serde_parsing() {
    let mut py = PythonSdk::start();
    let (key_hex, ring) = shared_key();
    let envelope = Envelope::builder(ring, None).build().expect("env");
    for round in 0..20 {
        let mut bits = [0u8; 8 * 100];
        getrandom::fill(&mut bits).expect("rng");
        let text: Vec<String> = bits
            .chunks_exact(8)
            .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
            .filter(|f| f.is_finite())
            .map(|f| format!("{f:e}"))
            .collect();
        let params_text = format!(
            r#"{{"name":"t","arguments":{{"x":[{}],"round":{round}}}}}"#,
            text.join(",")
        );
        let req = format!(
            r#"{{"op":"mint","key_hex":"{key_hex}","audience":null,"principal":null,"method":"tools/call","params":{params_text},"state":"s"}}"#
        );
        let token = py.call_text(&req)["token"]
            .as_str()
            .expect("token")
            .to_owned();
        let params: J = serde_json::from_str(&params_text).expect("params");
        let id = RequestIdentity::from_serde("tools/call", &params).expect("identity");
        assert_eq!(
            envelope
                .open(&id, &token, OpenOptions::new())
                .map(|o| o.state)
                .expect("python's state verifies")
                .as_str(),
            Some("s"),
            "round {round}"
        );
    }
}
