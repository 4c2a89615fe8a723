//! The S3 store under the shared store contract, against a real AWS-API server (moto).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use stateseal::KeysetStore;
use stateseal_aws_kms::{AwsConfig, S3Store};
use stateseal_testkit::moto::{Moto, REGION};
use stateseal_testkit::store_contract::{self, StoreUnderTest};

const BUCKET: &str = "stateseal-contract";
const KEY: &str = "fleet/keyset.json";

struct S3 {
    moto: Moto,
    /// While set, new handles reach a port where nothing listens: the service
    /// is unreachable from the store's side (moto keeps its state in memory,
    /// so stopping it would lose the document the recovery case reads back).
    down: AtomicBool,
    dead_endpoint: String,
}

impl StoreUnderTest for S3 {
    fn open(&self) -> Arc<dyn KeysetStore> {
        let endpoint = if self.down.load(Ordering::SeqCst) {
            &self.dead_endpoint
        } else {
            &self.moto.endpoint
        };
        let config = AwsConfig::builder()
            .endpoint_url(endpoint)
            .region(REGION)
            .credentials(aws_credential_types::Credentials::for_tests())
            .max_attempts(1)
            .build()
            .expect("config");
        Arc::new(S3Store::open(config, &format!("s3://{BUCKET}/{KEY}")).expect("store"))
    }
    fn put_raw(&self, json: &serde_json::Value) {
        let body = json.to_string().replace('\'', "\\'");
        self.moto.boto(&format!(
            "s3.put_object(Bucket='{BUCKET}', Key='{KEY}', Body=b'{body}')"
        ));
    }
    fn break_service(&self) {
        self.down.store(true, Ordering::SeqCst);
    }
    fn repair_service(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        Err("moto does not enforce IAM policies")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_meets_the_store_contract() {
    let dir = std::env::temp_dir().join(format!("stateseal-s3-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let moto = Moto::start(&dir);
    moto.create_bucket(BUCKET);
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    store_contract::run(&S3 {
        moto,
        down: AtomicBool::new(false),
        dead_endpoint: format!("http://{dead}"),
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}
