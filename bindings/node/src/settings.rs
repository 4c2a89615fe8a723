//! `KeysetCodec.start` options (a JSON object with camelCase names, as the
//! JavaScript half passes them) into the bindings' shared settings.

use serde_json::Value;
use stateseal_binding::{Recipe, Setting};

/// The codec never sees the audience (the envelope carries it): the
/// configuration needs one, so it gets a fixed name.
pub(crate) const AUDIENCE: &str = "node-sdk-codec";

/// `keysetKeks` → `keyset_keks`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn setting(name: &str, v: &Value) -> Result<Option<Setting>, String> {
    Ok(Some(match v {
        Value::Null => return Ok(None),
        Value::Bool(b) => Setting::Bool(*b),
        Value::Number(n) => Setting::Number(n.as_f64().ok_or(format!("{name}: not a number"))?),
        Value::String(s) => Setting::Text(s.clone()),
        Value::Array(items) => Setting::List(
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or(format!("{name}: expected a list of strings"))?,
        ),
        Value::Object(_) => {
            return Err(format!(
                "{name}: expected a number, a string, a boolean or a list of strings"
            ));
        }
    }))
}

/// A `Recipe` from `store` and the options object.
pub(crate) fn recipe(store: &str, settings_json: &str) -> Result<Recipe, String> {
    let options: serde_json::Map<String, Value> = serde_json::from_str(settings_json)
        .map_err(|_| "options: expected an object".to_owned())?;
    let mut named = Vec::new();
    for (js_name, value) in &options {
        if js_name.contains('_') {
            return Err(format!(
                "unknown option {js_name:?} (options are camelCase)"
            ));
        }
        if let Some(v) = setting(js_name, value)? {
            named.push((js_name.as_str(), v));
        }
    }
    // Errors name the option as written: `keysetKeks: expected a list …`.
    stateseal_binding::recipe(store, AUDIENCE, named, snake_case)
}
