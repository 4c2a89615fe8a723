//! The `stateseal` command.
#![forbid(unsafe_code)]

mod bench;
mod demo;
mod error;
mod key_spec;
mod keyset_cmd;
mod token;

use clap::{Parser, Subcommand};

/// Seal, inspect and benchmark MCP requestState tokens.
#[derive(Debug, Parser)]
#[command(name = "stateseal", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Token tools: seal, open, mint, verify.
    #[command(subcommand)]
    Token(token::TokenCmd),
    /// Create a keyset with one active key.
    Init(keyset_cmd::InitArgs),
    /// Start a three-phase rotation (or an emergency one).
    Rotate(keyset_cmd::RotateArgs),
    /// Show the keys, the phase, and what happens next.
    Status(keyset_cmd::StatusArgs),
    /// Measure mint and verify in this process.
    Bench(bench::BenchArgs),
    /// Run a fleet rotating keys under live MCP traffic, with attacks.
    Demo(demo::DemoArgs),
}

fn main() {
    let cli = Cli::parse();
    // The demo's attacks are rejected on purpose: their warnings would drown its progress lines.
    let level = if matches!(cli.command, Command::Demo(_)) {
        tracing::Level::ERROR
    } else {
        tracing::Level::WARN
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .init();
    let mut stdout = std::io::stdout().lock();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(2);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Token(cmd) => token::run(cmd, &mut stdout).await,
            Command::Init(args) => keyset_cmd::init(args, &mut stdout).await,
            Command::Rotate(args) => keyset_cmd::rotate(args, &mut stdout).await,
            Command::Status(args) => keyset_cmd::status(args, &mut stdout).await,
            Command::Bench(args) => bench::run(&args, &mut stdout),
            Command::Demo(args) => demo::run(args, &mut stdout).await,
        }
    });
    if let Err(e) = result {
        eprintln!("{}", render(&e));
        std::process::exit(e.exit_code());
    }
}

fn render(e: &error::CliError) -> String {
    match e {
        error::CliError::Rejected(_) => e.to_string(),
        _ => format!("error: {e}"),
    }
}
