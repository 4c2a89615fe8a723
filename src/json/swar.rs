//! Eight-bytes-at-a-time scans for the JSON string fast paths (no `unsafe`, no SIMD intrinsics).
//!
//! Long scans are compiled a second time for the widest vector unit the CPU
//! reports at run time ([`with_widest_vectors`]); the code is the same plain
//! Rust, LLVM vectorizes it for that unit.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `v` that is zero.
#[inline]
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

/// High bit set in each byte of `x` that is below `n` (valid for n <= 128).
#[inline]
fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS
}

#[inline]
fn word(bytes: &[u8], i: usize) -> Option<u64> {
    bytes
        .get(i..i + 8)
        .and_then(|w| w.try_into().ok())
        .map(u64::from_le_bytes)
}

/// Blocks of 64 bytes whose smallest byte is at least `lo`, largest at most
/// `hi`, and that hold no `"` or `\\`, counted with branch-free reductions
/// (min, max, or) that LLVM turns into SIMD.
#[inline]
fn clean_blocks(bytes: &[u8], lo: u8, hi: u8) -> usize {
    let mut n = 0;
    for block in bytes.chunks_exact(64) {
        let (min, max, quote) = block.iter().fold((u8::MAX, 0u8, 0u8), |(mn, mx, q), &b| {
            (
                mn.min(b),
                mx.max(b),
                q | u8::from(b == b'"') | u8::from(b == b'\\'),
            )
        });
        if min < lo || max > hi || quote != 0 {
            break;
        }
        n += 64;
    }
    n
}

/// Whether every byte is one `json.dumps(ensure_ascii=True)` copies verbatim
/// (printable ASCII but `"` and `\\`), so the bytes are their own JSON text.
///
/// Long inputs take one branch-free pass that LLVM vectorizes (cheaper than
/// any early exit when, as for the states on the hot path, the answer is
/// almost always yes); short ones (keys, names) a table lookup per byte.
#[inline]
pub(crate) fn is_plain_ascii(bytes: &[u8]) -> bool {
    if bytes.len() < 32 {
        return bytes.iter().all(|&b| PLAIN[usize::from(b)]);
    }
    if bytes.len() >= WIDE_FROM {
        return with_widest_vectors(|| all_plain(bytes));
    }
    all_plain(bytes)
}

/// From this length on, a scan is worth switching to wider vectors: below it
/// the switch costs more than it saves (64 B: 5 ns in SSE2, 8 ns with
/// AVX-512; 1 KiB: 36 ns against 15 ns; 16 KiB: 550 ns against 185 ns).
const WIDE_FROM: usize = 256;

/// The branch-free pass of [`is_plain_ascii`]; always inlined, so that it is
/// compiled anew inside [`with_widest_vectors`].
#[inline(always)]
fn all_plain(bytes: &[u8]) -> bool {
    let (min, max, special) = bytes.iter().fold((u8::MAX, 0u8, 0u8), |(mn, mx, q), &b| {
        (
            mn.min(b),
            mx.max(b),
            q | u8::from(b == b'"') | u8::from(b == b'\\'),
        )
    });
    min >= 0x20 && max <= 0x7e && special == 0
}

/// Runs `scan` compiled for AVX-512 or AVX2 when the CPU has them (detected
/// once per process by `fearless_simd`, whose tokens exist only after that
/// check), for the baseline (SSE2) otherwise.
#[inline(always)]
fn with_widest_vectors<R>(scan: impl FnOnce() -> R) -> R {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        use fearless_simd::{Level, Simd};
        let level = Level::new();
        if let Some(avx512) = level.as_avx512() {
            return avx512.vectorize(scan);
        }
        if let Some(avx2) = level.as_avx2() {
            return avx2.vectorize(scan);
        }
    }
    scan()
}

/// Bytes `json.dumps(ensure_ascii=True)` copies verbatim: printable ASCII but `"` and `\\`.
pub(crate) const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x7f {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
};

/// Length of the prefix of `bytes[i..]` (from whole 8-byte words) that
/// `json.dumps(ensure_ascii=True)` copies verbatim: printable ASCII except `"` and `\`.
#[inline]
pub(crate) fn plain_ascii_run(bytes: &[u8], i: usize) -> usize {
    let start = i;
    let mut i = i + clean_blocks(&bytes[i..], 0x20, 0x7e);
    while let Some(x) = word(bytes, i) {
        let special = below(x, 0x20)
            | (x & HIGHS)
            | zero_bytes(x ^ (ONES * 0x7f))
            | zero_bytes(x ^ (ONES * u64::from(b'"')))
            | zero_bytes(x ^ (ONES * u64::from(b'\\')));
        if special != 0 {
            break;
        }
        i += 8;
    }
    i - start
}

/// Length of the prefix of `bytes[i..]` (from whole 8-byte words) that a JSON
/// string parser copies verbatim: anything but `"`, `\` and control characters.
#[inline]
pub(crate) fn unescaped_run(bytes: &[u8], i: usize) -> usize {
    let start = i;
    let mut i = i + clean_blocks(&bytes[i..], 0x20, u8::MAX);
    while let Some(x) = word(bytes, i) {
        // Bytes >= 0x80 have their high bit set, so `below` ignores them once masked.
        let special = (below(x, 0x20) & !(x & HIGHS))
            | zero_bytes(x ^ (ONES * u64::from(b'"')))
            | zero_bytes(x ^ (ONES * u64::from(b'\\')));
        if special != 0 {
            break;
        }
        i += 8;
    }
    i - start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stop_before_specials() {
        assert_eq!(plain_ascii_run(b"abcdefghijklmnop", 0), 16);
        assert_eq!(plain_ascii_run(b"abcdefg\"ijklmnop", 0), 0);
        assert_eq!(plain_ascii_run(b"abcdefghijklmno\x7f", 0), 8);
        assert_eq!(plain_ascii_run("abcdefgé".as_bytes(), 0), 0);
        assert_eq!(unescaped_run("abcdéfgh".as_bytes(), 0), 8);
        assert_eq!(unescaped_run(b"abcdefg\x1f", 0), 0);
        assert_eq!(unescaped_run(b"abcdefg\\", 0), 0);
        assert_eq!(unescaped_run(b"\x80\x81\x82\x83\x84\x85\x86\x87", 0), 8);
        let long = [b'a'; 100];
        assert_eq!(plain_ascii_run(&long, 0), 96);
        assert_eq!(unescaped_run(&long, 3), 96);
        for pos in 0..100 {
            let mut l = long;
            l[pos] = b'"';
            assert_eq!(plain_ascii_run(&l, 0), pos / 8 * 8, "{pos}");
            assert_eq!(unescaped_run(&l, 0), pos / 8 * 8, "{pos}");
        }
        assert!(is_plain_ascii(b"") && is_plain_ascii(&long));
        // Exhaustive over single special bytes in every position.
        for b in 0u8..=255 {
            for pos in 0..8 {
                let mut w = *b"aaaaaaaa";
                w[pos] = b;
                let plain = (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\';
                assert_eq!(plain_ascii_run(&w, 0) == 8, plain, "byte {b:#x}");
                let mut long = [b'a'; 100];
                long[pos * 12] = b;
                assert_eq!(is_plain_ascii(&long), plain, "byte {b:#x} at {}", pos * 12);
                assert_eq!(
                    is_plain_ascii(&long[..31]),
                    plain || pos * 12 >= 31,
                    "short, {b:#x}"
                );
                let unescaped = b >= 0x20 && b != b'"' && b != b'\\';
                assert_eq!(unescaped_run(&w, 0) == 8, unescaped, "byte {b:#x}");
            }
        }
    }

    /// The wide path (from `WIDE_FROM` bytes) gives the table's answer for
    /// every byte value, at the first, a middle and the last position, and
    /// at lengths just around the switch and far past it.
    #[test]
    fn wide_scans_agree_with_the_table() {
        for len in [
            WIDE_FROM - 1,
            WIDE_FROM,
            WIDE_FROM + 1,
            WIDE_FROM + 63,
            1024,
            16_411,
        ] {
            let base = vec![b'~'; len];
            assert!(is_plain_ascii(&base), "{len}");
            for b in 0u8..=255 {
                for pos in [0, len / 2 + 1, len - 1] {
                    let mut v = base.clone();
                    v[pos] = b;
                    assert_eq!(
                        is_plain_ascii(&v),
                        PLAIN[usize::from(b)],
                        "byte {b:#x} at {pos} of {len}"
                    );
                }
            }
        }
    }
}
