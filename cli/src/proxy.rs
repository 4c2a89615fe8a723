//! `stateseal proxy`: the sealing reverse proxy in front of an MCP server
//! that does no sealing of its own. Reads the fleet's configuration (the
//! file's keyset settings and `STATESEAL_*` variables, as the servers do,
//! plus its `[proxy]` and `[oauth]` tables), starts the keyset scheduler,
//! and serves until SIGTERM or Ctrl-C, finishing the requests in flight.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use stateseal::setup::{Config, start};
use stateseal_proxy::Proxy;
use stateseal_proxy::admin::admin_router;
use stateseal_proxy::settings::{PrincipalMode, ProxySettings};

use crate::error::CliError;

/// `stateseal proxy` flags.
#[derive(Debug, Args)]
#[command(
    after_help = "The configuration: --config FILE (else STATESEAL_CONFIG), STATESEAL_* variables on top.
Its keyset settings are the servers' (store, audience, pins, kek, timing, replay_store,
single_use_tools, failure_mode); [oauth] (issuer, audience, jwks_uri) validates bearer
tokens; [proxy] sets principal = \"oauth\" | \"header\" | \"none\", principal_header,
forward_authorization, max_body_bytes, max_event_bytes.

Examples:
  stateseal proxy --listen 0.0.0.0:8080 --upstream http://127.0.0.1:3000/mcp --config fleet.toml --admin 0.0.0.0:9090
  STATESEAL_STORE=file:///var/lib/stateseal/keyset.json STATESEAL_AUDIENCE=orders \\
    stateseal proxy --listen 127.0.0.1:0 --upstream http://127.0.0.1:3000/mcp"
)]
pub(crate) struct ProxyArgs {
    /// Where to serve MCP, HOST:PORT (port 0 picks a free one); the URL served is logged.
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The MCP endpoint of the server behind the proxy, e.g. http://127.0.0.1:3000/mcp.
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The configuration file (TOML); STATESEAL_CONFIG when not given.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to serve /metrics, /healthz, /readyz and /stats, HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    admin: Option<String>,
    /// Forward everything untouched, no sealing: only for the benchmark's baseline.
    #[arg(long, hide = true)]
    pass_through: bool,
}

fn address(flag: &str, value: &str) -> Result<SocketAddr, CliError> {
    value.parse().map_err(|_| {
        CliError::Usage(format!(
            "{flag} {value:?}: expected HOST:PORT with an IP address, such as 127.0.0.1:8080 (port 0 picks a free port)"
        ))
    })
}

/// The fleet configuration and the proxy's settings, from the file (or
/// `STATESEAL_CONFIG`) and the environment.
fn configuration(args: &ProxyArgs) -> Result<(Config, ProxySettings), CliError> {
    let path = args
        .config
        .clone()
        .or_else(|| std::env::var_os("STATESEAL_CONFIG").map(PathBuf::from));
    let source = match &path {
        Some(p) if args.config.is_some() => format!("--config {}", p.display()),
        Some(p) => format!("STATESEAL_CONFIG={}", p.display()),
        None => String::new(),
    };
    let mut table = match &path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| CliError::Usage(format!("{source}: cannot read it ({})", e.kind())))?;
            text.parse::<toml::Table>()
                .map_err(|e| CliError::Usage(format!("{source}: {}", e.message().trim())))?
        }
        None => toml::Table::new(),
    };
    let mut section = |name: &str| match table.remove(name) {
        None => Ok(None),
        Some(toml::Value::Table(t)) => Ok(Some(t.to_string())),
        Some(_) => Err(CliError::Usage(format!(
            "{source}: {name} must be a table ([{name}])"
        ))),
    };
    let proxy = section("proxy")?;
    let oauth = section("oauth")?;
    let settings = ProxySettings::from_toml(proxy.as_deref(), oauth.as_deref())
        .map_err(|e| CliError::Usage(with_source(&source, &e.to_string())))?;
    let rest = table.to_string();
    let config =
        Config::from_toml_and_vars(path.is_some().then_some(rest.as_str()), &source, |name| {
            (name != "STATESEAL_CONFIG")
                .then(|| std::env::var(name).ok())
                .flatten()
        })
        .map_err(|e| CliError::Usage(with_source(&source, &e.to_string())))?;
    Ok((config, settings))
}

fn with_source(source: &str, message: &str) -> String {
    if source.is_empty() {
        message.to_owned()
    } else {
        format!("{source}: {message}")
    }
}

/// Runs the proxy until a shutdown signal.
pub(crate) async fn run(args: ProxyArgs, out: &mut impl Write) -> Result<(), CliError> {
    let listen = address("--listen", &args.listen)?;
    let admin = args
        .admin
        .as_deref()
        .map(|a| address("--admin", a))
        .transpose()?;
    let (config, settings) = configuration(&args)?;
    if matches!(settings.principal(), PrincipalMode::Unbound) {
        tracing::warn!(
            "proxy: principal = \"none\": states are bound to no caller (any caller may use a state another was handed)"
        );
    }
    if args.pass_through {
        tracing::warn!(
            "proxy: --pass-through: NO state is sealed or verified (benchmark baseline only)"
        );
    }
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| CliError::Failed(format!("cannot install the metrics recorder: {e}")))?;
    let registry = crate::keyset::registry(&config.store);
    Proxy::check_upstream(&args.upstream).map_err(|e| CliError::Usage(e.to_string()))?;
    let protection = Arc::new(start(&config, registry).await?);
    let proxy = Proxy::builder(protection.boundary(), &args.upstream)
        .settings(settings)
        .sealing(!args.pass_through)
        .build()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Failed(format!("--listen {listen}: {e}")))?;
    let admin_listener = match admin {
        Some(a) => Some(
            tokio::net::TcpListener::bind(a)
                .await
                .map_err(|e| CliError::Failed(format!("--admin {a}: {e}")))?,
        ),
        None => None,
    };
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let mut line = format!("listening on http://{local}/mcp");
    if let Some(a) = &admin_listener {
        let a = a
            .local_addr()
            .map_err(|e| CliError::Failed(e.to_string()))?;
        line.push_str(&format!(", operators' endpoints on http://{a}"));
    }
    eprintln!("{line}");
    let _ = out.flush();
    // Answers are written in pieces (SSE): TCP_NODELAY keeps Nagle from holding them.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let wait = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let serve = axum::serve(listener, proxy.router()).with_graceful_shutdown(wait(stopped.clone()));
    let admin_serve = async {
        match admin_listener {
            Some(l) => {
                let render = move || recorder.render();
                axum::serve(l, admin_router(Arc::clone(&protection), render))
                    .with_graceful_shutdown(wait(stopped.clone()))
                    .await
            }
            None => Ok(()),
        }
    };
    let signals = async {
        shutdown_signal().await;
        eprintln!("proxy: shutting down; finishing the requests in flight");
        let _ = stop.send(true);
    };
    let (served, admin_served, ()) = tokio::join!(serve, admin_serve, signals);
    served.map_err(|e| CliError::Failed(format!("serving: {e}")))?;
    admin_served.map_err(|e| CliError::Failed(format!("serving the operators' port: {e}")))?;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
