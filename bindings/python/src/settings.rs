//! Keyword settings from Python into the bindings' shared settings
//! (`stateseal_binding::recipe`), which name and check them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use stateseal_binding::{Recipe, Setting};

/// The codec never sees the audience (the SDK's boundary checks it): the
/// configuration needs one, so it gets a fixed name.
const AUDIENCE: &str = "python-sdk-codec";

/// A Python value as a setting: `bool` before numbers (a `bool` is an `int`).
fn setting(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Setting> {
    if v.is_instance_of::<PyBool>() {
        return Ok(Setting::Bool(v.extract()?));
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(Setting::Text(s));
    }
    if let Ok(n) = v.extract::<f64>() {
        return Ok(Setting::Number(n));
    }
    if let Ok(l) = v.extract::<Vec<String>>() {
        return Ok(Setting::List(l));
    }
    Err(PyValueError::new_err(format!(
        "{name}: expected a number, a string, a bool or a list of strings"
    )))
}

/// A `Recipe` from `store` and keyword settings (`None` values are left at their defaults).
pub(crate) fn recipe(store: &str, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Recipe> {
    let mut named = Vec::new();
    if let Some(settings) = settings {
        for (key, value) in settings.iter() {
            let name: String = key.extract()?;
            if !value.is_none() {
                let v = setting(&name, &value)?;
                named.push((name, v));
            }
        }
    }
    stateseal_binding::recipe(
        store,
        AUDIENCE,
        named.iter().map(|(n, v)| (n.as_str(), v.clone())),
        str::to_owned,
    )
    .map_err(PyValueError::new_err)
}

/// A `Recipe` from the `STATESEAL_*` variables (`STATESEAL_AUDIENCE` optional here).
pub(crate) fn recipe_from_env() -> PyResult<Recipe> {
    stateseal_binding::recipe_from_env(AUDIENCE).map_err(PyValueError::new_err)
}
