//! The calibration's traffic, as the model's rounds go: a two-round `deploy`
//! conversation started on a random instance every `1 / rate` seconds (on
//! average), its second round sent after a think time of 1 s to 1 + T/2 s to
//! another random instance. An instance that does not answer (down, or
//! restarting) is skipped for another, as a load balancer would.

use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stateseal_testkit::http::http_post_json;

/// The refusal every rejected state gets (`-32602`).
const REJECTED: &str = "Invalid or expired requestState";

/// What the traffic saw.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    /// First rounds answered with a state.
    pub(crate) sealed: u64,
    /// Second rounds whose state verified.
    pub(crate) verified: u64,
    /// Second rounds whose state was refused.
    pub(crate) rejected: u64,
    /// Calls no instance answered as expected (each is printed).
    pub(crate) unanswered: u64,
}

/// A small xorshift generator: the traffic's choices need no cryptographic randomness.
struct Pick(u64);

impl Pick {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

enum Answer {
    State(String),
    Complete,
    Rejected,
    Other(String),
}

fn params(env: &str, state: Option<&str>) -> Value {
    let mut p = json!({
        "name": "deploy",
        "arguments": {"env": env},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "stateseal-calibrate", "version": "1"}
        }
    });
    if let Some(s) = state {
        p["requestState"] = json!(s);
        p["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    }
    p
}

/// One call; `None` when the instance does not answer at all.
fn call(port: u16, bearer: &str, p: &Value) -> Option<Answer> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": p});
    let auth = format!("Bearer {bearer}");
    let (status, text) = http_post_json(
        port,
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "deploy"),
        ],
        &body.to_string(),
    )?;
    // JSON, or one SSE `data:` line holding it.
    let msg = serde_json::from_str::<Value>(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
    });
    let Some(msg) = msg else {
        return Some(Answer::Other(format!(
            "HTTP {status}, not a JSON-RPC answer ({} bytes)",
            text.len()
        )));
    };
    if let Some(err) = msg.get("error") {
        if err["code"] == -32602 && err["message"] == REJECTED {
            return Some(Answer::Rejected);
        }
        return Some(Answer::Other(format!("error {}", err["code"])));
    }
    let result = &msg["result"];
    Some(match result["requestState"].as_str() {
        Some(s) if result["resultType"] == "input_required" => Answer::State(s.to_owned()),
        _ if result.get("content").is_some() => Answer::Complete,
        _ => Answer::Other("unexpected result".into()),
    })
}

/// A call to a random instance, moving on while one does not answer or is
/// not listening (port 0), within a bound.
fn call_any(pick: &mut Pick, ports: &[AtomicU16], bearer: &str, p: &Value) -> Option<Answer> {
    for _ in 0..3 * ports.len() {
        let port = ports[pick.below(ports.len())].load(Ordering::SeqCst);
        if let Some(a) = (port != 0).then(|| call(port, bearer, p)).flatten() {
            return Some(a);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs the traffic until `until`; second rounds still pending then are dropped.
pub(crate) fn run(ports: &[AtomicU16], bearer: &str, rate: f64, ttl: f64, until: Instant) -> Tally {
    let mut pick = Pick(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let mut tally = Tally::default();
    let mut pending: Vec<(Instant, String, &'static str)> = Vec::new();
    let mut next_start = Instant::now();
    let unanswered = |tally: &mut Tally, what: &str| {
        tally.unanswered += 1;
        eprintln!("calibrate: traffic: {what}");
    };
    while Instant::now() < until {
        let due = pending.iter().map(|p| p.0).min();
        let wake = due.map_or(next_start, |d| d.min(next_start));
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        let now = Instant::now();
        if let Some(i) = pending.iter().position(|p| p.0 <= now) {
            let (_, state, env) = pending.swap_remove(i);
            match call_any(&mut pick, ports, bearer, &params(env, Some(&state))) {
                Some(Answer::Complete) => tally.verified += 1,
                Some(Answer::Rejected) => tally.rejected += 1,
                Some(Answer::Other(e)) => unanswered(&mut tally, &format!("second round: {e}")),
                Some(Answer::State(_)) => unanswered(&mut tally, "second round asked again"),
                None => unanswered(&mut tally, "second round: no instance answered"),
            }
            continue;
        }
        if now >= next_start {
            next_start = now + Duration::from_secs_f64((0.5 + pick.unit()) / rate);
            let env = ["prod", "staging", "dev"][pick.below(3)];
            match call_any(&mut pick, ports, bearer, &params(env, None)) {
                Some(Answer::State(state)) => {
                    tally.sealed += 1;
                    let think = 1.0 + pick.unit() * ttl / 2.0;
                    pending.push((now + Duration::from_secs_f64(think), state, env));
                }
                Some(Answer::Other(e)) => unanswered(&mut tally, &format!("first round: {e}")),
                Some(_) => unanswered(&mut tally, "first round: no state"),
                None => unanswered(&mut tally, "first round: no instance answered"),
            }
        }
    }
    tally
}
