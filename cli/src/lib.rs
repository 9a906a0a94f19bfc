//! burrow-cli: the `burrow` binary over the burrow-host library, and the interfaces that need
//! a server or an API client, which the library (and with it the Python package) does not
//! link: the command line ([`cli`]), `burrow serve` and `burrow mcp` ([`serve`]: HTTP API,
//! console, MCP), the Claude Managed Agents worker ([`worker`]), the Messages API loop
//! ([`agent`]) and their API client ([`api_client`]), `burrow bench` ([`bench`]) and
//! `burrow demo` ([`demo`]).
//!
//! Everything here reaches sessions through `burrow_host::Sandbox`; nothing below reaches up.

#[macro_use]
mod cli_out;
pub mod agent;
pub mod api_client;
pub mod bench;
pub mod cli;
mod cli_progress;

pub mod serve;
pub mod worker;
