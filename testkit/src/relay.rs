//! A TCP relay on a loopback port in front of a test service, which a test can
//! cut and restore: an outage as the client sees it, for services that keep
//! their state in memory (moto), where stopping the process would lose it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{TcpListener, TcpStream};

/// A running relay; stops on drop.
#[derive(Debug)]
pub struct Relay {
    /// `http://127.0.0.1:<port>`: give it to the client instead of the service's address.
    pub endpoint: String,
    cut: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Relays connections from a new loopback port to `target` (`127.0.0.1:<port>`).
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let cut = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cut);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees the connection reset
                }
                let target = target.clone();
                let flag = Arc::clone(&flag);
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    // Copy both ways until either side closes or the relay is cut.
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        () = async {
                            while !flag.load(Ordering::SeqCst) {
                                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                            }
                        } => {}
                    }
                });
            }
        });
        Self {
            endpoint,
            cut,
            task,
        }
    }

    /// Cuts every connection, open or new, until [`Relay::restore`].
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Relays again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}
