//! `stateseal bench`: in-process cost of mint and verify, with the raw primitive as baseline.
//!
//! The workload is the one `scripts/bench-python.py` runs through the Python
//! SDK: a `tools/call` with five arguments whose handler returns a state of
//! N bytes. `mint` is request identity, claims and seal; `verify` is request
//! identity, unseal and claim checks. `raw_seal` (OS nonce, AES-256-GCM,
//! base64url) and `raw_open` (base64url, AES-256-GCM) over a payload of the
//! same size are the floor stateseal adds to.

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64_simd::URL_SAFE_NO_PAD;
use clap::Args;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use stateseal::{AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, Secret};

use crate::error::CliError;

/// Options of `stateseal bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// State sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,16384")]
    sizes: Vec<usize>,
    /// Measuring time per operation and size, in milliseconds.
    #[arg(long, default_value_t = 400)]
    millis: u64,
}

/// The benchmark request's params: a `tools/call` with five arguments.
pub(crate) fn params() -> serde_json::Value {
    serde_json::json!({
        "name": "deploy",
        "arguments": {"env": "prod", "region": "eu-west-1", "replicas": 3, "dry_run": false, "ratio": 0.25}
    })
}

/// Medians of nanoseconds per call of `f` and of `g`, and the median of their
/// per-pair ratio: batches of `f` and `g` alternate within about `budget`, so a
/// slow patch of the machine hits both members of a pair alike.
fn paired_ns(budget: Duration, mut f: impl FnMut(), mut g: impl FnMut()) -> (f64, f64, f64) {
    // Calibrate a batch of `f` to ~1/50 of the budget.
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed() * 50 >= budget || batch >= 1 << 24 {
            break;
        }
        batch *= 2;
    }
    let time = |op: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..batch {
            op();
        }
        t.elapsed().as_nanos() as f64 / batch as f64
    };
    let (mut a, mut b, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let start = Instant::now();
    while a.len() < 5 || (start.elapsed() < budget && a.len() < 200) {
        let (x, y) = (time(&mut f), time(&mut g));
        a.push(x);
        b.push(y);
        ratio.push(x / y);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(a), median(b), median(ratio))
}

pub(crate) fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let fail = |e: stateseal::Error| CliError::Failed(format!("bench setup: {e}"));
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().map_err(fail)?]).map_err(fail)?,
    ));
    let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("bench"))
        .build()
        .map_err(fail)?;
    let params = params();
    let id = RequestIdentity::from_serde("tools/call", &params).map_err(fail)?;
    let cipher = LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM, &[7u8; 32])
            .map_err(|_| CliError::Failed("aead key".into()))?,
    );
    let budget = Duration::from_millis(args.millis);
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    if !args.json {
        writeln!(
            out,
            "{:>8} {:>12} {:>12} {:>12} {:>12}",
            "state_B", "mint_ns", "verify_ns", "raw_seal_ns", "raw_open_ns"
        )
        .map_err(io)?;
    }
    for &size in &args.sizes {
        let state = "x".repeat(size);
        let token = envelope.mint(&id, &state, None).map_err(fail)?;
        let payload_len = URL_SAFE_NO_PAD
            .decode_to_vec(&token[3..])
            .map(|b| b.len() - 32)
            .unwrap_or(size);
        let mint = || {
            let id = RequestIdentity::from_serde("tools/call", black_box(&params)).ok();
            black_box(id.and_then(|id| envelope.mint(&id, black_box(&state), None).ok()));
        };
        let verify = || {
            let id = RequestIdentity::from_serde("tools/call", black_box(&params)).ok();
            black_box(id.and_then(|id| envelope.verify(&id, black_box(&token), None).ok()));
        };
        // The floor: AES-256-GCM + base64url of a payload of the same size, nothing else.
        let payload = vec![b'x'; payload_len];
        let nonce = || Nonce::assume_unique_for_key([3u8; 12]);
        let mut sealed = payload.clone();
        cipher
            .seal_in_place_append_tag(nonce(), Aad::from(b"v1.kid!"), &mut sealed)
            .map_err(|_| CliError::Failed("aead".into()))?;
        let sealed_b64 = URL_SAFE_NO_PAD.encode_to_string(&sealed);
        let raw_seal = || {
            // A real seal needs a fresh nonce: the floor includes drawing one from the OS.
            let mut fresh = [0u8; 12];
            let drawn = getrandom::fill(&mut fresh).is_ok();
            let mut buf = black_box(&payload).clone();
            if drawn
                && cipher
                    .seal_in_place_append_tag(
                        Nonce::assume_unique_for_key(fresh),
                        Aad::from(b"v1.kid!"),
                        &mut buf,
                    )
                    .is_ok()
            {
                black_box(URL_SAFE_NO_PAD.encode_to_string(&buf));
            }
        };
        let raw_open = || {
            if let Ok(mut buf) = URL_SAFE_NO_PAD.decode_to_vec(black_box(&sealed_b64)) {
                black_box(
                    cipher
                        .open_in_place(nonce(), Aad::from(b"v1.kid!"), &mut buf)
                        .is_ok(),
                );
            }
        };
        let (mint, raw_seal, mint_ratio) = paired_ns(budget, mint, raw_seal);
        let (verify, raw_open, verify_ratio) = paired_ns(budget, verify, raw_open);
        if args.json {
            let round = |x: f64| (x * 10.0).round() / 10.0;
            for (op, ns, ratio) in [
                ("mint", mint, Some(mint_ratio)),
                ("verify", verify, Some(verify_ratio)),
                ("raw_seal", raw_seal, None),
                ("raw_open", raw_open, None),
            ] {
                let mut line =
                    serde_json::json!({"op": op, "state_bytes": size, "ns_per_op": round(ns)});
                if let Some(r) = ratio {
                    // Median of paired ratios against the raw floor measured alongside.
                    line["ratio_to_raw"] = serde_json::json!((r * 100.0).round() / 100.0);
                }
                writeln!(out, "{line}").map_err(io)?;
            }
        } else {
            writeln!(
                out,
                "{size:>8} {mint:>12.0} {verify:>12.0} {raw_seal:>12.0} {raw_open:>12.0}"
            )
            .map_err(io)?;
        }
    }
    Ok(())
}
