//! The store's connection: one multiplexed connection, made again when it
//! dies (a restart, a failover, an idle connection cut), and checked each
//! time it is made: the eviction policy read (and read again from time to
//! time), the epochs put in place before any state is judged against them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::connection::{Connection, Target};
use crate::eviction;
use crate::record::Layout;

/// How often a connection's eviction policy is read again while it is safe
/// (seconds): a `CONFIG SET` on a live server is seen within this long.
const POLICY_RECHECK_SAFE: f64 = 60.0;

/// How often it is read again while it is refused: a fix is picked up this soon.
const POLICY_RECHECK_REFUSED: f64 = 5.0;

/// A connection handed to one record, and which one it is (to drop it if it died).
pub(crate) struct Conn {
    pub(crate) conn: Connection,
    pub(crate) id: u64,
}

/// Why no usable connection could be had.
pub(crate) enum LinkError {
    /// A command failed at `step`.
    Redis(&'static str, redis::RedisError),
    /// The server is configured so that records may be lost silently.
    Policy(String),
}

struct Live {
    conn: Connection,
    id: u64,
    /// The eviction policy's verdict, and when (store clock) it was read.
    policy: Result<(), String>,
    checked_at: f64,
    /// Whether this connection put the epochs in place.
    epochs: bool,
}

pub(crate) struct Link {
    target: Target,
    live: tokio::sync::Mutex<Option<Live>>,
    ids: AtomicU64,
}

impl Link {
    /// `target`'s timeouts bound each command (and the connect) to half the
    /// record's deadline, so a connection that died silently leaves time to
    /// make another and retry.
    pub(crate) fn new(target: Target) -> Self {
        Self {
            target,
            live: tokio::sync::Mutex::new(None),
            ids: AtomicU64::new(0),
        }
    }

    /// A connection whose server keeps every record and holds the epochs,
    /// connecting (or re-reading the policy) as needed. `now`: the store's clock.
    pub(crate) async fn get(&self, layout: &Layout, now: f64) -> Result<Conn, LinkError> {
        let mut slot = self.live.lock().await;
        if let Some(live) = slot.as_mut() {
            let every = if live.policy.is_ok() {
                POLICY_RECHECK_SAFE
            } else {
                POLICY_RECHECK_REFUSED
            };
            if now - live.checked_at >= every || now < live.checked_at {
                match read_policy(&mut live.conn).await {
                    Ok(policy) => (live.policy, live.checked_at) = (policy, now),
                    Err(e) if crate::record::is_connection_error(&e) => *slot = None,
                    Err(e) => return Err(LinkError::Redis("INFO memory", e)),
                }
            }
        }
        if slot.is_none() {
            let mut conn = self
                .target
                .connect()
                .await
                .map_err(|e| LinkError::Redis("connect", e))?;
            let policy = read_policy(&mut conn)
                .await
                .map_err(|e| LinkError::Redis("INFO memory", e))?;
            let id = self.ids.fetch_add(1, Ordering::Relaxed);
            *slot = Some(Live {
                conn,
                id,
                policy,
                checked_at: now,
                epochs: false,
            });
        }
        let Some(live) = slot.as_mut() else {
            unreachable!("a connection was just put in place")
        };
        live.policy.clone().map_err(LinkError::Policy)?;
        if !live.epochs {
            // Before any state is judged on this connection: a server that
            // restarted empty gets its epochs now, not at the first record.
            layout
                .ensure_epochs(&mut live.conn, now)
                .await
                .map_err(|e| LinkError::Redis("epoch", e))?;
            live.epochs = true;
            tracing::info!(
                connection = live.id,
                "replay store connected: eviction policy noeviction (every primary), epochs in place"
            );
        }
        Ok(Conn {
            conn: live.conn.clone(),
            id: live.id,
        })
    }

    /// Forgets connection `id` (it died): the next record makes another.
    pub(crate) async fn drop_connection(&self, id: u64) {
        let mut slot = self.live.lock().await;
        if slot.as_ref().is_some_and(|live| live.id == id) {
            *slot = None;
        }
    }
}

/// The eviction policy's verdict from `INFO memory`: of the server, or of
/// every primary of a cluster (each shard keeps its own records and epochs).
async fn read_policy(conn: &mut Connection) -> redis::RedisResult<Result<(), String>> {
    let infos = conn.info_memory().await?;
    if infos.is_empty() {
        return Ok(Err("INFO memory gave no answer to judge".to_owned()));
    }
    Ok(infos.iter().try_for_each(|info| eviction::judge(info)))
}
