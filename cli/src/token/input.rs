//! What the token commands read: a token or params argument. Errors name the flag and path, never the contents.

use crate::error::CliError;
use crate::flag_values::stdin_text;

/// A token argument: itself, or stdin for `-` without its one trailing newline
/// (`echo` and `$(…)` add one; a token never ends in one).
pub(super) fn token_arg(token: &str) -> Result<String, CliError> {
    if token != "-" {
        return Ok(token.to_owned());
    }
    let mut text = stdin_text("token")?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// `--params`: the JSON itself, `@FILE`, or `-` for stdin.
pub(super) fn params_arg(params: &str) -> Result<String, CliError> {
    if params == "-" {
        return stdin_text("--params");
    }
    match params.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            CliError::Usage(format!(
                "--params @{path}: cannot read the file ({})",
                e.kind()
            ))
        }),
        None => Ok(params.to_owned()),
    }
}
