//! `stateseal bench`: in-process cost of mint and verify, with the raw primitive as baseline.
//!
//! The workload is the one `scripts/bench-python.py` runs through the Python
//! SDK: a `tools/call` with five arguments whose handler returns a state of
//! N bytes. As the core issue defines them, `mint` is claims + seal and
//! `verify` is unseal + claim checks, for a request whose identity is known;
//! `identity` (digesting the request's arguments) is measured on its own, so
//! `identity + mint` is the work of the Python SDK's `_seal` and
//! `identity + verify` that of its `_unseal`; `round` (identity once, verify,
//! mint) is what a boundary does per request. `raw_seal` (OS nonce,
//! AES-256-GCM, base64url) and `raw_open` (base64url, AES-256-GCM) over a
//! payload of the same size are the floor stateseal adds to. `args_sha256`
//! is the SHA-256 of the request's canonical arguments alone, the part of
//! `identity` any implementation of the format must do: `raw_seal +
//! args_sha256` is the least `identity + mint` can cost. `round_v2` is the
//! round with a `v2.` key (XAES-256-GCM, what keyset keys seal with) instead
//! of the `v1.` key of the rows above, with its ratio to the v1 round taken
//! round by round in the same run. A v2 verify reuses the derived key of a
//! nonce half its thread sealed or opened lately (`round_v2`: one instance,
//! or routing that returns a session to its instance); `round_v2_cold` is
//! the round whose verify derives the key every time (a state sealed
//! elsewhere in a fleet that spreads rounds at random). `round_v2_loop` is
//! that round as one loop, as a server runs it (each round verifies the token
//! the round before it minted and kept), not a sum of ops timed alone.

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::digest::{SHA256, digest};
use base64_turbo::URL_SAFE_NO_PAD;
use clap::Args;
use stateseal::{
    Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, RingKey, Secret,
    TokenFormat,
};

use crate::error::CliError;

mod compare;

/// Foreign states a cold verify cycles through: more than the derived keys a
/// thread keeps for opening (4).
const COLD_STATES: usize = 8;
/// Seals that share a nonce half (`v2.` batches of 256).
const STATES_PER_HALF: usize = 256;

/// Options of `stateseal bench`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stateseal bench\n  stateseal bench --json --sizes 64,1024,16384 > bench.jsonl\n  stateseal bench --compare\n  STATESEAL_AEAD=ring stateseal bench"
)]
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
    /// Every AES-256-GCM backend on this CPU side by side (the AEAD alone
    /// and the round with each), and the one this process chose.
    #[arg(long)]
    compare: bool,
}

/// The benchmark request's params: a `tools/call` with five arguments.
pub(crate) fn params() -> serde_json::Value {
    serde_json::json!({
        "name": "deploy",
        "arguments": {"env": "prod", "region": "eu-west-1", "replicas": 3, "dry_run": false, "ratio": 0.25}
    })
}

/// Nanoseconds per call of each op, sampled in rounds: every round times one
/// batch of each op in turn, so a slow patch of the machine hits all of them
/// alike and per-round ratios between ops stay meaningful. Returns one
/// `Vec` of samples per op (one sample per round).
pub(super) fn interleaved_ns(budget: Duration, ops: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    // Calibrate each op's batch to about 1/100 of the budget.
    let batches: Vec<u64> = ops
        .iter_mut()
        .map(|op| {
            let mut batch = 1u64;
            loop {
                let t = Instant::now();
                for _ in 0..batch {
                    op();
                }
                if t.elapsed() * 100 >= budget || batch >= 1 << 24 {
                    break batch;
                }
                batch *= 2;
            }
        })
        .collect();
    let mut samples = vec![Vec::new(); ops.len()];
    let start = Instant::now();
    while samples[0].len() < 5 || (start.elapsed() < budget * 5 && samples[0].len() < 200) {
        for ((op, batch), out) in ops.iter_mut().zip(&batches).zip(&mut samples) {
            let t = Instant::now();
            for _ in 0..*batch {
                op();
            }
            out.push(t.elapsed().as_nanos() as f64 / *batch as f64);
        }
    }
    samples
}

/// The median over rounds of `f(round)`.
pub(super) fn median_of_rounds(samples: &[Vec<f64>], f: impl Fn(usize) -> f64) -> f64 {
    let mut v: Vec<f64> = (0..samples[0].len()).map(f).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub(crate) fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.compare {
        return compare::run(
            &args.sizes,
            Duration::from_millis(args.millis),
            args.json,
            out,
        );
    }
    let fail = |e: stateseal::Error| CliError::Failed(format!("bench setup: {e}"));
    let secret = Secret::generate().map_err(fail)?;
    let envelope_of = |format| {
        let key = Arc::new(RingKey::with_format(&secret, format));
        let ring = Arc::new(RingHandle::new(KeyRing::from_keys(vec![key])?));
        Envelope::builder(ring, Some("bench")).build()
    };
    let envelope = envelope_of(TokenFormat::V1).map_err(fail)?;
    let envelope_v2 = envelope_of(TokenFormat::V2).map_err(fail)?;
    let params = params();
    let id = RequestIdentity::from_serde("tools/call", &params).map_err(fail)?;
    let cipher = LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM, &[7u8; 32])
            .map_err(|_| CliError::Failed("aead key".into()))?,
    );
    // The bytes the identity hashes: serde_json writes this map sorted and
    // compact, as Python's canonical form; checked against the identity's digest.
    let canonical = serde_json::to_vec(&params["arguments"])
        .map_err(|e| CliError::Failed(format!("bench setup: {e}")))?;
    let hash = digest(&SHA256, &canonical);
    if URL_SAFE_NO_PAD.encode(&hash.as_ref()[..16]) != id.args_digest() {
        return Err(CliError::Failed(
            "bench setup: canonical arguments differ from the identity's".into(),
        ));
    }
    let budget = Duration::from_millis(args.millis);
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    let aead = stateseal::AeadBackend::selected();
    if !args.json {
        writeln!(
            out,
            "AES-256-GCM backend: {aead} (stateseal bench --compare shows every backend)"
        )
        .map_err(io)?;
        writeln!(
            out,
            "{:>8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9} {:>12} {:>12} {:>9} {:>9}",
            "state_B",
            "identity_ns",
            "mint_ns",
            "verify_ns",
            "raw_seal_ns",
            "raw_open_ns",
            "nonce_ns",
            "sha_ns",
            "round_v2_ns",
            "v2_loop_ns",
            "v2/v1",
            "cold/v1"
        )
        .map_err(io)?;
    }
    for &size in &args.sizes {
        let state = "x".repeat(size);
        let token = envelope
            .mint(&id, &state, MintOptions::new())
            .map_err(fail)?;
        let payload_len = URL_SAFE_NO_PAD
            .decode(&token[3..])
            .map(|b| b.len() - 32)
            .unwrap_or(size);
        let mut identity = || {
            black_box(RequestIdentity::from_serde("tools/call", black_box(&params)).ok());
        };
        let mut mint = || {
            black_box(
                envelope
                    .mint(&id, black_box(&state), MintOptions::new())
                    .ok(),
            );
        };
        let mut verify = || {
            black_box(
                envelope
                    .open(&id, black_box(&token), OpenOptions::new())
                    .map(|o| o.state)
                    .ok(),
            );
        };
        // The floor: AES-256-GCM + base64url of a payload of the same size, nothing else.
        let payload = vec![b'x'; payload_len];
        let nonce = || Nonce::assume_unique_for_key([3u8; 12]);
        let mut sealed = payload.clone();
        cipher
            .seal_in_place_append_tag(nonce(), Aad::from(b"v1.kid!"), &mut sealed)
            .map_err(|_| CliError::Failed("aead".into()))?;
        let sealed_b64 = URL_SAFE_NO_PAD.encode(&sealed);
        let mut raw_seal = || {
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
                black_box(URL_SAFE_NO_PAD.encode(&buf));
            }
        };
        let mut raw_open = || {
            if let Ok(mut buf) = URL_SAFE_NO_PAD.decode(black_box(&sealed_b64)) {
                black_box(
                    cipher
                        .open_in_place(nonce(), Aad::from(b"v1.kid!"), &mut buf)
                        .is_ok(),
                );
            }
        };
        // One 12-byte draw from the OS, as every seal makes: ~0.05 µs where the C
        // library serves getrandom() from the vDSO (glibc >= 2.41), a system call otherwise.
        let mut nonce_draw = || {
            let mut fresh = [0u8; 12];
            black_box(getrandom::fill(&mut fresh).is_ok());
            black_box(fresh);
        };
        let mut args_sha256 = || {
            black_box(digest(&SHA256, black_box(&canonical)));
        };
        let token_v2 = envelope_v2
            .mint(&id, &state, MintOptions::new())
            .map_err(fail)?;
        // States sealed by another instance, each under a nonce half of its own
        // and more of them than a thread keeps keys for: every verify derives.
        let elsewhere = envelope_of(TokenFormat::V2).map_err(fail)?;
        let mut foreign = Vec::new();
        for i in 0..COLD_STATES * STATES_PER_HALF {
            let t = elsewhere
                .mint(&id, &state, MintOptions::new())
                .map_err(fail)?;
            if i % STATES_PER_HALF == 0 {
                foreign.push(t);
            }
        }
        let mut next_foreign = foreign.iter().cycle();
        let mut verify_v2_cold = || {
            if let Some(t) = next_foreign.next() {
                black_box(
                    envelope_v2
                        .open(&id, black_box(t), OpenOptions::new())
                        .map(|o| o.state)
                        .ok(),
                );
            }
        };
        let mut mint_v2 = || {
            black_box(
                envelope_v2
                    .mint(&id, black_box(&state), MintOptions::new())
                    .ok(),
            );
        };
        let mut verify_v2 = || {
            black_box(
                envelope_v2
                    .open(&id, black_box(&token_v2), OpenOptions::new())
                    .map(|o| o.state)
                    .ok(),
            );
        };
        // Every round of the loop must verify the token the round before it
        // minted: a refused one would make the loop look cheaper than it is.
        let mut kept = token_v2.clone();
        let mut refused = 0u64;
        let mut round_v2_loop = || {
            let made =
                RequestIdentity::from_serde("tools/call", black_box(&params)).is_ok_and(|id| {
                    envelope_v2
                        .open(&id, black_box(&kept), OpenOptions::new())
                        .is_ok()
                        && envelope_v2
                            .mint(&id, black_box(&state), MintOptions::new())
                            .map(|next| kept = next)
                            .is_ok()
                });
            refused += u64::from(!made);
        };
        let s = interleaved_ns(
            budget,
            &mut [
                &mut identity,
                &mut mint,
                &mut verify,
                &mut raw_seal,
                &mut raw_open,
                &mut nonce_draw,
                &mut args_sha256,
                &mut mint_v2,
                &mut verify_v2,
                &mut verify_v2_cold,
                &mut round_v2_loop,
            ],
        );
        if refused > 0 {
            return Err(CliError::Failed(format!(
                "bench: {refused} rounds of the loop refused the state their previous round minted"
            )));
        }
        let [
            identity,
            mint,
            verify,
            raw_seal,
            raw_open,
            nonce_draw,
            args_sha256,
        ] = [0, 1, 2, 3, 4, 5, 6].map(|op| median_of_rounds(&s, |r| s[op][r]));
        let round_v1 = |r: usize| s[0][r] + s[1][r] + s[2][r];
        let round_v2 = |r: usize| s[0][r] + s[7][r] + s[8][r];
        let round_v2_ns = median_of_rounds(&s, round_v2);
        let v2_ratio = median_of_rounds(&s, |r| round_v2(r) / round_v1(r));
        let round_v2_loop_ns = median_of_rounds(&s, |r| s[10][r]);
        let loop_ratio = median_of_rounds(&s, |r| s[10][r] / round_v2(r));
        let round_v2_cold = |r: usize| s[0][r] + s[7][r] + s[9][r];
        let round_v2_cold_ns = median_of_rounds(&s, round_v2_cold);
        let v2_cold_ratio = median_of_rounds(&s, |r| round_v2_cold(r) / round_v1(r));
        // Ratios to the floor, taken round by round (same patch of machine time).
        let ratio = |op: usize, raw: usize, with_identity: bool| {
            median_of_rounds(&s, |r| {
                (s[op][r] + if with_identity { s[0][r] } else { 0.0 }) / s[raw][r]
            })
        };
        if args.json {
            let round = |x: f64| (x * 10.0).round() / 10.0;
            let cents = |x: f64| (x * 100.0).round() / 100.0;
            let mut lines = vec![
                serde_json::json!({"op": "identity", "state_bytes": size, "ns_per_op": round(identity)}),
            ];
            for (op, ns, i, raw) in [("mint", mint, 1, 3), ("verify", verify, 2, 4)] {
                lines.push(serde_json::json!({
                    "op": op,
                    "state_bytes": size,
                    "ns_per_op": round(ns),
                    // Medians of per-round ratios against the floor measured alongside.
                    "ratio_to_raw": cents(ratio(i, raw, false)),
                    "with_identity_ns": round(median_of_rounds(&s, |r| s[i][r] + s[0][r])),
                    "with_identity_ratio_to_raw": cents(ratio(i, raw, true)),
                }));
            }
            lines.push(serde_json::json!({
                "op": "round",
                "state_bytes": size,
                // What a boundary does per request: identity once, verify the echo, mint the next.
                "ns_per_op": round(median_of_rounds(&s, round_v1)),
                "aead": aead.name(),
            }));
            lines.push(serde_json::json!({
                "op": "round_v2",
                "state_bytes": size,
                // The same round with a v2 key; its ratio to the v1 round, round by round.
                "ns_per_op": round(round_v2_ns),
                "ratio_to_v1_round": cents(v2_ratio),
            }));
            lines.push(serde_json::json!({
                "op": "round_v2_loop",
                "state_bytes": size,
                // The v2 round as one loop, each token kept a round; its ratio to round_v2.
                "ns_per_op": round(round_v2_loop_ns),
                "ratio_to_round_v2": cents(loop_ratio),
            }));
            lines.push(serde_json::json!({
                "op": "round_v2_cold",
                "state_bytes": size,
                // The v2 round whose verify derives the state's key every time.
                "ns_per_op": round(round_v2_cold_ns),
                "ratio_to_v1_round": cents(v2_cold_ratio),
            }));
            lines.push(serde_json::json!({
                "op": "mint_lower_bound",
                "state_bytes": size,
                // The least identity + mint can cost against the floor: raw_seal + args_sha256.
                "ratio_to_raw": cents(median_of_rounds(&s, |r| (s[3][r] + s[6][r]) / s[3][r])),
            }));
            for (op, ns) in [
                ("raw_seal", raw_seal),
                ("raw_open", raw_open),
                ("nonce", nonce_draw),
                ("args_sha256", args_sha256),
            ] {
                lines.push(
                    serde_json::json!({"op": op, "state_bytes": size, "ns_per_op": round(ns)}),
                );
            }
            for line in lines {
                writeln!(out, "{line}").map_err(io)?;
            }
        } else {
            writeln!(
                out,
                "{size:>8} {identity:>12.0} {mint:>12.0} {verify:>12.0} {raw_seal:>12.0} {raw_open:>12.0} {nonce_draw:>9.0} {args_sha256:>9.0} {round_v2_ns:>12.0} {round_v2_loop_ns:>12.0} {v2_ratio:>9.2} {v2_cold_ratio:>9.2}"
            )
            .map_err(io)?;
        }
    }
    Ok(())
}
