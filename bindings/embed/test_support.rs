//! What the language packages' test runners share: bindings/python/tests/pytest.rs and
//! bindings/node/tests/node.rs include this file (`#[path]`), each naming its own
//! `BURROW_REQUIRE_*` variable.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `var` (`BURROW_REQUIRE_PYTHON_PACKAGE`, ...) asks for every test to run: then a
/// missing piece fails instead of skipping.
pub fn required(var: &str) -> bool {
    std::env::var(var).as_deref() == Ok("1")
}

/// Skips with one line saying why, or fails when `var` requires the suite.
pub fn skip_or_fail(var: &str, why: &str) {
    assert!(!required(var), "{why} ({var}=1)");
    println!("skipped: {why}");
}

/// `target/<profile>`, where cargo put this run's binaries and libraries.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// The shared library `lib<stem>` this cargo run built (`cargo test` leaves it in deps/; only
/// `cargo build` copies it up).
pub fn built_library(stem: &str) -> Result<PathBuf, String> {
    let ext = if cfg!(target_os = "macos") {
        "dylib"
    } else {
        "so"
    };
    let lib = profile_dir().join("deps").join(format!("lib{stem}.{ext}"));
    if lib.exists() {
        Ok(lib)
    } else {
        Err(format!("{} was not built", lib.display()))
    }
}

/// The environment of a suite run in `tmp`: its own store, cache and HOME, and the CLI
/// (`BURROW_BIN`) when this run built it.
pub fn isolate(cmd: &mut Command, tmp: &Path) {
    cmd.current_dir(tmp)
        .env("HOME", tmp)
        .env("XDG_DATA_HOME", tmp.join("data"))
        .env(
            "BURROW_CACHE",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache"),
        );
    let burrow = profile_dir().join("burrow");
    if burrow.exists() {
        cmd.env("BURROW_BIN", &burrow);
    }
}
