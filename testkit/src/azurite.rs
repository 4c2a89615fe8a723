//! Azurite, Microsoft's Azure Storage emulator (npm `azurite`, installed by
//! `scripts/azurite-env.sh`), serving Blob Storage on a loopback port with
//! nothing persisted, stopped by PID. Containers and raw blobs are made with
//! Shared Key-signed REST requests (the store under test never creates
//! containers; operators do, with Terraform).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use base64_simd::STANDARD as B64;

use crate::services::{free_port, wait_until, workspace};

/// Azurite's account (documented, public).
pub const ACCOUNT: &str = "devstoreaccount1";
/// Azurite's well-known account key (documented, public; it signs nothing real).
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const API_VERSION: &str = "2023-11-03";

/// One `azurite-blob` process (killed when dropped).
pub struct Azurite {
    child: Option<Child>,
    /// Its loopback port.
    pub port: u16,
}

fn program() -> PathBuf {
    if let Some(p) = std::env::var_os("STATESEAL_AZURITE") {
        return PathBuf::from(p);
    }
    let installed = workspace().join("target/azurite-env/node_modules/.bin/azurite-blob");
    if installed.exists() {
        return installed;
    }
    panic!("Azurite is needed: run scripts/azurite-env.sh (or set STATESEAL_AZURITE to it)")
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` for `t` (the `x-ms-date` header).
fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

impl Azurite {
    /// Starts Azurite's blob service on a free loopback port (log in `dir`).
    ///
    /// # Panics
    /// When it does not answer within 30 s (its log in the message).
    pub fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("azurite dir");
        let port = free_port();
        let log = dir.join("azurite.log");
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(program())
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            // Nothing on disk, no access log, and no telemetry sent anywhere.
            .args(["--inMemoryPersistence", "--silent", "--disableTelemetry"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("azurite-blob");
        let mut child = Some(child);
        wait_until("azurite", &mut child, &log, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Self { child, port }
    }

    /// The account's blob endpoint, for `STATESEAL_AZURE_BLOB_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }

    /// One Shared Key-signed request; the status and body.
    fn request(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let date = http_date(SystemTime::now());
        let mut ms: Vec<(String, String)> = vec![
            ("x-ms-date".into(), date),
            ("x-ms-version".into(), API_VERSION.into()),
        ];
        ms.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        ms.sort();
        let length = if body.is_empty() {
            String::new()
        } else {
            body.len().to_string()
        };
        let mut to_sign = format!("{method}\n\n\n{length}\n\n\n\n\n\n\n\n\n");
        for (k, v) in &ms {
            to_sign.push_str(&format!("{k}:{v}\n"));
        }
        to_sign.push_str(&format!("/{ACCOUNT}/{ACCOUNT}{path}"));
        let mut sorted = query.to_vec();
        sorted.sort();
        for (k, v) in &sorted {
            to_sign.push_str(&format!("\n{k}:{v}"));
        }
        let key = ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            &B64.decode_to_vec(ACCOUNT_KEY).expect("key"),
        );
        let signature = B64.encode_to_string(ring::hmac::sign(&key, to_sign.as_bytes()).as_ref());
        let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let target = if q.is_empty() {
            format!("/{ACCOUNT}{path}")
        } else {
            format!("/{ACCOUNT}{path}?{}", q.join("&"))
        };
        let mut req = format!(
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\nAuthorization: SharedKey {ACCOUNT}:{signature}\r\n",
            self.port,
            body.len()
        );
        for (k, v) in &ms {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let mut s =
            std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to azurite");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(req.as_bytes()).expect("write");
        s.write_all(body).expect("write");
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }

    /// Creates a container (private).
    ///
    /// # Panics
    /// When Azurite does not answer `201 Created`.
    pub fn create_container(&self, name: &str) {
        let (status, answer) = self.request(
            "PUT",
            &format!("/{name}"),
            &[("restype", "container")],
            &[],
            &[],
        );
        assert_eq!(status, 201, "create container {name}: {answer}");
    }

    /// Writes a blob as-is, unconditionally (a document the store did not write).
    ///
    /// # Panics
    /// When Azurite does not answer `201 Created`.
    pub fn put_blob(&self, container: &str, blob: &str, bytes: &[u8]) {
        let (status, answer) = self.request(
            "PUT",
            &format!("/{container}/{blob}"),
            &[],
            &[("x-ms-blob-type", "BlockBlob")],
            bytes,
        );
        assert_eq!(status, 201, "put blob {container}/{blob}: {answer}");
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn dates_are_rfc_1123() {
        assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            http_date(UNIX_EPOCH + Duration::from_secs(1_709_210_096)),
            "Thu, 29 Feb 2024 12:34:56 GMT"
        );
    }
}
