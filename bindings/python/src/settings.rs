//! Keyword settings from Python into a validated `setup::Config`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stateseal::setup::Config;

use crate::running::{ExplicitTiming, Recipe};

/// The codec never sees the audience (the SDK's boundary checks it): the
/// configuration needs one, so it gets a fixed name.
const AUDIENCE: &str = "python-sdk-codec";

fn float(name: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    v.extract::<f64>()
        .map_err(|_| PyValueError::new_err(format!("{name}: expected seconds (a number)")))
}

/// A `Recipe` from `store` and keyword settings (`None` values are left at their defaults).
pub(crate) fn recipe(store: &str, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Recipe> {
    let mut b = Config::builder(store, AUDIENCE);
    let mut allow_local_kek = false;
    let mut explicit = ExplicitTiming::default();
    if let Some(settings) = settings {
        for (key, value) in settings.iter() {
            let name: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let v = &value;
            match name.as_str() {
                "refresh_interval" => explicit.refresh_interval = true,
                "max_skew" => explicit.max_skew = true,
                "ttl" => explicit.ttl = true,
                "propagation" => explicit.propagation = true,
                _ => {}
            }
            b = match name.as_str() {
                "kek" => b.kek(Some(v.extract::<String>().map_err(|_| {
                    PyValueError::new_err("kek: expected a KEK URI (a string)")
                })?)),
                "create_if_missing" => b.create_if_missing(v.extract::<bool>()?),
                "allow_local_kek" => {
                    allow_local_kek = v.extract::<bool>()?;
                    b
                }
                "ttl" => b.ttl(float(&name, v)?),
                "refresh_interval" => b.refresh_interval(float(&name, v)?),
                "max_skew" => b.max_skew(float(&name, v)?),
                "propagation" => b.propagation(Some(float(&name, v)?)),
                "max_key_age" => b.max_key_age(float(&name, v)?),
                "outage_grace" => b.outage_grace(float(&name, v)?),
                "max_store_staleness" => b.max_store_staleness(Some(float(&name, v)?)),
                "rotation_period" => b.rotation_period(float(&name, v)?),
                "ready_timeout" => b.ready_timeout(float(&name, v)?),
                "max_seals_per_key" => b.max_seals_per_key(v.extract::<u64>()?),
                "seal_reservation_block" => b.seal_reservation_block(v.extract::<u64>()?),
                "keyset_id" => b.keyset_id(Some(v.extract::<String>().map_err(|_| {
                    PyValueError::new_err("keyset_id: expected a keyset id (a string, ks_…)")
                })?)),
                "keyset_keks" => b.keyset_keks(v.extract::<Vec<String>>().map_err(|_| {
                    PyValueError::new_err("keyset_keks: expected a list of KEK URIs or prefixes")
                })?),
                "min_generation" => b.min_generation(v.extract::<u64>()?),
                "accept_unauthenticated_keyset" => {
                    b.accept_unauthenticated_keyset(v.extract::<bool>()?)
                }
                "renew_keyset" => b.renew_keyset(v.extract::<bool>()?),
                other => {
                    return Err(PyValueError::new_err(format!("unknown setting {other:?}")));
                }
            };
        }
    }
    let config = b
        .build()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Recipe {
        config,
        allow_local_kek,
        explicit_timing: explicit,
    })
}

/// A `Recipe` from the `STATESEAL_*` variables, as `setup::Config::from_env`
/// reads them (`STATESEAL_AUDIENCE` optional here).
pub(crate) fn recipe_from_env() -> PyResult<Recipe> {
    let config = Config::from_vars(|name| match std::env::var(name).ok() {
        None if name == "STATESEAL_AUDIENCE" => Some(AUDIENCE.to_owned()),
        v => v,
    })
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let allow_local_kek = std::env::var("STATESEAL_ALLOW_LOCAL_KEK").is_ok_and(|v| v == "true");
    // Given by a variable, or by the TOML file STATESEAL_CONFIG names (already read without error).
    let file: toml::Table = std::env::var("STATESEAL_CONFIG")
        .ok()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| text.parse().ok())
        .unwrap_or_default();
    let set = |field: &str| {
        file.contains_key(field)
            || std::env::var(format!("STATESEAL_{}", field.to_ascii_uppercase())).is_ok()
    };
    Ok(Recipe {
        config,
        allow_local_kek,
        explicit_timing: ExplicitTiming {
            refresh_interval: set("refresh_interval"),
            max_skew: set("max_skew"),
            ttl: set("ttl"),
            propagation: set("propagation"),
        },
    })
}
