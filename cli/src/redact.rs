//! Argument-parsing errors without secrets: clap quotes the offending value
//! back (`unexpected argument 'hex:…'`), and the values of some flags are keys,
//! states, principals or tokens. Those are replaced before anything is printed.

/// Flags whose value is never echoed.
const SECRET_FLAGS: [&str; 4] = ["--key", "--state", "--principal", "--params"];

/// Whether an argument carries a secret by its own shape: a key spec with the
/// key inline, or a token.
fn secret_shaped(arg: &str) -> bool {
    crate::key_spec::on_command_line(arg) || arg.starts_with("v1.")
}

/// The arguments whose text must not appear in a message.
fn secrets(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut after_flag = false;
    for arg in args.iter().skip(1) {
        if after_flag || secret_shaped(arg) {
            out.push(arg.as_str());
        }
        if let Some((flag, value)) = arg.split_once('=')
            && SECRET_FLAGS.contains(&flag)
        {
            out.push(value);
        }
        after_flag = SECRET_FLAGS.contains(&arg.as_str());
    }
    // Longest first, so a value containing another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.retain(|s| !s.is_empty());
    out
}

/// `message` with every secret argument replaced by `<redacted>`.
pub(crate) fn scrub(message: &str, args: &[String]) -> String {
    let mut text = message.to_owned();
    for s in secrets(args) {
        text = text.replace(s, "<redacted>");
    }
    text
}

/// Prints a parse error (or help/version) without secrets, and exits: 0 for
/// help and version, 2 for usage errors.
pub(crate) fn exit_with_parse_error(e: &clap::Error, args: &[String], json: bool) -> ! {
    use clap::error::ErrorKind;
    let code = e.exit_code();
    let rendered = e.render().to_string();
    let text = scrub(&rendered, args);
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        print!("{text}");
    } else if json {
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        println!("{}", serde_json::json!({"error": first, "exit_code": code}));
    } else {
        eprint!("{text}");
    }
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn secrets_never_survive() {
        let a = args(&[
            "stateseal",
            "token",
            "mint",
            "hex:00112233",
            "--principal",
            "alice",
            "--state=awaiting",
            "v1.AAAA",
            "--method",
            "tools/call",
        ]);
        let msg =
            "unexpected argument 'hex:00112233' found; 'alice' 'awaiting' 'v1.AAAA' 'tools/call'";
        let out = scrub(msg, &a);
        for s in ["00112233", "alice", "awaiting", "v1.AAAA"] {
            assert!(!out.contains(s), "{s} survived: {out}");
        }
        assert!(out.contains("'tools/call'"), "ordinary values stay: {out}");
    }
}
