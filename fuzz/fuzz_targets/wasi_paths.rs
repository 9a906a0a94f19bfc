//! Arbitrary paths through the guest boundary: the fs-tools component (inside the sandbox)
//! opens, reads, writes and lists whatever path the input names, bypassing every host-side
//! path check, so only the wasi:filesystem implementation stands between the path and the
//! host. Invariants: no panic, the call returns, nothing outside the workspace appears.
#![no_main]

use std::sync::{Arc, OnceLock};

use burrow_host::tools::Toolbox;
use burrow_host::{Engine, EngineConfig, Limits};
use burrow_store::Store;
use libfuzzer_sys::fuzz_target;

struct World {
    _dir: tempfile::TempDir,
    store: Store,
    tb: Toolbox,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("f.db")).unwrap();
        store.create_workspace("w").unwrap();
        let engine = Engine::new(EngineConfig {
            cache_dir: Some(dir.path().join("cache")),
            no_pooling: true,
            ..Default::default()
        })
        .unwrap();
        let tb = Toolbox::new(Arc::new(engine)).unwrap();
        World { _dir: dir, store, tb }
    })
}

fuzz_target!(|input: (u8, String, String)| {
    let (op, path, other) = input;
    let request = match op % 5 {
        0 => serde_json::json!({"op": "read", "path": path, "max_bytes": 4096}),
        1 => serde_json::json!({"op": "write", "path": path, "content": other, "mkdirs": true}),
        2 => serde_json::json!({"op": "list", "path": path, "depth": 2}),
        3 => serde_json::json!({"op": "glob", "pattern": other, "path": path, "limit": 10}),
        _ => serde_json::json!({"op": "grep", "pattern": "x", "path": path}),
    };
    // Only requests the protocol can express reach the component.
    let Ok(request) = serde_json::from_value::<burrow_host::tools::proto::Request>(request) else {
        return;
    };
    let w = world();
    let txn = w.store.begin("w").unwrap();
    let limits = Limits { timeout: std::time::Duration::from_secs(5), ..Default::default() };
    // Errors are values; only a host failure would be a bug.
    let _ = w.tb.fs_op(txn, &request, &limits);
});
