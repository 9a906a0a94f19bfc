//! A work item's lease, held with heartbeats while the item is served: the Anthropic SDK
//! 2.17.0's `Lease` (`lib/environments/_lease.py`).
//!
//! - Claim first: the first heartbeat (`expected_last_heartbeat=NO_HEARTBEAT`) goes out at
//!   once and serving starts only once it extended the lease.
//! - Cadence: the next heartbeat is due `min(ttl/2, 30 s)` after the last successful one was
//!   sent; each echoes the server's `last_heartbeat`; one attempt is bounded by 30 s.
//! - A failed heartbeat is retried with jittered backoff (`[d/2, d)`, `d = min(2^n, 30)` s)
//!   until the lease expires (the last success plus its TTL; 300 s before the claim).
//! - The lease is **lost** (another worker may hold the item: no more results are posted and
//!   the item is not stopped) on a 412, on any other client error that retrying will not
//!   change, when no heartbeat succeeds before it expires, or when the final stop is refused
//!   with 401. It **ends** (the server asks the worker to let go; the item is stopped) when a
//!   heartbeat answers `lease_extended: false`.
//! - When serving ends, a heartbeat in flight gets 5 s more; then the item is force-stopped
//!   (409 counts as stopped) unless the lease was lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::api::{Api, Failure, Req, backoff, jitter};

const NO_HEARTBEAT: &str = "NO_HEARTBEAT";
/// The most time between heartbeats.
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);
/// How long a heartbeat in flight may delay the stop once serving ended.
const HEARTBEAT_GRACE: Duration = Duration::from_secs(5);
/// The API's default lease TTL: how long the claim may take.
const CLAIM_TIMEOUT: Duration = Duration::from_secs(300);
/// One heartbeat or stop attempt.
const WORK_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The stop: attempts, each bounded, and all of them together.
const STOP_ATTEMPTS: u32 = 6;
const STOP_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// What the serving side sees of the lease.
#[derive(Clone)]
pub struct LeaseState {
    /// Cancelled when the lease ends (lost or shut down): serving must stop.
    pub ended: CancellationToken,
    lost: Arc<AtomicBool>,
    /// The lease's TTL in milliseconds (how long a stopping runner may retry a post).
    ttl_ms: Arc<AtomicU64>,
}

impl LeaseState {
    fn new() -> LeaseState {
        LeaseState {
            ended: CancellationToken::new(),
            lost: Arc::default(),
            ttl_ms: Arc::new(AtomicU64::new(CLAIM_TIMEOUT.as_millis() as u64)),
        }
    }

    /// Whether another worker may hold the item (results must not be posted any more).
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms.load(Ordering::SeqCst))
    }

    fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.ended.cancel();
    }
}

/// A work item's lease.
pub struct Lease {
    api: Arc<Api>,
    token: String,
    /// `/v1/environments/{env}/work/{id}`.
    work_path: String,
    work_id: String,
}

/// How the claim went.
enum Claim {
    Claimed,
    /// The lease ended before it was claimed (412, `lease_extended: false`): nothing to
    /// serve; `stop` says whether the item is still to be stopped.
    Ended {
        stop: bool,
    },
}

impl Lease {
    pub fn new(api: Arc<Api>, token: String, work_path: String, work_id: String) -> Lease {
        Lease {
            api,
            token,
            work_path,
            work_id,
        }
    }

    /// Runs `serve` once the item is claimed, with the lease state it must watch (serving
    /// stops when `ended` is cancelled), then stops the item unless the lease was lost. An
    /// error of `serve` after the lease was lost is logged, not returned.
    pub async fn hold_during<F, Fut, E>(&self, serve: F) -> Result<(), LeaseError<E>>
    where
        F: FnOnce(LeaseState) -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let state = LeaseState::new();
        let done = CancellationToken::new();
        let (claim_tx, claim_rx) = tokio::sync::oneshot::channel::<Result<Claim, Failure>>();
        let beats = {
            let (api, token, path, work, state, done) = (
                self.api.clone(),
                self.token.clone(),
                format!("{}/heartbeat", self.work_path),
                self.work_id.clone(),
                state.clone(),
                done.clone(),
            );
            tokio::spawn(async move {
                heartbeats(&api, &token, &path, &work, &state, &done, claim_tx).await
            })
        };
        let claim = claim_rx.await.unwrap_or(Ok(Claim::Ended { stop: false }));
        let served = match claim {
            Ok(Claim::Claimed) => Some(serve(state.clone()).await),
            Ok(Claim::Ended { stop }) => {
                if !stop {
                    state.lose();
                }
                None
            }
            Err(e) => {
                // The claiming heartbeat was refused: raised, the item left alone.
                done.cancel();
                let _ = beats.await;
                return Err(LeaseError::Claim(e));
            }
        };
        // A heartbeat in flight may still land (its answer counts); then the loop ends.
        done.cancel();
        let mut beats = beats;
        if tokio::time::timeout(HEARTBEAT_GRACE, &mut beats)
            .await
            .is_err()
        {
            beats.abort();
        }
        self.stop_if_held(&state).await;
        match served {
            Some(Err(e)) if state.lost() => {
                tracing::error!(work = %self.work_id, error = %e, "work item failed after its lease was lost");
                Ok(())
            }
            Some(Err(e)) => Err(LeaseError::Serve(e)),
            _ => Ok(()),
        }
    }

    async fn stop_if_held(&self, state: &LeaseState) {
        if state.lost() {
            tracing::info!(work = %self.work_id, "lease lost; not stopping the work item");
            return;
        }
        let body = json!({ "force": true });
        let path = format!("{}/stop", self.work_path);
        let deadline = Instant::now() + STOP_TIMEOUT;
        for attempt in 0..STOP_ATTEMPTS {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let req = Req {
                body: Some(&body),
                ..Req::default()
            };
            let r = self
                .api
                .attempt(
                    Method::POST,
                    &path,
                    &self.token,
                    req,
                    STOP_ATTEMPT_TIMEOUT.min(left),
                )
                .await;
            match r {
                Ok(_) => return,
                Err(e) if e.status() == Some(409) => return,
                Err(e) if e.status() == Some(401) => {
                    tracing::error!(work = %self.work_id, error = %e, "stop failed");
                    state.lose();
                    return;
                }
                Err(e) if e.is_fatal() || attempt + 1 == STOP_ATTEMPTS => {
                    tracing::error!(work = %self.work_id, error = %e, "stop failed");
                    return;
                }
                Err(e) => {
                    tracing::warn!(work = %self.work_id, error = %e, "stop failed; retrying");
                    let d = backoff(attempt, Duration::from_secs(8)) / 2;
                    tokio::time::sleep(d.min(deadline.saturating_duration_since(Instant::now())))
                        .await;
                }
            }
        }
    }
}

/// Why holding a lease failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError<E: std::fmt::Display> {
    /// The first heartbeat was refused for good: the item was never claimed.
    #[error("claiming the work item failed: {0}")]
    Claim(Failure),
    #[error("{0}")]
    Serve(E),
}

/// The heartbeat loop: claims, then extends the lease until it ends or `done`.
async fn heartbeats(
    api: &Api,
    token: &str,
    path: &str,
    work: &str,
    state: &LeaseState,
    done: &CancellationToken,
    claim: tokio::sync::oneshot::Sender<Result<Claim, Failure>>,
) {
    let mut claim = Some(claim);
    let mut last = NO_HEARTBEAT.to_string();
    let mut due = Instant::now();
    let mut expires = Instant::now() + CLAIM_TIMEOUT;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {},
            _ = done.cancelled() => return,
        }
        match extend(api, token, path, work, &mut last, expires, done).await {
            Beat::Extended { sent, ttl } => {
                due = sent + (ttl / 2).min(HEARTBEAT_INTERVAL);
                expires = sent + ttl;
                state.ttl_ms.store(ttl.as_millis() as u64, Ordering::SeqCst);
                if let Some(c) = claim.take() {
                    let _ = c.send(Ok(Claim::Claimed));
                }
            }
            Beat::Shutdown => {
                state.ended.cancel();
                if let Some(c) = claim.take() {
                    let _ = c.send(Ok(Claim::Ended { stop: true }));
                }
                return;
            }
            Beat::Lost(error) => {
                state.lose();
                if let Some(c) = claim.take() {
                    let _ = c.send(match error {
                        Some(e) => Err(e),
                        None => Ok(Claim::Ended { stop: false }),
                    });
                }
                return;
            }
            Beat::Done => return,
        }
    }
}

enum Beat {
    Extended {
        sent: Instant,
        ttl: Duration,
    },
    Shutdown,
    /// With the error when it was one retrying will not change (raised before the claim).
    Lost(Option<Failure>),
    Done,
}

/// One extension: retried until `expires`.
async fn extend(
    api: &Api,
    token: &str,
    path: &str,
    work: &str,
    last: &mut String,
    expires: Instant,
    done: &CancellationToken,
) -> Beat {
    let mut attempt = 0;
    loop {
        let sent = Instant::now();
        let query = [("expected_last_heartbeat", last.clone())];
        let req = Req {
            query: &query,
            ..Req::default()
        };
        let left = expires.saturating_duration_since(sent);
        let r = api
            .attempt(
                Method::POST,
                path,
                token,
                req,
                WORK_REQUEST_TIMEOUT.min(left.max(Duration::from_millis(1))),
            )
            .await;
        match r {
            Ok(v) => return record(&v, sent, last, work),
            Err(Failure::Status(e))
                if e.status == 412
                    && e.error_code().as_deref() == Some("heartbeat_precondition_failed") =>
            {
                tracing::error!(work, error = %e.message(), "lease lost: heartbeat precondition failed");
                return Beat::Lost(None);
            }
            Err(e) if e.is_fatal() => {
                tracing::error!(work, error = %e, "permanent heartbeat failure");
                return Beat::Lost(Some(e));
            }
            Err(e) => tracing::warn!(work, error = %e, "transient heartbeat failure"),
        }
        let d = backoff(attempt, HEARTBEAT_INTERVAL);
        attempt += 1;
        let wait = jitter(d / 2, d);
        if Instant::now() + wait >= expires {
            tokio::select! {
                _ = tokio::time::sleep_until(expires) => {},
                _ = done.cancelled() => return Beat::Done,
            }
            tracing::error!(work, "lease assumed lost: no heartbeat succeeded in time");
            return Beat::Lost(None);
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {},
            _ = done.cancelled() => return Beat::Done,
        }
    }
}

fn record(v: &Value, sent: Instant, last: &mut String, work: &str) -> Beat {
    if v["lease_extended"] != true {
        tracing::info!(work, state = %v["state"], "heartbeat signals shutdown");
        return Beat::Shutdown;
    }
    let ttl = v["ttl_seconds"]
        .as_f64()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(CLAIM_TIMEOUT);
    *last = v["last_heartbeat"].as_str().unwrap_or("").to_string();
    Beat::Extended { sent, ttl }
}
