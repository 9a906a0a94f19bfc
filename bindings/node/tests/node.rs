//! Runs the npm package's tests (bindings/node/tests/*.test.mjs) with node's built-in test
//! runner as part of `cargo test --workspace`.
//!
//! Which `burrow-sandbox` is tested:
//! - `BURROW_NODE_PACKAGE=/path/to/project`: the package installed in that project
//!   (`.ci/run` runs `npm install ./bindings/node` in a fresh project and points here);
//! - otherwise the sources in bindings/node with the addon this cargo run just built
//!   (`libburrow_node.so`, copied as a `.node` file and named by `BURROW_NODE_BINARY`): always
//!   the current code, no install step.
//!
//! node (>= 18) is required; the SDKs and TypeScript (`npm ci --prefix bindings/node`) only
//! for the adapter and example tests. Without node the suite is skipped with one line saying
//! what to install, unless `BURROW_REQUIRE_NODE_PACKAGE=1` (set by `.ci/run`) makes that a
//! failure, as it also makes the tests that need the SDKs fail instead of skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../embed/test_support.rs"]
mod support;

const REQUIRE: &str = "BURROW_REQUIRE_NODE_PACKAGE";

fn required() -> bool {
    support::required(REQUIRE)
}

fn skip_or_fail(why: &str) {
    support::skip_or_fail(REQUIRE, why)
}

/// The addon this run built, copied to `dir` with the `.node` name node loads it by.
fn addon(dir: &Path) -> Result<PathBuf, String> {
    let lib = support::built_library("burrow_node")?;
    let dest = dir.join("burrow.node");
    std::fs::copy(&lib, &dest).map_err(|e| e.to_string())?;
    Ok(dest)
}

#[test]
fn node_test_suite() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let probe = Command::new("node").arg("--version").output();
    let version = match probe {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => return skip_or_fail("node is not installed (Node.js >= 18: apt install nodejs npm)"),
    };
    let mut cmd = Command::new("node");
    // Test files by name: node 18's runner takes no glob.
    let mut files: Vec<PathBuf> = std::fs::read_dir(package.join("tests"))
        .expect("bindings/node/tests")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    files.sort();
    cmd.arg("--test").args(&files);
    // The store, cache and HOME of the tests are their own.
    support::isolate(&mut cmd, tmp.path());
    if std::env::var_os("BURROW_NODE_PACKAGE").is_none() {
        match addon(tmp.path()) {
            Ok(path) => {
                cmd.env("BURROW_NODE_BINARY", path);
            }
            Err(e) => return skip_or_fail(&format!("cannot find the addon: {e}")),
        }
    }
    let out = cmd.output().expect("run node --test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("node {version}\n{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node --test failed (see above)");
    if required() {
        assert!(
            stdout.contains("\n# skipped 0\n"),
            "tests were skipped with BURROW_REQUIRE_NODE_PACKAGE=1"
        );
    }
}
