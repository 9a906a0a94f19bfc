//! Runs the Python package's pytest suite (bindings/python/tests/test_*.py) as part of
//! `cargo test --workspace`.
//!
//! Which `burrow` package is tested:
//! - `BURROW_PYTHON=/path/to/python`: the package installed in that interpreter's environment
//!   (`.ci/run` makes a fresh venv, runs `pip install ./bindings/python` and points here);
//! - otherwise the extension this cargo run just built (`lib_burrow.so` beside this test's
//!   binary) with the sources in `python/`, assembled into a temporary package directory and
//!   put on `PYTHONPATH` of `python3`: always the current code, no install step.
//!
//! pytest is required; the Anthropic SDK only for the SDK adapter tests. Without pytest the
//! suite is skipped with one line saying what to install, unless
//! `BURROW_REQUIRE_PYTHON_PACKAGE=1` (set by `.ci/run`) makes that a failure, as it also
//! makes the SDK-dependent tests fail instead of skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../embed/test_support.rs"]
mod support;

const REQUIRE: &str = "BURROW_REQUIRE_PYTHON_PACKAGE";

fn required() -> bool {
    support::required(REQUIRE)
}

fn skip_or_fail(why: &str) {
    support::skip_or_fail(REQUIRE, why)
}

/// A package directory holding `burrow/` (sources + the extension this run built).
fn assemble(into: &Path) -> Result<(), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/burrow");
    let dest = into.join("burrow");
    std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(&src).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        std::fs::copy(entry.path(), dest.join(entry.file_name())).map_err(|e| e.to_string())?;
    }
    let lib = support::built_library("_burrow")?;
    std::fs::copy(&lib, dest.join("_burrow.abi3.so")).map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn pytest_suite() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (python, pythonpath) = match std::env::var_os("BURROW_PYTHON") {
        Some(p) => (PathBuf::from(p), None),
        None => {
            if let Err(e) = assemble(tmp.path()) {
                return skip_or_fail(&format!("cannot assemble the package: {e}"));
            }
            (PathBuf::from("python3"), Some(tmp.path().to_path_buf()))
        }
    };
    let probe = Command::new(&python).args(["-c", "import pytest"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip_or_fail(&format!(
            "pytest is not importable by {}; install it: pip install pytest (and anthropic for \
             the SDK adapter tests)",
            python.display()
        ));
    }
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(&tests);
    // The store, cache and HOME of the tests are their own.
    support::isolate(&mut cmd, tmp.path());
    if let Some(pp) = &pythonpath {
        cmd.env("PYTHONPATH", pp);
    }
    let out = cmd.output().expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed (see above)");
    if required() {
        assert!(
            !stdout.contains(" skipped"),
            "tests were skipped with BURROW_REQUIRE_PYTHON_PACKAGE=1"
        );
    }
}
