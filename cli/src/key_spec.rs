//! `--key SPEC`: where a secret comes from, never the bare secret itself.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use stateseal::KeyRing;

use crate::error::CliError;

/// Reads the secret bytes a SPEC names.
///
/// `hex:` and `b64:` decode; `text:` and `env:` take the UTF-8 bytes of the text
/// (the Python SDK's `str` keys); `file:` takes the file's bytes exactly.
pub(crate) fn read_secret(spec: &str) -> Result<Vec<u8>, CliError> {
    let Some((kind, rest)) = spec.split_once(':') else {
        return Err(bad_spec());
    };
    match kind {
        "hex" => hex::decode(rest.trim())
            .map_err(|_| CliError::Usage("--key hex: is not valid hex".into())),
        "b64" => STANDARD
            .decode(rest.trim())
            .or_else(|_| URL_SAFE_NO_PAD.decode(rest.trim()))
            .map_err(|_| CliError::Usage("--key b64: is not valid base64".into())),
        "text" => Ok(rest.as_bytes().to_vec()),
        "file" => std::fs::read(Path::new(rest)).map_err(|e| {
            CliError::Usage(format!(
                "--key file:{rest}: cannot read the key file ({})",
                e.kind()
            ))
        }),
        "env" => std::env::var(rest).map(String::into_bytes).map_err(|_| {
            CliError::Usage(format!(
                "--key env:{rest}: the environment variable is not set or not UTF-8"
            ))
        }),
        _ => Err(bad_spec()),
    }
}

/// Whether a SPEC carries the secret itself rather than naming where it is.
pub(crate) fn on_command_line(spec: &str) -> bool {
    ["hex:", "b64:", "text:"]
        .iter()
        .any(|p| spec.starts_with(p))
}

fn bad_spec() -> CliError {
    CliError::Usage(
        "--key must be hex:<hex>, b64:<base64>, text:<text>, file:<path> or env:<VAR>; \
         hex:, b64: and text: are accepted with a warning, since the process list and the \
         shell history show them: prefer file: or env:"
            .into(),
    )
}

/// Builds a ring from `--key` specs: the first seals, all unseal.
pub(crate) fn ring_from_specs(specs: &[String]) -> Result<KeyRing, CliError> {
    if specs.iter().any(|s| on_command_line(s)) {
        eprintln!(
            "warning: a key given as hex:, b64: or text: is visible in the process list and your shell history; prefer file:PATH or env:VAR"
        );
    }
    let mut keys = Vec::with_capacity(specs.len());
    for spec in specs {
        keys.push(read_secret(spec)?);
    }
    KeyRing::from_bytes(keys).map_err(|e| CliError::Usage(format!("--key: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(read_secret("hex:6161").unwrap(), b"aa");
        assert_eq!(read_secret("b64:YWE=").unwrap(), b"aa");
        assert_eq!(read_secret("b64:YWE").unwrap(), b"aa");
        assert_eq!(read_secret("text:é").unwrap(), "é".as_bytes());
        for bad in ["deadbeef", "raw:abc", "hex:zz"] {
            let err = read_secret(bad).unwrap_err().to_string();
            assert!(
                !err.contains("deadbeef") && !err.contains("abc"),
                "secret echoed: {err}"
            );
        }
        let err = ring_from_specs(&["text:short".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("keys[0] is 5 bytes"), "{err}");
        assert!(!err.contains("short"));
    }
}
