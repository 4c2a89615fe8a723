//! The processes under test: `http_server` instances sharing one keyset in
//! OpenBao, started, killed and restarted by PID, and read through `/stats`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `http_server` process.
pub(crate) struct Server {
    pub(crate) index: usize,
    pub(crate) port: u16,
    clock_offset: f64,
    child: Option<Child>,
    /// Peak RSS (kB) of every process this slot ran, read before each kill.
    pub(crate) peak_rss_kb: u64,
    /// KMS calls of the processes that were killed (the live one reports its own).
    pub(crate) kms_calls_before: u64,
    /// AppRole login (role id, secret id file) instead of the fleet's token.
    approle: Option<(String, PathBuf)>,
}

/// What the fleet shares: binaries, config, Vault credentials.
pub(crate) struct FleetEnv {
    /// The issuer whose access tokens the servers accept: its URL and JWKS URI.
    pub(crate) oauth: [String; 2],
    pub(crate) server_bin: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) vault_addr: String,
    pub(crate) vault_token: String,
    pub(crate) logs: PathBuf,
    /// `STATESEAL_KEYSET_ID` and `STATESEAL_KEYSET_KEKS`, as `init` printed them.
    pub(crate) pins: Vec<(&'static str, String)>,
}

pub(crate) use stateseal_testkit::free_port;

pub(crate) use stateseal_testkit::http::http_get;

/// Peak resident set size of a process, from `/proc/<pid>/status` (`VmHWM`).
pub(crate) fn peak_rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

impl Server {
    pub(crate) fn new(index: usize, clock_offset: f64) -> Self {
        Self {
            index,
            port: free_port(),
            clock_offset,
            child: None,
            peak_rss_kb: 0,
            kms_calls_before: 0,
            approle: None,
        }
    }

    /// Logs this process in with AppRole, reading the secret id from `file` at each login.
    pub(crate) fn with_approle(mut self, role_id: String, file: PathBuf) -> Self {
        self.approle = Some((role_id, file));
        self
    }

    /// Starts the process and waits until `/stats` says it is ready.
    pub(crate) fn start(&mut self, env: &FleetEnv) -> Result<Duration, String> {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(env.logs.join(format!("server-{}.log", self.index)))
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let mut command = Command::new(&env.server_bin);
        match &self.approle {
            Some((role_id, file)) => command
                .env("STATESEAL_VAULT_AUTH", "approle")
                .env("STATESEAL_VAULT_ROLE_ID", role_id)
                .env("STATESEAL_VAULT_SECRET_ID_FILE", file)
                .env_remove("VAULT_TOKEN"),
            None => command.env("VAULT_TOKEN", &env.vault_token),
        };
        let child = command
            .args([
                "--addr",
                &format!("127.0.0.1:{}", self.port),
                "--config",
                &env.config.display().to_string(),
                "--clock-offset",
                &self.clock_offset.to_string(),
                "--oauth-issuer",
                &env.oauth[0],
                "--oauth-jwks-uri",
                &env.oauth[1],
            ])
            .env("VAULT_ADDR", &env.vault_addr)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("start {}: {e}", env.server_bin.display()))?;
        self.child = Some(child);
        let deadline = started + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(stats) = self.stats()
                && stats["ready"] == true
            {
                return Ok(started.elapsed());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(format!(
                    "server {} exited during start: {status}",
                    self.index
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("server {} not ready within 30 s", self.index))
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub(crate) fn stats(&self) -> Option<serde_json::Value> {
        http_get(self.port, "/stats").and_then(|b| serde_json::from_str(&b).ok())
    }

    /// Records what the live process reports, then kills it (SIGKILL, by PID).
    pub(crate) fn kill(&mut self) {
        if let Some(pid) = self.pid() {
            self.peak_rss_kb = self.peak_rss_kb.max(peak_rss_kb(pid));
        }
        if let Some(s) = self.stats() {
            self.kms_calls_before += s["kms_calls"].as_u64().unwrap_or(0);
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// KMS calls of every process this slot ran.
    pub(crate) fn kms_calls(&self) -> u64 {
        self.kms_calls_before
            + self
                .stats()
                .and_then(|s| s["kms_calls"].as_u64())
                .unwrap_or(0)
    }

    pub(crate) fn final_peak_rss_kb(&self) -> u64 {
        self.pid()
            .map_or(self.peak_rss_kb, |p| self.peak_rss_kb.max(peak_rss_kb(p)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs the `stateseal` CLI with the fleet's Vault credentials.
pub(crate) fn cli(bin: &Path, env: &FleetEnv, args: &[&str]) -> std::process::Output {
    Command::new(bin)
        .args(args)
        .env("VAULT_ADDR", &env.vault_addr)
        .env("VAULT_TOKEN", &env.vault_token)
        .envs(env.pins.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()))
}
