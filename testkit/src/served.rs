//! An axum app served on a free loopback port from its own thread and
//! runtime, stopped (and the thread joined) when dropped: how the test kit's
//! in-process doubles (the GCS front, the OAuth issuer) run.

/// A running app.
pub(crate) struct Served {
    /// `http://127.0.0.1:<port>` (`https://` when served over TLS).
    pub(crate) url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// Serves `app` on a free loopback port.
    pub(crate) fn start(app: axum::Router) -> Self {
        Self::serve(app, None)
    }

    /// Serves `app` over TLS with `acceptor` (`url` is then `https://…`).
    pub(crate) fn start_tls(app: axum::Router, acceptor: tokio_rustls::TlsAcceptor) -> Self {
        Self::serve(app, Some(acceptor))
    }

    fn serve(app: axum::Router, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let tcp = tokio::net::TcpListener::from_std(listener).expect("listener");
                let stopped = async {
                    let _ = stopped.await;
                };
                match tls {
                    None => {
                        let _ = axum::serve(tcp, app).with_graceful_shutdown(stopped).await;
                    }
                    Some(acceptor) => {
                        let listener = crate::tls::TlsListener { tcp, acceptor };
                        let _ = axum::serve(listener, app)
                            .with_graceful_shutdown(stopped)
                            .await;
                    }
                }
            });
        });
        Self {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
