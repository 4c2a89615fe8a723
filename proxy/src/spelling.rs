//! Member names a server could read as another: Go's `encoding/json` matches
//! object keys to struct fields ignoring case, and folds `ſ` (U+017F) to `s`
//! and `K` (U+212A) to `k` (the Go MCP SDK before 1.3.1, CVE-2026-27896, and
//! servers that decode with it still); its `encoding/json/v2` option
//! `MatchCaseInsensitiveNames` also ignores `_` and `-`; .NET's
//! case-insensitive options (`JsonSerializerDefaults.Web`) ignore case; and
//! pydantic models that populate by name read `request_state`. A server like
//! that reads `"Method"` as `method`, `"Arguments"` as `arguments`,
//! `"requeſtState"` or `"request_state"` as `requestState`, so a message that
//! spelled a member the proxy reads any other way could carry a method, a
//! target or a state the proxy never saw. Such a message is refused whole
//! (`ı`, U+0131, is refused as `i` too: no decoder needs it, none is harmed).
//!
//! The same readers on the client's side read an answer's `"RequestState"`
//! or `"request_state"` as its state, so the proxy treats a member an
//! upstream spells that way as it treats a stray `requestState`.

use serde_json::Value;

/// The members of a message the proxy reads.
const MESSAGE: [&str; 5] = ["id", "method", "params", "result", "error"];
/// The members of a request's params the proxy reads.
const PARAMS: [&str; 4] = ["name", "uri", "arguments", STATE];

/// Whether `message` names a member the proxy reads in a spelling a
/// case-insensitive server would read as that member.
pub(crate) fn misspelled(message: &Value) -> bool {
    let Some(members) = message.as_object() else {
        return false;
    };
    if members.keys().any(|k| aliases(k, &MESSAGE)) {
        return true;
    }
    match (members.get("method"), members.get("params")) {
        (Some(_), Some(Value::Object(params))) => params.keys().any(|k| aliases(k, &PARAMS)),
        _ => false,
    }
}

/// The name a state goes under.
pub(crate) const STATE: &str = "requestState";

/// Whether a client could read a member named `key` as `requestState`:
/// that name, or it spelled another way.
pub(crate) fn reads_as_state(key: &str) -> bool {
    key == STATE || aliases(key, &[STATE])
}

/// Whether JSON text could name `requestState` in any spelling without an
/// escape: a `q` or `Q` followed by `uest` and `state` in any case, `_` and
/// `-` skipped and `ſ` read as `s` (`requestState` itself included). A
/// cheap test that lets most answers pass unparsed; a match only means
/// the text is read.
pub(crate) fn may_spell_state(text: &[u8]) -> bool {
    memchr::memchr2_iter(b'q', b'Q', text).any(|at| spells_the_rest(&text[at + 1..]))
}

/// Whether `text` starts with the `uestState` of a state's name, spelled any way.
fn spells_the_rest(mut text: &[u8]) -> bool {
    for want in b"ueststate" {
        while let [b'_' | b'-', tail @ ..] = text {
            text = tail;
        }
        let (letter, tail) = match text {
            // `ſ` in UTF-8.
            [0xC5, 0xBF, tail @ ..] => (b's', tail),
            [b, tail @ ..] => (b.to_ascii_lowercase(), tail),
            [] => return false,
        };
        if letter != *want {
            return false;
        }
        text = tail;
    }
    true
}

/// Whether `key` is one of `names` spelled another way.
fn aliases(key: &str, names: &[&str]) -> bool {
    let letters = || key.chars().filter(|c| !matches!(c, '_' | '-'));
    names.iter().any(|name| {
        key != *name
            && letters().count() == name.len()
            && letters()
                .zip(name.bytes())
                .all(|(k, n)| fold(k) == Some(n.to_ascii_lowercase()))
    })
}

/// The ASCII letter `c` matches case-insensitively in Go or .NET, if any.
fn fold(c: char) -> Option<u8> {
    match c {
        'ſ' => Some(b's'),
        '\u{212A}' => Some(b'k'),
        'ı' => Some(b'i'),
        c if c.is_ascii() => Some(c.to_ascii_lowercase() as u8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn another_spelling_of_a_member_the_proxy_reads_is_caught() {
        for message in [
            json!({"jsonrpc": "2.0", "Method": "tools/call", "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "METHOD": "tools/call"}),
            json!({"jsonrpc": "2.0", "method": "tools/list", "paramſ": {}}),
            json!({"jsonrpc": "2.0", "ıd": 1, "method": "x"}),
            json!({"method": "tools/call", "params": {"name": "a", "Name": "b"}}),
            json!({"method": "tools/call", "params": {"RequestState": "forged"}}),
            json!({"method": "tools/call", "params": {"requeſtState": "forged"}}),
            json!({"method": "tools/call", "params": {"request_state": "forged"}}),
            json!({"method": "tools/call", "params": {"request-state": "forged"}}),
            json!({"jsonrpc": "2.0", "_id": 1, "method": "x"}),
            json!({"method": "prompts/get", "params": {"ARGUMENTS": {}}}),
            json!({"method": "resources/read", "params": {"URI": "file:///b"}}),
            json!({"id": 1, "Result": {}}),
        ] {
            assert!(misspelled(&message), "{message}");
        }
    }

    #[test]
    fn every_spelling_of_a_state_a_client_reads_is_seen_and_nothing_else() {
        for key in [
            "requestState",
            "RequestState",
            "REQUESTSTATE",
            "request_state",
            "Request-State",
            "requeſtState",
            "requestſtate",
            "_requestState",
        ] {
            assert!(reads_as_state(key), "{key}");
            let text = format!(r#"{{"result":{{"{key}":"x"}}}}"#);
            assert!(may_spell_state(text.as_bytes()), "{text}");
        }
        for key in [
            "requestStates",
            "request state",
            "state",
            "requestStat",
            "quest",
        ] {
            assert!(!reads_as_state(key), "{key}");
        }
        for text in [
            r#"{"result":{"content":[{"text":"a request: state it"}]}}"#,
            r#"{"query":"q","Q":"QUEST","requeststat":1}"#,
            "q",
            "",
        ] {
            assert!(!may_spell_state(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn exact_names_and_other_members_pass() {
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a", "arguments": {"Name": "x", "requeststate": 1}, "requestState": "s", "_meta": {"Method": 1}, "inputResponses": {}}}),
            json!({"JSONRPC": "2.0", "id": 1, "result": {"RequestState": "s"}}),
            json!({"jsonrpc": "2.0", "idx": 1, "methods": "x", "Κ": 1, "İd": 2, "_meta": {}}),
            json!({"method": "tools/call", "params": {"_meta": {}, "input_responses": {}, "task": {}}}),
            json!(["not", "an", "object"]),
        ] {
            assert!(!misspelled(&message), "{message}");
        }
    }
}
