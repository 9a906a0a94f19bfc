//! burrow-host: runs WASI components against burrow workspaces.
//!
//! Data flows one way: interface (CLI, later HTTP/MCP/worker) -> session -> run -> engine ->
//! wasi_fs -> store. This crate never writes SQL: all state goes through `burrow-store`.
//!
//! - [`engine`]: the process's wasmtime engine, linker and component cache;
//! - [`wasi_fs`]: `wasi:filesystem` over a store transaction (replacing wasmtime-wasi's);
//! - [`run`]: one run of a component in one transaction, with [`limits`] and captured output.

pub mod adapt;
pub mod agent;
pub mod api_client;
pub mod bench;
pub mod engine;
pub mod limits;
pub mod net;
mod output;
mod process;
pub mod run;
pub mod serve;
pub mod session;
pub mod toolchain;
pub mod tools;
pub mod wasi_fs;
pub mod worker;

pub use engine::{Engine, EngineConfig, Program};
pub use limits::Limits;
pub use run::{RunError, RunOptions, RunReport, RunResult};
pub use session::{Family, Sandbox, SandboxConfig, SessionError, SessionInfo};
