//! Short decimals: floats written and read without the general algorithms.
//!
//! Every `iat` and `exp` a stateseal server mints is a time in whole
//! milliseconds ([`crate::SystemClock`] reads at that resolution), so its
//! `repr` is its integer part, a point and at most three digits, and reading
//! it back is one exact division. Many argument floats (`0.25`, `19.99`) are
//! such short decimals too, and the request identity writes them the same
//! way. Both shortcuts decide exactly when they
//! apply and otherwise leave the number to the general code (shortest
//! round-trip digits to write, `str::parse` to read), so their output is the
//! general code's, byte for byte and bit for bit; the tests compare the two.

/// Powers of ten that are exact doubles (10^22 is the largest).
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Writes Python's `repr(f)` when `f` is the double nearest to a decimal with
/// at most three fractional digits, `1e-3 <= |f| < 1e10`; returns whether it did.
///
/// Why the digits are right: below 1e10 a double's spacing is under 2^-18, so
/// the only decimal of at most three fractional digits within a spacing of `f`
/// is `m / 1000` itself, and every other decimal that rounds to `f` needs four
/// or more fractional digits: `m / 1000` (trailing zeros trimmed, `.0` for an
/// integer) is the shortest round-trip spelling, which is what `repr` writes
/// (in fixed notation: Python switches to exponents only below 1e-4).
pub(crate) fn push_short_repr(f: f64, out: &mut Vec<u8>) -> bool {
    let magnitude = f.abs();
    if !(1e-3..1e10).contains(&magnitude) {
        return false;
    }
    // Within 0.004 of the integer m when f is nearest to m / 1000 (see above).
    // Rounded by adding a half and truncating (`f64::round` is a libm call
    // without SSE4.1); below 1e13 the sum is exact, and the check decides anyway.
    let m = (magnitude * 1000.0 + 0.5) as u64;
    // Exact: m < 2^53 and one correctly rounded division, so this is "f is nearest to m / 1000".
    if m as f64 / 1000.0 != magnitude {
        return false;
    }
    if f < 0.0 {
        out.push(b'-');
    }
    let (int, frac) = (m / 1000, m % 1000);
    out.extend_from_slice(itoa::Buffer::new().format(int).as_bytes());
    out.push(b'.');
    if frac == 0 {
        out.push(b'0');
        return true;
    }
    let digits = [frac / 100, frac / 10 % 10, frac % 10].map(|d| b'0' + d as u8);
    let keep = if frac % 10 != 0 {
        3
    } else if frac % 100 != 0 {
        2
    } else {
        1
    };
    out.extend_from_slice(&digits[..keep]);
    true
}

/// Reads a JSON number of the form `int.frac` (no sign, no exponent) with at
/// most 15 digits in all, returning its value and length; `None` for anything
/// else, which the caller reads with the general parser.
///
/// Exact: the digits make an integer below 10^15 < 2^53 and the divisor is an
/// exact power of ten, so one correctly rounded division gives the double
/// nearest to the decimal (Clinger's fast path), as `str::parse` does.
pub(crate) fn read_short_decimal(s: &[u8]) -> Option<(f64, usize)> {
    const MAX_DIGITS: usize = 15;
    let is_digit = |i: usize| s.get(i).is_some_and(u8::is_ascii_digit);
    let mut w: u64 = 0;
    let mut i = 0;
    // The integer part: `0` alone, or no leading zero.
    match s.first()? {
        b'0' => i = 1,
        b'1'..=b'9' => {
            // A time has ten integer digits: the first eight at once.
            if let Some(eight) = s.first_chunk::<8>().and_then(|c| eight_digits(*c)) {
                (w, i) = (eight, 8);
            }
            while is_digit(i) {
                if i == MAX_DIGITS {
                    return None;
                }
                w = w * 10 + u64::from(s[i] - b'0');
                i += 1;
            }
        }
        _ => return None,
    }
    if s.get(i) != Some(&b'.') {
        return None;
    }
    let frac_start = i + 1;
    i = frac_start;
    while is_digit(i) {
        // `i - 1` digits so far (the point is not one).
        if i - 1 == MAX_DIGITS {
            return None;
        }
        w = w * 10 + u64::from(s[i] - b'0');
        i += 1;
    }
    let frac = i - frac_start;
    if frac == 0 || matches!(s.get(i), Some(b'e' | b'E')) {
        return None;
    }
    Some((w as f64 / POW10[frac], i))
}

/// The value of eight ASCII digits (the first one most significant), or
/// `None` when one of them is not a digit: three multiply-and-add steps on
/// the eight bytes at once instead of eight dependent steps.
fn eight_digits(chunk: [u8; 8]) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = u64::from_le_bytes(chunk);
    let d = x.wrapping_sub(0x30 * ONES);
    // Every byte in 0x30..=0x3f, and at most 9 above 0x30 (adding 6 carries nothing into the high nibble).
    if x & (0xf0 * ONES) != 0x30 * ONES || (d + 6 * ONES) & (0xf0 * ONES) != 0 {
        return None;
    }
    let d = (d * 10 + (d >> 8)) & 0x00ff_00ff_00ff_00ff;
    let d = (d * 100 + (d >> 16)) & 0x0000_ffff_0000_ffff;
    Some((d * 10_000 + (d >> 32)) & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::float_repr;

    /// A small deterministic generator (xorshift64*), so failures reproduce.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn eight_digits_agrees_with_reading_them_one_by_one() {
        let one_by_one = |c: [u8; 8]| {
            c.iter().try_fold(0u64, |w, b| {
                b.is_ascii_digit().then(|| w * 10 + u64::from(b - b'0'))
            })
        };
        let mut next = rng(0xd1617);
        for _ in 0..20_000 {
            let mut c = next().to_le_bytes().map(|b| b'0' + b % 10);
            assert_eq!(eight_digits(c), one_by_one(c), "{c:?}");
            // Every byte value at one place, the others digits.
            let at = (next() % 8) as usize;
            for b in 0..=255u8 {
                c[at] = b;
                assert_eq!(eight_digits(c), one_by_one(c), "{c:?}");
            }
        }
    }

    fn general_repr(f: f64) -> String {
        let mut out = Vec::new();
        crate::json::write::push_shortest_repr(f, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn short_repr_is_the_shortest_repr() {
        let mut next = rng(0x5eed);
        let mut taken = 0;
        let edges = [
            1e-3,
            -1e-3,
            0.25,
            -0.999,
            1.0,
            1.5,
            9_999_999_999.999,
            1_782_345_600.0,
            1_782_345_600.001,
            1_782_345_600.12,
        ];
        let randoms = (0..400_000).map(|n| match n % 4 {
            // Milliseconds in the whole range (either sign), and times around now.
            0 => {
                (next() % 10_000_000_000_000).max(1) as f64
                    / if n % 8 == 0 { -1000.0 } else { 1000.0 }
            }
            1 => (1_700_000_000_000 + next() % 200_000_000_000) as f64 / 1000.0 + 600.0,
            // Short fractions below 1, where the spacing is finest.
            2 => (next() % 1000) as f64 / 1000.0,
            // Arbitrary doubles in and around the range: the shortcut must decline or agree.
            _ => f64::from_bits(0x3f30_0000_0000_0000 + next() % 0x02f0_0000_0000_0000),
        });
        for f in edges.into_iter().chain(randoms) {
            let mut out = Vec::new();
            if push_short_repr(f, &mut out) {
                taken += 1;
                assert_eq!(String::from_utf8(out).unwrap(), general_repr(f), "{f:e}");
            }
            assert_eq!(float_repr(f), general_repr(f), "{f:e}");
        }
        assert!(taken > 250_000, "{taken}");
        let mut out = Vec::new();
        for f in [
            0.0,
            -0.0,
            9e-4,
            1e-4,
            0.0015,
            1e10,
            -1e10,
            1_782_345_600.000_1,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert!(!push_short_repr(f, &mut out), "{f}");
        }
        assert!(out.is_empty());
    }

    #[test]
    fn short_decimal_reads_as_str_parse() {
        let mut next = rng(0xdec);
        let mut taken = 0;
        for n in 0..300_000 {
            let int = match n % 4 {
                0 => 0,
                1 => next() % 10,
                2 => 1_700_000_000 + next() % 100_000_000,
                _ => next() % 1_000_000_000_000_000,
            };
            let frac_len = (next() % 18) as usize;
            let frac: String = (0..frac_len)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let tail = ["", "}", ",", "e5", "E-1", "x"][(next() % 6) as usize];
            let text = format!("{int}.{frac}{tail}");
            let lexeme_len = format!("{int}.{frac}").len();
            if let Some((f, len)) = read_short_decimal(text.as_bytes()) {
                taken += 1;
                assert_eq!(len, lexeme_len, "{text}");
                assert_eq!(
                    f.to_bits(),
                    text[..len].parse::<f64>().unwrap().to_bits(),
                    "{text}"
                );
            }
        }
        assert!(taken > 50_000, "{taken}");
        for declined in [
            "01.5",
            "-1.5",
            "1.",
            ".5",
            "1",
            "1.5e3",
            "1.5E3",
            "1234567890123456.5",
            "1.0000000000000001",
            "x",
        ] {
            assert_eq!(read_short_decimal(declined.as_bytes()), None, "{declined}");
        }
        assert_eq!(read_short_decimal(b"0.25,"), Some((0.25, 4)));
        assert_eq!(read_short_decimal(b"12345678.5"), Some((12_345_678.5, 10)));
        assert_eq!(read_short_decimal(b"1234567:.5"), None);
        assert_eq!(read_short_decimal(b"123456789012345.5"), None);
        assert_eq!(
            read_short_decimal(b"123456789012345.}"),
            None,
            "no fractional digit"
        );
        assert_eq!(
            read_short_decimal(b"1782345600.125}"),
            Some((1_782_345_600.125, 14))
        );
    }
}
