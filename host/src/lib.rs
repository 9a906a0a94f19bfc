//! burrow-host: the burrow library. Runs WASI components against burrow workspaces and
//! serves Claude's tool families over them, as sessions.
//!
//! Data flows one way: an interface (the `burrow` binary's CLI, HTTP, MCP, worker and agent
//! loop in burrow-cli; the Python package; an embedder) -> [`session`] -> [`tools`] -> [`run`]
//! -> [`engine`] -> [`wasi_fs`] -> the store. This crate never writes SQL (all state goes
//! through `burrow-store`), serves no HTTP and parses no command line.
//!
//! - [`runtime`]: WebAssembly under wasmtime: [`engine`] (the process's engine, linker and
//!   component cache), [`run`] (one run of a component in one transaction, with [`limits`]
//!   and captured output), [`wasi_fs`] (`wasi:filesystem` over a store transaction,
//!   replacing wasmtime-wasi's), programs started by programs, wasip1 adaptation;
//! - [`net`]: guests' network (policy, egress, secrets);
//! - [`tools`]: the tool families over the file-tool and shell components;
//! - [`session`]: sessions, forks, history, diff; [`toolchain`]: pinned runtimes.

pub mod net;
pub mod paths;
pub mod runtime;
pub mod session;
pub mod toolchain;
pub mod tools;

pub use runtime::{adapt, determinism, engine, limits, run, wasi_fs};
pub(crate) use runtime::{control, output, process};

pub use engine::{Engine, EngineConfig, Program};
pub use limits::{CpuBudget, Limits};
pub use run::{RunError, RunOptions, RunReport, RunResult};
pub use session::{Family, Sandbox, SandboxConfig, SessionError, SessionInfo};
