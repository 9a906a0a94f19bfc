//! The WebAssembly runtime: components run under wasmtime against a store transaction.
//!
//! - `engine`: the process's wasmtime engine (configuration shared with build.rs in
//!   `engine_config`), its linker and component cache;
//! - `run`: one run of a component in one transaction: instantiate, `wasi:cli/run`, capture
//!   (`output`), enforce `limits`, commit or roll back;
//! - `process`: `burrow:sandbox/process`, a program that starts another program in the same
//!   transaction (the shell running a `.wasm` on PATH);
//! - `adapt`: wasip1 core modules made components;
//! - `wasi_fs`: `wasi:filesystem` over the transaction, and the composed root;
//! - `determinism`: a deterministic call's clocks, generators and tape of network replies;
//! - `control`: what `/dev/burrow` (a device of `wasi_fs`) does for a wasip1 guest: start a
//!   command through the shell (as `process` does) or make an HTTP request through the
//!   call's egress.
//!
//! `engine`, `run`, `process` and `adapt` call each other, by design, and that circle stays
//! in this folder: a run instantiates through the engine; a program a run starts is a nested
//! run through the same engine and linker, which the engine builds with `process`'s host
//! functions; `adapt` reports its failures as a run's error. Nothing here reaches up to tool
//! families or sessions.

pub mod adapt;
pub(crate) mod control;
pub mod determinism;
pub mod engine;
pub mod limits;
pub(crate) mod output;
pub(crate) mod process;
pub mod run;
pub mod wasi_fs;
