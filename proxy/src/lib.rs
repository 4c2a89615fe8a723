//! `stateseal proxy`: a sealing reverse proxy for MCP's streamable HTTP
//! transport. Put it in front of an MCP server written in any language and
//! every `requestState` the server hands out is sealed with the fleet's keys
//! on its way to the client, and every echo is verified (expiry, request
//! binding, audience, caller, single use, revocation) before the server sees
//! it, which then reads the plaintext it minted. A refused echo is answered
//! by the proxy with the boundary's frozen `-32602`; the server is never
//! called. Everything without a state passes byte for byte.
//!
//! The parts: [`settings`] (the `[proxy]` and `[oauth]` tables), [`Proxy`]
//! (the router), [`admin`] (the operators' port) and [`sse`] (the
//! incremental event-stream reader it reads upstream streams with). The
//! guide is `docs/proxy.md`.
#![forbid(unsafe_code)]

pub mod admin;
mod caller;
mod forward;
mod inbound;
mod json_write;
mod outbound;
mod pending;
mod rpc_id;
mod server;
pub mod settings;
mod spelling;
pub mod sse;
mod strict;

pub use server::{Proxy, ProxyBuilder, ProxyError};
