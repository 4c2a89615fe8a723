//! A TCP relay in front of a Redis server that, when armed, lets one script
//! call (`EVALSHA`/`EVAL`) reach the server and drops its reply with the
//! connection: the client's write landed and it never heard so, as when a
//! connection breaks between a command and its answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running relay; stops on drop.
#[derive(Debug)]
pub struct Relay {
    port: u16,
    armed: Arc<AtomicBool>,
    eaten: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Relays a new loopback port to the Redis server on `target_port`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(target_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let armed = Arc::new(AtomicBool::new(false));
        let eaten = Arc::new(AtomicUsize::new(0));
        let (a, e) = (Arc::clone(&armed), Arc::clone(&eaten));
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target_port)).await else {
                    continue;
                };
                tokio::spawn(relay(inbound, outbound, Arc::clone(&a), Arc::clone(&e)));
            }
        });
        Self {
            port,
            armed,
            eaten,
            task,
        }
    }

    /// `redis://127.0.0.1:<relay port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The next script call's reply is dropped, and its connection closed.
    pub fn eat_next_script_reply(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// How many replies were dropped so far.
    pub fn replies_eaten(&self) -> usize {
        self.eaten.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies both ways; once armed, a request holding a script call is sent on
/// and whatever the server answers next is read and dropped with the connection.
async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    armed: Arc<AtomicBool>,
    eaten: Arc<AtomicUsize>,
) {
    let (mut from_client, mut to_client) = client.split();
    let (mut from_server, mut to_server) = server.split();
    let pending = AtomicBool::new(false);
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let script = buf[..n].windows(4).any(|w| w.eq_ignore_ascii_case(b"EVAL"));
            if script && armed.swap(false, Ordering::SeqCst) {
                pending.store(true, Ordering::SeqCst);
            }
            if to_server.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_server.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if pending.load(Ordering::SeqCst) {
                eaten.fetch_add(1, Ordering::SeqCst);
                return; // the reply is dropped, and the connection with it
            }
            if to_client.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}
