//! The `stateseal` command.
#![forbid(unsafe_code)]

mod bench;
mod error;
mod key_spec;
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
    let result = match cli.command {
        Command::Token(cmd) => token::run(cmd, &mut stdout),
        Command::Bench(args) => bench::run(&args, &mut stdout),
    };
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
