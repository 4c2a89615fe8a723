//! TLS on loopback for in-process doubles whose clients refuse plain HTTP:
//! a self-signed certificate for 127.0.0.1, made per run, and an axum
//! listener that completes the handshake before handing a connection over.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::server::TlsStream;

/// A certificate for `127.0.0.1`, and the acceptor that serves it.
pub(crate) struct LoopbackCert {
    /// The certificate (PEM): what a client adds to its roots.
    pub(crate) pem: String,
    pub(crate) acceptor: TlsAcceptor,
}

impl LoopbackCert {
    pub(crate) fn generate() -> Self {
        let key = rcgen::KeyPair::generate().expect("key pair");
        let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        let cert = params.self_signed(&key).expect("self-signed certificate");
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = ServerConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(cert.der().to_vec())], der)
        .expect("server config");
        Self {
            pem: cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        }
    }
}

/// Accepts TCP connections and completes TLS; a failed handshake is dropped.
pub(crate) struct TlsListener {
    pub(crate) tcp: TcpListener,
    pub(crate) acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
