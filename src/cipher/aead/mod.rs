//! The AES-256-GCM implementation the process seals and opens with: aws-lc or
//! ring, whichever is faster on the CPU it runs on.
//!
//! Both produce the same bytes for the same key, nonce and input (AES-256-GCM
//! is deterministic), so the choice is invisible on the wire: a token sealed
//! under one opens under the other, and the Python SDK's vectors hold under
//! each (tests run each case under each backend). What differs is speed
//! (docs/benchmarks.md): ring has a VAES/AVX2 AES-GCM that aws-lc lacks, so
//! on CPUs with VAES and no AVX-512 ring is 1.1x aws-lc at 64 B and 1.5x at
//! 16 KiB; aws-lc has a VAES/AVX-512 one, faster than ring's from about 4 KiB
//! (1.07x to 2x at 16 KiB, by CPU), but its per-message set-up makes it
//! slower below (ring 1.06x at 1 KiB). So on AVX-512 CPUs the process uses
//! both, by message size (`split`).
//!
//! The choice is made once, at the first key the process prepares, from the
//! CPU's features (no timing at start, so every instance of a fleet on one
//! machine type chooses alike), and logged. `STATESEAL_AEAD` (`auto`,
//! `aws-lc`, `ring`, or `split`: ring below 4 KiB, aws-lc from there)
//! overrides it; `stateseal bench --compare` measures all three on the
//! machine at hand.

use std::sync::OnceLock;

use crate::error::Error;

/// An AES-256-GCM implementation stateseal can seal and open with.
///
/// ```
/// use stateseal::AeadBackend;
/// let chosen = AeadBackend::selected();
/// assert!(AeadBackend::ALL.contains(&chosen));
/// assert_eq!(AeadBackend::parse("ring")?, Some(AeadBackend::Ring));
/// assert_eq!(AeadBackend::parse("split")?, Some(AeadBackend::Split));
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
    /// ring for messages below [`AEAD_SPLIT_AT`] bytes, aws-lc from there.
    Split,
}

/// Where `split` hands messages from ring to aws-lc: about where aws-lc's
/// AVX-512 code overtakes ring's per-message set-up (measured, docs/benchmarks.md).
pub const AEAD_SPLIT_AT: usize = 4096;

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
    pub const ALL: [Self; 3] = [Self::AwsLc, Self::Ring, Self::Split];

    /// The backend's name as settings, logs and metrics spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::AwsLc => "aws-lc",
            Self::Ring => "ring",
            Self::Split => "split",
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
            "split" => Ok(Some(Self::Split)),
            _ => Err(Error::Config(format!(
                "{AEAD_SETTING}: unknown AEAD backend (expected auto, aws-lc, ring or split)"
            ))),
        }
    }

    /// The library that seals or opens a message of `len` bytes under this
    /// backend: `split` hands messages from ring to aws-lc at
    /// [`AEAD_SPLIT_AT`] bytes; the others are one library.
    ///
    /// ```
    /// use stateseal::{AEAD_SPLIT_AT, AeadBackend};
    /// assert_eq!(AeadBackend::Split.library_for(64), AeadBackend::Ring);
    /// assert_eq!(AeadBackend::Split.library_for(AEAD_SPLIT_AT), AeadBackend::AwsLc);
    /// assert_eq!(AeadBackend::AwsLc.library_for(64), AeadBackend::AwsLc);
    /// ```
    pub fn library_for(self, len: usize) -> Self {
        match self {
            Self::Split if len < AEAD_SPLIT_AT => Self::Ring,
            Self::Split => Self::AwsLc,
            one => one,
        }
    }

    /// The faster backend for this CPU, and why, from its features.
    ///
    /// On x86-64 with VAES and VPCLMULQDQ: `split` when the CPU also has
    /// AVX-512 (F, BW, VL), ring otherwise (its VAES code is AVX2). Without
    /// VAES both libraries run AES-NI code of the same family and ring's
    /// lighter per-call set-up wins on small states. Elsewhere (aarch64 and
    /// others) aws-lc, whose ARMv8 AES-GCM is the more tuned one; not
    /// measured on this project's machines (`stateseal bench --compare`
    /// shows every backend where you run it).
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
    /// [`Error::Config`] for a value other than `auto`, `aws-lc`, `ring` or `split`,
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
            (AeadBackend::Split, "x86-64 with VAES and AVX-512")
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

mod key;
#[cfg(test)]
mod tests;

pub(crate) use key::GcmKey;
