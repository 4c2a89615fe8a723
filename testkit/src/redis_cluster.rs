//! A real Redis Cluster on loopback: 3 primaries and 3 replicas (Debian's
//! `redis-server`, each a [`Redis`] stopped by PID), made one cluster with
//! `redis-cli --cluster create`, as an operator makes one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::redis::Redis;

/// Six nodes; the first three are the primaries `redis-cli` picked.
pub struct RedisCluster {
    /// Every node, by index.
    pub nodes: Vec<Redis>,
}

fn cli_program() -> PathBuf {
    let server = std::env::var_os("STATESEAL_REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::services::workspace().join("target/redis-env/redis-server"));
    server.with_file_name("redis-cli")
}

impl RedisCluster {
    /// Starts six nodes under `dir` and makes them a cluster of three
    /// primaries with one replica each; returns once every slot is served
    /// and every replica is in sync.
    ///
    /// # Panics
    /// When a node does not start, `redis-cli` fails, or the cluster is not
    /// ready within 30 s.
    pub fn start(dir: &Path) -> Self {
        let nodes: Vec<Redis> = (0..6)
            .map(|i| {
                Redis::start_with(
                    &dir.join(format!("node-{i}")),
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                    ],
                )
            })
            .collect();
        let mut create = Command::new(cli_program());
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli (scripts/redis-env.sh unpacks it)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Self { nodes };
        cluster.wait_for("every slot served and every replica in sync", |c| {
            c.nodes
                .iter()
                .all(|n| n.run("CLUSTER INFO").contains("cluster_state:ok"))
                && c.replicas().iter().all(|&i| {
                    c.nodes[i]
                        .info("replication")
                        .contains("master_link_status:up")
                })
        });
        cluster
    }

    /// `redis-cluster://127.0.0.1:<p0>,127.0.0.1:<p1>,127.0.0.1:<p2>/`: three seeds.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes[..3]
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis-cluster://{}/", seeds.join(","))
    }

    /// The indexes of the nodes that are replicas now.
    pub fn replicas(&self) -> Vec<usize> {
        self.roles("role:slave")
    }

    /// The indexes of the nodes that are primaries now (and running).
    pub fn primaries(&self) -> Vec<usize> {
        self.roles("role:master")
    }

    fn roles(&self, role: &str) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                self.nodes[i].is_running() && self.nodes[i].info("replication").contains(role)
            })
            .collect()
    }

    /// Keys held by the primaries (`DBSIZE` of each).
    pub fn keys(&self) -> u64 {
        self.primaries().iter().map(|&i| self.nodes[i].keys()).sum()
    }

    /// Waits (polling every 50 ms, at most 30 s) until `ready` holds.
    ///
    /// # Panics
    /// When it does not within 30 s, naming `what`.
    pub fn wait_for(&self, what: &str, ready: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !ready(self) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "cluster: not {what} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
