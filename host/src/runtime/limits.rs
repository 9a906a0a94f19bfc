//! Per-run limits, their defaults, and the resource limiter that enforces memory and tables.

use std::time::Duration;

/// Largest single `read` a guest may ask for in one call (bigger asks return less).
pub const MAX_READ: u64 = 16 << 20;

/// Limits of one run. Hitting any of them ends the run with a [`crate::RunError`] naming the
/// limit, and the transaction is rolled back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time of the run (enforced by epoch interruption). Default 120 s.
    pub timeout: Duration,
    /// Linear memory of one instance, in bytes. Default 1 GiB.
    pub memory: usize,
    /// Elements of one table. Default 100,000.
    pub table_elements: usize,
    /// Bytes of stdout and of stderr kept in the result (the tail is kept; the rest is
    /// counted as dropped). Default 1 MiB each.
    pub capture: usize,
    /// Total bytes a run may write to stdout and stderr together before it is stopped.
    /// Default 64 MiB.
    pub output: u64,
    /// What the run may reach on the network: the session's policy. Default: nothing.
    pub network: std::sync::Arc<crate::net::NetPolicy>,
    /// How much of the network one run may use. Default: [`crate::net::NetLimits::default`].
    pub net: crate::net::NetLimits,
    /// The operator's egress settings: TLS roots and where secrets' values come from.
    /// Default: the public web's roots, secrets from burrow's environment.
    pub egress: std::sync::Arc<crate::net::Operator>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(120),
            memory: 1 << 30,
            table_elements: 100_000,
            capture: 1 << 20,
            output: 64 << 20,
            network: Default::default(),
            net: Default::default(),
            egress: Default::default(),
        }
    }
}

/// Enforces [`Limits::memory`] and [`Limits::table_elements`], remembering whether it refused.
pub(crate) struct Limiter {
    pub memory: usize,
    pub table_elements: usize,
    pub memory_hit: bool,
    pub table_hit: bool,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory {
            self.memory_hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            self.table_hit = true;
            return Ok(false);
        }
        Ok(true)
    }
}
