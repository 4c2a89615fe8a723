//! Fleet soak: separate `http_server` processes sharing keys through OpenBao,
//! under concurrent multi-round load with attacks, through rotations, a
//! process kill and restart, an OpenBao outage, the store flapping, a garbage
//! document and an older generation put into the store, an AppRole secret id
//! rotated under a running process, short-lived Vault tokens renewed all
//! along, and one process whose clock runs ahead within the skew. Prints the
//! figures; exits non-zero on any unexpected rejection or error, accepted
//! attack, failed event, fault not seen as it should be, or KMS calls that
//! grow with requests.
//!
//! ```sh
//! scripts/soak.sh --duration 60            # what CI runs (debug build)
//! scripts/soak.sh --release --duration 600 --json
//! ```

mod faults;
mod fleet;
mod load;
mod plan;
mod setup;
mod watch;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fleet::cli;
use load::{ATTACK_KINDS, Load, Tally, quantile};
use plan::{APPROLE_SERVER, Args, Event, parse_args, schedule};
use serde_json::json;
use setup::Setup;

const STORE: &str = "vault-kv://secret/stateseal/soak";
const KEK: &str = "hcvault://transit/keys/stateseal";
/// R = 1 s, S = 2 s, T = 20 s (P = 2R + S = 4 s).
const TIMING: [&str; 6] = [
    "--refresh-interval",
    "1",
    "--max-skew",
    "2",
    "--state-ttl",
    "20",
];
const CLOCK_OFFSETS: [f64; 3] = [0.0, 0.0, 1.5];

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("usage error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak failed: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<bool, String> {
    let Setup {
        dir,
        mut bao,
        env,
        mut servers,
        tokens,
        secret_id_file,
        mut secret_id,
        first_document,
        _issuer,
    } = setup::setup(args)?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let tally = Arc::new(Tally::default());
    // Until the first fault, a clean stretch: no faults, no attacks, no alerts.
    let first_event_s = schedule(args.duration).first().map_or(0.0, |(at, _)| *at);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
    // A real Prometheus scrapes every server with the (time-scaled) alert rules loaded.
    let prometheus = args.prometheus.as_ref().ok_or(
        "the soak needs Prometheus: run it through scripts/soak.sh (or pass --prometheus PATH)",
    )?;
    let watch = watch::Watch::start(prometheus, &dir.join("prometheus"), &ports)?;
    println!(
        "prometheus {} scrapes {} servers every 1 s",
        watch.url,
        ports.len()
    );
    let follower = rt.spawn(watch::Watch::follow(
        watch.url.clone(),
        http.clone(),
        Arc::clone(&watch.transitions),
        started,
        deadline + Duration::from_secs(8),
    ));
    let workers: Vec<_> = (0..args.workers)
        .map(|w| {
            let load = Load {
                http: http.clone(),
                ports: ports.clone(),
                tokens: Arc::clone(&tokens),
                tally: Arc::clone(&tally),
                deadline,
                max_conversations: args.max_conversations,
                expired_after: Duration::from_secs(24),
                attacks_from: started + Duration::from_secs_f64(first_event_s),
            };
            rt.spawn(load.run(0x9e37_79b9_7f4a_7c15 ^ ((w as u64 + 1) * 0x1000_0001)))
        })
        .collect();

    // Events, in order, while the workers run.
    let mut failures: Vec<String> = Vec::new();
    let (mut rotations, mut forced) = (0u64, 0u64);
    let mut restart_ready_s = None;
    let mut outage_felt = false;
    let mut outage_window = (0.0, 0.0);
    let mut seen_faults: Vec<faults::Seen> = Vec::new();
    for (at, event) in schedule(args.duration) {
        let wait = started + Duration::from_secs_f64(at);
        std::thread::sleep(wait.saturating_duration_since(Instant::now()));
        let t = started.elapsed().as_secs_f64();
        match event {
            Event::Rotate => {
                let before = faults::generations(&servers);
                let mut argv = vec!["rotate", "--store", STORE];
                let mut out = cli(&args.cli, &env, &argv);
                if out.status.code() == Some(1) {
                    // A rotation is still in flight (short runs): overlap it safely.
                    argv.push("--force");
                    out = cli(&args.cli, &env, &argv);
                    forced += 1;
                }
                if out.status.success() {
                    rotations += 1;
                    println!("{t:>6.1}s rotate #{rotations} ok");
                    // The next event (the outage, say) waits until every process holds the new keys.
                    let loaded = faults::await_rotation(&servers, &before, Duration::from_secs(10));
                    if loaded < servers.len() {
                        failures.push(format!(
                            "rotate #{rotations}: {loaded} of {} processes loaded it within 10 s",
                            servers.len()
                        ));
                    }
                } else {
                    failures.push(format!(
                        "rotate at {t:.1}s: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
            Event::KillRestart(i) => {
                servers[i].kill();
                println!("{t:>6.1}s server {i} killed (SIGKILL)");
                std::thread::sleep(Duration::from_secs(2));
                match servers[i].start(&env) {
                    Ok(d) => {
                        restart_ready_s = Some(d.as_secs_f64());
                        println!(
                            "{:>6.1}s server {i} restarted, ready from the store and KMS in {:.2} s",
                            started.elapsed().as_secs_f64(),
                            d.as_secs_f64()
                        );
                    }
                    Err(e) => failures.push(format!("restart: {e}")),
                }
            }
            Event::StoreFlap => seen_faults.push(faults::store_flap(&bao, &servers, t)),
            Event::GarbageDocument => {
                seen_faults.push(faults::garbage_document(&bao, &servers, t));
            }
            Event::OlderGeneration => {
                seen_faults.push(faults::older_generation(&bao, &servers, &first_document, t));
            }
            Event::RotateSecretId => {
                let (seen, new) = faults::rotate_secret_id(
                    &bao,
                    &servers[APPROLE_SERVER],
                    &secret_id_file,
                    &secret_id,
                    t,
                );
                secret_id = new;
                seen_faults.push(seen);
            }
            Event::VaultOutage(secs) => {
                bao.stop();
                println!("{t:>6.1}s OpenBao stopped for {secs:.0} s (> refresh interval 1 s)");
                std::thread::sleep(Duration::from_secs_f64(secs));
                // The outage must have been felt: every process's refresh is failing now.
                let failing = servers
                    .iter()
                    .filter(|s| s.stats().is_some_and(|st| st["refresh_ok"] == false))
                    .count();
                outage_felt = failing == servers.len();
                if !outage_felt {
                    failures.push(format!("only {failing} processes saw the OpenBao outage"));
                }
                bao.restart();
                outage_window = (t, started.elapsed().as_secs_f64());
                println!(
                    "{:>6.1}s OpenBao started and unsealed",
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    rt.block_on(async {
        for w in workers {
            let _ = w.await;
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    // What Prometheus saw: the alerts' timeline (the follower runs a few seconds
    // past the load, so a resolution is seen) and every dashboard query.
    let _ = rt.block_on(follower);
    let alerts = watch.transitions();
    failures.extend(watch::verdict(
        &alerts,
        outage_window,
        first_event_s,
        elapsed,
    ));
    let (queries, empty) = rt.block_on(watch.empty_dashboard_queries(&http))?;
    if !empty.is_empty() {
        failures.push(format!("dashboard queries without series: {empty:?}"));
    }

    // Every process must have recovered its refresh after the outage.
    std::thread::sleep(Duration::from_millis(1500));
    let keys_total = 1 + rotations;
    // The generation grows with every rotation and every seal reservation: the
    // store's own number is the one to be at.
    let status = cli(&args.cli, &env, &["status", "--store", STORE, "--json"]);
    let final_generation = serde_json::from_slice::<serde_json::Value>(&status.stdout)
        .ok()
        .and_then(|v| v["generation"].as_u64());
    if final_generation.is_none() {
        failures.push(format!(
            "status of the keyset failed: {}",
            String::from_utf8_lossy(&status.stderr)
        ));
    }
    let mut per_process = Vec::new();
    for s in &servers {
        let stats = s.stats().unwrap_or_default();
        let kms = s.kms_calls();
        // O(keys): each process unwraps each key once; the restarted slot ran two processes.
        if kms > 2 * keys_total + 2 {
            failures.push(format!(
                "server {} made {kms} KMS calls for {keys_total} keys",
                s.index
            ));
        }
        if stats["ready"] != true
            || stats["refresh_ok"] != true
            || stats["generation"].as_u64() != final_generation
        {
            failures.push(format!(
                "server {} ended at {stats} (expected generation {final_generation:?})",
                s.index
            ));
        }
        per_process.push(
            json!({"server": s.index, "kms_calls": kms, "peak_rss_kb": s.final_peak_rss_kb(),
            "generation": stats["generation"]}),
        );
    }
    let mut lat = std::mem::take(&mut *rt.block_on(tally.latencies_us.lock()));
    lat.sort_unstable();
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let rounds = get(&tally.rounds);
    let (rej, errs, attacks, accepted) = (
        get(&tally.unexpected_rejections),
        get(&tally.unexpected_errors),
        get(&tally.attacks),
        get(&tally.attacks_accepted),
    );
    let ok = || rej == 0 && errs == 0 && accepted == 0 && rounds > 0 && outage_felt;
    let conversations = get(&tally.conversations).min(args.max_conversations);
    println!(
        "summary: {conversations} conversations, {rounds} rounds in {elapsed:.0} s ({:.0} rounds/s), \
         round latency p50 {:.2} ms p99 {:.2} ms, unexpected rejections {rej}, unexpected errors {errs}, \
         attacks {attacks} ({accepted} accepted), rotations {rotations} ({forced} forced), \
         transport retries {} (during the kill and restart)",
        rounds as f64 / elapsed,
        quantile(&lat, 0.5) as f64 / 1000.0,
        quantile(&lat, 0.99) as f64 / 1000.0,
        get(&tally.transport_retries),
    );
    let by_kind: serde_json::Map<String, serde_json::Value> = ATTACK_KINDS
        .iter()
        .zip(&tally.attacks_by_kind)
        .map(|(k, n)| ((*k).to_owned(), json!(get(n))))
        .collect();
    if by_kind.values().any(|n| n == 0) {
        failures.push(format!("an attack kind never ran: {by_kind:?}"));
    }
    println!(
        "  attacks by kind (all rejected unless counted above): {}",
        json!(by_kind)
    );
    for p in &per_process {
        println!(
            "  server {}: {} KMS calls, peak RSS {} kB",
            p["server"], p["kms_calls"], p["peak_rss_kb"]
        );
    }
    for f in &seen_faults {
        println!(
            "  fault {} at {:.1}s: reported by {}, kept serving {}/{n}, recovered {}/{n}",
            f.fault,
            f.at_s,
            f.reported
                .map_or("(invisible by design)".to_owned(), |r| format!(
                    "{r}/{}",
                    f.processes
                )),
            f.kept_serving,
            f.recovered,
            n = f.processes
        );
        if !f.ok() {
            failures.push(format!("fault {} was not seen as it should be", f.fault));
        }
    }
    println!(
        "  prometheus: {} dashboard queries answered, alerts {}",
        queries - empty.len(),
        alerts
            .iter()
            .map(|t| format!("{} {} at {:.1}s", t.alert, t.state, t.at_s))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for f in &failures {
        println!("  FAILED: {f}");
    }
    let ok = ok() && failures.is_empty();
    println!("soak {}", if ok { "OK" } else { "FAILED" });
    if args.json {
        println!(
            "{}",
            json!({"ok": ok, "duration_s": elapsed.round(), "conversations": conversations, "rounds": rounds,
                "rounds_per_s": (rounds as f64 / elapsed).round(), "p50_ms": quantile(&lat, 0.5) as f64 / 1000.0,
                "p99_ms": quantile(&lat, 0.99) as f64 / 1000.0, "unexpected_rejections": rej,
                "unexpected_errors": errs, "attacks": attacks, "attacks_accepted": accepted, "attacks_by_kind": by_kind,
                "rotations": rotations, "forced_rotations": forced, "restart_ready_s": restart_ready_s,
                "processes": per_process, "faults": seen_faults.iter().map(faults::Seen::json).collect::<Vec<_>>(),
                "alerts": alerts.iter().map(watch::Transition::json).collect::<Vec<_>>(),
                "dashboard_queries": {"run": queries, "empty": empty},
                "failures": failures})
        );
    }
    drop(watch);
    drop(servers);
    drop(bao);
    if ok {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("logs kept in {}", dir.display());
    }
    Ok(ok)
}
