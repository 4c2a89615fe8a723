//! The `stateseal` command.
#![forbid(unsafe_code)]

mod bench;
mod demo;
mod error;
mod flag_values;
mod key_spec;
mod keyset;
mod output;
mod proxy;
mod redact;
mod simulate;
mod token;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::CliError;

/// Seal, inspect and operate MCP requestState keysets.
#[derive(Debug, Parser)]
#[command(
    name = "stateseal",
    version,
    about,
    after_help = "Exit status: 0 success, 1 the answer is no (rejected, refused, unhealthy), 2 usage or operational error.
Environment: STATESEAL_STORE and STATESEAL_KEK are the defaults of --store and --kek.

Examples:
  stateseal init --kek local:///etc/stateseal/kek.bin --store file:///var/lib/stateseal/keyset.json
  export STATESEAL_STORE=file:///var/lib/stateseal/keyset.json
  stateseal status
  stateseal rotate --dry-run && stateseal rotate
  stateseal check --json"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Token tools: seal, open, mint, verify, inspect.
    #[command(subcommand)]
    Token(token::TokenCmd),
    /// Create a keyset with one active key and the fleet's timing profile.
    Init(keyset::InitArgs),
    /// Start a three-phase rotation (or an emergency one); --dry-run writes nothing.
    Rotate(keyset::RotateArgs),
    /// Refuse states already issued (a principal's, a client's, or everyone's before a time), without a rotation.
    Revoke(keyset::RevokeArgs),
    /// Show the keys, their availability, the phase, and what happens next.
    Status(keyset::StatusArgs),
    /// Check that the fleet can serve from the keyset (for cron and monitoring).
    Check(keyset::CheckArgs),
    /// The keyset document itself.
    #[command(subcommand)]
    Keyset(keyset::KeysetCmd),
    /// Measure mint and verify in this process.
    Bench(bench::BenchArgs),
    /// Run a fleet rotating keys under live MCP traffic, with attacks.
    Demo(demo::DemoArgs),
    /// Simulate a fleet of N instances for capacity planning (store and KMS load).
    Simulate(simulate::SimulateArgs),
    /// Seal and verify the requestState of an MCP server that does none itself (a reverse proxy).
    Proxy(proxy::ProxyArgs),
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  stateseal completions bash > /etc/bash_completion.d/stateseal"
    )]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => redact::exit_with_parse_error(&e, &args, json),
    };
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
    // One AES-256-GCM implementation per process: a bad STATESEAL_AEAD is refused before any key exists.
    if let Err(e) = stateseal::AeadBackend::select_from_env() {
        fail(&CliError::Usage(e.to_string()), json);
    }
    let mut stdout = std::io::stdout().lock();
    // The simulation runs its own virtual-time runtime, outside any other.
    if let Command::Simulate(args) = &cli.command {
        if let Err(e) = simulate::run_simulate(args, &mut stdout) {
            drop(stdout);
            fail(&e, json);
        }
        return;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => fail(
            &CliError::Failed(format!("cannot start the async runtime: {e}")),
            json,
        ),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Token(cmd) => token::run(cmd, &mut stdout).await,
            Command::Init(args) => keyset::init(args, &mut stdout).await,
            Command::Rotate(args) => keyset::rotate(args, &mut stdout).await,
            Command::Revoke(args) => keyset::revoke(args, &mut stdout).await,
            Command::Status(args) => keyset::status(args, &mut stdout).await,
            Command::Check(args) => keyset::check(args, &mut stdout).await,
            Command::Keyset(keyset::KeysetCmd::Show(args)) => keyset::show(args, &mut stdout).await,
            Command::Keyset(keyset::KeysetCmd::Upgrade(args)) => {
                keyset::upgrade(args, &mut stdout).await
            }
            Command::Keyset(keyset::KeysetCmd::Renew(args)) => {
                keyset::renew(args, &mut stdout).await
            }
            Command::Bench(args) => bench::run(&args, &mut stdout),
            Command::Demo(args) => demo::run(args, &mut stdout).await,
            Command::Proxy(args) => proxy::run(args, &mut stdout).await,
            Command::Simulate(_) => Ok(()),
            Command::Completions { shell } => {
                clap_complete::generate(shell, &mut Cli::command(), "stateseal", &mut stdout);
                Ok(())
            }
        }
    });
    if let Err(e) = result {
        drop(stdout);
        fail(&e, json);
    }
}

/// Prints `e` (as `{"error": …}` on stdout with `--json`, else on stderr) and exits.
fn fail(e: &CliError, json: bool) -> ! {
    let code = e.exit_code();
    match e {
        // The command already printed its answer.
        CliError::Reported(_) => {}
        _ if json => println!(
            "{}",
            serde_json::json!({"error": e.to_string(), "exit_code": code})
        ),
        CliError::Rejected(_) => eprintln!("{e}"),
        _ => eprintln!("error: {e}"),
    }
    std::process::exit(code);
}
