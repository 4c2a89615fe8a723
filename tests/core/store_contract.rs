//! The file store under the published store contract (`stateseal-contract`).

use std::path::PathBuf;
use std::sync::Arc;

use stateseal::{FileStore, KeysetStore};
use stateseal_contract::store::{self as store_contract, StoreUnderTest};

use crate::fleet::temp_dir;

struct File {
    path: PathBuf,
}

impl StoreUnderTest for File {
    fn open(&self) -> Arc<dyn KeysetStore> {
        Arc::new(FileStore::new(&self.path))
    }
    fn put_raw(&self, json: &serde_json::Value) {
        std::fs::write(&self.path, json.to_string()).expect("write");
    }
    // An outage of a local file: a directory where the document should be.
    fn break_service(&self) {
        std::fs::rename(&self.path, self.path.with_extension("away")).expect("move");
        std::fs::create_dir(&self.path).expect("dir");
    }
    fn repair_service(&self) {
        std::fs::remove_dir(&self.path).expect("dir");
        std::fs::rename(self.path.with_extension("away"), &self.path).expect("move back");
    }
    // Tests run as root, which file modes do not stop: a path under a regular
    // file is a location no process can read or write.
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        Ok(Arc::new(FileStore::new(self.path.join("keyset.json"))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_meets_the_store_contract() {
    let dir = temp_dir("store-contract");
    let file = File {
        path: dir.join("keyset.json"),
    };
    store_contract::run(&file).await;
    stateseal_contract::integrity::run(&file, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}
