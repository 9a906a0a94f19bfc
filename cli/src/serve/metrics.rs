//! Counters of a server, rendered in the Prometheus text format at `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

#[derive(Default)]
pub struct Metrics {
    calls: AtomicU64,
    errors: AtomicU64,
    http_requests: AtomicU64,
    /// Cumulative counts per bucket (the last one is +Inf).
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_us: AtomicU64,
}

impl Metrics {
    pub fn record_call(&self, took: Duration, is_error: bool) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if is_error {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let secs = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn record_request(&self) {
        self.http_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus exposition, with the gauges measured by the caller.
    pub fn render(&self, sessions: usize, store_bytes: u64) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, v: u64| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
            ));
        };
        counter(
            "burrow_tool_calls_total",
            "Tool calls run.",
            get(&self.calls),
        );
        counter(
            "burrow_tool_call_errors_total",
            "Tool calls whose result is an error.",
            get(&self.errors),
        );
        counter(
            "burrow_http_requests_total",
            "HTTP requests served.",
            get(&self.http_requests),
        );
        out.push_str("# HELP burrow_tool_call_seconds Tool call latency.\n");
        out.push_str("# TYPE burrow_tool_call_seconds histogram\n");
        let mut cumulative = 0;
        for (i, b) in BUCKETS.iter().enumerate() {
            cumulative += get(&self.buckets[i]);
            out.push_str(&format!(
                "burrow_tool_call_seconds_bucket{{le=\"{b}\"}} {cumulative}\n"
            ));
        }
        cumulative += get(&self.buckets[BUCKETS.len()]);
        out.push_str(&format!(
            "burrow_tool_call_seconds_bucket{{le=\"+Inf\"}} {cumulative}\n"
        ));
        out.push_str(&format!(
            "burrow_tool_call_seconds_sum {}\nburrow_tool_call_seconds_count {cumulative}\n",
            get(&self.sum_us) as f64 / 1e6
        ));
        out.push_str(
            "# HELP burrow_net_requests_total Guests' outgoing HTTP requests, by host and verdict.\n# TYPE burrow_net_requests_total counter\n",
        );
        for (host, allowed, n) in burrow_host::net::egress::request_counts() {
            let host: String = host
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'))
                .collect();
            let verdict = if allowed { "allowed" } else { "denied" };
            out.push_str(&format!(
                "burrow_net_requests_total{{host=\"{host}\",verdict=\"{verdict}\"}} {n}\n"
            ));
        }
        out.push_str(&format!(
            "# HELP burrow_sessions Sessions in the store.\n# TYPE burrow_sessions gauge\nburrow_sessions {sessions}\n"
        ));
        out.push_str(&format!(
            "# HELP burrow_store_bytes Size of the store on disk.\n# TYPE burrow_store_bytes gauge\nburrow_store_bytes {store_bytes}\n"
        ));
        out
    }
}
