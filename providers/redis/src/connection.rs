//! One connection to the store, to a standalone server (or primary) or to a
//! cluster, with what differs between the two: how the eviction policy of
//! every primary is read, how the epochs are put in place (a pipeline, or
//! one command per bucket since a cluster pipeline may not cross slots), and
//! where `WAIT` goes (the shard of the record).

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

/// Where the store is.
pub(crate) enum Target {
    /// One server or primary (`redis://`, `rediss://`).
    Single(redis::Client, redis::AsyncConnectionConfig),
    /// A Redis Cluster or Valkey cluster, from its seed nodes.
    Cluster(redis::cluster::ClusterClient),
}

impl Target {
    pub(crate) async fn connect(&self) -> RedisResult<Connection> {
        match self {
            Self::Single(client, config) => client
                .get_multiplexed_async_connection_with_config(config)
                .await
                .map(Connection::Single),
            Self::Cluster(client) => client.get_async_connection().await.map(Connection::Cluster),
        }
    }
}

/// A connection of either kind (both multiplexed: clones share it).
#[derive(Clone)]
pub(crate) enum Connection {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(cmd, offset, count),
            Self::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}

impl Connection {
    /// `INFO memory` of the server, or of every primary of the cluster.
    pub(crate) async fn info_memory(&mut self) -> RedisResult<Vec<String>> {
        let answer: Value = redis::cmd("INFO").arg("memory").query_async(self).await?;
        let mut texts = Vec::new();
        collect_texts(&answer, &mut texts);
        Ok(texts)
    }

    /// Sets each key to `value` unless it exists (no TTL): one pipeline on a
    /// server, concurrent commands on a cluster (its keys span slots).
    pub(crate) async fn set_absent(&mut self, keys: &[String], value: i64) -> RedisResult<()> {
        match self {
            Self::Single(c) => {
                let mut pipe = redis::pipe();
                for key in keys {
                    pipe.cmd("SET").arg(key).arg(value).arg("NX").ignore();
                }
                pipe.query_async::<()>(c).await
            }
            Self::Cluster(c) => {
                let sets = keys.iter().map(|key| {
                    let mut c = c.clone();
                    let cmd = {
                        let mut cmd = redis::cmd("SET");
                        cmd.arg(key).arg(value).arg("NX");
                        cmd
                    };
                    async move { cmd.query_async::<Value>(&mut c).await }
                });
                for answer in futures_util::future::join_all(sets).await {
                    answer?;
                }
                Ok(())
            }
        }
    }

    /// `WAIT replicas timeout` on the server, or on the primary holding `key`;
    /// how many replicas acknowledged. `within`: how long this handle waits.
    pub(crate) async fn wait(
        &mut self,
        key: &str,
        replicas: u32,
        within: Duration,
    ) -> RedisResult<u64> {
        // The server gives up at half of `within`, so its answer (how many
        // replicas have the record) is read, not timed out: a server answers
        // a timed-out WAIT only at its next cron tick (up to 100 ms late at
        // the default hz 10), later still on a loaded host.
        let timeout_ms = (within / 2).as_millis().max(1) as u64;
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(timeout_ms);
        match self {
            Self::Single(c) => {
                c.set_response_timeout(within.max(Duration::from_millis(1)));
                cmd.query_async(c).await
            }
            Self::Cluster(c) => {
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                let answer = c
                    .route_command(
                        cmd,
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                    )
                    .await?;
                match answer {
                    Value::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
                    _ => Err(redis::RedisError::from((
                        redis::ErrorKind::Parse,
                        "WAIT answered something other than a count",
                    ))),
                }
            }
        }
    }
}

/// Every text in a reply (a cluster answers `INFO` with one per node).
fn collect_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => out.push(s.clone()),
        Value::VerbatimString { text, .. } => out.push(text.clone()),
        Value::Array(items) | Value::Set(items) => {
            items.iter().for_each(|v| collect_texts(v, out));
        }
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| collect_texts(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nodes_info_is_read() {
        let one = Value::BulkString(b"maxmemory_policy:noeviction\r\n".to_vec());
        let per_node = Value::Map(vec![
            (
                Value::SimpleString("127.0.0.1:7000".into()),
                Value::BulkString(b"maxmemory_policy:noeviction".to_vec()),
            ),
            (
                Value::SimpleString("127.0.0.1:7001".into()),
                Value::VerbatimString {
                    format: redis::VerbatimFormat::Text,
                    text: "maxmemory_policy:allkeys-lru".into(),
                },
            ),
        ]);
        let mut texts = Vec::new();
        collect_texts(&one, &mut texts);
        assert_eq!(texts.len(), 1);
        texts.clear();
        collect_texts(&per_node, &mut texts);
        assert_eq!(texts.len(), 2);
        assert!(texts[1].contains("allkeys-lru"));
    }
}
