//! The boundary over raw JSON-RPC params and results, for servers not built on rmcp.

use super::{Boundary, PrincipalResult, WireError};
use crate::envelope::RequestIdentity;
use crate::reason::RejectReason;

/// What the inbound step learned, for sealing the same round's result.
#[derive(Debug, Clone)]
pub struct Round {
    identity: Option<RequestIdentity>,
}

impl Round {
    /// The round's request identity (`None` for a method that is not a carrier).
    pub fn identity(&self) -> Option<&RequestIdentity> {
        self.identity.as_ref()
    }
}

impl Boundary {
    /// Inbound, on a JSON-RPC request's `params`: for a carrier, verifies an
    /// echoed `requestState` and replaces it with the plaintext (removing it
    /// when absent, `null` or dropped); every other method passes untouched.
    ///
    /// # Errors
    /// [`WireError::invalid_state`] for a bad echo (`Reject` mode), including a
    /// non-string one; [`WireError::invalid_state`] when params cannot be bound.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use stateseal::boundary::Boundary;
    /// # use stateseal::{Envelope, KeyRing, RingHandle, Secret};
    /// # let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
    /// # let boundary = Boundary::new(Arc::new(Envelope::builder(ring, Some("svc")).build()?));
    /// let mut params = serde_json::json!({"name": "deploy", "requestState": null});
    /// let round = boundary.open_params("tools/call", &mut params, &Ok(None)).expect("ok");
    /// let mut result = serde_json::json!({"resultType": "input_required", "requestState": "step-2"});
    /// boundary.seal_result(&round, &mut result, &Ok(None)).expect("sealed");
    /// assert!(result["requestState"].as_str().unwrap().starts_with("v1."));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn open_params(
        &self,
        method: &str,
        params: &mut serde_json::Value,
        principal: &PrincipalResult,
    ) -> Result<Round, WireError> {
        let Some((identity, echoed)) = self.inbound(method, params)? else {
            return Ok(Round { identity: None });
        };
        let plaintext = match echoed {
            Echo::Absent => None,
            Echo::Token(token) => self.open(&identity, Some(&token), principal)?,
            Echo::NotString => self.decide(method, Err(RejectReason::NonStringState))?,
        };
        Ok(replace_state(params, plaintext, identity))
    }

    /// [`Boundary::open_params`] that also admits single-use states
    /// (recording them in the replay store, see [`Boundary::admit`]).
    ///
    /// # Errors
    /// As [`Boundary::open_params`].
    pub async fn admit_params(
        &self,
        method: &str,
        params: &mut serde_json::Value,
        principal: &PrincipalResult,
    ) -> Result<Round, WireError> {
        let Some((identity, echoed)) = self.inbound(method, params)? else {
            return Ok(Round { identity: None });
        };
        let plaintext = match echoed {
            Echo::Absent => None,
            Echo::Token(token) => self.admit(&identity, Some(&token), principal).await?,
            Echo::NotString => self.decide(method, Err(RejectReason::NonStringState))?,
        };
        Ok(replace_state(params, plaintext, identity))
    }

    /// A carrier's identity and its echo; `None` for any other method.
    fn inbound(
        &self,
        method: &str,
        params: &serde_json::Value,
    ) -> Result<Option<(RequestIdentity, Echo)>, WireError> {
        if !Self::is_carrier(method) {
            return Ok(None);
        }
        let identity = match RequestIdentity::from_serde(method, params) {
            Ok(id) => id,
            Err(_) => {
                tracing::warn!(
                    method,
                    "requestState boundary: request params cannot be bound"
                );
                return Err(WireError::invalid_state());
            }
        };
        let echo = match params.get("requestState") {
            None | Some(serde_json::Value::Null) => Echo::Absent,
            Some(serde_json::Value::String(token)) => Echo::Token(token.clone()),
            Some(_) => Echo::NotString,
        };
        Ok(Some((identity, echo)))
    }

    /// Outbound, on the handler's result: seals the `requestState` of an
    /// `input_required` result; anything else is left untouched.
    ///
    /// # Errors
    /// [`WireError::internal`] when sealing fails (the plaintext is removed first).
    pub fn seal_result(
        &self,
        round: &Round,
        result: &mut serde_json::Value,
        principal: &PrincipalResult,
    ) -> Result<(), WireError> {
        let Some(identity) = &round.identity else {
            return Ok(());
        };
        if result.get("resultType").and_then(|t| t.as_str()) != Some("input_required") {
            return Ok(());
        }
        let Some(obj) = result.as_object_mut() else {
            return Ok(());
        };
        // No state, or a non-string one a handler could not have minted: nothing to seal.
        let Some(serde_json::Value::String(state)) = obj.get("requestState") else {
            return Ok(());
        };
        match self.seal(identity, state, principal) {
            Ok(sealed) => {
                obj.insert("requestState".into(), serde_json::Value::String(sealed));
                Ok(())
            }
            Err(e) => {
                // The caller answers with the error; make sure the plaintext cannot leak anyway.
                obj.remove("requestState");
                Err(e)
            }
        }
    }
}

/// An echoed `requestState`, as the request carried it.
enum Echo {
    Absent,
    Token(String),
    NotString,
}

/// Puts the plaintext in place of the echo (or removes the echo).
fn replace_state(
    params: &mut serde_json::Value,
    plaintext: Option<String>,
    identity: RequestIdentity,
) -> Round {
    if let Some(obj) = params.as_object_mut() {
        match plaintext {
            Some(p) => {
                obj.insert("requestState".into(), serde_json::Value::String(p));
            }
            None => {
                obj.remove("requestState");
            }
        }
    }
    Round {
        identity: Some(identity),
    }
}
