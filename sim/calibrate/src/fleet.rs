//! The real fleet's processes: `http_server` instances, each bound to a port
//! the kernel picks (`127.0.0.1:0`) and read back from the server's log.
//!
//! Picking a port by binding `:0` and releasing it before the server binds it
//! is a race: the other calibration scenario, running at the same time, may
//! pick the same port. One server then fails to bind and its instance goes
//! missing, while calls meant for it reach the other fleet. A restarted
//! instance gets a new port, as a restarted pod gets a new address; its slot
//! reads 0 (not listening) in between, and traffic skips it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use stateseal_testkit::http::http_get;

/// What the server prints once it listens: `listening on http://127.0.0.1:PORT/mcp`.
const LISTENING: &str = "listening on http://127.0.0.1:";

/// The servers, killed (by PID) when dropped, whatever happens in between.
pub(crate) struct Fleet {
    children: Vec<Child>,
    /// Each instance's port; 0 while it is not listening.
    pub(crate) ports: Arc<Vec<AtomicU16>>,
    server: PathBuf,
    config: PathBuf,
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
    oauth: [String; 2],
}

impl Fleet {
    /// Spawns `instances` servers without waiting for any; the fleet and when
    /// the first was spawned.
    pub(crate) fn spawn_all(
        instances: usize,
        server: &Path,
        env: &[(&'static str, String)],
        config: &Path,
        dir: &Path,
        oauth: [String; 2],
    ) -> Result<(Self, Instant), String> {
        let mut fleet = Self {
            children: Vec::new(),
            ports: Arc::new((0..instances).map(|_| AtomicU16::new(0)).collect()),
            server: server.to_owned(),
            config: config.to_owned(),
            dir: dir.to_owned(),
            env: env.to_vec(),
            oauth,
        };
        let started = Instant::now();
        for i in 0..instances {
            let child = fleet.spawn(i)?;
            fleet.children.push(child);
        }
        Ok((fleet, started))
    }

    fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("server-{i}.log"))
    }

    /// Starts server `i`, its log appended to `server-{i}.log`.
    fn spawn(&self, i: usize) -> Result<Child, String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(i))
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        Command::new(&self.server)
            .args([
                "--addr",
                "127.0.0.1:0",
                "--config",
                &self.config.display().to_string(),
                "--oauth-issuer",
                &self.oauth[0],
                "--oauth-jwks-uri",
                &self.oauth[1],
            ])
            .envs(self.env.iter().map(|(k, v)| (*k, v)))
            // Scheduler info (rotations) and the store writes lost to another writer (debug).
            .env(
                "RUST_LOG",
                "warn,stateseal::rotation::scheduler=info,stateseal::rotation::newest=debug",
            )
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.server.display()))
    }

    /// The port server `i` says it listens on, in its log after `from` bytes.
    fn said_port(&self, i: usize, from: u64) -> Result<Option<u16>, String> {
        let text = std::fs::read(self.log(i)).map_err(|e| format!("server log: {e}"))?;
        let said = String::from_utf8_lossy(text.get(from as usize..).unwrap_or_default());
        Ok(said.lines().find_map(|l| {
            let rest = &l[l.find(LISTENING)? + LISTENING.len()..];
            rest.split('/').next()?.parse::<u16>().ok()
        }))
    }

    /// An error naming server `i` and its log when its process has exited.
    fn exited(&mut self, i: usize, when: &str) -> Result<(), String> {
        match self.children[i].try_wait() {
            Ok(Some(status)) => {
                let said = std::fs::read_to_string(self.log(i)).unwrap_or_default();
                Err(format!("server {i} exited ({status}) {when}:\n{said}"))
            }
            _ => Ok(()),
        }
    }

    /// Waits until each server in `which` (its log after the offset given)
    /// listens, publishes its port and notes when it was first seen
    /// listening; fails when a process exits first or `deadline` passes.
    fn publish_ports(
        &mut self,
        which: &[(usize, u64)],
        deadline: Instant,
    ) -> Result<Vec<Instant>, String> {
        let mut seen: Vec<Option<Instant>> = vec![None; which.len()];
        while seen.iter().any(Option::is_none) {
            for (k, &(i, from)) in which.iter().enumerate() {
                if seen[k].is_some() {
                    continue;
                }
                if let Some(port) = self.said_port(i, from)? {
                    self.ports[i].store(port, Ordering::SeqCst);
                    seen[k] = Some(Instant::now());
                } else {
                    self.exited(i, "before listening")?;
                }
            }
            if Instant::now() > deadline {
                return Err("a server did not listen within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(seen.into_iter().flatten().collect())
    }

    /// Every server's port, then every server ready (`/stats`), by
    /// `deadline`; how far apart the servers began to listen, that is
    /// finished loading the keyset, which sets their refresh phases.
    pub(crate) fn wait_ready(&mut self, deadline: Instant) -> Result<f64, String> {
        let all: Vec<(usize, u64)> = (0..self.children.len()).map(|i| (i, 0)).collect();
        let seen = self.publish_ports(&all, deadline)?;
        let spread = match (seen.iter().min(), seen.iter().max()) {
            (Some(first), Some(last)) => last.duration_since(*first).as_secs_f64(),
            _ => 0.0,
        };
        for port in self.ports.iter().map(|p| p.load(Ordering::SeqCst)) {
            loop {
                let ready = http_get(port, "/stats")
                    .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
                    .is_some_and(|s| s["ready"] == true);
                if ready {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("the server on port {port} was not ready in 30 s"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(spread)
    }

    /// Server `i` stops (killed) and a new process starts, on a new port.
    /// How long it was down: from the kill until it listened again.
    pub(crate) fn restart(&mut self, i: usize) -> Result<f64, String> {
        self.ports[i].store(0, Ordering::SeqCst);
        let killed = Instant::now();
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
        let from = std::fs::metadata(self.log(i)).map_or(0, |m| m.len());
        self.children[i] = self.spawn(i)?;
        let seen = self.publish_ports(&[(i, from)], killed + Duration::from_secs(30))?;
        Ok(seen
            .first()
            .map_or(0.0, |s| s.duration_since(killed).as_secs_f64()))
    }

    /// Fails when a server is no longer running: its instance would be
    /// missing from the counts without a word.
    pub(crate) fn check_running(&mut self) -> Result<(), String> {
        for i in 0..self.children.len() {
            self.exited(i, "during the run")?;
        }
        Ok(())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
