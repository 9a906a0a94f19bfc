//! `burrow serve` and `burrow mcp`: the HTTP API, MCP over Streamable HTTP at `/mcp` and MCP
//! over stdio, all over one [`Core`]: the sandbox plus what a long-lived server adds to it
//! (per-session serialisation, a concurrency limit, metrics, a wake-up for event streams).
//! Tool calls are blocking (SQLite, wasmtime) and run on tokio's blocking pool.

pub mod console;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod types;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{Notify, Semaphore};

use burrow_host::session::{Family, Result, Sandbox, SessionError};
use burrow_host::tools::ToolOutput;

/// Settings of `burrow serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    /// Bearer token every request but `/health` must carry. Required unless `listen` is
    /// loopback.
    pub token: Option<String>,
    /// Largest request body, in bytes (413 beyond).
    pub max_body: usize,
    /// Tool calls running at once across sessions (calls on one session are serialised).
    pub concurrency: usize,
    /// The session MCP clients of `/mcp` use when they do not name one with `?session=`.
    pub mcp_session: String,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            token: None,
            max_body: 64 << 20,
            concurrency: std::thread::available_parallelism()
                .map(|n| n.get() * 2)
                .unwrap_or(4),
            mcp_session: "mcp".into(),
        }
    }
}

/// Errors starting a server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without a token: set --token or BURROW_TOKEN (only loopback may go without)"
    )]
    TokenRequired(SocketAddr),
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The shared state of a server.
pub struct Core {
    pub sandbox: Arc<Sandbox>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    permits: Semaphore,
    pub metrics: metrics::Metrics,
    /// Woken whenever this process appends events (event streams then look for new ones),
    /// and when another process does, where the store can tell (PostgreSQL).
    pub changed: Notify,
    /// The store wakes `changed` for other processes' events too, so streams need not poll
    /// often.
    pub watched: std::sync::atomic::AtomicBool,
    /// Tool calls on one session run at once, each committing onto the head the others left
    /// (`burrow serve --concurrent-calls`, the worker's session threads); otherwise they
    /// queue per session.
    pub concurrent_calls: std::sync::atomic::AtomicBool,
}

impl Core {
    pub fn new(sandbox: Sandbox, concurrency: usize) -> Arc<Core> {
        let core = Arc::new(Core {
            sandbox: Arc::new(sandbox),
            locks: Mutex::new(HashMap::new()),
            permits: Semaphore::new(concurrency.max(1)),
            metrics: metrics::Metrics::default(),
            changed: Notify::new(),
            watched: std::sync::atomic::AtomicBool::new(false),
            concurrent_calls: std::sync::atomic::AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&core);
        let wake = Arc::new(move || {
            if let Some(c) = weak.upgrade() {
                c.changed.notify_waiters();
            }
        });
        match core.sandbox.store().watch(wake) {
            Ok(w) => core.watched.store(w, std::sync::atomic::Ordering::Relaxed),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the store for other processes' events; streams poll")
            }
        }
        core
    }

    fn lock_of(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(id.to_string()).or_default().clone()
    }

    /// Runs blocking sandbox work on the blocking pool.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Sandbox) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let sb = self.sandbox.clone();
        tokio::task::spawn_blocking(move || f(&sb))
            .await
            .map_err(|e| SessionError::Invalid(format!("worker task failed: {e}")))?
    }

    /// Runs work that changes session `id` after the calls before it on that session, within
    /// the concurrency limit, then wakes the event streams.
    pub async fn serialised<T: Send + 'static>(
        &self,
        id: &str,
        f: impl FnOnce(&Sandbox) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let lock = self.lock_of(id);
        let _turn = lock.lock().await;
        self.concurrently(f).await
    }

    /// Runs work on a session beside its other calls (within the concurrency limit): the
    /// store merges its commit onto whatever the others committed meanwhile.
    pub async fn concurrently<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Sandbox) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| SessionError::Invalid("server is shutting down".into()))?;
        let r = self.blocking(f).await;
        self.changed.notify_waiters();
        r
    }

    /// One tool call, counted in the metrics.
    pub async fn call(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: Value,
    ) -> Result<ToolOutput> {
        self.call_in(id, family, tool, input, None).await
    }

    /// [`Core::call`] in the session's named shell `shell` ([`Sandbox::call_in`]).
    pub async fn call_in(
        &self,
        id: &str,
        family: Family,
        tool: &str,
        input: Value,
        shell: Option<String>,
    ) -> Result<ToolOutput> {
        let started = Instant::now();
        let (sid, tool_name) = (id.to_string(), tool.to_string());
        let run =
            move |sb: &Sandbox| sb.call_in(&sid, family, &tool_name, &input, shell.as_deref());
        let r = if self
            .concurrent_calls
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.concurrently(run).await
        } else {
            self.serialised(id, run).await
        };
        self.metrics
            .record_call(started.elapsed(), r.as_ref().map_or(true, |o| o.is_error));
        r
    }
}

/// Whether `addr` may be served without a token.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Serves the HTTP API and MCP on `listener` until `shutdown` resolves; in-flight calls
/// finish (each commits or rolls back as a whole) before it returns.
pub async fn serve(
    core: Arc<Core>,
    config: ServeConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::result::Result<(), ServeError> {
    let addr = listener.local_addr()?;
    if config.token.is_none() && !is_loopback(&addr) {
        return Err(ServeError::TokenRequired(addr));
    }
    let ct = tokio_util::sync::CancellationToken::new();
    let app = http::router(core, &config, ct.clone());
    tracing::info!(%addr, "serving the HTTP API and MCP at /mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

/// Resolves when the process gets SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight calls");
}
