//! The soak's fleet before the load: OpenBao with the fleet's policy and
//! short-lived credentials (a token, an AppRole), a local OAuth issuer, the
//! keyset (its timing profile, and the pins `init` printed, in every server's
//! configuration), a copy of generation 1 for the restore fault, and the
//! server processes started.

use std::path::PathBuf;
use std::sync::Arc;

use stateseal_testkit::issuer::Issuer;
use stateseal_testkit::openbao;

use crate::fleet::{FleetEnv, Server, cli};
use crate::plan::{APPROLE_SERVER, Args, Event, schedule};
use crate::{CLOCK_OFFSETS, KEK, STORE, TIMING, faults, load};

/// What the run goes on with.
pub(crate) struct Setup {
    pub(crate) dir: PathBuf,
    pub(crate) bao: openbao::OpenBao,
    pub(crate) env: FleetEnv,
    pub(crate) servers: Vec<Server>,
    /// Each user's access token.
    pub(crate) tokens: Arc<[String]>,
    pub(crate) secret_id_file: PathBuf,
    /// The AppRole secret id in force (the fault rotates it).
    pub(crate) secret_id: String,
    /// Generation 1 as it was stored, to put back later as a careless restore would.
    pub(crate) first_document: PathBuf,
    /// Kept for the run: it serves the tokens' keys.
    pub(crate) _issuer: Issuer,
}

/// Starts everything the load runs against.
pub(crate) fn setup(args: &Args) -> Result<Setup, String> {
    let dir = std::env::temp_dir().join(format!("stateseal-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let bao = openbao::OpenBao::start(&dir.join("openbao"));
    bao.write_policy("fleet", openbao::FLEET_POLICY);
    // Short-lived tokens, so they must be renewed all through the run (and across
    // the outage: three times its length, at least 30 s).
    let outage = schedule(args.duration)
        .iter()
        .find_map(|(_, e)| match e {
            Event::VaultOutage(secs) => Some(*secs),
            _ => None,
        })
        .unwrap_or(3.0);
    let token_ttl = format!("{}s", (3.0 * outage).max(30.0).ceil());
    let token = bao.bao_json(&[
        "token",
        "create",
        "-policy=fleet",
        &format!("-ttl={token_ttl}"),
    ])["auth"]["client_token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let role_id = faults::approle_role(&bao, &token_ttl);
    let secret_id_file = dir.join("secret-id");
    let secret_id = faults::issue_secret_id(&bao, &secret_id_file);
    let config = dir.join("fleet.toml");
    // The Vault outage (up to 20 s) outlasts the default staleness bound of
    // this short profile (2P = 8 s): without a larger bound every server would
    // stop sealing during it, as it should in a fleet whose P is this small.
    std::fs::write(
        &config,
        format!(
            "store = {STORE:?}\naudience = \"stateseal-soak\"\nrefresh_interval = 1\nmax_skew = 2\nttl = 20\n\
             rotation_period = 0\nready_timeout = 20\nmax_store_staleness = 60\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    // Callers authenticate with access tokens from a local issuer, valid for the whole run.
    let issuer = stateseal_testkit::issuer::Issuer::start();
    let ttl = args.duration.ceil() as u64 + 3600;
    let tokens: Arc<[String]> = load::USERS
        .iter()
        .map(|user| issuer.access_token(user, "stateseal-example", ttl))
        .collect();
    let mut env = FleetEnv {
        oauth: [issuer.url.clone(), issuer.jwks_uri()],
        server_bin: args.server.clone(),
        config,
        vault_addr: bao.addr.clone(),
        vault_token: token,
        logs: dir.clone(),
        pins: Vec::new(),
    };
    // The fleet's timing profile goes into the keyset; rotations then use it.
    let mut init_argv = vec!["init", "--kek", KEK, "--store", STORE, "--json"];
    init_argv.extend_from_slice(&TIMING);
    let init = cli(&args.cli, &env, &init_argv);
    if !init.status.success() {
        return Err(format!(
            "stateseal init: {}",
            String::from_utf8_lossy(&init.stderr)
        ));
    }
    // The pins init printed: into every server's configuration and every CLI call.
    let created: serde_json::Value =
        serde_json::from_slice(&init.stdout).map_err(|e| format!("init --json: {e}"))?;
    let keyset_id = created["keyset"].as_str().ok_or("init: no keyset id")?;
    let keks: Vec<String> = created["keyset_keks"]
        .as_array()
        .ok_or("init: no keyset_keks")?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let mut text = std::fs::read_to_string(&env.config).map_err(|e| e.to_string())?;
    text.push_str(&format!(
        "keyset_id = {keyset_id:?}\nkeyset_keks = {keks:?}\n"
    ));
    std::fs::write(&env.config, text).map_err(|e| e.to_string())?;
    env.pins = vec![
        ("STATESEAL_KEYSET_ID", keyset_id.to_owned()),
        ("STATESEAL_KEYSET_KEKS", keks.join(",")),
    ];
    // Generation 1, to be put back later as a careless restore would.
    let first_document = dir.join("generation-1.json");
    faults::save_document(&bao, &first_document);
    let mut servers: Vec<Server> = CLOCK_OFFSETS
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let s = Server::new(i, *o);
            if i == APPROLE_SERVER {
                s.with_approle(role_id.clone(), secret_id_file.clone())
            } else {
                s
            }
        })
        .collect();
    for s in &mut servers {
        s.start(&env)?;
    }
    println!(
        "soak: OpenBao {} · {} server processes (clock offsets {CLOCK_OFFSETS:?} s) · {} workers · {} s",
        bao.addr,
        servers.len(),
        args.workers,
        args.duration
    );
    Ok(Setup {
        dir,
        bao,
        env,
        servers,
        tokens,
        secret_id_file,
        secret_id,
        first_document,
        _issuer: issuer,
    })
}
