//! A real Redis server (Debian's, unpacked by `scripts/redis-env.sh`) on a
//! loopback port, nothing persisted, stopped by PID; it can be stopped and
//! started again on the same port, for outages.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::services::{free_port, wait_until, workspace};

/// One `redis-server` process (killed when dropped).
pub struct Redis {
    child: Option<Child>,
    /// Its loopback port (plain TCP; the harness's own commands use it).
    pub port: u16,
    /// Its TLS port and the CA (PEM) its certificate chains to, when started with TLS.
    tls: Option<(u16, Vec<u8>)>,
    dir: PathBuf,
    /// Settings beyond the defaults (`--maxmemory-policy`, `--replicaof`, ...).
    extra: Vec<String>,
}

fn program() -> PathBuf {
    if let Some(p) = std::env::var_os("STATESEAL_REDIS_SERVER") {
        return PathBuf::from(p);
    }
    let unpacked = workspace().join("target/redis-env/redis-server");
    if unpacked.exists() {
        return unpacked;
    }
    panic!("redis-server is needed: run scripts/redis-env.sh (or set STATESEAL_REDIS_SERVER to it)")
}

impl Redis {
    /// Starts a server on a free loopback port, its files under `dir`.
    ///
    /// # Panics
    /// When the server does not answer within 30 s (its log in the message).
    pub fn start(dir: &Path) -> Self {
        Self::start_with(dir, &[])
    }

    /// [`Redis::start`] with more settings on the command line (each
    /// `--name value` as two items), kept for [`Redis::start_again`].
    ///
    /// # Panics
    /// As [`Redis::start`].
    pub fn start_with(dir: &Path, settings: &[&str]) -> Self {
        std::fs::create_dir_all(dir).expect("redis dir");
        let mut redis = Self {
            child: None,
            port: free_port(),
            tls: None,
            dir: dir.to_owned(),
            extra: settings.iter().map(|s| (*s).to_owned()).collect(),
        };
        redis.start_again();
        redis
    }

    /// [`Redis::start`] with a TLS port too, its certificate (for 127.0.0.1)
    /// issued by a CA made for this server with the `openssl` command.
    ///
    /// # Panics
    /// As [`Redis::start`], or when `openssl` fails.
    pub fn start_tls(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("redis dir");
        let ca_pem = make_certificates(dir);
        let mut redis = Self {
            child: None,
            port: free_port(),
            tls: Some((free_port(), ca_pem)),
            dir: dir.to_owned(),
            extra: Vec::new(),
        };
        redis.start_again();
        redis
    }

    /// `rediss://127.0.0.1:<tls port>/0` and the CA (PEM) to trust for it.
    ///
    /// # Panics
    /// When the server was started without TLS.
    pub fn tls_url(&self) -> (String, Vec<u8>) {
        let (port, ca) = self.tls.as_ref().expect("started with start_tls");
        (format!("rediss://127.0.0.1:{port}/0"), ca.clone())
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server (by PID); its records are gone with it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port (after [`Redis::stop`]).
    ///
    /// # Panics
    /// As [`Redis::start`].
    pub fn start_again(&mut self) {
        let log = self.dir.join("redis.log");
        let mut server = Command::new(program());
        if let Some((tls_port, _)) = &self.tls {
            server
                .args([
                    "--tls-port",
                    &tls_port.to_string(),
                    "--tls-auth-clients",
                    "no",
                ])
                .arg("--tls-cert-file")
                .arg(self.dir.join("server.crt"))
                .arg("--tls-key-file")
                .arg(self.dir.join("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(self.dir.join("ca.crt"));
        }
        let child = server
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let port = self.port;
        wait_until("redis-server", &mut self.child, &log, || {
            command(port, "PING").is_some_and(|a| a.starts_with("+PONG"))
        });
    }

    /// One inline command (`FLUSHALL`, `CONFIG SET ...`) and the first
    /// line of its reply.
    ///
    /// # Panics
    /// When the server does not answer.
    pub fn run(&self, line: &str) -> String {
        command(self.port, line).unwrap_or_else(|| panic!("no answer to {line}"))
    }

    /// A section of `INFO` (`replication`, `memory`), whole.
    ///
    /// # Panics
    /// When the server does not answer.
    pub fn info(&self, section: &str) -> String {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        s.write_all(format!("INFO {section}\r\n").as_bytes())
            .expect("send");
        // A bulk reply: `$<len>\r\n<text>\r\n`.
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&reply);
            if let Some((head, body)) = text.split_once("\r\n")
                && let Some(len) = head.strip_prefix('$').and_then(|l| l.parse::<usize>().ok())
                && body.len() >= len
            {
                return body[..len].to_owned();
            }
        }
        String::from_utf8_lossy(&reply).into_owned()
    }

    /// Whether the process is running (not stopped by [`Redis::stop`]).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// How many keys the server holds (`DBSIZE`).
    ///
    /// # Panics
    /// When the server does not answer.
    pub fn keys(&self) -> u64 {
        let answer = command(self.port, "DBSIZE").expect("DBSIZE");
        answer
            .trim()
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .expect("an integer reply")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A CA and a server certificate for 127.0.0.1 under `dir`; the CA's PEM.
fn make_certificates(dir: &Path) -> Vec<u8> {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=stateseal test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("san");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    std::fs::read(dir.join("ca.crt")).expect("ca.crt")
}

/// One inline command and its first reply line; `None` when nothing answers.
fn command(port: u16, line: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("{line}\r\n").as_bytes()).ok()?;
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}
