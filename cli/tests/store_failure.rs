//! A tool call whose store fails under it (its server lost mid-call, as in a database
//! restart) fails whole, and the session stays as it was. The chaos harness found the
//! opposite: the failed read came back to the program as `EIO`, the shell stepped over the
//! failed append (`echo 1 >> log.txt && echo 1 > calls/1` wrote `calls/1` only) and the call
//! committed, acknowledged and half-applied. Here the failure is injected: an object store
//! whose page reads fail, once armed, with the error a lost server gives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use burrow_host::tools::Toolbox;
use burrow_host::{Limits, RunError};
use burrow_store::backend::ObjectKind;
use burrow_store::{Error, Options, Store};

use crate::common;
use crate::flaky::{self, Flaky};

#[test]
fn a_call_whose_store_fails_under_it_fails_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = |name: &str| flaky::sqlite(&dir.path().join(name));
    let (objects, catalog) = (open("objects.db"), open("catalog.db"));
    // What the session holds, written by another process.
    let writer = Store::with_backends(
        objects.clone(),
        catalog.clone(),
        dir.path(),
        Options::default(),
    );
    writer.create_workspace("w").expect("workspace");
    let mut t = writer.begin("w").expect("begin");
    t.write_file("log.txt", b"0\n").expect("write");
    let before = t.commit().expect("commit").version;

    // This process: nothing cached, so the append must read log.txt's page.
    let armed = Arc::new(AtomicBool::new(false));
    let trip = armed.clone();
    let flaky = Flaky::new(
        objects,
        Box::new(move |kind, _| kind == ObjectKind::Page && trip.load(Ordering::SeqCst)),
    );
    let store = Store::with_backends(flaky, catalog, dir.path(), Options::default());
    let tb = Toolbox::new(Arc::new(common::engine(&common::cache()))).expect("toolbox");
    let txn = store.begin("w").expect("begin");
    armed.store(true, Ordering::SeqCst);
    let r = tb.shell(
        txn,
        "mkdir -p calls && echo 1 >> log.txt && echo 1 > calls/1 && echo ack-1",
        false,
        &Limits::default(),
        &[],
    );
    armed.store(false, Ordering::SeqCst);
    match r {
        Err(RunError::Store(Error::Server(why))) => assert!(why.contains("injected"), "{why}"),
        Err(e) => panic!("the call failed otherwise: {e}"),
        Ok((_, report)) => panic!(
            "the call went on past the failed append (exit {}): {}{}",
            report.exit_code,
            String::from_utf8_lossy(&report.stdout),
            String::from_utf8_lossy(&report.stderr)
        ),
    }
    // Its transaction is gone with it: the session is as it was.
    let head = store.workspace("w").expect("workspace").version;
    assert_eq!(head, before);
    let mut v = store.view(head).expect("view");
    let ino = v
        .resolve(burrow_store::ROOT_INO, "log.txt", false)
        .expect("log.txt");
    assert_eq!(v.read_all(ino).expect("read"), b"0\n");
    assert!(
        v.resolve(burrow_store::ROOT_INO, "calls", false).is_err(),
        "calls/ was not made"
    );
}
