//! `stateseal bench --compare`: every AES-256-GCM backend on this CPU, side by
//! side in one run, and the one the process chose.
//!
//! Per state size and backend: the AEAD alone (seal and open of the same
//! payload under a fixed nonce, so no system call dilutes the difference),
//! and the boundary round (identity once, verify, mint) with a `v1.` and a
//! `v2.` key whose cipher runs on that backend. The round's ratio to the
//! chosen backend's is taken round by round, as `stateseal bench` does.

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use stateseal::{
    AeadBackend, AeadChoice, Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity,
    RingHandle, RingKey, Secret, TokenFormat,
};

use super::{interleaved_ns, median_of_rounds, params};
use crate::error::CliError;

/// The AEAD alone on one backend, in place under a fixed nonce.
enum RawGcm {
    AwsLc(aws_lc_rs::aead::LessSafeKey),
    Ring(Box<ring::aead::LessSafeKey>),
}

impl RawGcm {
    /// The library `backend` seals `len` bytes with.
    fn new(backend: AeadBackend, len: usize) -> Result<Self, CliError> {
        let refused = || CliError::Failed("bench setup: AEAD key refused".into());
        Ok(if backend.library_for(len) == AeadBackend::Ring {
            Self::Ring(Box::new(ring::aead::LessSafeKey::new(
                ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &[7; 32])
                    .map_err(|_| refused())?,
            )))
        } else {
            Self::AwsLc(aws_lc_rs::aead::LessSafeKey::new(
                aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, &[7; 32])
                    .map_err(|_| refused())?,
            ))
        })
    }

    /// Seals `buf` in place; the tag.
    fn seal(&self, buf: &mut [u8]) -> Option<[u8; 16]> {
        let aad = b"v1.kid!";
        let mut tag = [0; 16];
        match self {
            Self::AwsLc(k) => tag.copy_from_slice(
                k.seal_in_place_separate_tag(
                    aws_lc_rs::aead::Nonce::assume_unique_for_key([1; 12]),
                    aws_lc_rs::aead::Aad::from(aad),
                    buf,
                )
                .ok()?
                .as_ref(),
            ),
            Self::Ring(k) => tag.copy_from_slice(
                k.seal_in_place_separate_tag(
                    ring::aead::Nonce::assume_unique_for_key([1; 12]),
                    ring::aead::Aad::from(aad),
                    buf,
                )
                .ok()?
                .as_ref(),
            ),
        }
        Some(tag)
    }

    /// Opens `sealed` (ciphertext ‖ tag) in a copy; whether the tag verified.
    fn open(&self, sealed: &[u8], work: &mut Vec<u8>) -> bool {
        work.clear();
        work.extend_from_slice(sealed);
        let aad = b"v1.kid!";
        match self {
            Self::AwsLc(k) => k
                .open_in_place(
                    aws_lc_rs::aead::Nonce::assume_unique_for_key([1; 12]),
                    aws_lc_rs::aead::Aad::from(aad),
                    work,
                )
                .is_ok(),
            Self::Ring(k) => k
                .open_in_place(
                    ring::aead::Nonce::assume_unique_for_key([1; 12]),
                    ring::aead::Aad::from(aad),
                    work,
                )
                .is_ok(),
        }
    }
}

/// Ops measured per backend, in this order.
const PER_BACKEND: usize = 6;

pub(super) fn run(
    sizes: &[usize],
    budget: Duration,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let fail = |e: stateseal::Error| CliError::Failed(format!("bench setup: {e}"));
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    let chosen = AeadBackend::selected();
    let (cpu_pick, why) = AeadBackend::for_this_cpu();
    let how = match AeadBackend::selected_by() {
        AeadChoice::Setting => "set by STATESEAL_AEAD".to_owned(),
        _ => format!("this CPU: {why}"),
    };
    let secret = Secret::generate().map_err(fail)?;
    let envelope_of = |format, backend| {
        let key = Arc::new(RingKey::with_backend(&secret, format, backend));
        let ring = Arc::new(RingHandle::new(KeyRing::from_keys(vec![key])?));
        Envelope::builder(ring, Some("bench")).build()
    };
    let params = params();
    let id = RequestIdentity::from_serde("tools/call", &params).map_err(fail)?;
    if !json {
        writeln!(
            out,
            "AES-256-GCM backend chosen: {chosen} ({how}); the CPU's choice: {cpu_pick}"
        )
        .map_err(io)?;
        writeln!(
            out,
            "{:>8} {:>8} {:>13} {:>13} {:>12} {:>12} {:>10}",
            "state_B",
            "backend",
            "aead_seal_ns",
            "aead_open_ns",
            "round_ns",
            "round_v2_ns",
            "/chosen"
        )
        .map_err(io)?;
    }
    for &size in sizes {
        let state = "x".repeat(size);
        let mut per_backend = Vec::new();
        for backend in AeadBackend::ALL {
            let v1 = envelope_of(TokenFormat::V1, backend).map_err(fail)?;
            let v2 = envelope_of(TokenFormat::V2, backend).map_err(fail)?;
            let token_v1 = v1.mint(&id, &state, MintOptions::new()).map_err(fail)?;
            let token_v2 = v2.mint(&id, &state, MintOptions::new()).map_err(fail)?;
            let raw = RawGcm::new(backend, size)?;
            let mut tagged = vec![b'x'; size];
            let tag = raw.seal(&mut tagged);
            tagged.extend_from_slice(&tag.unwrap_or_default());
            let mut work = Vec::with_capacity(tagged.len());
            if tag.is_none() || !raw.open(&tagged, &mut work) {
                return Err(CliError::Failed(format!(
                    "bench setup: {backend} does not open its own seal"
                )));
            }
            per_backend.push((backend, v1, v2, token_v1, token_v2, raw, tagged, work));
        }
        let mut identity = || {
            black_box(RequestIdentity::from_serde("tools/call", black_box(&params)).ok());
        };
        let mut ops: Vec<Box<dyn FnMut() + '_>> = vec![Box::new(&mut identity)];
        for (_, v1, v2, token_v1, token_v2, raw, tagged, work) in per_backend.iter_mut() {
            let (v1, v2, raw) = (&*v1, &*v2, &*raw);
            let (token_v1, token_v2, tagged) = (&*token_v1, &*token_v2, &*tagged);
            let id = &id;
            let state = &state;
            ops.push(Box::new(move || {
                black_box(v1.mint(id, black_box(state), MintOptions::new()).ok());
            }));
            ops.push(Box::new(move || {
                black_box(
                    v1.open(id, black_box(token_v1), OpenOptions::new())
                        .map(|o| o.state)
                        .ok(),
                );
            }));
            ops.push(Box::new(move || {
                black_box(v2.mint(id, black_box(state), MintOptions::new()).ok());
            }));
            ops.push(Box::new(move || {
                black_box(
                    v2.open(id, black_box(token_v2), OpenOptions::new())
                        .map(|o| o.state)
                        .ok(),
                );
            }));
            let buf = std::cell::RefCell::new(vec![b'x'; size]);
            ops.push(Box::new(move || {
                black_box(raw.seal(black_box(&mut buf.borrow_mut())));
            }));
            ops.push(Box::new(move || {
                black_box(raw.open(black_box(tagged), work));
            }));
        }
        let mut refs: Vec<&mut dyn FnMut()> = ops
            .iter_mut()
            .map(|f| &mut **f as &mut dyn FnMut())
            .collect();
        let s = interleaved_ns(budget, &mut refs);
        let at = |b: usize, op: usize| 1 + b * PER_BACKEND + op;
        let round = |b: usize, v2: bool, r: usize| {
            let (mint, verify) = if v2 { (2, 3) } else { (0, 1) };
            s[0][r] + s[at(b, mint)][r] + s[at(b, verify)][r]
        };
        let chosen_at = AeadBackend::ALL
            .iter()
            .position(|b| *b == chosen)
            .unwrap_or(0);
        // Each backend's v1 and v2 rounds, for their medians, their ratios to
        // the chosen backend's and the verdict.
        let rounds_of = |v2: bool| -> Vec<Vec<f64>> {
            (0..AeadBackend::ALL.len())
                .map(|b| (0..s[0].len()).map(|r| round(b, v2, r)).collect())
                .collect()
        };
        let (rounds, rounds_v2) = (rounds_of(false), rounds_of(true));
        for (b, backend) in AeadBackend::ALL.iter().enumerate() {
            let seal = median_of_rounds(&s, |r| s[at(b, 4)][r]);
            let open = median_of_rounds(&s, |r| s[at(b, 5)][r]);
            let round_ns = median_of_rounds(&rounds, |r| rounds[b][r]);
            let round_v2_ns = median_of_rounds(&rounds_v2, |r| rounds_v2[b][r]);
            let ratio = paired_ratio(&rounds, b, chosen_at);
            let ratio_v2 = paired_ratio(&rounds_v2, b, chosen_at);
            if json {
                let tenth = |x: f64| (x * 10.0).round() / 10.0;
                let cents = |x: f64| (x * 100.0).round() / 100.0;
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({
                        "op": "compare", "state_bytes": size, "backend": backend.name(),
                        "chosen": *backend == chosen, "cpu_choice": *backend == cpu_pick,
                        "aead_seal_ns": tenth(seal), "aead_open_ns": tenth(open),
                        "round_ns": tenth(round_ns), "round_v2_ns": tenth(round_v2_ns),
                        "round_ratio_to_chosen": cents(ratio), "round_v2_ratio_to_chosen": cents(ratio_v2),
                    })
                )
                .map_err(io)?;
            } else {
                let mark = if *backend == chosen { " *" } else { "" };
                writeln!(
                    out,
                    "{size:>8} {:>8} {seal:>13.0} {open:>13.0} {round_ns:>12.0} {round_v2_ns:>12.0} {ratio:>10.2}",
                    format!("{}{mark}", backend.name())
                )
                .map_err(io)?;
            }
        }
        if !json {
            writeln!(out, "{size:>8} {}", verdict(chosen_at, &rounds)).map_err(io)?;
        }
    }
    Ok(())
}

/// Backend `b`'s round over the chosen one's, taken round by round: the
/// median of the per-round ratios (the `/chosen` columns, and the verdict's).
fn paired_ratio(rounds: &[Vec<f64>], b: usize, chosen: usize) -> f64 {
    median_of_rounds(rounds, |r| rounds[b][r] / rounds[chosen][r])
}

/// Whether the chosen backend (`rounds[chosen]`) is the fastest, from each
/// backend's rounds (`rounds[b][r]`: backend `b`'s round `r`, measured in the
/// same pass over the ops as every other backend's round `r`).
///
/// Each backend is compared with the chosen one by [`paired_ratio`]. The medians of the
/// rounds themselves are not compared: on a machine whose speed drifts
/// between rounds they named a backend faster than the chosen one whose own
/// paired ratio, printed beside it, said it was slower.
fn verdict(chosen: usize, rounds: &[Vec<f64>]) -> String {
    let name = |b: usize| AeadBackend::ALL.get(b).map_or("?", |b| b.name());
    let (fastest, ratio) = (0..rounds.len())
        .map(|b| (b, paired_ratio(rounds, b, chosen)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((chosen, 1.0));
    // Medians of one run move by about 1%: closer than that is a tie.
    if fastest == chosen || ratio > 0.99 {
        format!(
            "the chosen backend ({}) is the fastest here or within 1%",
            name(chosen)
        )
    } else {
        format!(
            "{} is {:.0}% faster here than {}",
            name(fastest),
            (1.0 / ratio - 1.0) * 100.0,
            name(chosen)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn the_verdict_pairs_each_round_with_the_chosen_backends() {
        // The machine slows down after two rounds. Backend 0 is 10% slower than
        // the chosen backend 1 in the rounds measured in the same state, yet the
        // median of its rounds is lower (it caught the fast state more often).
        let chosen = vec![1.0, 1.0, 3.0, 3.0, 3.0];
        let other = vec![1.1, 1.1, 3.3, 1.0, 1.0];
        assert_eq!(
            verdict(1, &[other, chosen.clone()]),
            "the chosen backend (ring) is the fastest here or within 1%"
        );
        // Faster in every round: named, with how much.
        let faster: Vec<f64> = chosen.iter().map(|c| c / 1.25).collect();
        assert_eq!(
            verdict(1, &[faster, chosen.clone()]),
            "aws-lc is 25% faster here than ring"
        );
        // Within 1%: a tie goes to the chosen backend.
        let tied: Vec<f64> = chosen.iter().map(|c| c * 0.995).collect();
        assert_eq!(
            verdict(1, &[tied, chosen]),
            "the chosen backend (ring) is the fastest here or within 1%"
        );
    }
}
