//! Random operation sequences on a store transaction, committed, then checked by fsck.
//! Invariants: no panic; every error is a value; fsck is clean after each commit; an aborted
//! transaction leaves the head where it was.
#![no_main]

use arbitrary::Arbitrary;
use burrow_store::{OpenFlags, ROOT_INO, Store};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Mkdir(String),
    Write(String, Vec<u8>, u16),
    Truncate(String, u32),
    Rename(String, String),
    Unlink(String),
    Rmdir(String),
    Symlink(String, String),
    Read(String),
    Commit,
    Abort,
}

fuzz_target!(|ops: Vec<Op>| {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("f.db")).unwrap();
    store.create_workspace("w").unwrap();
    let mut txn = store.begin("w").unwrap();
    for op in ops.into_iter().take(64) {
        match op {
            Op::Mkdir(p) => drop(txn.mkdir_at(ROOT_INO, &p)),
            Op::Write(p, data, off) => {
                let flags = OpenFlags { create: true, ..Default::default() };
                if let Ok(ino) = txn.open_at(ROOT_INO, &p, flags, true) {
                    let _ = txn.write(ino, off as u64, &data);
                }
            }
            Op::Truncate(p, n) => {
                if let Ok(ino) = txn.resolve(ROOT_INO, &p, true) {
                    let _ = txn.set_size(ino, n as u64);
                }
            }
            Op::Rename(a, b) => drop(txn.rename_at(ROOT_INO, &a, ROOT_INO, &b)),
            Op::Unlink(p) => drop(txn.unlink_at(ROOT_INO, &p)),
            Op::Rmdir(p) => drop(txn.rmdir_at(ROOT_INO, &p)),
            Op::Symlink(t, p) => drop(txn.symlink_at(&t, ROOT_INO, &p)),
            Op::Read(p) => drop(txn.read_file(&p)),
            Op::Commit => {
                txn.commit().unwrap();
                assert!(store.fsck().unwrap().is_clean());
                txn = store.begin("w").unwrap();
            }
            Op::Abort => {
                let head = store.workspace("w").unwrap().version;
                drop(txn);
                assert_eq!(store.workspace("w").unwrap().version, head);
                txn = store.begin("w").unwrap();
            }
        }
    }
    txn.commit().unwrap();
    assert!(store.fsck().unwrap().is_clean());
});
