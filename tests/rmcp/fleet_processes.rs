//! Three deployable servers (`examples/mcp_server`, what the image runs) as
//! processes on one file keyset and one real Redis (Debian's, started on a
//! loopback port and stopped by PID), callers authenticated by the test
//! issuer's access tokens, as an operator runs them: a spent single-use
//! state stays refused after Redis restarts empty and a fresh round
//! completes; an eviction policy that can drop records refuses single-use
//! rounds, with its reason in readiness; a `transfer` state minted without
//! the claim (`stateseal token mint`) is refused on every instance; a
//! pre-revocation keyset document restored under the running fleet and read
//! by a restarted server revives no revoked state.
//!
//! Real processes run on the system clock: where a check waits for
//! something (a refresh, the skew allowance after a new replay epoch), it
//! polls for the outcome with a deadline.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use stateseal::LocalProvider;
use stateseal_testkit::issuer::Issuer;
use stateseal_testkit::redis::Redis;
use stateseal_testkit::{built, free_port};

use crate::http::call;
use crate::single_use::{done, first, second};

const AUDIENCE: &str = "http://127.0.0.1/mcp";
const STATE_AUDIENCE: &str = "stateseal-fleet";
const CLIENT: &str = "c";

/// `GET path` on a loopback port: the status line and the body (empty when
/// nothing answers).
fn get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return (String::new(), String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    );
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, body.to_owned())
}

fn scratch(name: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "stateseal-fleet-{name}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// One `mcp_server` process, killed by PID when dropped.
struct Server {
    addr: String,
    admin: u16,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Server {
    fn start(dir: &Path, config: &Path, index: usize) -> Self {
        let mut s = Self {
            addr: format!("127.0.0.1:{}", free_port()),
            admin: free_port(),
            config: config.to_owned(),
            log: dir.join(format!("server-{index}.log")),
            child: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = Command::new(built("examples/mcp_server"))
            .env("RUST_LOG", "warn")
            .args(["--config", &self.config.display().to_string()])
            .args(["--addr", &self.addr])
            .args(["--admin-addr", &format!("127.0.0.1:{}", self.admin)])
            .arg("--allow-local-kek")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start mcp_server");
        self.child = Some(child);
    }

    /// `/readyz`: its status line and body ("" while it does not answer).
    fn readiness(&self) -> (String, String) {
        get(self.admin, "/readyz")
    }

    /// Waits for the process to exit; its exit code.
    fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut().expect("started");
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                self.child = None;
                return status.code();
            }
            assert!(Instant::now() < deadline, "{} still running", self.addr);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls `/readyz` until `done` holds for its answer (30 s at most).
    fn wait_readiness(
        &self,
        what: &str,
        done: impl Fn(&(String, String)) -> bool,
    ) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self.readiness();
            if done(&r) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "{} {what}: {}",
                self.addr,
                self.logged()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_answering(&self) -> (String, String) {
        self.wait_readiness("never answered", |r| !r.0.is_empty())
    }

    fn wait_ready(&self) {
        self.wait_readiness("not ready", |r| r.0.contains("200"));
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Three servers on one keyset (the first creates it), `transfer` single-use
/// on `replay_store`, R and S of one second.
struct Fleet {
    dir: PathBuf,
    issuer: Issuer,
    servers: Vec<Server>,
}

impl Fleet {
    fn start(name: &str, replay_store: &str) -> Self {
        let issuer = Issuer::start();
        let dir = scratch(name);
        LocalProvider::create_kek(dir.join("kek.bin")).expect("kek");
        let config = dir.join("fleet.toml");
        std::fs::write(
            &config,
            format!(
                "store = \"file://{d}/keyset.json\"\naudience = {STATE_AUDIENCE:?}\nkek = \"local://{d}/kek.bin\"\n\
                 create_if_missing = true\nrotation_period = 0\nrefresh_interval = 1\nmax_skew = 1\nready_timeout = 3\n\
                 replay_store = {replay_store:?}\nsingle_use_tools = [\"transfer\"]\n\n\
                 [oauth]\nissuer = {i:?}\naudience = {AUDIENCE:?}\njwks_uri = {j:?}\n",
                d = dir.display(),
                i = issuer.url,
                j = issuer.jwks_uri(),
            ),
        )
        .expect("config");
        let mut servers = vec![Server::start(&dir, &config, 0)];
        servers[0].wait_ready();
        for i in 1..3 {
            servers.push(Server::start(&dir, &config, i));
        }
        for s in &servers {
            s.wait_ready();
        }
        Self {
            dir,
            issuer,
            servers,
        }
    }

    fn token(&self, subject: &str) -> String {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        self.issuer.mint(&json!({
            "iss": self.issuer.url, "aud": AUDIENCE, "sub": subject, "client_id": CLIENT,
            "iat": t, "exp": t + 600,
        }))
    }

    /// The principal the servers bind `subject`'s states to, as `stateseal` takes it.
    fn principal(&self, subject: &str) -> String {
        json!([CLIENT, self.issuer.url, subject]).to_string()
    }

    fn keyset(&self) -> PathBuf {
        self.dir.join("keyset.json")
    }

    /// `stateseal ARGS` on the fleet's keyset; its output.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(built("stateseal"))
            .args(args)
            .env_remove("STATESEAL_STORE")
            .output()
            .expect("stateseal")
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.servers.iter_mut().for_each(Server::stop);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn state_from(server: &Server, token: &str, tool: &str) -> String {
    let answer = call(&server.addr, token, first(tool));
    answer["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a sealed state: {answer}"))
        .to_owned()
}

fn refused(answer: &Value) -> bool {
    answer["error"]["code"] == -32602
        && answer["error"]["data"]["reason"] == "invalid_request_state"
}

/// A whole `tool` round: the first call on `a`, the echo on `b`.
fn round(a: &Server, b: &Server, token: &str, tool: &str) -> Value {
    let state = state_from(a, token, tool);
    call(&b.addr, token, second(tool, &state))
}

/// Runs whole `tool` rounds (each with a fresh state) until one completes:
/// after the replay store's epoch was set (a store that was empty or lost
/// its records), single-use states issued within the skew allowance (1 s
/// here) are refused, whatever happened before. Every try before is refused
/// with the frozen error; returns how long it took and how many tries.
fn complete(a: &Server, b: &Server, token: &str, tool: &str) -> (Duration, u32) {
    let started = Instant::now();
    let mut tries = 0;
    loop {
        tries += 1;
        let answer = round(a, b, token, tool);
        if done(&answer) {
            return (started.elapsed(), tries);
        }
        assert!(refused(&answer), "{answer}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no {tool} round completed in 10 s ({tries} tries)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn dir_for(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "stateseal-fleet-redis-{name}-{}",
        std::process::id()
    ))
}

#[test]
fn a_spent_state_stays_refused_after_redis_restarts_empty_and_a_fresh_round_completes() {
    let mut redis = Redis::start(&dir_for("restart"));
    let fleet = Fleet::start("restart", &redis.url());
    let [a, b, c] = [&fleet.servers[0], &fleet.servers[1], &fleet.servers[2]];
    let alice = fleet.token("alice");
    // A new store: its epoch was set when the servers connected.
    complete(a, b, &alice, "transfer");
    let spent = state_from(a, &alice, "transfer");
    assert!(done(&call(&b.addr, &alice, second("transfer", &spent))));
    for s in [a, b, c] {
        let again = call(&s.addr, &alice, second("transfer", &spent));
        assert!(refused(&again), "a replay on {}: {again}", s.addr);
    }
    // Killed and started again without persistence: every record is gone.
    redis.stop();
    redis.start_again();
    assert_eq!(redis.keys(), 0, "restarted empty");
    for s in [a, b, c, a] {
        let again = call(&s.addr, &alice, second("transfer", &spent));
        assert!(refused(&again), "after the restart, on {}: {again}", s.addr);
    }
    // A fresh round completes once its state is issued past the new epoch
    // and the skew allowance.
    let (took, tries) = complete(a, c, &alice, "transfer");
    eprintln!("a fresh round completed {took:?} after the restart ({tries} tries)");
    // Multi-use rounds never noticed.
    assert!(done(&round(b, c, &alice, "deploy")));
    for s in &fleet.servers {
        let logged = s.logged();
        assert!(
            !logged.contains(&alice) && !logged.contains(&spent),
            "{logged}"
        );
    }
}

#[test]
fn an_eviction_policy_that_can_drop_records_refuses_single_use_rounds_with_its_reason() {
    let dir = dir_for("evicting");
    let redis = Redis::start_with(
        &dir,
        &["--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru"],
    );
    for i in 0..3000 {
        redis.run(&format!("SET filler:{i} {} PX 600000", "x".repeat(2048)));
    }
    assert!(
        redis.keys() < 3000,
        "memory filled: keys with a TTL evicted"
    );
    let fleet = Fleet::start("evicting", &redis.url());
    let alice = fleet.token("alice");
    for s in &fleet.servers {
        let (status, body) = s.wait_answering();
        assert!(status.contains("200"), "{status}");
        assert!(
            body.contains("replay store failing") && body.contains("volatile-lru"),
            "readiness names the reason: {body}"
        );
        let answer = round(s, s, &alice, "transfer");
        assert!(refused(&answer), "{answer}");
        // Multi-use rounds are unaffected.
        assert!(done(&round(s, s, &alice, "deploy")));
    }
    // Fixed on the live server (with room to write): seen at the next check
    // (within 5 s while refused).
    assert!(
        redis
            .run("CONFIG SET maxmemory-policy noeviction")
            .starts_with("+OK")
    );
    assert!(redis.run("CONFIG SET maxmemory 0").starts_with("+OK"));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done(&round(
        &fleet.servers[0],
        &fleet.servers[1],
        &alice,
        "transfer",
    )) {
        assert!(Instant::now() < deadline, "the fixed policy was never seen");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_transfer_state_minted_without_the_claim_is_refused_on_every_instance() {
    let redis = Redis::start(&dir_for("claimless"));
    let fleet = Fleet::start("claimless", &redis.url());
    let alice = fleet.token("alice");
    let store = format!("file://{}", fleet.keyset().display());
    let principal = fleet.principal("alice");
    let mint = |tool: &str, state: &str| {
        let params = first(tool).to_string();
        let out = fleet.cli(&[
            "token",
            "mint",
            "--keyset",
            &store,
            "--method",
            "tools/call",
            "--params",
            &params,
            "--audience",
            STATE_AUDIENCE,
            "--principal",
            &principal,
            "--state",
            state,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    };
    // The control: the same command's multi-use state verifies.
    let deploy = mint("deploy", "confirm-deploy:prod");
    assert!(done(&call(
        &fleet.servers[0].addr,
        &alice,
        second("deploy", &deploy)
    )));
    let transfer = mint("transfer", "confirm-transfer:5");
    let records = redis.keys();
    for s in fleet.servers.iter().chain(&fleet.servers) {
        let answer = call(&s.addr, &alice, second("transfer", &transfer));
        assert!(refused(&answer), "on {}: {answer}", s.addr);
    }
    assert_eq!(redis.keys(), records, "nothing recorded");
}

#[test]
fn a_restored_pre_revocation_document_read_by_a_restarted_server_revives_nothing() {
    let redis = Redis::start(&dir_for("restored"));
    let mut fleet = Fleet::start("restored", &redis.url());
    let alice = fleet.token("alice");
    let early = state_from(&fleet.servers[0], &alice, "deploy");
    let backup = std::fs::read(fleet.keyset()).expect("backup");
    let store = format!("file://{}", fleet.keyset().display());
    let principal = fleet.principal("alice");
    let out = fleet.cli(&[
        "revoke",
        "--store",
        &store,
        "--principal",
        &principal,
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every instance refuses the state within a few refreshes (R = 1 s).
    let deadline = Instant::now() + Duration::from_secs(15);
    for s in &fleet.servers {
        while !refused(&call(&s.addr, &alice, second("deploy", &early))) {
            assert!(Instant::now() < deadline, "{} never refused it", s.addr);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    // A store writer puts the pre-revocation document back.
    std::fs::write(fleet.keyset(), &backup).expect("restore");
    // The running instances refuse it as a rollback (counted) and keep refusing the state.
    let deadline = Instant::now() + Duration::from_secs(15);
    for s in &fleet.servers[..2] {
        while !get(s.admin, "/metrics").1.contains("reason=\"rollback\"") {
            assert!(
                Instant::now() < deadline,
                "{} never read the restored document",
                s.addr
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let answer = call(&s.addr, &alice, second("deploy", &early));
        assert!(refused(&answer), "running {}: {answer}", s.addr);
    }
    // A restarted server reads the restored document with no watermark of its
    // own: the newest copy beside it is its floor, so it adopts nothing, never
    // serves, and exits at ready_timeout naming the reason (an orchestrator
    // restarts it, and it refuses again until the document is put right).
    let restarted = &mut fleet.servers[2];
    restarted.stop();
    restarted.spawn();
    let code = restarted.wait_exit(Duration::from_secs(20));
    assert_ne!(code, Some(0));
    assert_eq!(get(restarted.admin, "/readyz").0, "", "it never listened");
    let logged = restarted.logged();
    assert!(
        logged.contains("behind_newest") && logged.contains("no usable key within ready_timeout"),
        "{logged}"
    );
    assert!(
        !logged.contains(&early) && !logged.contains("\"alice\""),
        "{logged}"
    );
    // The running ones still serve and still refuse it.
    assert!(refused(&call(
        &fleet.servers[0].addr,
        &alice,
        second("deploy", &early)
    )));
    assert!(done(&round(
        &fleet.servers[0],
        &fleet.servers[1],
        &alice,
        "deploy"
    )));
}
