//! The upstream's answers on their way to the client: the `requestState` of
//! every `input_required` result is sealed under the identity of the request
//! it answers (found by JSON-RPC id) and for that request's caller. Fail
//! closed: an answer the proxy cannot seal (no round with its id, a state
//! that is not a string, a seal that fails) becomes a `-32603` error to its
//! id, and a `requestState` member anywhere else in a message (a complete
//! result that kept one, an error whose data echoes the request's params,
//! a notification), or spelled as a case-insensitive client reads it
//! (`RequestState`, `request_state`), is removed, so no plaintext state
//! reaches the client under that name. Nothing else is touched.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::Value;
use stateseal::boundary::{Boundary, WireError};

use crate::inbound::error_response;
use crate::pending::Awaiting;
use crate::rpc_id::RpcId;
use crate::spelling::{self, STATE};

/// What became of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sealed {
    /// No state in it: forward it as it came.
    Untouched,
    /// Its state was sealed (or, failing that, it became an error).
    Changed,
}

// Built once: building a finder costs more than searching a small answer.
static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
static NAME: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(STATE.as_bytes()));

/// Whether JSON text could hold a `requestState` member: it names one in
/// any spelling a client reads as that name, or has a `\u` escape (which
/// could spell it), so nothing without either can carry a state to any
/// parser, strict or lenient, and passes without being parsed.
pub(crate) fn may_hold_state(text: &[u8]) -> bool {
    ESCAPE.find(text).is_some() || spelling::may_spell_state(text)
}

/// Whether text no client reads as JSON (`text/plain`) could still carry
/// a state as its server minted it: it names `requestState`, or has a `\u`
/// escape. Other spellings matter only to a client's JSON reader.
pub(crate) fn names_state(text: &[u8]) -> bool {
    NAME.find(text).is_some() || ESCAPE.find(text).is_some()
}

/// The response id of `message`, if it is a JSON-RPC response.
pub(crate) fn response_id(message: &Value) -> Option<RpcId> {
    let object = message.as_object()?;
    if object.contains_key("method")
        || !(object.contains_key("result") || object.contains_key("error"))
    {
        return None;
    }
    RpcId::of(object.get("id")?)
}

/// Seals the state of `message` if it is an `input_required` result with
/// one, and removes every other `requestState` member in it; `find` gives
/// the round the response with that id answers.
pub(crate) fn seal_message(
    boundary: &Boundary,
    message: &mut Value,
    find: &mut dyn FnMut(&RpcId) -> Option<Awaiting>,
) -> Sealed {
    let sealed = seal_state(boundary, message, find);
    let removed = remove_stray_states(message);
    if removed == 0 {
        return sealed;
    }
    metrics::counter!("stateseal_proxy_stray_states_removed_total").increment(removed as u64);
    tracing::warn!(
        removed,
        "proxy: removed requestState members the upstream sent outside an input_required result"
    );
    Sealed::Changed
}

/// Removes every `requestState` member of `message` but the one of its
/// `input_required` result (sealed by then, or `null`); how many.
fn remove_stray_states(message: &mut Value) -> usize {
    let slot = response_id(message)
        .and(message.get_mut("result"))
        .and_then(Value::as_object_mut)
        .filter(|r| r.get("resultType").and_then(Value::as_str) == Some("input_required"));
    let Some(state) = slot.and_then(|result| result.remove(STATE)) else {
        return remove_states(message);
    };
    let removed = remove_states(message);
    if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
        result.insert(STATE.to_owned(), state);
    }
    removed
}

/// Removes every member of `value` a client could read as a
/// `requestState` (that name in any spelling), at any depth; how many.
fn remove_states(value: &mut Value) -> usize {
    match value {
        Value::Object(members) => {
            let before = members.len();
            members.retain(|name, _| !spelling::reads_as_state(name));
            let removed = before - members.len();
            removed + members.values_mut().map(remove_states).sum::<usize>()
        }
        Value::Array(items) => items.iter_mut().map(remove_states).sum(),
        _ => 0,
    }
}

/// The sealing of `message`'s `input_required` state alone.
fn seal_state(
    boundary: &Boundary,
    message: &mut Value,
    find: &mut dyn FnMut(&RpcId) -> Option<Awaiting>,
) -> Sealed {
    let Some(id) = response_id(message) else {
        return Sealed::Untouched;
    };
    let Some(result) = message.get_mut("result") else {
        return Sealed::Untouched;
    };
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Sealed::Untouched;
    }
    let state = match result.get("requestState") {
        None | Some(Value::Null) => return Sealed::Untouched,
        Some(Value::String(_)) => true,
        Some(_) => false,
    };
    let outcome = match (state, find(&id)) {
        (true, Some((round, principal))) => boundary.seal_result(&round, result, &principal),
        (true, None) => {
            tracing::warn!(
                "proxy: an input_required result answers no request this proxy opened; refused"
            );
            Err(WireError::internal())
        }
        (false, _) => {
            tracing::warn!("proxy: the upstream's requestState is not a string; refused");
            Err(WireError::internal())
        }
    };
    if let Err(e) = outcome {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        *message = error_response(id, e.code, e.message, e.data);
    }
    Sealed::Changed
}

/// Seals every answer of a JSON body (one message or a batch); `None` when
/// nothing in it changed (forward the bytes as they came).
pub(crate) fn seal_value(
    boundary: &Boundary,
    value: &mut Value,
    find: &mut dyn FnMut(&RpcId) -> Option<Awaiting>,
) -> Sealed {
    match value {
        Value::Array(items) => {
            let mut any = Sealed::Untouched;
            for item in items {
                if seal_message(boundary, item, find) == Sealed::Changed {
                    any = Sealed::Changed;
                }
            }
            any
        }
        message => seal_message(boundary, message, find),
    }
}

/// The ids of the answers in `value`, one message or a batch.
pub(crate) fn answered_ids(value: &Value) -> Vec<RpcId> {
    match value {
        Value::Array(items) => items.iter().filter_map(response_id).collect(),
        message => response_id(message).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use stateseal::{Envelope, KeyRing, RingHandle};

    use super::*;

    fn boundary() -> Boundary {
        let ring = Arc::new(RingHandle::new(KeyRing::ephemeral().expect("ring")));
        Boundary::new(Arc::new(
            Envelope::builder(ring, Some("t"))
                .build()
                .expect("envelope"),
        ))
    }

    fn round(b: &Boundary) -> Awaiting {
        let mut params = json!({"name": "deploy", "arguments": {"env": "prod"}});
        (
            b.open_params("tools/call", &mut params, &Ok(None))
                .expect("round"),
            Ok(None),
        )
    }

    fn answer(id: Value, state: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "input_required", "inputRequests": {}, "requestState": state}})
    }

    #[test]
    fn a_state_is_sealed_under_the_round_its_id_names() {
        let b = boundary();
        let r = round(&b);
        let mut m = answer(json!(7), json!("confirm-deploy:prod"));
        let mut asked = Vec::new();
        let sealed = seal_message(&b, &mut m, &mut |id| {
            asked.push(id.clone());
            Some(r.clone())
        });
        assert_eq!(sealed, Sealed::Changed);
        assert_eq!(asked, vec![RpcId::of(&json!(7.0)).expect("id")]);
        let token = m["result"]["requestState"].as_str().expect("a state");
        assert!(
            token.starts_with("v1.") && !token.contains("confirm"),
            "{token}"
        );
        let mut echo =
            json!({"name": "deploy", "arguments": {"env": "prod"}, "requestState": token});
        b.open_params("tools/call", &mut echo, &Ok(None))
            .expect("opens");
        assert_eq!(echo["requestState"], "confirm-deploy:prod");
    }

    #[test]
    fn what_cannot_be_sealed_becomes_an_error_and_no_plaintext_goes_out() {
        let b = boundary();
        let r = round(&b);
        for (mut m, has_round) in [
            (answer(json!(1), json!("secret-plain")), false),
            (answer(json!(1), json!({"plain": "secret-plain"})), true),
            (answer(json!(1), json!(["secret-plain"])), true),
        ] {
            let sealed = seal_message(&b, &mut m, &mut |_| has_round.then(|| r.clone()));
            assert_eq!(sealed, Sealed::Changed);
            assert_eq!(
                m,
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}})
            );
        }
    }

    #[test]
    fn everything_else_is_untouched() {
        let b = boundary();
        let r = round(&b);
        for m in [
            answer(json!(1), Value::Null),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "requestState"}]}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {}}),
        ] {
            let mut copy = m.clone();
            assert_eq!(
                seal_message(&b, &mut copy, &mut |_| Some(r.clone())),
                Sealed::Untouched,
                "{m}"
            );
            assert_eq!(copy, m);
        }
    }

    #[test]
    fn a_state_anywhere_but_a_sealed_input_required_result_is_removed() {
        let b = boundary();
        let r = round(&b);
        let echoed = json!({"name": "deploy", "requestState": "secret-plain"});
        for (m, left) in [
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "requestState": "secret-plain"}}),
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m", "data": {"params": echoed}}}),
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m", "data": {"params": {"name": "deploy"}}}}),
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"requestState": "secret-plain", "nested": [echoed]}}),
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"nested": [{"name": "deploy"}]}}),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {"requestState": "secret-plain"}}),
                json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {}}),
            ),
        ] {
            let mut copy = m.clone();
            let sealed = seal_message(&b, &mut copy, &mut |_| Some(r.clone()));
            assert_eq!((sealed, &copy), (Sealed::Changed, &left), "{m}");
        }
        // An input_required result keeps its own (sealed) state and loses any other.
        let mut m = answer(json!(1), json!("confirm-deploy:prod"));
        m["result"]["inputRequests"] = json!({"confirm": {"requestState": "secret-plain"}});
        m["requestState"] = json!("secret-plain");
        assert_eq!(
            seal_message(&b, &mut m, &mut |_| Some(r.clone())),
            Sealed::Changed
        );
        let token = m["result"]["requestState"].as_str().expect("sealed");
        assert!(token.starts_with("v1."), "{token}");
        assert_eq!(m["result"]["inputRequests"], json!({"confirm": {}}));
        assert!(!m.to_string().contains("secret-plain"), "{m}");
    }

    #[test]
    fn a_state_spelled_as_a_case_insensitive_client_reads_it_is_removed_too() {
        let b = boundary();
        let r = round(&b);
        let asking = json!({"resultType": "input_required", "inputRequests": {}});
        for (m, left) in [
            // A server whose own type spells it so: the client would read the plaintext.
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {}, "request_state": "secret-plain"}}),
                json!({"jsonrpc": "2.0", "id": 1, "result": asking}),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "RequestState": "secret-plain", "Requeſtstate": "secret-plain"}}),
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "data": [{"REQUEST-STATE": "secret-plain", "state": "kept"}]}}),
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "data": [{"state": "kept"}]}}),
            ),
        ] {
            let mut copy = m.clone();
            let sealed = seal_message(&b, &mut copy, &mut |_| Some(r.clone()));
            assert_eq!((sealed, &copy), (Sealed::Changed, &left), "{m}");
        }
        // Beside the state it seals: that one stays, sealed.
        let mut m = answer(json!(1), json!("confirm-deploy:prod"));
        m["result"]["RequestState"] = json!("secret-plain");
        assert_eq!(
            seal_message(&b, &mut m, &mut |_| Some(r.clone())),
            Sealed::Changed
        );
        let result = m["result"].as_object().expect("a result");
        assert_eq!(result.len(), 3, "{m}");
        assert!(
            result["requestState"]
                .as_str()
                .expect("sealed")
                .starts_with("v1.")
        );
        assert!(!m.to_string().contains("secret-plain"), "{m}");
    }

    #[test]
    fn only_text_naming_the_member_or_escaping_may_hold_a_state() {
        assert!(may_hold_state(br#"{"result":{"requestState":"x"}}"#));
        assert!(may_hold_state(br#"{"result":{"request\u0053tate":"x"}}"#));
        assert!(may_hold_state(br#"{"result":{"request_state":"x"}}"#));
        assert!(may_hold_state(br#"{"result":{"RequestState":"x"}}"#));
        assert!(!may_hold_state(
            br#"{"result":{"content":[{"text":"a request, its state"}]}}"#
        ));
        assert!(names_state(br#"{"result":{"requestState":"x"}}"#));
        assert!(!names_state(br#"{"result":{"request_state":"x"}}"#));
        let escaped: Value = serde_json::from_slice(br#"{"request\u0053tate":"x"}"#).expect("JSON");
        assert_eq!(escaped["requestState"], "x", "why an escape counts");
    }

    #[test]
    fn a_batchs_answers_are_sealed_each_by_its_id() {
        let b = boundary();
        let r = round(&b);
        let mut batch =
            json!([answer(json!("a"), json!("s")), {"jsonrpc": "2.0", "id": "b", "result": {}}]);
        let sealed = seal_value(&b, &mut batch, &mut |id| {
            (*id == RpcId::of(&json!("a")).expect("id")).then(|| r.clone())
        });
        assert_eq!(sealed, Sealed::Changed);
        assert!(
            batch[0]["result"]["requestState"]
                .as_str()
                .expect("state")
                .starts_with("v1.")
        );
        assert_eq!(answered_ids(&batch).len(), 2);
    }
}
