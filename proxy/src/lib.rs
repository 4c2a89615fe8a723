//! The parts of `stateseal proxy`, the sealing reverse proxy for MCP's
//! streamable HTTP transport (issue 71). So far: [`sse`], the incremental
//! server-sent-events parser the proxy reads upstream streams with, and
//! [`rpc_id`], the JSON-RPC ids it matches responses to requests by, and
//! [`inbound`], which verifies a request body's echoes before it goes upstream.
#![forbid(unsafe_code)]

pub mod inbound;
pub mod rpc_id;
pub mod sse;
