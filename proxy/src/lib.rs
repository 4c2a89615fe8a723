//! The parts of `stateseal proxy`, the sealing reverse proxy for MCP's
//! streamable HTTP transport (issue 71). So far: [`sse`], the incremental
//! server-sent-events parser the proxy reads upstream streams with.
#![forbid(unsafe_code)]

pub mod sse;
