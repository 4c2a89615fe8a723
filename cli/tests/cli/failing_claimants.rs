//! Rotation with several failing claimants, on a real fleet: three
//! deployable servers (`examples/mcp_server`) as processes writing one S3
//! keyset under moto's KMS, with IAM enforced. Two of them run as a user
//! denied `kms:GenerateDataKey` and start first; the healthy one joins after
//! the rotation fell due. Each failing server claims the rotation at most
//! once (a claim lists the earlier claimants, who wait for everyone else's
//! turn), so the rotation lands within k × (claim lifetime + 4R) of due with
//! k = 2. Three runs side by side, each with its own moto; every one within
//! the bound (before the claimants were listed, 2 runs in 4 froze).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stateseal::rotation::CLAIM_TTL;
use stateseal_testkit::issuer::Issuer;
use stateseal_testkit::moto::Moto;

use crate::{json_of, stateseal_with};

/// R of the keyset (seconds; S = 1, T = 5): a full rotation (2P + T + S) is
/// 16 s, and 4R leaves a loaded host room within each claim's turn.
const R: f64 = 2.0;
const ROTATION_PERIOD: f64 = 30.0;
const FAILING: usize = 2;
const RUNS: usize = 3;

/// The deployable server, built by `cargo test --workspace` beside this test.
fn server_binary() -> PathBuf {
    stateseal_testkit::built("examples/mcp_server")
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// A server process, killed by PID when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(dir: &Path, index: usize, config: &Path, aws: &[(&'static str, String)]) -> Killed {
    let log = std::fs::File::create(dir.join(format!("server-{index}.log"))).expect("log");
    let child = Command::new(server_binary())
        .env_clear()
        .envs(aws.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "info")
        .args(["--config", &config.display().to_string()])
        .args([
            "--addr",
            &format!("127.0.0.1:{}", stateseal_testkit::free_port()),
        ])
        .args([
            "--admin-addr",
            &format!("127.0.0.1:{}", stateseal_testkit::free_port()),
        ])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start mcp_server");
    Killed(child)
}

/// What one run measured.
struct Run {
    late: f64,
    claimants: Vec<String>,
}

/// Polls the keyset in moto until it holds a second key (or `until`); prints
/// the seconds from `due` to the new key's creation and every claimant seen.
const POLL: &str = r#"import base64, json, time, datetime
def doc():
    raw = s3.get_object(Bucket='keys', Key='keyset.json')['Body'].read()
    return json.loads(base64.b64decode(json.loads(raw)['payload']))
seen = []
while time.time() < UNTIL:
    d = doc()
    c = d.get('rotation_claim')
    if c:
        for h in c.get('tried', []) + [c['holder']]:
            if h not in seen: seen.append(h)
    if len(d['keys']) > 1:
        t = max(datetime.datetime.fromisoformat(k['created_at'].replace('Z', '+00:00')).timestamp() for k in d['keys'])
        print(t - DUE, ' '.join(seen))
        break
    time.sleep(0.5)
else:
    print('none', ' '.join(seen))
"#;

fn one_run(run: usize, issuer: &Issuer) -> Run {
    let dir = crate::scratch(&format!("failing-claimants-{run}"));
    let moto = Moto::start_with_iam(&dir);
    let (_, alias, _) = moto.create_key("stateseal");
    moto.create_bucket("keys");
    let denied = moto.boto(
        "import json\n\
         iam = boto3.client('iam', endpoint_url=s3.meta.endpoint_url, region_name='us-east-1')\n\
         iam.create_user(UserName='no-generate')\n\
         iam.put_user_policy(UserName='no-generate', PolicyName='p', PolicyDocument=json.dumps({'Version': '2012-10-17', 'Statement': [\
         {'Effect': 'Allow', 'Action': '*', 'Resource': '*'},\
         {'Effect': 'Deny', 'Action': 'kms:GenerateDataKey', 'Resource': '*'}]}))\n\
         k = iam.create_access_key(UserName='no-generate')['AccessKey']\n\
         print(k['AccessKeyId'], k['SecretAccessKey'])",
    );
    let (denied_id, denied_secret) = denied.split_once(' ').expect("access key");
    let healthy = moto.env();
    let failing: Vec<(&'static str, String)> = moto
        .env()
        .into_iter()
        .map(|(k, v)| match k {
            "AWS_ACCESS_KEY_ID" => (k, denied_id.to_owned()),
            "AWS_SECRET_ACCESS_KEY" => (k, denied_secret.to_owned()),
            _ => (k, v),
        })
        .collect();
    let kek = format!("aws-kms://{alias}");
    let store = "s3://keys/keyset.json";
    let envs: Vec<(&str, &str)> = healthy.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let init = json_of(&stateseal_with(
        &[
            "init",
            "--kek",
            &kek,
            "--store",
            store,
            "--refresh-interval",
            "2",
            "--max-skew",
            "1",
            "--state-ttl",
            "5",
            "--json",
        ],
        &envs,
        None,
    ));
    let due = init["created_at"].as_f64().expect("created_at") + ROTATION_PERIOD;
    let config = dir.join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "store = {store:?}\naudience = \"claimants\"\nkek = {kek:?}\nkeyset_id = {id}\n\
             keyset_keks = [{kek:?}]\nrefresh_interval = {R}\nmax_skew = 1\nttl = 5\n\
             rotation_period = {ROTATION_PERIOD}\nready_timeout = 30\n\n\
             [oauth]\nissuer = {i:?}\naudience = \"http://127.0.0.1/mcp\"\njwks_uri = {j:?}\n",
            id = init["keyset"],
            i = issuer.url,
            j = issuer.jwks_uri(),
        ),
    )
    .expect("config");
    let mut servers: Vec<Killed> = (0..FAILING)
        .map(|i| start_server(&dir, i, &config, &failing))
        .collect();
    // The healthy one joins after the rotation fell due and after the first
    // turn (4R), so a failing server has claimed it.
    std::thread::sleep(Duration::from_secs_f64((due + 5.0 * R - now()).max(0.0)));
    servers.push(start_server(&dir, FAILING, &config, &healthy));
    let bound = FAILING as f64 * (CLAIM_TTL.as_secs_f64() + 4.0 * R) + 2.0 * R + 2.0;
    let code = POLL
        .replace("UNTIL", &format!("{}", due + bound + 10.0))
        .replace("DUE", &format!("{due}"));
    let out = moto.boto(&code);
    drop(servers);
    let (late, seen) = out.split_once(' ').unwrap_or((out.as_str(), ""));
    let claimants: Vec<String> = seen.split_whitespace().map(str::to_owned).collect();
    let late: f64 = late.parse().unwrap_or_else(|_| {
        panic!(
            "run {run}: no rotation within {bound} s of due; claimed by {claimants:?}; logs in {}",
            dir.display()
        )
    });
    assert!(
        late >= CLAIM_TTL.as_secs_f64(),
        "run {run}: rotated {late:.1} s after due, before a failing claim could lapse; claimed by {claimants:?}"
    );
    assert!(
        late <= bound,
        "run {run}: rotated {late:.1} s after due, past the bound {bound} s; claimed by {claimants:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    Run { late, claimants }
}

#[test]
fn two_servers_denied_key_generation_delay_a_rotation_by_one_claim_each_at_most() {
    let issuer = Issuer::start();
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..RUNS)
            .map(|run| {
                let issuer = &issuer;
                s.spawn(move || one_run(run, issuer))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a run panicked"))
            .collect()
    });
    for (i, r) in runs.iter().enumerate() {
        let distinct: std::collections::BTreeSet<&String> = r.claimants.iter().collect();
        assert_eq!(distinct.len(), r.claimants.len(), "a server claimed twice");
        assert!(
            r.claimants.len() <= FAILING + 1,
            "run {i}: {} claimants",
            r.claimants.len()
        );
        println!(
            "run {i}: rotated {:.1} s after due; claimants seen {:?}",
            r.late, r.claimants
        );
    }
}
