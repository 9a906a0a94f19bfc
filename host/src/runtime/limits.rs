//! Per-run limits, their defaults, the resource limiter that enforces memory and tables, and
//! a call's CPU budget (the fuel meter its runs share).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// The call's CPU budget, in fuel units, and its meter (see [`CpuBudget`]). Default:
    /// none, and the call runs on the unmetered engine.
    pub cpu: Option<CpuBudget>,
    /// A deterministic call's seed, clock and tape of network replies (see
    /// [`crate::determinism`]). Default: none, and the call sees the world's clocks, random
    /// numbers and network.
    pub det: Option<crate::determinism::Determinism>,
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
            cpu: None,
            det: None,
        }
    }
}

/// A call's CPU budget and what the call has used of it, in wasmtime fuel units (about one
/// per WebAssembly instruction executed; time in the host, such as reading files or
/// compiling, is not counted).
///
/// A clone shares the meter: every run of one call (the shell, the programs it starts, the
/// file-tool runs of a multi-step call) draws from the same budget. A meter belongs to one
/// call, so whoever runs calls gives each its own ([`CpuBudget::fresh`]); a call whose runs
/// used more than the budget fails with [`crate::RunError::CpuBudget`], rolled back.
#[derive(Debug, Clone)]
pub struct CpuBudget(Arc<Meter>);

#[derive(Debug)]
struct Meter {
    budget: u64,
    used: AtomicU64,
    /// A run ran out of fuel (it was stopped at the budget, so `used` alone cannot tell).
    over: AtomicBool,
}

impl CpuBudget {
    /// A new meter of `budget` fuel units, nothing used.
    pub fn new(budget: u64) -> CpuBudget {
        CpuBudget(Arc::new(Meter {
            budget,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
        }))
    }

    /// A new meter with the same budget, for another call.
    pub fn fresh(&self) -> CpuBudget {
        CpuBudget::new(self.budget())
    }

    pub fn budget(&self) -> u64 {
        self.0.budget
    }

    /// Fuel the call's runs have used so far.
    pub fn used(&self) -> u64 {
        self.0.used.load(Ordering::SeqCst)
    }

    /// Whether the call has used more than its budget.
    pub fn exceeded(&self) -> bool {
        self.0.over.load(Ordering::SeqCst) || self.used() > self.budget()
    }

    /// Fuel not yet used (what a run starting now may use).
    pub(crate) fn remaining(&self) -> u64 {
        self.budget().saturating_sub(self.used())
    }

    pub(crate) fn spend(&self, fuel: u64) {
        self.0.used.fetch_add(fuel, Ordering::SeqCst);
    }

    /// A run ran out of fuel.
    pub(crate) fn ran_out(&self) {
        self.0.over.store(true, Ordering::SeqCst);
    }
}

/// Budgets compare by size (two calls with the same budget have the same limits).
impl PartialEq for CpuBudget {
    fn eq(&self, other: &CpuBudget) -> bool {
        self.budget() == other.budget()
    }
}

impl Eq for CpuBudget {}

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
