//! Named settings from a binding (Python keywords, a JavaScript options
//! object) into a validated `setup::Config`: one list of names and types for
//! every language.

use std::time::Duration;

use stateseal::setup::Config;

use crate::running::{ExplicitTiming, Recipe};

/// One setting's value, as the binding's language gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Setting {
    /// `True` / `true`.
    Bool(bool),
    /// Any number (seconds, counts).
    Number(f64),
    /// A string.
    Text(String),
    /// A list of strings.
    List(Vec<String>),
}

/// Seconds as a duration (one too long for a `Duration` is the longest; the
/// configuration's checks then name the field's limit).
fn seconds(name: &str, v: &Setting) -> Result<Duration, String> {
    match v {
        Setting::Number(n) if *n >= 0.0 && n.is_finite() => {
            Ok(Duration::try_from_secs_f64(*n).unwrap_or(Duration::MAX))
        }
        Setting::Number(_) => Err(format!("{name}: expected seconds (a number, not negative)")),
        _ => Err(format!("{name}: expected seconds (a number)")),
    }
}

fn boolean(name: &str, v: &Setting) -> Result<bool, String> {
    match v {
        Setting::Bool(b) => Ok(*b),
        _ => Err(format!("{name}: expected true or false")),
    }
}

fn count(name: &str, v: &Setting) -> Result<u64, String> {
    match v {
        Setting::Number(n) if n.fract() == 0.0 && *n >= 0.0 && *n < 2f64.powi(53) => Ok(*n as u64),
        _ => Err(format!("{name}: expected a whole number")),
    }
}

fn text(v: &Setting, expected: &str) -> Result<String, String> {
    match v {
        Setting::Text(s) => Ok(s.clone()),
        _ => Err(expected.to_owned()),
    }
}

fn names(name: &str, v: &Setting) -> Result<Vec<String>, String> {
    match v {
        Setting::List(l) => Ok(l.clone()),
        _ => Err(format!("{name}: expected a list of names")),
    }
}

/// A `Recipe` from `store` and named settings, each name as the caller's
/// language spells it; `field_of` turns one into the `Config` field it sets
/// (`str::to_owned` for Python's names, a camelCase conversion for
/// JavaScript's). Errors name the setting as the caller spelled it.
/// `audience` is what the configuration carries.
///
/// # Errors
/// An unknown name, or a value of the wrong type, named.
pub fn recipe<'a>(
    store: &str,
    audience: &str,
    settings: impl IntoIterator<Item = (&'a str, Setting)>,
    field_of: fn(&str) -> String,
) -> Result<Recipe, String> {
    let mut b = Config::builder(store, audience);
    let mut allow_local_kek = false;
    let mut explicit = ExplicitTiming::default();
    for (name, value) in settings {
        let v = &value;
        let field = field_of(name);
        match field.as_str() {
            "refresh_interval" => explicit.refresh_interval = true,
            "max_skew" => explicit.max_skew = true,
            "ttl" => explicit.ttl = true,
            "propagation" => explicit.propagation = true,
            _ => {}
        }
        b = match field.as_str() {
            "kek" => b.kek(Some(text(
                v,
                &format!("{name}: expected a KEK URI (a string)"),
            )?)),
            "create_if_missing" => b.create_if_missing(boolean(name, v)?),
            "allow_local_kek" => {
                allow_local_kek = boolean(name, v)?;
                b
            }
            "ttl" => b.ttl(seconds(name, v)?),
            "refresh_interval" => b.refresh_interval(seconds(name, v)?),
            "max_skew" => b.max_skew(seconds(name, v)?),
            "propagation" => b.propagation(Some(seconds(name, v)?)),
            "max_key_age" => b.max_key_age(seconds(name, v)?),
            "outage_grace" => b.outage_grace(seconds(name, v)?),
            "max_store_staleness" => b.max_store_staleness(Some(seconds(name, v)?)),
            // 0 never rotates by age, as in the file.
            "rotation_period" => {
                b.rotation_period(Some(seconds(name, v)?).filter(|p| !p.is_zero()))
            }
            "ready_timeout" => b.ready_timeout(seconds(name, v)?),
            "max_seals_per_key" => b.max_seals_per_key(count(name, v)?),
            "seal_reservation_block" => b.seal_reservation_block(count(name, v)?),
            "keyset_id" => b.keyset_id(Some(text(
                v,
                &format!("{name}: expected a keyset id (a string, ks_…)"),
            )?)),
            "keyset_keks" => b.keyset_keks(match v {
                Setting::List(l) => l.clone(),
                _ => return Err(format!("{name}: expected a list of KEK URIs or prefixes")),
            }),
            "min_generation" => b.min_generation(count(name, v)?),
            "accept_unauthenticated_keyset" => b.accept_unauthenticated_keyset(boolean(name, v)?),
            "renew_keyset" => b.renew_keyset(boolean(name, v)?),
            "replay_store" => b.replay_store(Some(text(
                v,
                &format!("{name}: expected a replay store URI (memory:// or redis://…)"),
            )?)),
            "single_use_tools" => b.single_use_tools(names(name, v)?),
            "single_use_prompts" => b.single_use_prompts(names(name, v)?),
            "single_use_resources" => b.single_use_resources(names(name, v)?),
            _ => return Err(format!("unknown setting {name:?}")),
        };
    }
    let config = b.build().map_err(|e| e.to_string())?;
    Ok(Recipe {
        config,
        allow_local_kek,
        explicit_timing: explicit,
    })
}

/// A `Recipe` from the `STATESEAL_*` variables, as `setup::Config::from_env`
/// reads them (`STATESEAL_AUDIENCE` defaults to `audience` here).
///
/// # Errors
/// A variable that does not parse, named.
pub fn recipe_from_env(audience: &str) -> Result<Recipe, String> {
    let config = Config::from_vars(|name| match std::env::var(name).ok() {
        None if name == "STATESEAL_AUDIENCE" => Some(audience.to_owned()),
        v => v,
    })
    .map_err(|e| e.to_string())?;
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
