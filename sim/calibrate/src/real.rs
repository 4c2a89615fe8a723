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
                timeline.push(format!("{} harness: killed server {i}", utc_now()));
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
                .map(|l| match l.split_once(' ') {
                    Some((at, rest)) => format!("{at} server {i}: {}", rest.trim_start()),
                    None => format!("server {i}: {l}"),
                }),
        );
    }
    timeline.sort();
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
            timeline,
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

/// The time of day now, UTC, as the servers' log lines begin
/// (`2026-11-29T00:20:01.123456Z`), so that the timeline sorts as one.
fn utc_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_dated_as_the_servers_date_their_lines() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2000-02-29 (a leap day in a century year), 2026-11-29, and a day before 1970.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let now = utc_now();
        assert_eq!(
            (now.len(), &now[10..11], &now[26..]),
            (27, "T", "Z"),
            "{now}"
        );
    }
}
