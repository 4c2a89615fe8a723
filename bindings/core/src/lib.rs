//! What the language bindings (`bindings/python`, `bindings/node`) share, so
//! that each is only the glue to its runtime: a keyset codec running on its
//! own background threads inside a foreign runtime's process ([`Running`]),
//! started from named settings ([`recipe`]) or the `STATESEAL_*` variables
//! ([`recipe_from_env`]), and the log-only reason a seal or unseal failed
//! ([`reason`]).
//!
//! ```no_run
//! use stateseal_binding::{Running, Setting, recipe};
//!
//! let recipe = recipe(
//!     "file:///var/lib/stateseal/keyset.json",
//!     "my-server",
//!     [("ttl", Setting::Number(600.0))],
//!     str::to_owned, // the names are the `Config` fields already
//! )?;
//! let running = Running::start(&recipe).map_err(|e| e.to_string())?;
//! let token = running.seal(b"state")?;
//! assert_eq!(running.unseal(&token)?, b"state");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod revocations;
pub mod rounds;
mod running;
mod settings;
mod single_use;

pub use running::{ExplicitTiming, Recipe, Running};
pub use settings::{Setting, recipe, recipe_from_env};

use stateseal::{DataError, Error};

/// The reason a seal or unseal failed, as a log-only code: never a key, a
/// token or a plaintext.
pub fn reason(e: &Error) -> String {
    match e {
        Error::Rejected(r) => r.as_str().to_owned(),
        Error::Data(DataError::NotReady) => "not ready: no key ring loaded".to_owned(),
        Error::Data(DataError::SealingStopped) => {
            "not sealing: the keyset store has been unusable for longer than max_store_staleness"
                .to_owned()
        }
        Error::Data(DataError::Seal(why)) => format!("seal failed: {why}"),
        Error::Data(DataError::Random) => "the operating system's random source failed".to_owned(),
        _ => "rejected".to_owned(),
    }
}
