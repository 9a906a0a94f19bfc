//! burrow's integration tests (the CLI, the servers and the library), linked into one test
//! binary (`cargo test -p burrow-cli --test all`). Each file in this directory is one module, named after what it tests; filter
//! by module: `cargo test -p burrow-cli --test all shell_golden::`.
//!
//! One binary instead of one per file: every test binary links wasmtime and embeds the
//! precompiled tool components (about 90 MB each without debug info), so twenty-six of them
//! filled a CI machine's disk; one binary also links once instead of twenty-six times.

mod common;
mod fake_ma;
#[path = "../../workspace-store/tests/flaky/mod.rs"]
mod flaky;
#[path = "../../workspace-store/tests/pg/mod.rs"]
mod pg;
#[path = "../../workspace-store/tests/pgbouncer/mod.rs"]
mod pgbouncer;
#[path = "../../workspace-store/tests/s3/mod.rs"]
mod s3;

mod chaos;
mod claude;
mod claude_code_conformance;
mod cli;
mod conformance;
mod console;
mod cpu_budget;
mod crash;
mod differential;
mod escape;
mod families;
mod git;
mod load;
mod memory;
mod net;
mod oils_spec;
mod pip_build;
mod pip_packages;
mod process;
mod python;
mod replay;
mod root;
mod run;
mod serve;
mod shell;
mod shell_golden;
mod shell_options;
mod store_failure;
mod store_postgres;
mod streaming;
mod wasi_testsuite;
mod worker;
