//! A minimal HTTP/1.1 GET on loopback, for harnesses that read a server's
//! `/stats` (no client library, no async runtime).

use std::io::{Read, Write};
use std::time::Duration;

/// The body of `GET <path>` on `127.0.0.1:<port>` when it answers `200`;
/// `None` for any other answer or none within 2 s.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let (head, rest) = body.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| rest.to_owned())
}
