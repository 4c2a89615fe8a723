//! The operator's view of the soak: a real Prometheus (Debian's package,
//! unpacked by `scripts/prometheus-env.sh`) scrapes every server's `/metrics`
//! once a second with the fleet's alert rules loaded, time-scaled to the
//! soak's timing; the soak records when each alert fires and resolves and, at
//! the end, runs every query of the Grafana dashboard against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fleet::free_port;

/// The production rules, with thresholds and `for:` durations scaled from the
/// default timing (R 30 s, T 600 s) to the soak's (R 1 s, T 20 s).
fn soak_rules(production: &str) -> Result<String, String> {
    let scaled = [
        (
            "stateseal_seconds_since_refresh > 300",
            "stateseal_seconds_since_refresh > 2",
        ),
        ("for: 1m", "for: 2s"),
        ("for: 5m", "for: 5s"),
        ("for: 15m", "for: 5s"),
        ("for: 1h", "for: 5s"),
        ("[5m]", "[10s]"),
        ("offset 5m", "offset 10s"),
        ("[10m]", "[20s]"),
    ];
    let mut rules = production.to_owned();
    for (from, to) in scaled {
        if !rules.contains(from) {
            return Err(format!(
                "the alert rules no longer contain {from:?}: update the soak's scaling"
            ));
        }
        rules = rules.replace(from, to);
    }
    Ok(rules)
}

/// One change of an alert's state, seconds from the start of the soak.
#[derive(Debug, Clone)]
pub(crate) struct Transition {
    pub(crate) alert: String,
    pub(crate) state: String,
    pub(crate) at_s: f64,
}

pub(crate) struct Watch {
    child: Option<Child>,
    pub(crate) url: String,
    pub(crate) transitions: Arc<Mutex<Vec<Transition>>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Watch {
    /// Starts Prometheus scraping `ports` with the scaled rules, and waits until it is ready.
    pub(crate) fn start(bin: &Path, dir: &Path, ports: &[u16]) -> Result<Self, String> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let production =
            std::fs::read_to_string(root.join("deploy/prometheus/stateseal-alerts.yml"))
                .map_err(|e| format!("alert rules: {e}"))?;
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("alerts.yml"), soak_rules(&production)?)
            .map_err(|e| e.to_string())?;
        let targets: Vec<String> = ports.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
        std::fs::write(
            dir.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - alerts.yml\n\
                 scrape_configs:\n  - job_name: stateseal-soak\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .map_err(|e| e.to_string())?;
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("start prometheus ({}): {e}", bin.display()))?;
        let watch = Self {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
            transitions: Arc::default(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("prometheus did not start".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(watch)
    }

    /// Polls the alerts once a second until `deadline`, recording every change of state.
    pub(crate) async fn follow(
        url: String,
        http: reqwest::Client,
        log: Arc<Mutex<Vec<Transition>>>,
        started: Instant,
        deadline: Instant,
    ) {
        let mut last: std::collections::BTreeMap<String, String> = Default::default();
        while Instant::now() < deadline {
            if let Ok(body) = get_json(&http, &format!("{url}/api/v1/alerts")).await {
                let mut now: std::collections::BTreeMap<String, String> = Default::default();
                for a in body["data"]["alerts"].as_array().into_iter().flatten() {
                    let name = a["labels"]["alertname"].as_str().unwrap_or("?").to_owned();
                    let state = a["state"].as_str().unwrap_or("?").to_owned();
                    // Firing wins over pending when several series of one alert differ.
                    let entry = now.entry(name).or_default();
                    if *entry != "firing" {
                        *entry = state;
                    }
                }
                let at_s = started.elapsed().as_secs_f64();
                let mut changes = Vec::new();
                for (name, state) in &now {
                    if last.get(name) != Some(state) {
                        changes.push(Transition {
                            alert: name.clone(),
                            state: state.clone(),
                            at_s,
                        });
                    }
                }
                for name in last.keys().filter(|n| !now.contains_key(*n)) {
                    changes.push(Transition {
                        alert: name.clone(),
                        state: "resolved".into(),
                        at_s,
                    });
                }
                log.lock().expect("alert log").extend(changes);
                last = now;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Runs every query of the dashboard; returns the ones that gave no series.
    pub(crate) async fn empty_dashboard_queries(
        &self,
        http: &reqwest::Client,
    ) -> Result<(usize, Vec<String>), String> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("deploy/grafana/stateseal.json"))
            .map_err(|e| e.to_string())?;
        let dash: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let exprs: Vec<String> = dash["panels"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["expr"].as_str().map(str::to_owned))
            .collect();
        let mut empty = Vec::new();
        for e in &exprs {
            let url = reqwest::Url::parse_with_params(
                &format!("{}/api/v1/query", self.url),
                &[("query", e)],
            )
            .map_err(|e| e.to_string())?;
            let body = get_json(http, url.as_str()).await?;
            if body["data"]["result"].as_array().is_none_or(Vec::is_empty) {
                empty.push(e.clone());
            }
        }
        Ok((exprs.len(), empty))
    }

    pub(crate) fn transitions(&self) -> Vec<Transition> {
        self.transitions.lock().expect("alert log").clone()
    }
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    http.get(url)
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json::<Value>()
        .await
        .map_err(|e| e.to_string())
}

impl Transition {
    pub(crate) fn json(&self) -> Value {
        json!({"alert": self.alert, "state": self.state, "at_s": (self.at_s * 10.0).round() / 10.0})
    }
}

/// What the soak requires of the alerts Prometheus raised, as failures: the
/// clean opening stretch (until `clean_until`) fires nothing; the OpenBao
/// outage fires `StatesealRefreshFailing`, which has resolved by the end; the
/// attacks that follow the stretch fire `StatesealRejectionSpike`.
pub(crate) fn verdict(
    log: &[Transition],
    outage: (f64, f64),
    clean_until: f64,
    end: f64,
) -> Vec<String> {
    let mut failures = Vec::new();
    for t in log.iter().filter(|t| t.at_s < clean_until) {
        failures.push(format!(
            "{} {} at {:.1} s, in the clean stretch",
            t.alert, t.state, t.at_s
        ));
    }
    let (from, to) = outage;
    if !fired_within(log, "StatesealRefreshFailing", from, to + 10.0) {
        failures.push(format!(
            "StatesealRefreshFailing did not fire during the OpenBao outage ({from:.1}-{to:.1} s)"
        ));
    }
    if final_state(log, "StatesealRefreshFailing") != "resolved" {
        failures.push("StatesealRefreshFailing did not resolve after the outage".into());
    }
    if !fired_within(log, "StatesealRejectionSpike", clean_until, end + 10.0) {
        failures.push("StatesealRejectionSpike never fired under the load's attacks".into());
    }
    failures
}

/// Whether `alert` was firing at some point in `[from, to]` seconds.
fn fired_within(log: &[Transition], alert: &str, from: f64, to: f64) -> bool {
    log.iter()
        .any(|t| t.alert == alert && t.state == "firing" && (from..=to).contains(&t.at_s))
}

/// The alert's state at the end of the log (`resolved` if it never appeared).
fn final_state(log: &[Transition], alert: &str) -> String {
    log.iter()
        .rev()
        .find(|t| t.alert == alert)
        .map_or("resolved".to_owned(), |t| t.state.clone())
}
