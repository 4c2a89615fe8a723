//! The load: concurrent two-round conversations over plain HTTP (MCP
//! 2026-07-28 requests are self-contained, so any round can go to any
//! process), each round to a random process, with a share of attack rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

pub(crate) const USERS: [&str; 2] = ["alice", "bob"];
const REJECTED: &str = "Invalid or expired requestState";

/// The attack kinds, in the order of [`Tally::attacks_by_kind`].
pub(crate) const ATTACK_KINDS: [&str; 5] = [
    "tampered",
    "other_tool",
    "other_arguments",
    "other_principal",
    "expired",
];

/// How one call ended.
#[derive(Debug)]
pub(crate) enum Answer {
    InputRequired(String),
    Complete,
    Rejected,
    Error(String),
}

/// Counters shared by all workers.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) conversations: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) unexpected_rejections: AtomicU64,
    pub(crate) unexpected_errors: AtomicU64,
    pub(crate) attacks: AtomicU64,
    pub(crate) attacks_accepted: AtomicU64,
    /// Attacks answered, by kind (see [`ATTACK_KINDS`]).
    pub(crate) attacks_by_kind: [AtomicU64; 5],
    pub(crate) transport_retries: AtomicU64,
    pub(crate) latencies_us: Mutex<Vec<u64>>,
}

/// A small xorshift generator: the load's choices need no cryptographic randomness.
pub(crate) struct Pick(pub(crate) u64);

impl Pick {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn params(tool: &str, env: &str, state: Option<&str>) -> Value {
    let mut p = json!({
        "name": tool,
        "arguments": {"env": env},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "stateseal-soak", "version": "1"}
        }
    });
    if let Some(s) = state {
        p["requestState"] = json!(s);
        p["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    }
    p
}

fn classify(body: &str) -> Answer {
    // The answer is JSON, or one SSE `data:` line holding it.
    let msg: Option<Value> = serde_json::from_str(body).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
    });
    let Some(msg) = msg else {
        return Answer::Error(format!("unparsable answer ({} bytes)", body.len()));
    };
    if let Some(err) = msg.get("error") {
        if err["code"] == -32602 && err["message"] == REJECTED {
            return Answer::Rejected;
        }
        return Answer::Error(format!("error {}", err["code"]));
    }
    let result = &msg["result"];
    match result["resultType"].as_str() {
        Some("input_required") => match result["requestState"].as_str() {
            Some(s) => Answer::InputRequired(s.to_owned()),
            None => Answer::Error("input_required without requestState".into()),
        },
        _ if result.get("content").is_some() => Answer::Complete,
        _ => Answer::Error("unexpected result".into()),
    }
}

/// One worker's view of the fleet.
pub(crate) struct Load {
    pub(crate) http: reqwest::Client,
    pub(crate) ports: Vec<u16>,
    /// Each user's access token (`USERS` order).
    pub(crate) tokens: Arc<[String]>,
    pub(crate) tally: Arc<Tally>,
    pub(crate) deadline: Instant,
    pub(crate) max_conversations: u64,
    /// Replay a held token once it is this old (past TTL + skew).
    pub(crate) expired_after: Duration,
    /// No attacks before this: the run opens with a clean stretch in which no alert may fire.
    pub(crate) attacks_from: Instant,
}

impl Load {
    /// One call to `port`; `None` on a transport failure (process down).
    async fn call_once(&self, port: u16, user: usize, p: &Value) -> Option<Answer> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": p});
        let started = Instant::now();
        let resp = self
            .http
            .post(format!("http://127.0.0.1:{port}/mcp"))
            .header("Authorization", format!("Bearer {}", self.tokens[user]))
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", p["name"].as_str().unwrap_or_default())
            .json(&body)
            .send()
            .await
            .ok()?;
        let text = resp.text().await.ok()?;
        let us = started.elapsed().as_micros() as u64;
        self.tally.latencies_us.lock().await.push(us);
        Some(classify(&text))
    }

    /// A call to a random process, moving on to another while one is down (bounded).
    async fn call(&self, pick: &mut Pick, user: usize, p: &Value) -> Answer {
        for attempt in 0..20 {
            let port = self.ports[pick.below(self.ports.len())];
            if let Some(a) = self.call_once(port, user, p).await {
                return a;
            }
            self.tally.transport_retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20 * (attempt + 1))).await;
        }
        Answer::Error("no process answered".into())
    }

    fn unexpected(&self, what: &str, a: &Answer) {
        match a {
            Answer::Rejected => {
                self.tally
                    .unexpected_rejections
                    .fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                self.tally.unexpected_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        eprintln!("soak: unexpected answer to {what}: {a:?}");
    }

    async fn attack(&self, pick: &mut Pick, kind: usize, user: usize, p: Value) {
        let answer = self.call(pick, user, &p).await;
        if matches!(&answer, Answer::Error(e) if e == "no process answered") {
            return;
        }
        self.tally.attacks.fetch_add(1, Ordering::Relaxed);
        self.tally.attacks_by_kind[kind].fetch_add(1, Ordering::Relaxed);
        match answer {
            Answer::Rejected => {}
            other => {
                self.tally.attacks_accepted.fetch_add(1, Ordering::Relaxed);
                eprintln!("soak: ATTACK ACCEPTED ({}): {other:?}", ATTACK_KINDS[kind]);
            }
        }
    }

    /// Conversations until the deadline or the count bound.
    pub(crate) async fn run(self, seed: u64) {
        let mut pick = Pick(seed | 1);
        let mut held: Vec<(Instant, String, usize, &'static str)> = Vec::new();
        while Instant::now() < self.deadline
            && self.tally.conversations.fetch_add(1, Ordering::Relaxed) < self.max_conversations
        {
            let user = pick.below(USERS.len());
            let env = ["prod", "staging", "dev"][pick.below(3)];
            let token = match self
                .call(&mut pick, user, &params("deploy", env, None))
                .await
            {
                Answer::InputRequired(t) => t,
                other => {
                    self.unexpected("round 1", &other);
                    continue;
                }
            };
            self.tally.rounds.fetch_add(1, Ordering::Relaxed);
            match self
                .call(&mut pick, user, &params("deploy", env, Some(&token)))
                .await
            {
                Answer::Complete => {
                    self.tally.rounds.fetch_add(1, Ordering::Relaxed);
                }
                other => self.unexpected("round 2", &other),
            }
            // About one conversation in four is followed by an attack with its token.
            if Instant::now() < self.attacks_from {
                continue;
            }
            match pick.below(12) {
                0 => {
                    let mid = token.len() / 2;
                    let flip = if &token[mid..=mid] == "A" { "B" } else { "A" };
                    let tampered = format!("{}{flip}{}", &token[..mid], &token[mid + 1..]);
                    self.attack(&mut pick, 0, user, params("deploy", env, Some(&tampered)))
                        .await;
                }
                1 => {
                    self.attack(&mut pick, 1, user, params("rollback", env, Some(&token)))
                        .await;
                }
                2 => {
                    let other = if env == "prod" { "dev" } else { "prod" };
                    self.attack(&mut pick, 2, user, params("deploy", other, Some(&token)))
                        .await;
                }
                3 => {
                    let thief = (user + 1) % USERS.len();
                    self.attack(&mut pick, 3, thief, params("deploy", env, Some(&token)))
                        .await;
                }
                4 if held.len() < 4 => held.push((Instant::now(), token, user, env)),
                _ => {}
            }
            let (due, waiting): (Vec<_>, Vec<_>) = held
                .drain(..)
                .partition(|(at, ..)| at.elapsed() > self.expired_after);
            held = waiting;
            for (_, old, who, env) in due {
                self.attack(&mut pick, 4, who, params("deploy", env, Some(&old)))
                    .await;
            }
        }
    }
}

/// The q-quantile (0..=1) of sorted samples.
pub(crate) fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
