//! The `stateseal` command.
#![forbid(unsafe_code)]

mod bench;
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
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .init();
    let cli = Cli::parse();
    let mut stdout = std::io::stdout().lock();
    let runtime = match tokio::runtime::Builder::new_current_thread()
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
