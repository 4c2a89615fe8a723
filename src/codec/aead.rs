//! The AES-256-GCM implementation the process seals and opens with: aws-lc or
//! ring, whichever is faster on the CPU it runs on.
//!
//! Both produce the same bytes for the same key, nonce and input (AES-256-GCM
//! is deterministic), so the choice is invisible on the wire: a token sealed
//! under one opens under the other, and the Python SDK's vectors hold under
//! both (tests run each case under each backend). What differs is speed:
//! aws-lc has a VAES/AVX-512 AES-GCM that is about twice ring's from 1 KiB up
//! on CPUs with AVX-512; ring has a VAES/AVX2 one that aws-lc lacks, so ring
//! is 1.5-1.8x aws-lc on CPUs with VAES but no AVX-512 (docs/benchmarks.md).
//!
//! The choice is made once, at the first key the process prepares, from the
//! CPU's features (no timing at start, so every instance of a fleet on one
//! machine type chooses alike), and logged. `STATESEAL_AEAD` (`auto`,
//! `aws-lc`, `ring`) overrides it; `stateseal bench --compare` measures both
//! on the machine at hand.

use std::sync::OnceLock;

use zeroize::Zeroize;

use crate::codec::TAG_LEN;
use crate::error::Error;

/// An AES-256-GCM implementation stateseal can seal and open with.
///
/// ```
/// use stateseal::AeadBackend;
/// let chosen = AeadBackend::selected();
/// assert!(AeadBackend::ALL.contains(&chosen));
/// assert_eq!(AeadBackend::parse("ring")?, Some(AeadBackend::Ring));
/// assert_eq!(AeadBackend::parse("auto")?, None);
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum AeadBackend {
    /// aws-lc (`aws-lc-rs`): VAES/AVX-512 AES-GCM where the CPU has it.
    AwsLc,
    /// ring: VAES/AVX2 AES-GCM where the CPU has it, a lighter per-call set-up.
    Ring,
}

/// Where the process's choice came from, for the log and `stateseal bench`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum AeadChoice {
    /// Chosen from the CPU's features.
    Cpu,
    /// Set by `STATESEAL_AEAD` or [`AeadBackend::select`].
    Setting,
}

/// The process's backend and where it came from; set once.
static SELECTED: OnceLock<(AeadBackend, AeadChoice)> = OnceLock::new();

/// The setting's name (environment variable).
pub const AEAD_SETTING: &str = "STATESEAL_AEAD";

impl AeadBackend {
    /// Every backend, in a fixed order.
    pub const ALL: [Self; 2] = [Self::AwsLc, Self::Ring];

    /// The backend's name as settings, logs and metrics spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::AwsLc => "aws-lc",
            Self::Ring => "ring",
        }
    }

    /// Parses a setting: `Some(backend)`, or `None` for `auto` (the CPU decides).
    ///
    /// # Errors
    /// [`Error::Config`] naming the accepted values.
    pub fn parse(setting: &str) -> Result<Option<Self>, Error> {
        match setting.trim() {
            "auto" | "" => Ok(None),
            "aws-lc" => Ok(Some(Self::AwsLc)),
            "ring" => Ok(Some(Self::Ring)),
            _ => Err(Error::Config(format!(
                "{AEAD_SETTING}: unknown AEAD backend (expected auto, aws-lc or ring)"
            ))),
        }
    }

    /// The faster backend for this CPU, and why, from its features.
    ///
    /// On x86-64 with VAES and VPCLMULQDQ: aws-lc when the CPU also has
    /// AVX-512 (F, BW, VL), ring otherwise (its VAES code is AVX2). Without
    /// VAES both libraries run AES-NI code of the same family and ring's
    /// lighter per-call set-up wins on small states. Elsewhere (aarch64 and
    /// others) aws-lc, whose ARMv8 AES-GCM is the more tuned one; not
    /// measured on this project's machines (`stateseal bench --compare`
    /// shows both where you run it).
    pub fn for_this_cpu() -> (Self, &'static str) {
        cpu_choice()
    }

    /// The process's backend: the setting if one was made, else the CPU's
    /// choice; decided at the first call and the same for the process's life.
    pub fn selected() -> Self {
        selection().0
    }

    /// Where [`AeadBackend::selected`] came from.
    pub fn selected_by() -> AeadChoice {
        selection().1
    }

    /// Sets the process's backend (`None`, i.e. `auto`: whatever the process
    /// chose or will choose, `STATESEAL_AEAD` or the CPU). Call it before the
    /// first key is prepared; the servers and bindings do so at start.
    ///
    /// # Errors
    /// [`Error::Config`] if the process already chose another backend.
    pub fn select(setting: Option<Self>) -> Result<Self, Error> {
        let Some(wanted) = setting else {
            return Ok(Self::selected());
        };
        let chosen = *SELECTED.get_or_init(|| announce((wanted, AeadChoice::Setting)));
        if chosen.0 == wanted {
            Ok(wanted)
        } else {
            Err(Error::Config(format!(
                "the process already seals with {} (the AES-256-GCM backend is chosen once per process)",
                chosen.0.name()
            )))
        }
    }

    /// [`AeadBackend::select`] with the `STATESEAL_AEAD` environment variable
    /// (unset: `auto`).
    ///
    /// # Errors
    /// [`Error::Config`] for a value other than `auto`, `aws-lc` or `ring`,
    /// or if the process already chose another backend.
    pub fn select_from_env() -> Result<Self, Error> {
        match from_env()? {
            Some(b) => Self::select(Some(b)),
            None => Ok(Self::selected()),
        }
    }
}

impl std::fmt::Display for AeadBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn from_env() -> Result<Option<AeadBackend>, Error> {
    match std::env::var(AEAD_SETTING) {
        Ok(v) => AeadBackend::parse(&v),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => AeadBackend::parse("\u{fffd}"),
    }
}

fn selection() -> (AeadBackend, AeadChoice) {
    *SELECTED.get_or_init(|| {
        let setting = from_env().unwrap_or_else(|e| {
            // The entry points (servers, CLI, bindings) refuse a bad value
            // before any key exists; a library user who skipped them gets the
            // CPU's choice and this line.
            tracing::error!("{e}; using the CPU's choice");
            None
        });
        announce(match setting {
            Some(b) => (b, AeadChoice::Setting),
            None => (cpu_choice().0, AeadChoice::Cpu),
        })
    })
}

fn announce(choice: (AeadBackend, AeadChoice)) -> (AeadBackend, AeadChoice) {
    let why = match choice.1 {
        AeadChoice::Cpu => cpu_choice().1,
        AeadChoice::Setting => "set by STATESEAL_AEAD or the configuration",
    };
    tracing::info!(backend = choice.0.name(), why, "AES-256-GCM backend chosen");
    choice
}

#[cfg(target_arch = "x86_64")]
fn cpu_choice() -> (AeadBackend, &'static str) {
    use std::arch::is_x86_feature_detected as has;
    if has!("vaes") && has!("vpclmulqdq") {
        if has!("avx512f") && has!("avx512bw") && has!("avx512vl") {
            (AeadBackend::AwsLc, "x86-64 with VAES and AVX-512")
        } else {
            (AeadBackend::Ring, "x86-64 with VAES and no AVX-512")
        }
    } else {
        (AeadBackend::Ring, "x86-64 without VAES")
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_choice() -> (AeadBackend, &'static str) {
    (AeadBackend::AwsLc, "not x86-64")
}

/// An AES-256-GCM key prepared by one backend.
pub(crate) enum GcmKey {
    AwsLc(aws_lc_rs::aead::LessSafeKey),
    Ring(RingGcm),
}

/// ring's prepared key, wiped when dropped. aws-lc cleanses its key
/// schedules itself; ring keeps its schedule and GHASH table inline (544
/// bytes, hence the box) and leaves them in memory. Before the box is freed
/// its contents are overwritten with the schedule of the all-zero key, in
/// place, and the write is kept from being optimised away as dead.
pub(crate) struct RingGcm(Box<ring::aead::LessSafeKey>);

impl Drop for RingGcm {
    fn drop(&mut self) {
        if let Ok(zero) = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &[0; 32]) {
            *self.0 = ring::aead::LessSafeKey::new(zero);
            std::hint::black_box(&*self.0);
        }
    }
}

impl GcmKey {
    /// Prepares `key` (key schedule and GHASH table) with `backend`.
    pub(crate) fn new(backend: AeadBackend, key: &[u8; 32]) -> Result<Self, Error> {
        Ok(match backend {
            AeadBackend::AwsLc => Self::AwsLc(aws_lc_rs::aead::LessSafeKey::new(
                aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, key)
                    .map_err(|_| Error::Seal("AES-256-GCM key refused"))?,
            )),
            AeadBackend::Ring => Self::Ring(RingGcm(Box::new(ring::aead::LessSafeKey::new(
                ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, key)
                    .map_err(|_| Error::Seal("AES-256-GCM key refused"))?,
            )))),
        })
    }

    /// Which backend prepared the key.
    pub(crate) fn backend(&self) -> AeadBackend {
        match self {
            Self::AwsLc(_) => AeadBackend::AwsLc,
            Self::Ring(_) => AeadBackend::Ring,
        }
    }

    /// Encrypts `in_out` in place under `nonce`; the tag.
    pub(crate) fn seal(
        &self,
        nonce: [u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        let mut out = [0u8; TAG_LEN];
        match self {
            Self::AwsLc(k) => {
                let n = aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce);
                let tag = k
                    .seal_in_place_separate_tag(n, aws_lc_rs::aead::Aad::from(aad), in_out)
                    .map_err(|_| Error::Seal("payload too large"))?;
                out.copy_from_slice(tag.as_ref());
            }
            Self::Ring(RingGcm(k)) => {
                let n = ring::aead::Nonce::assume_unique_for_key(nonce);
                let tag = k
                    .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), in_out)
                    .map_err(|_| Error::Seal("payload too large"))?;
                out.copy_from_slice(tag.as_ref());
            }
        }
        Ok(out)
    }

    /// Decrypts `in_out` (ciphertext ‖ tag) in place; the plaintext's length,
    /// or `None` when the tag does not verify. Both libraries compare the tag
    /// in constant time; on failure the buffer is wiped here, so no
    /// unauthenticated plaintext is left behind whichever library ran.
    pub(crate) fn open(&self, nonce: [u8; 12], aad: &[u8], in_out: &mut [u8]) -> Option<usize> {
        let opened = match self {
            Self::AwsLc(k) => k
                .open_in_place(
                    aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                    aws_lc_rs::aead::Aad::from(aad),
                    in_out,
                )
                .map(|p| p.len())
                .ok(),
            Self::Ring(RingGcm(k)) => k
                .open_in_place(
                    ring::aead::Nonce::assume_unique_for_key(nonce),
                    ring::aead::Aad::from(aad),
                    in_out,
                )
                .map(|p| p.len())
                .ok(),
        };
        if opened.is_none() {
            in_out.zeroize();
        }
        opened
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_values_name_the_accepted_ones() {
        assert_eq!(
            AeadBackend::parse("aws-lc").unwrap(),
            Some(AeadBackend::AwsLc)
        );
        assert_eq!(
            AeadBackend::parse(" ring ").unwrap(),
            Some(AeadBackend::Ring)
        );
        assert_eq!(AeadBackend::parse("auto").unwrap(), None);
        let e = AeadBackend::parse("openssl").unwrap_err().to_string();
        assert!(
            e.contains("STATESEAL_AEAD") && e.contains("auto, aws-lc or ring"),
            "{e}"
        );
        assert!(
            !e.contains("openssl"),
            "a setting's value is not echoed: {e}"
        );
    }

    #[test]
    fn the_choice_is_made_once_and_a_different_setting_is_refused() {
        let chosen = AeadBackend::selected();
        let other = AeadBackend::ALL.into_iter().find(|b| *b != chosen).unwrap();
        let e = AeadBackend::select(Some(other)).unwrap_err().to_string();
        assert!(e.contains(&format!("already seals with {chosen}")), "{e}");
        assert_eq!(AeadBackend::select(Some(chosen)).unwrap(), chosen);
        assert_eq!(AeadBackend::select(None).unwrap(), chosen);
        assert_eq!(AeadBackend::selected(), chosen);
    }

    #[test]
    fn both_backends_give_the_same_bytes_and_open_each_other() {
        let key = [0x42; 32];
        let [a, r] = AeadBackend::ALL.map(|b| GcmKey::new(b, &key).unwrap());
        for len in [0, 1, 15, 16, 17, 64, 255, 1024, 16 * 1024 + 3] {
            let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let nonce = [len as u8; 12];
            let (mut x, mut y) = (plain.clone(), plain.clone());
            let tx = a.seal(nonce, b"v1.abcd", &mut x).unwrap();
            let ty = r.seal(nonce, b"v1.abcd", &mut y).unwrap();
            assert_eq!((&x, tx), (&y, ty), "{len} bytes");
            x.extend_from_slice(&tx);
            y.extend_from_slice(&ty);
            assert_eq!(r.open(nonce, b"v1.abcd", &mut x), Some(len));
            assert_eq!(a.open(nonce, b"v1.abcd", &mut y), Some(len));
            assert_eq!((&x[..len], &y[..len]), (&plain[..], &plain[..]));
        }
    }

    #[test]
    fn a_failed_open_leaves_no_plaintext_under_either_backend() {
        for b in AeadBackend::ALL {
            let k = GcmKey::new(b, &[9; 32]).unwrap();
            let mut buf = b"secret plaintext".to_vec();
            let tag = k.seal([1; 12], b"ad", &mut buf).unwrap();
            buf.extend_from_slice(&tag);
            let last = buf.len() - 1;
            buf[last] ^= 1;
            assert_eq!(k.open([1; 12], b"ad", &mut buf), None, "{b}");
            assert!(buf.iter().all(|&x| x == 0), "{b}: {buf:?}");
            assert_eq!(k.backend(), b);
        }
    }
}
