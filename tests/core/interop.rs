//! Live interop with the real Python SDK (filled in below).
