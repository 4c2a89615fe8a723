//! The file store's writers' lock, compare-and-swap, modes and URIs.

use std::cell::Cell;

use super::*;
use crate::clock::UnixTime;
use crate::keyset::{KeyEntry, Keyset};

thread_local! {
    /// Makes this thread's directory flushes fail (a fault the OS gives rarely).
    pub(super) static DIRECTORY_SYNC_FAILS: Cell<bool> = const { Cell::new(false) };
}

/// A copy of the lock's descriptor (what a child forked mid-write holds)
/// must not keep the lock once the writer is done.
#[test]
fn the_writers_lock_is_released_while_a_copy_of_its_descriptor_lives() {
    let dir = std::env::temp_dir().join(format!("stateseal-lock-{}", random_id("t").unwrap()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keyset.json.lock");
    let lock = WriterLock::acquire(&path).unwrap();
    let inherited = lock.0.try_clone().unwrap();
    drop(lock);
    let other = OpenOptions::new().write(true).open(&path).unwrap();
    assert!(other.try_lock().is_ok(), "the lock outlived its writer");
    drop((inherited, other));
    fs::remove_dir_all(&dir).unwrap();
}

fn doc(generation: u64) -> StoredKeyset {
    StoredKeyset::unauthenticated(&Keyset {
        id: "ks_t".into(),
        generation,
        timing: None,
        rotation_claim: None,
        revocations: Vec::new(),
        keys: vec![KeyEntry {
            entry: "k_1".into(),
            kid: None,
            alg: crate::key::TokenFormat::V1,
            kek: "local:///k".into(),
            wrapped: vec![1],
            created_at: UnixTime::from_secs(1),
            activate_at: UnixTime::from_secs(1),
            retire_at: None,
            seals_reserved: 0,
        }],
    })
    .unwrap()
}

/// A fresh directory for one test (named by the line that asks).
fn scratch(line: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stateseal-store-{}-{line}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn cas_across_threads_has_exactly_one_winner() {
    let dir = scratch(line!());
    let store = FileStore::new(dir.join("keyset.json"));
    assert!(store.read().unwrap().is_none());
    store.cas_blocking(None, &doc(1)).unwrap();
    assert!(matches!(
        store.cas_blocking(None, &doc(1)),
        Err(Error::Keyset(KeysetError::Conflict {
            expected: None,
            found: Some(1)
        }))
    ));
    let wins: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| store.cas_blocking(Some(1), &doc(2)).is_ok()))
            .collect();
        handles
            .into_iter()
            .map(|h| usize::from(h.join().unwrap()))
            .sum()
    });
    assert_eq!(wins, 1);
    assert_eq!(store.read().unwrap().unwrap().generation(), 2);
    assert!(
        store.cas_blocking(Some(2), &doc(2)).is_err(),
        "generation must be above expected"
    );
    store.cas_blocking(Some(2), &doc(9)).unwrap();
    assert_eq!(store.read().unwrap().unwrap().generation(), 9);
    let e = check_next_generation("file:///k", Some(u64::MAX), &doc(1)).unwrap_err();
    assert!(e.to_string().contains("maximum"), "{e}");
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn modes_and_temporaries() {
    let dir = scratch(line!());
    let store = FileStore::new(dir.join("keyset.json"));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    store.cas_blocking(None, &doc(1)).unwrap();
    assert_eq!(mode(store.path()), 0o600, "new keysets are private");
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o640)).unwrap();
    // A writer killed mid-write left its temporary file behind.
    let stale = dir.join("keyset.json.tmp-deadbeef");
    fs::write(&stale, b"half a document").unwrap();
    let unrelated = dir.join("other.json.tmp-1");
    fs::write(&unrelated, b"not ours").unwrap();
    store.cas_blocking(Some(1), &doc(2)).unwrap();
    assert_eq!(mode(store.path()), 0o640, "an operator's mode is kept");
    assert!(!stale.exists(), "stale temporary removed");
    assert!(unrelated.exists(), "another file's temporary left alone");
    assert_eq!(store.read().unwrap().unwrap().generation(), 2);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_lock_is_private_never_a_symbolic_link_and_modes_lose_special_bits() {
    let dir = scratch(line!());
    let store = FileStore::new(dir.join("keyset.json"));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    // A lock planted as a link to a file elsewhere: refused, and nothing created there.
    let victim = dir.join("victim");
    std::os::unix::fs::symlink(&victim, dir.join("keyset.json.lock")).unwrap();
    let err = store.cas_blocking(None, &doc(1)).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!victim.exists(), "the link was followed");
    assert!(store.read().unwrap().is_none(), "nothing written");
    fs::remove_file(dir.join("keyset.json.lock")).unwrap();
    store.cas_blocking(None, &doc(1)).unwrap();
    assert_eq!(
        mode(&dir.join("keyset.json.lock")) & 0o077,
        0,
        "the lock is private"
    );
    // An existing document's setuid/setgid/sticky bits are not copied.
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o7640)).unwrap();
    store.cas_blocking(Some(1), &doc(2)).unwrap();
    assert_eq!(mode(store.path()), 0o640);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn uri_parsing() {
    assert_eq!(
        FileStore::from_uri("file:///a/b.json").unwrap().path(),
        Path::new("/a/b.json")
    );
    assert_eq!(
        FileStore::from_uri("file://localhost/a/b.json")
            .unwrap()
            .path(),
        Path::new("/a/b.json")
    );
    assert!(FileStore::from_uri("s3://b/k").is_err());
    for bad in [
        "file://",
        "file:///",
        "file://rel.json",
        "file://localhost",
        "file://host/a",
    ] {
        let err = FileStore::from_uri(bad).unwrap_err().to_string();
        assert!(err.contains("absolute path"), "{bad}: {err}");
    }
}

/// A write whose rename landed is a write, even when flushing the directory
/// after it fails: the document is there, no temporary is left, and the
/// writer is told it succeeded (reporting a failure would make it retry on a
/// generation that is gone).
#[test]
fn a_failed_directory_flush_after_the_rename_still_reports_the_write() {
    let dir = scratch(line!());
    let store = FileStore::new(dir.join("keyset.json"));
    store.cas_blocking(None, &doc(1)).unwrap();
    DIRECTORY_SYNC_FAILS.set(true);
    let written = store.cas_blocking(Some(1), &doc(2));
    DIRECTORY_SYNC_FAILS.set(false);
    written.expect("the rename landed");
    assert_eq!(store.read().unwrap().unwrap().generation(), 2);
    let leftovers = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .count();
    assert_eq!(leftovers, 0);
    fs::remove_dir_all(dir).unwrap();
}
