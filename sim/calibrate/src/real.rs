//! The real fleet: moto (S3 and KMS) on loopback, a keyset made by the CLI,
//! N `http_server` processes, and moto's access log as the count of what the
//! fleet asked of the store and the KMS.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stateseal::keyset::NEWEST_COPY_SUFFIX;
use stateseal_testkit::http::http_get;
use stateseal_testkit::moto::Moto;
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, Time};

use super::fleet::Fleet;
use super::{Args, CREATED_BEFORE, Counts, REFRESH, ROTATION_PERIOD, SKEW, TTL};

const BUCKET: &str = "calibration";
const OBJECT: &str = "keyset.json";
/// What a server logs (at info) when it has rotated the keyset.
const ROTATED: &str = "rotated the keyset automatically";
/// What a server logs (at debug) when another writer's keyset write landed first.
const LOST: &str = "another writer's keyset write landed first";
/// What a server logs (at info) when it has claimed a due rotation.
const CLAIMED: &str = "claimed the due rotation";

fn cli(args: &Args, env: &[(&str, String)], argv: &[&str]) -> Result<Output, String> {
    Command::new(&args.cli)
        .args(argv)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .output()
        .map_err(|e| format!("run {}: {e}", args.cli.display()))
}

fn json_of(out: &Output, what: &str) -> Result<serde_json::Value, String> {
    if !out.status.success() {
        return Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{what} --json: {e}"))
}

/// The fleet's requests in moto's access log after `from` bytes: S3 reads
/// of the keyset object (200: full, 304: not modified), its landed writes,
/// reads and landed writes of its newest copy, and KMS calls (`POST /`).
fn count_log(log: &Path, from: usize) -> Result<Counts, String> {
    let text = std::fs::read_to_string(log).map_err(|e| format!("moto log: {e}"))?;
    let mut c = Counts::default();
    let object = format!("/{BUCKET}/{OBJECT}");
    let copy = format!("{object}{NEWEST_COPY_SUFFIX}");
    for line in text.get(from..).unwrap_or("").lines() {
        // 127.0.0.1 - - [date] "GET /path HTTP/1.1" 200 -
        let Some((request, status)) = line.split_once("\" ").and_then(|(l, s)| {
            let request = l.rsplit_once('"')?.1;
            Some((request, s.split_whitespace().next()?))
        }) else {
            continue;
        };
        let mut parts = request.split_whitespace();
        let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
            continue;
        };
        let path = path.split('?').next().unwrap_or(path);
        match (method, status) {
            ("GET", "200") if path == object => c.full_reads += 1,
            ("GET", "304") if path == object => c.unchanged_reads += 1,
            ("PUT", "200") if path == object => c.writes += 1,
            // moto answers a stale If-Match with 403 where S3 answers 412; the
            // store cannot tell it from a refusal, so the server logs no lost
            // race and the log counts it here (a 412 the server reports itself).
            ("PUT", "403") if path == object => c.lost_writes += 1,
            // A missing copy is a read as well (404, before the first write).
            ("GET", "200" | "404") if path == copy => c.copy_reads += 1,
            ("PUT", "200") if path == copy => c.copy_writes += 1,
            ("POST", "200") if path == "/" => c.kms_calls += 1,
            _ => {}
        }
    }
    Ok(c)
}

/// What the model takes from the real run besides the scenario.
pub(crate) struct Measured {
    /// How far apart the instances became ready (the model starts as spread).
    pub(crate) spread: f64,
    /// moto's median answer time during the run, seconds.
    pub(crate) latency: f64,
    /// How long a restarted server was down, on average: from the kill
    /// until it listened again (`None` without restarts).
    pub(crate) downtime: Option<f64>,
    /// What explains a disagreement: the servers' claims, rotations, warnings
    /// and errors as they logged them (UTC), and the harness's kills.
    pub(crate) timeline: Vec<String>,
}

/// Runs the real fleet; its counts and what the model takes from it.
pub(crate) fn run(args: &Args) -> Result<(Counts, Measured), String> {
    let issuer = stateseal_testkit::issuer::Issuer::start();
    let dir = std::env::temp_dir().join(format!("stateseal-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir.join("moto")).map_err(|e| e.to_string())?;
    let moto = Moto::start(&dir.join("moto"));
    let (_, alias_arn, _) = moto.create_key("stateseal");
    moto.create_bucket(BUCKET);
    let store = format!("s3://{BUCKET}/{OBJECT}");
    let kek = format!("aws-kms://{alias_arn}");
    let env = moto.env();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs_f64();
    let created = format!("{:.3}", now - CREATED_BEFORE);
    let init = json_of(
        &cli(
            args,
            &env,
            &[
                "init",
                "--kek",
                &kek,
                "--store",
                &store,
                "--refresh-interval",
                &REFRESH.to_string(),
                "--max-skew",
                &SKEW.to_string(),
                "--state-ttl",
                &TTL.to_string(),
                "--now",
                &created,
                "--allow-clock-override",
                "--json",
            ],
        )?,
        "stateseal init",
    )?;
    let keyset_id = init["keyset"]
        .as_str()
        .ok_or("init: no keyset id")?
        .to_owned();
    let keks: Vec<String> = init["keyset_keks"]
        .as_array()
        .ok_or("init: no keyset_keks")?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let config = dir.join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "store = {store:?}\naudience = \"calibration\"\nrefresh_interval = {REFRESH}\n\
             max_skew = {SKEW}\nttl = {TTL}\nrotation_period = {ROTATION_PERIOD}\nready_timeout = 30\n\
             keyset_id = {keyset_id:?}\nkeyset_keks = {keks:?}\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let log = moto_log(&dir);
    let from = std::fs::metadata(&log)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    // The servers take callers' access tokens from this issuer.
    let oauth = [issuer.url.clone(), issuer.jwks_uri()];
    let (mut fleet, started) =
        Fleet::spawn_all(args.instances, &args.server, &env, &config, &dir, oauth)?;
    let end = started + Duration::from_secs_f64(args.duration);
    let spread = fleet.wait_ready(started + Duration::from_secs(30))?;
    let probe = {
        let port = moto_port(&moto.endpoint)?;
        std::thread::spawn(move || probe_latency(port, end))
    };
    let traffic = (args.scenario.rounds_per_second > 0.0).then(|| {
        let ports = Arc::clone(&fleet.ports);
        let bearer = issuer.access_token("calibration-user", "stateseal-example", 3600);
        let rate = args.scenario.rounds_per_second;
        // As in the model: conversations from TRAFFIC_FROM on.
        let from = started + Duration::from_secs_f64(stateseal_sim::TRAFFIC_FROM);
        std::thread::spawn(move || {
            std::thread::sleep(from.saturating_duration_since(Instant::now()));
            super::traffic::run(&ports, &bearer, rate, TTL, end)
        })
    });
    // The rolling restarts: instance i at every + window * i / n, then every `every`.
    let mut downtimes = Vec::new();
    let mut timeline = Vec::new();
    if let Some((every, window)) = args.scenario.restarts {
        let mut at = every;
        while at < args.duration {
            for i in 0..args.instances {
                let when = started
                    + Duration::from_secs_f64(at + window * i as f64 / args.instances as f64);
                std::thread::sleep(when.saturating_duration_since(Instant::now()));
                let now = OffsetDateTime::now_utc();
                let at = now.format(&Rfc3339).unwrap_or_default();
                timeline.push((now, format!("{at} harness: killed server {i}")));
                downtimes.push(fleet.restart(i)?);
            }
            at += every;
        }
    }
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    fleet.check_running()?;
    let latency = probe.join().map_err(|_| "the latency probe panicked")?;
    let downtime =
        (!downtimes.is_empty()).then(|| downtimes.iter().sum::<f64>() / downtimes.len() as f64);
    let tally = traffic
        .map(|t| t.join().map_err(|_| "the traffic thread panicked"))
        .transpose()?
        .unwrap_or_default();
    drop(fleet);
    let mut counts = count_log(&log, from)?;
    // The rotations and the lost compare-and-swaps: what the servers said.
    for i in 0..args.instances {
        let said = std::fs::read_to_string(dir.join(format!("server-{i}.log")))
            .map_err(|e| format!("server log: {e}"))?;
        counts.rotations += said.matches(ROTATED).count() as u64;
        counts.lost_writes += said.matches(LOST).count() as u64;
        timeline.extend(
            said.lines()
                .filter(|l| {
                    [CLAIMED, ROTATED, " WARN ", " ERROR "]
                        .iter()
                        .any(|s| l.contains(s))
                })
                .map(|l| timeline_entry(i, l)),
        );
    }
    timeline.sort_by_key(|(when, _)| *when);
    counts.rounds = tally.verified + tally.rejected;
    counts.rejected = tally.rejected;
    counts.unanswered = tally.unanswered;
    drop(moto);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((
        counts,
        Measured {
            spread,
            latency,
            downtime,
            timeline: timeline.into_iter().map(|(_, line)| line).collect(),
        },
    ))
}

fn moto_log(dir: &Path) -> PathBuf {
    dir.join("moto").join("moto.log")
}

fn moto_port(endpoint: &str) -> Result<u16, String> {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("moto endpoint {endpoint:?}: no port"))
}

/// moto's median answer time until `end`, from a request every second for
/// an object that does not exist (404: not among the counted requests).
/// The model's store and KMS answer after this long: the gap between a
/// rotation's claim and its write, and so how many instances read the claim
/// in between, follows from it.
fn probe_latency(port: u16, end: Instant) -> f64 {
    let path = format!("/{BUCKET}/latency-probe");
    let mut times = Vec::new();
    while Instant::now() < end {
        let t = Instant::now();
        let _ = http_get(port, &path);
        times.push(t.elapsed().as_secs_f64());
        std::thread::sleep(Duration::from_secs(1));
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(0.0)
}

/// Server `i`'s log line in the timeline: when it was logged (each line
/// begins with its RFC 3339 time; one that does not goes last, whole) and
/// the line with the server named.
fn timeline_entry(i: usize, line: &str) -> (OffsetDateTime, String) {
    let timed = line.split_once(' ').and_then(|(at, rest)| {
        let when = OffsetDateTime::parse(at, &Rfc3339).ok()?;
        Some((when, format!("{at} server {i}: {}", rest.trim_start())))
    });
    timed.unwrap_or_else(|| {
        let last = OffsetDateTime::new_utc(Date::MAX, Time::MIDNIGHT);
        (last, format!("server {i}: {line}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_placed_by_the_time_they_begin_with() {
        let (when, text) = timeline_entry(
            3,
            "2026-11-29T00:24:17.893683Z  INFO stateseal::rotation::scheduler::rotations: claimed the due rotation generation=4",
        );
        assert_eq!(when.unix_timestamp(), 1_795_911_857);
        assert_eq!(when.microsecond(), 893_683);
        assert_eq!(
            text,
            "2026-11-29T00:24:17.893683Z server 3: INFO stateseal::rotation::scheduler::rotations: claimed the due rotation generation=4"
        );
        let (last, text) = timeline_entry(0, "not a log line");
        assert_eq!(
            (last.year(), text.as_str()),
            (9999, "server 0: not a log line")
        );
    }
}
