//! `stateseal proxy` in front of MCP servers nobody here wrote: the Python
//! SDK's lowlevel `Server` and a TypeScript SDK server, neither with any
//! state protection of its own (proxy/tests/upstreams), driven by the real
//! Python and TypeScript SDK clients. Every process is started on loopback
//! by these tests and stopped by PID.

mod attacks;
mod inputs;
mod operations;
mod rounds;

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stateseal_testkit::free_port;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A script's printed path (each installs its tool once).
fn installed(script: &str) -> PathBuf {
    let out = Command::new(root().join("scripts").join(script))
        .output()
        .expect(script);
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn python() -> PathBuf {
    std::env::var_os("STATESEAL_PYTHON").map_or_else(|| installed("py-env.sh"), PathBuf::from)
}

fn node_dir() -> PathBuf {
    installed("proxy-upstreams-env.sh")
}

/// The SDK a server or client is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sdk {
    Python,
    TypeScript,
}

/// A child process, killed and reaped when dropped.
pub(crate) struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} is not listening on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A scratch directory with a keyset (a local KEK) and the proxy's configuration.
pub(crate) struct Fleet {
    pub(crate) dir: PathBuf,
    pub(crate) config: PathBuf,
    /// The pins, as `stateseal token` takes them: `--keyset-id ID --kek-pin KEK`.
    pub(crate) pins: Vec<String>,
}

/// The audience every test keyset's states carry.
pub(crate) const AUDIENCE: &str = "proxy-test";

impl Fleet {
    /// A keyset created at `now` (seconds; `None`: this machine's clock) and a
    /// configuration holding its pins and the `extra` lines.
    pub(crate) fn new(name: &str, extra: &str, now: Option<u64>) -> Self {
        let dir =
            std::env::temp_dir().join(format!("stateseal-proxy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        let store = format!("file://{}/keyset.json", dir.display());
        let kek = format!("local://{}/kek.bin", dir.display());
        let mut args = vec![
            "init".to_owned(),
            "--kek".into(),
            kek,
            "--store".into(),
            store.clone(),
        ];
        if let Some(now) = now {
            args.extend([
                "--now".into(),
                now.to_string(),
                "--allow-clock-override".into(),
            ]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_stateseal"))
            .args(&args)
            .output()
            .expect("init");
        assert!(
            out.status.success(),
            "init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        let pin = |name: &str| {
            let line = printed
                .lines()
                .find(|l| l.starts_with(name))
                .expect("a pin");
            line.split('"').nth(1).expect("a quoted value").to_owned()
        };
        let (id, kek) = (pin("keyset_id = "), pin("keyset_keks = "));
        let config = dir.join("proxy.toml");
        std::fs::write(
            &config,
            format!(
                "store = {store:?}\naudience = {AUDIENCE:?}\nkeyset_id = {id:?}\nkeyset_keks = [{kek:?}]\n{extra}"
            ),
        )
        .expect("config");
        let pins = vec!["--keyset-id".into(), id, "--kek-pin".into(), kek];
        Self { dir, config, pins }
    }

    pub(crate) fn store(&self) -> String {
        format!("file://{}/keyset.json", self.dir.display())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An upstream MCP server with no state protection, logging every carrier request it receives.
pub(crate) struct Upstream {
    _process: Running,
    pub(crate) url: String,
    log: PathBuf,
}

impl Upstream {
    pub(crate) fn start(sdk: Sdk, mode: &str, dir: &Path) -> Self {
        let port = free_port();
        let log = dir.join(format!("upstream-{port}.jsonl"));
        let upstreams = root().join("proxy/tests/upstreams");
        let mut command = match sdk {
            Sdk::Python => {
                let mut c = Command::new(python());
                c.arg(upstreams.join("py_upstream.py"));
                c
            }
            Sdk::TypeScript => {
                let mut c = Command::new("node");
                c.arg(node_dir().join("upstream.mjs"));
                c
            }
        };
        let mut child = command
            .arg(port.to_string())
            .arg(&log)
            .arg(mode)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the upstream");
        wait_listening(port, &mut child, "the upstream");
        Self {
            _process: Running(child),
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    /// Every carrier request the upstream received, in order.
    pub(crate) fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a log line"))
            .collect()
    }
}

/// `stateseal proxy` in front of `upstream`.
pub(crate) struct ProxyProcess {
    process: Running,
    pub(crate) url: String,
    stderr: PathBuf,
}

impl ProxyProcess {
    pub(crate) fn start(upstream: &str, config: &Path) -> Self {
        let dir = config.parent().expect("a directory");
        let config = config.display().to_string();
        Self::start_with(&["--upstream", upstream, "--config", &config], &[], dir)
    }

    /// `stateseal proxy --listen 127.0.0.1:0 ARGS` with `envs`, its log in `dir`.
    pub(crate) fn start_with(args: &[&str], envs: &[(&str, &str)], dir: &Path) -> Self {
        let stderr = dir.join(format!("proxy-{}.log", free_port()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_stateseal"))
            .args(["proxy", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("STATESEAL_CONFIG")
            .env_remove("STATESEAL_STORE")
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("log"))
            .spawn()
            .expect("start stateseal proxy");
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = loop {
            let log = std::fs::read_to_string(&stderr).unwrap_or_default();
            if let Some(at) = log.find("listening on http://") {
                let rest = &log[at + "listening on ".len()..];
                break rest[..rest.find("/mcp").expect("the URL") + 4].to_owned();
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("stateseal proxy exited ({status}): {log}");
            }
            assert!(
                Instant::now() < deadline,
                "stateseal proxy did not start: {log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Self {
            process: Running(child),
            url,
            stderr,
        }
    }

    /// What the proxy logged so far.
    pub(crate) fn logged(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.stderr) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// Waits for the process to exit (at most 30 s); its status.
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.process.0.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the proxy did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A client run: `args` after the URL; `headers` are what a gateway in front would set.
pub(crate) fn client(sdk: Sdk, url: &str, args: &[&str], headers: Option<&Value>) -> Value {
    let mut command = match sdk {
        Sdk::Python => {
            let mut c = Command::new(python());
            c.arg(root().join("proxy/tests/upstreams/py_client.py"));
            c
        }
        Sdk::TypeScript => {
            let mut c = Command::new("node");
            c.arg(node_dir().join("client.mjs"));
            c
        }
    };
    if let Some(h) = headers {
        command.env("PROXY_HEADERS", h.to_string());
    }
    let out = command
        .arg(url)
        .args(args)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "{sdk:?} client: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{sdk:?} client printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
