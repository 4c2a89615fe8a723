//! A request body on its way to the upstream: every `requestState` a carrier
//! echoes is verified (and replaced by the plaintext the upstream minted)
//! before the upstream sees the body, and each carrier's round is kept by its
//! JSON-RPC id for sealing the result that answers it.
//!
//! What the proxy cannot read is never forwarded: a body that is not JSON is
//! answered here (`-32700`), since an upstream with a more lenient parser
//! (Python's `json` takes `NaN`) would otherwise read a `requestState` nobody
//! verified; so is a batch where two carriers share an id, since a result
//! sealed under the other request's identity would bind one round's state to
//! another round's arguments. A refused state is answered here with the
//! boundary's frozen error, and only what was not refused goes on. Nor is a
//! body in which an object names a member twice, or names a member the
//! proxy reads in a spelling a case-insensitive server reads as that member
//! (`-32600`): the proxy would verify one and the upstream could read the
//! other. Nor is one whose `Mcp-Method` or `Mcp-Name` header says something
//! other than its body ([`mirrored`]).

use std::collections::HashMap;

use serde_json::{Value, json};
use stateseal::boundary::{Boundary, PrincipalResult, Round, WireError};

use crate::json_write;
use crate::rpc_id::RpcId;
use crate::strict::{self, Unreadable};

mod mirrored;
pub(crate) use mirrored::{HEADER_MISMATCH, Mirrored};

/// What to do with a request body.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// Send `body` upstream (`None`: the body as it came, nothing in it
    /// changed); seal the results that answer `rounds`; add `answers` (the
    /// proxy's own responses to refused members of a batch) to the reply.
    Forward {
        /// The body to send, when it changed.
        body: Option<Vec<u8>>,
        /// Each carrier request's round, by its id.
        rounds: Rounds,
        /// Responses the proxy gives itself, for a batch's refused members.
        answers: Vec<Value>,
        /// The ids of the requests (not notifications) that go on, each
        /// owed an answer.
        requests: Vec<(RpcId, Value)>,
    },
    /// Answer with `body` (a JSON-RPC response or batch of them); the
    /// upstream is not called.
    Answer(Vec<u8>),
    /// Nothing to send either way: every message was a refused notification.
    Nothing,
}

/// The carrier rounds of one body, by request id.
#[derive(Debug, Default)]
pub(crate) struct Rounds(HashMap<RpcId, Round>);

impl Rounds {
    /// The round the response with `id` answers, if it is a carrier's.
    #[cfg(test)]
    pub(crate) fn get(&self, id: &Value) -> Option<&Round> {
        self.0.get(&RpcId::of(id)?)
    }

    /// How many carrier requests the body held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The round of the request with `id`, taken out.
    pub(crate) fn take(&mut self, id: &RpcId) -> Option<Round> {
        self.0.remove(id)
    }

    /// Every round, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&RpcId, &Round)> {
        self.0.iter()
    }
}

/// A JSON-RPC error response to `id`.
pub(crate) fn error_response(id: Value, code: i32, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

fn wire(id: Value, e: &WireError) -> Value {
    error_response(id, e.code, e.message, e.data.clone())
}

fn answer(value: &Value) -> Inbound {
    Inbound::Answer(serde_json::to_vec(value).unwrap_or_default())
}

/// The answer to a body that is JSON but no request the proxy can forward.
fn invalid_request() -> Inbound {
    answer(&error_response(
        Value::Null,
        -32600,
        "Invalid Request",
        None,
    ))
}

/// Verifies every carrier of `body` (single-use states recorded through the
/// boundary's replay store) for the caller `principal`, once its `mirrored`
/// headers are found to agree with it.
pub(crate) async fn open_body(
    boundary: &Boundary,
    body: &[u8],
    principal: &PrincipalResult,
    mirrored: &Mirrored,
) -> Inbound {
    let mut value = match strict::from_slice(body) {
        Ok(value) => value,
        Err(Unreadable::NotJson) => {
            return answer(&error_response(Value::Null, -32700, "Parse error", None));
        }
        Err(Unreadable::Duplicate) => {
            return invalid_request();
        }
    };
    let batch = value.is_array();
    let messages: Vec<&mut Value> = match &mut value {
        Value::Array(items) if items.is_empty() => {
            return invalid_request();
        }
        Value::Array(items) => items.iter_mut().collect(),
        single => vec![single],
    };
    let mut rounds = HashMap::new();
    let mut answers = Vec::new();
    let mut keep = Vec::new();
    let mut changed = false;
    let mut requests = Vec::new();
    if messages.iter().any(|m| crate::spelling::misspelled(m)) {
        return invalid_request();
    }
    // Before any state is verified, so a refused request spends no single-use state.
    if let Err(why) = mirrored.check(&messages, batch) {
        tracing::warn!(
            why,
            "proxy: a request's headers do not mirror its body; refused"
        );
        let id = match messages.as_slice() {
            [one] if !batch && one.get("method").is_some() => {
                one.get("id").cloned().unwrap_or(Value::Null)
            }
            _ => Value::Null,
        };
        let message = format!("Header mismatch: {why}");
        return answer(&error_response(id, HEADER_MISMATCH, &message, None));
    }
    for message in messages {
        let owed = message
            .get("method")
            .and(message.get("id"))
            .and_then(|id| Some((RpcId::of(id)?, id.clone())));
        match open_message(boundary, message, principal, &mut rounds).await {
            Opened::Untouched => {
                keep.push(true);
                requests.extend(owed);
            }
            Opened::Changed => {
                changed = true;
                keep.push(true);
                requests.extend(owed);
            }
            Opened::Refused(response) => {
                changed = true;
                keep.push(false);
                answers.extend(response);
            }
            Opened::Ambiguous => {
                return invalid_request();
            }
        }
    }
    let rounds = Rounds(rounds);
    if !batch {
        return match (keep[0], answers.pop()) {
            (true, _) => Inbound::Forward {
                body: changed.then(|| json_write::to_vec(&value, body.len())),
                rounds,
                answers: Vec::new(),
                requests,
            },
            (false, Some(response)) => answer(&response),
            (false, None) => Inbound::Nothing,
        };
    }
    let Value::Array(items) = value else {
        unreachable!("a batch is an array")
    };
    let rest: Vec<Value> = items
        .into_iter()
        .zip(keep)
        .filter_map(|(m, k)| k.then_some(m))
        .collect();
    if rest.is_empty() {
        return if answers.is_empty() {
            Inbound::Nothing
        } else {
            answer(&Value::Array(answers))
        };
    }
    Inbound::Forward {
        body: changed.then(|| json_write::to_vec(&Value::Array(rest), body.len())),
        rounds,
        answers,
        requests,
    }
}

/// What became of one message.
enum Opened {
    /// Not a carrier, or a carrier with nothing echoed: as it came.
    Untouched,
    /// A carrier whose echo was verified and replaced (or removed).
    Changed,
    /// A carrier refused: the response to send (none for a notification).
    Refused(Option<Value>),
    /// A second carrier with an id already taken.
    Ambiguous,
}

async fn open_message(
    boundary: &Boundary,
    message: &mut Value,
    principal: &PrincipalResult,
    rounds: &mut HashMap<RpcId, Round>,
) -> Opened {
    let Some(method) = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Opened::Untouched;
    };
    if !Boundary::is_carrier(&method) {
        return Opened::Untouched;
    }
    let id = message.get("id").cloned();
    let key = id.as_ref().and_then(RpcId::of);
    if key.as_ref().is_some_and(|k| rounds.contains_key(k)) {
        return Opened::Ambiguous;
    }
    let echoed = message
        .get("params")
        .is_some_and(|p| p.get("requestState").is_some());
    // Taken out and put back (a state can be kilobytes: no copy of it).
    let slot = message.get_mut("params");
    let had = slot.is_some();
    let mut params = slot.map(Value::take).unwrap_or(Value::Null);
    let admitted = boundary.admit_params(&method, &mut params, principal).await;
    if had {
        message["params"] = params;
    }
    match admitted {
        Ok(round) => {
            if let Some(key) = key {
                rounds.insert(key, round);
            }
            if echoed {
                Opened::Changed
            } else {
                Opened::Untouched
            }
        }
        Err(e) => Opened::Refused(id.map(|id| wire(id, &e))),
    }
}

#[cfg(test)]
mod tests;
