//! Every store under the shared (`stateseal-contract`) store contract: S3 against moto
//! (IAM enforced), Cloud Storage against fake-gcs-server through the
//! precondition front, Azure Blob Storage against Azurite (one test binary, so the crate links once).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use aws_credential_types::Credentials;
use stateseal::KeysetStore;
use stateseal_contract::integrity as integrity_contract;
use stateseal_contract::store::{self as store_contract, StoreUnderTest};
use stateseal_object_store::{
    AzureBlobConfig, AzureBlobStore, GcsConfig, GcsStore, S3Config, S3Store,
};
use stateseal_testkit::fake_gcs::FakeGcs;
use stateseal_testkit::gcs_front::GcsPreconditionFront;
use stateseal_testkit::moto::{Moto, REGION};

const BUCKET: &str = "stateseal-contract";
const OBJECT: &str = "fleet/keyset.json";

fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stateseal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

struct S3 {
    moto: Moto,
    /// While set, new handles reach a port where nothing listens: the service
    /// is unreachable from the store's side (moto keeps its state in memory,
    /// so stopping it would lose the document the recovery case reads back).
    down: AtomicBool,
    dead_endpoint: String,
    dir: std::path::PathBuf,
}

impl S3 {
    fn handle(&self, (id, secret): (String, String)) -> Arc<dyn KeysetStore> {
        let endpoint = if self.down.load(Ordering::SeqCst) {
            &self.dead_endpoint
        } else {
            &self.moto.endpoint
        };
        let config = S3Config::builder()
            .endpoint_url(endpoint)
            .region(REGION)
            .credentials(Credentials::new(id, secret, None, None, "contract"))
            .max_attempts(1)
            .build()
            .expect("config");
        Arc::new(S3Store::open(config, &format!("s3://{BUCKET}/{OBJECT}")).expect("store"))
    }
}

impl StoreUnderTest for S3 {
    fn open(&self) -> Arc<dyn KeysetStore> {
        self.handle(self.moto.credentials())
    }
    fn put_raw(&self, json: &serde_json::Value) {
        // Through a file: a document may be larger than one command-line argument.
        let file = self.dir.join("raw.json");
        std::fs::write(&file, json.to_string()).expect("write");
        self.moto.boto(&format!(
            "s3.put_object(Bucket='{BUCKET}', Key='{OBJECT}', Body=open({:?}, 'rb').read())",
            file.display().to_string()
        ));
    }
    fn break_service(&self) {
        self.down.store(true, Ordering::SeqCst);
    }
    fn repair_service(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        // A principal with no IAM policy (moto enforcing IAM for this server).
        Ok(self.handle(self.moto.outsider().ok_or("moto started without IAM")?))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_meets_the_store_contract() {
    let dir = scratch("s3-contract");
    let moto = Moto::start_with_iam(&dir);
    moto.create_bucket(BUCKET);
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    let s3 = S3 {
        moto,
        down: AtomicBool::new(false),
        dead_endpoint: format!("http://{dead}"),
        dir: dir.clone(),
    };
    store_contract::run(&s3).await;
    integrity_contract::run(&s3, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}

struct Gcs {
    emulator: FakeGcs,
    front: GcsPreconditionFront,
}

impl StoreUnderTest for Gcs {
    fn open(&self) -> Arc<dyn KeysetStore> {
        let config = GcsConfig::builder()
            .endpoint(&self.front.endpoint)
            .anonymous_credentials(true)
            .max_attempts(1)
            .build()
            .expect("config");
        Arc::new(GcsStore::open(config, &format!("gs://{BUCKET}/{OBJECT}")).expect("store"))
    }
    fn put_raw(&self, json: &serde_json::Value) {
        self.emulator
            .put_raw(BUCKET, OBJECT, json.to_string().as_bytes());
    }
    fn break_service(&self) {
        self.front.set_down(true);
    }
    fn repair_service(&self) {
        self.front.set_down(false);
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        Err("fake-gcs-server enforces no IAM; the live test runs with a real bucket's bindings")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_store_meets_the_store_contract() {
    let dir = scratch("gcs-contract");
    let emulator = FakeGcs::start(&dir);
    emulator.create_bucket(BUCKET);
    let front = GcsPreconditionFront::start(&emulator);
    let gcs = Gcs { emulator, front };
    store_contract::run(&gcs).await;
    integrity_contract::run(&gcs, &dir).await;
    // The document the suite left was written through the front, conditionally.
    assert!(gcs.front.writes() > 0);
    assert!(gcs.emulator.generation(BUCKET, OBJECT).is_some());
    drop(gcs);
    let _ = std::fs::remove_dir_all(dir);
}

struct AzureBlob {
    azurite: stateseal_testkit::azurite::Azurite,
    down: AtomicBool,
    dead_endpoint: String,
}

impl AzureBlob {
    fn handle(&self, key: &str) -> Arc<dyn KeysetStore> {
        let endpoint = if self.down.load(Ordering::SeqCst) {
            self.dead_endpoint.clone()
        } else {
            self.azurite.endpoint()
        };
        let config = AzureBlobConfig::builder()
            .endpoint(endpoint)
            .access_key(key)
            .max_attempts(1)
            .build()
            .expect("config");
        let uri = format!(
            "az-blob://{}/{BUCKET}/{OBJECT}",
            stateseal_testkit::azurite::ACCOUNT
        );
        Arc::new(AzureBlobStore::open(config, &uri).expect("store"))
    }
}

impl StoreUnderTest for AzureBlob {
    fn open(&self) -> Arc<dyn KeysetStore> {
        self.handle(stateseal_testkit::azurite::ACCOUNT_KEY)
    }
    fn put_raw(&self, json: &serde_json::Value) {
        self.azurite
            .put_blob(BUCKET, OBJECT, json.to_string().as_bytes());
    }
    fn break_service(&self) {
        self.down.store(true, Ordering::SeqCst);
    }
    fn repair_service(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        // Another account key: Azurite checks Shared Key signatures (403).
        Ok(self.handle("b3RoZXIta2V5LW5vdC10aGUtYWNjb3VudHMtb3duLWtleS1hYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM="))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_blob_store_meets_the_store_contract() {
    let dir = scratch("azure-contract");
    let azurite = stateseal_testkit::azurite::Azurite::start(&dir);
    azurite.create_container(BUCKET);
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    let blob = AzureBlob {
        azurite,
        down: AtomicBool::new(false),
        dead_endpoint: format!("http://{dead}/{}", stateseal_testkit::azurite::ACCOUNT),
    };
    store_contract::run(&blob).await;
    integrity_contract::run(&blob, &dir).await;
    drop(blob);
    let _ = std::fs::remove_dir_all(dir);
}
