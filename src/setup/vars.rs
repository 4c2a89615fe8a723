//! The configuration from `STATESEAL_*` variables, on top of the file
//! `STATESEAL_CONFIG` names: each variable read as its field's type.

use super::config::{Config, field_error};
use crate::error::Error;

/// `STATESEAL_<FIELD>` for every field, upper-cased.
const FIELDS: [&str; 27] = [
    "store",
    "audience",
    "kek",
    "create_if_missing",
    "ttl",
    "failure_mode",
    "refresh_interval",
    "max_skew",
    "propagation",
    "max_key_age",
    "outage_grace",
    "max_store_staleness",
    "rotation_period",
    "max_seals_per_key",
    "seal_reservation_block",
    "ready_timeout",
    "keyset_id",
    "keyset_keks",
    "min_generation",
    "accept_unauthenticated_keyset",
    "renew_keyset",
    "replay_store",
    "single_use_tools",
    "single_use_prompts",
    "single_use_resources",
    "aead",
    "config",
];

impl Config {
    /// Builds the configuration from `STATESEAL_*` variables, on top of the TOML
    /// file named by `STATESEAL_CONFIG` when set. A variable overrides the file.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable or field.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Config::from_env`] with an injected variable lookup (for tests).
    ///
    /// # Errors
    /// As [`Config::from_env`].
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let Some(path) = var("STATESEAL_CONFIG") else {
            return Self::from_toml_and_vars(None, "", var);
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::Config(format!(
                "STATESEAL_CONFIG={path}: cannot read it ({})",
                e.kind()
            ))
        })?;
        Self::from_toml_and_vars(Some(&text), &format!("STATESEAL_CONFIG={path}"), var)
    }

    /// The configuration from the TOML document `text` (when given; `source`
    /// names it in errors, e.g. `--config fleet.toml`), with `STATESEAL_*`
    /// variables from `var` on top. A program whose file has tables of its own
    /// (the proxy's `[oauth]` and `[proxy]`) takes them out and passes the rest.
    ///
    /// ```
    /// use stateseal::setup::Config;
    ///
    /// let vars = |name: &str| (name == "STATESEAL_TTL").then(|| "120".to_owned());
    /// let config = Config::from_toml_and_vars(
    ///     Some("store = \"file:///tmp/keyset.json\"\naudience = \"svc\"\nttl = 600\n"),
    ///     "fleet.toml",
    ///     vars,
    /// )?;
    /// assert_eq!(config.ttl, std::time::Duration::from_secs(120));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Config::from_env`].
    pub fn from_toml_and_vars(
        text: Option<&str>,
        source: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let mut table = match text {
            Some(text) => text
                .parse::<toml::Table>()
                .map_err(|e| Error::Config(format!("{source}: {}", e.message().trim())))?,
            None => toml::Table::new(),
        };
        for field in FIELDS.iter().filter(|f| **f != "config") {
            let name = format!("STATESEAL_{}", field.to_ascii_uppercase());
            let Some(raw) = var(&name) else { continue };
            let value = match *field {
                "create_if_missing" | "accept_unauthenticated_keyset" | "renew_keyset" => {
                    raw.parse::<bool>().map(toml::Value::Boolean).map_err(|_| {
                        Error::Config(format!("{name}: expected true or false, got {raw:?}"))
                    })?
                }
                "max_seals_per_key" | "seal_reservation_block" | "min_generation" => {
                    raw.parse::<i64>().map(toml::Value::Integer).map_err(|_| {
                        Error::Config(format!("{name}: expected a whole number, got {raw:?}"))
                    })?
                }
                "store" | "audience" | "kek" | "failure_mode" | "keyset_id" | "replay_store"
                | "aead" => toml::Value::String(raw),
                "keyset_keks"
                | "single_use_tools"
                | "single_use_prompts"
                | "single_use_resources" => toml::Value::Array(
                    raw.split(',')
                        .map(str::trim)
                        .filter(|k| !k.is_empty())
                        .map(|k| toml::Value::String(k.to_owned()))
                        .collect(),
                ),
                _ => raw.parse::<f64>().map(toml::Value::Float).map_err(|_| {
                    Error::Config(format!(
                        "{name}: expected seconds such as 30 or 0.5, got {raw:?}"
                    ))
                })?,
            };
            table.insert((*field).to_owned(), value);
        }
        let config: Self = table
            .try_into()
            .map_err(|e: toml::de::Error| field_error(&e))?;
        config.validate()?;
        Ok(config)
    }
}
