//! End-to-end through rmcp: a real rmcp client talks to a `StateSealed`
//! server over an in-process transport. Every rejection path checks the exact
//! wire error, and that the log holds the reason but no token, state or principal.

#[path = "../../cli/src/demo/bearer_auth.rs"]
mod bearer_auth;
mod conversation;
#[path = "../../cli/src/demo/confirming.rs"]
mod demo_confirming;
mod e2e;
mod fleet_processes;
mod floats;
mod http;
mod macros;
mod oauth;
#[path = "../../cli/src/demo/routes.rs"]
mod routes;
mod server;
mod single_use;
