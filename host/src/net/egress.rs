//! The egress layer: every `wasi:http/outgoing-handler` request of a guest goes through
//! [`Egress::send_request`] (wasmtime-wasi-http's `WasiHttpHooks`), which checks it against the
//! session's [`NetPolicy`], resolves the host itself and checks every address it resolved to
//! (so DNS cannot route a hostname rule to a private address), connects, speaks TLS with
//! rustls (the webpki roots plus `BURROW_CA_FILE`), and records one [`NetRecord`] per request
//! for the session's audit log. A deterministic call's replies are recorded on its tape, and a
//! replayed call's answered from there (`tape.rs`). Raw `wasi:sockets` stay denied.

use std::future::Future as _;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::policy::{Dest, NetPolicy, Verdict};
use super::tape::{self, error_name, record_reply};
use crate::determinism::{Determinism, Reply, request_key};

/// Limits of one call's network use. Hitting one fails that request (the guest's `curl` says
/// which limit), never the whole call. Defaults in [`NetLimits::default`]; an operator sets
/// them with `BURROW_NET_*` environment variables ([`NetLimits::from_env`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetLimits {
    /// Requests one call may make. Default 1000 (`BURROW_NET_MAX_REQUESTS`).
    pub requests: u32,
    /// Response body bytes one call may receive, all requests together. Default 4 GiB
    /// (`BURROW_NET_MAX_BYTES_IN`).
    pub bytes_in: u64,
    /// Request body bytes one call may send. Default 1 GiB (`BURROW_NET_MAX_BYTES_OUT`).
    pub bytes_out: u64,
    /// Requests in flight at once (a response counts until its body is read or dropped).
    /// Default 32 (`BURROW_NET_MAX_CONCURRENT`).
    pub concurrent: u32,
    /// Connecting (TCP and TLS). Default 30 s (`BURROW_NET_CONNECT_TIMEOUT`, in seconds).
    pub connect_timeout: Duration,
    /// From the request sent to the response's head. Default 60 s
    /// (`BURROW_NET_FIRST_BYTE_TIMEOUT`).
    pub first_byte_timeout: Duration,
    /// Between two pieces of a response body. Default 60 s (`BURROW_NET_IDLE_TIMEOUT`).
    pub idle_timeout: Duration,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            requests: 1000,
            bytes_in: 4 << 30,
            bytes_out: 1 << 30,
            concurrent: 32,
            connect_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl NetLimits {
    /// The defaults, with any `BURROW_NET_*` variable of this process applied (read once).
    /// A variable that does not parse is an error naming it.
    pub fn from_env() -> Result<NetLimits, String> {
        static LIMITS: std::sync::OnceLock<Result<NetLimits, String>> = std::sync::OnceLock::new();
        LIMITS
            .get_or_init(|| NetLimits::from_vars(|k| std::env::var(k).ok()))
            .clone()
    }

    /// The defaults with the variables `get` returns applied.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<NetLimits, String> {
        let mut l = NetLimits::default();
        let num = |k: &str| -> Result<Option<u64>, String> {
            get(k)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("{k}={v}: not a whole number"))
                })
                .transpose()
        };
        if let Some(n) = num("BURROW_NET_MAX_REQUESTS")? {
            l.requests = n.min(u32::MAX as u64) as u32;
        }
        if let Some(n) = num("BURROW_NET_MAX_BYTES_IN")? {
            l.bytes_in = n;
        }
        if let Some(n) = num("BURROW_NET_MAX_BYTES_OUT")? {
            l.bytes_out = n;
        }
        if let Some(n) = num("BURROW_NET_MAX_CONCURRENT")? {
            l.concurrent = n.clamp(1, u32::MAX as u64) as u32;
        }
        if let Some(n) = num("BURROW_NET_CONNECT_TIMEOUT")? {
            l.connect_timeout = Duration::from_secs(n);
        }
        if let Some(n) = num("BURROW_NET_FIRST_BYTE_TIMEOUT")? {
            l.first_byte_timeout = Duration::from_secs(n);
        }
        if let Some(n) = num("BURROW_NET_IDLE_TIMEOUT")? {
            l.idle_timeout = Duration::from_secs(n);
        }
        Ok(l)
    }
}

/// One request, as the audit log keeps it: never a query value, a header or a secret.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct NetRecord {
    pub method: String,
    pub scheme: String,
    pub host: String,
    pub port: u16,
    /// The path, without the query string.
    pub path: String,
    /// The response status, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub duration_us: u64,
    /// The rule that allowed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The secrets put into the request (names, never values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Why it was denied or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the policy let it through (it may still have failed: see `error`).
    pub allowed: bool,
}

/// A call's egress: its policy, limits, what it has used of them, and its audit records.
#[derive(Clone)]
pub struct Egress {
    policy: Arc<NetPolicy>,
    limits: NetLimits,
    operator: Arc<super::Operator>,
    usage: Arc<Usage>,
    records: Arc<Mutex<Vec<NetRecord>>>,
    /// A deterministic call: its replies are recorded, or answered from its tape.
    det: Option<Determinism>,
}

/// What one call has used of its [`NetLimits`].
#[derive(Default)]
struct Usage {
    requests: AtomicU32,
    in_flight: AtomicU32,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

/// A request in flight: counted against [`NetLimits::concurrent`] until dropped.
struct InFlight(Arc<Usage>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Egress {
    pub fn new(
        policy: Arc<NetPolicy>,
        limits: NetLimits,
        operator: Arc<super::Operator>,
    ) -> Egress {
        Egress {
            policy,
            limits,
            operator,
            usage: Default::default(),
            records: Arc::new(Mutex::new(Vec::new())),
            det: None,
        }
    }

    /// The egress of a deterministic call (`det`): each reply is recorded on the call's tape
    /// or, when the call is a replay, answered from it without reaching the network.
    pub fn deterministic(mut self, det: Option<Determinism>) -> Egress {
        self.det = det;
        self
    }

    /// A GET made from the host through this egress (policy, limits, audit: everything a
    /// guest's request gets): its status and body. For benchmarks and embedders' checks.
    pub async fn get(&self, url: &str) -> Result<(u16, Bytes), String> {
        let body = http_body_util::Empty::<Bytes>::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = http::Request::get(url)
            .body(body)
            .map_err(|e| e.to_string())?;
        let (response, io) = self
            .clone()
            .send(request, None)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Box::into_pin(io).await.map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// A request of a guest that cannot speak `wasi:http` (CPython's `http.client`, through
    /// `/dev/burrow`), made as a guest's `wasi:http` request is: the response's head and its
    /// whole body, or why not (the reason curl would print) and what kind of failure it was
    /// (`denied`, `dns`, `refused`, `timeout`, `tls` or `http`).
    pub(crate) async fn fetch(
        &self,
        request: http::Request<Bytes>,
        timeout: Option<Duration>,
    ) -> Result<(http::response::Parts, Bytes), (String, &'static str)> {
        let request = request.map(|b| {
            http_body_util::Full::new(b)
                .map_err(|never| match never {})
                .boxed_unsync()
        });
        let options = timeout.map(|t| RequestOptions {
            connect_timeout: Some(t),
            first_byte_timeout: Some(t),
            between_bytes_timeout: Some(t),
        });
        let records = self.records.clone();
        let before = records.lock().unwrap_or_else(|p| p.into_inner()).len();
        // Why the request failed, from its record (written before `send` returns an error).
        let why = |e: &dyn std::fmt::Debug| -> (String, &'static str) {
            let recs = records.lock().unwrap_or_else(|p| p.into_inner());
            let Some(r) = recs.get(before..).and_then(|r| r.last()) else {
                return (format!("{e:?}"), "http");
            };
            let text = r.error.clone().unwrap_or_else(|| format!("{e:?}"));
            let kind = if !r.allowed {
                "denied"
            } else if text.starts_with("could not resolve") {
                "dns"
            } else if text.contains("timed out") || text.contains("no response in time") {
                "timeout"
            } else if text.starts_with("TLS") {
                "tls"
            } else if text.starts_with("failed to connect") {
                "refused"
            } else {
                "http"
            };
            (text, kind)
        };
        let (response, io) = match self.clone().send(request, options).await {
            Ok(x) => x,
            Err(e) => return Err(why(&e)),
        };
        let (parts, body) = response.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return Err((format!("reading the response: {e:?}"), "http")),
        };
        if let Err(e) = Box::into_pin(io).await {
            return Err((format!("the connection failed: {e:?}"), "http"));
        }
        Ok((parts, body))
    }

    /// The records of the requests made so far (shared with the requests in flight).
    pub fn records(&self) -> Arc<Mutex<Vec<NetRecord>>> {
        self.records.clone()
    }
}

fn record(records: &Mutex<Vec<NetRecord>>, r: NetRecord) {
    count_request(&r.host, r.allowed);
    records.lock().unwrap_or_else(|p| p.into_inner()).push(r);
}

/// Distinct hosts the process-wide counters keep apart; the rest count as `other` (host names
/// come from guests, so the set must not grow without bound).
const COUNTED_HOSTS: usize = 1000;

type Counts = std::collections::BTreeMap<(String, bool), u64>;

fn counts() -> &'static Mutex<Counts> {
    static COUNTS: std::sync::OnceLock<Mutex<Counts>> = std::sync::OnceLock::new();
    COUNTS.get_or_init(|| Mutex::new(Counts::new()))
}

fn count_request(host: &str, allowed: bool) {
    let mut c = counts().lock().unwrap_or_else(|p| p.into_inner());
    let known = c.contains_key(&(host.to_string(), allowed)) || c.len() < COUNTED_HOSTS;
    let key = if known {
        host.to_string()
    } else {
        "other".to_string()
    };
    *c.entry((key, allowed)).or_default() += 1;
}

/// Requests this process's guests made, by (host, allowed), for `/metrics`.
pub fn request_counts() -> Vec<(String, bool, u64)> {
    counts()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|((h, a), n)| (h.clone(), *a, *n))
        .collect()
}

/// A denial, as the guest sees it: wasi:http's `internal-error` carrying the reason (the
/// guest's curl prints it), since `http-request-denied` has no room for one.
fn denied(why: String) -> Error {
    Error::InternalError(Some(format!("burrow: {why}")))
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for Egress {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        drop(fut);
        let this = self.clone();
        Box::new(async move { this.send(request, options).await })
    }
}

impl Egress {
    async fn send(
        self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> Result<
        (
            http::Response<WasiBody>,
            Box<dyn Future<Output = Result<(), Error>> + Send>,
        ),
        Error,
    > {
        let started = Instant::now();
        let uri = request.uri().clone();
        let (scheme, host, port) = target(&uri)?;
        let method = request.method().as_str().to_string();
        let mut rec = NetRecord {
            method: method.clone(),
            scheme: scheme.clone(),
            host: host.clone(),
            port,
            path: uri.path().to_string(),
            bytes_out: request.body().size_hint().exact().unwrap_or(0),
            ..Default::default()
        };
        // A deterministic call's tape and the request's name on it (the URL as the guest
        // wrote it); other calls compute nothing here.
        let tape = self
            .det
            .as_ref()
            .map(|det| (det, request_key(&method, &uri.to_string())));
        if let Some((det, key)) = tape.as_ref().filter(|(d, _)| d.replaying()) {
            return self.answer_from_tape(det, key, request, rec, started);
        }
        let fail = |mut rec: NetRecord, e: Error, why: String| {
            rec.duration_us = started.elapsed().as_micros() as u64;
            if let Some((det, key)) = &tape {
                det.push_reply(Reply {
                    request: key.clone(),
                    error: Some((error_name(&e), why.clone())),
                    ..Default::default()
                });
            }
            rec.error = Some(why);
            record(&self.records, rec);
            Err(e)
        };
        if self.usage.requests.fetch_add(1, Ordering::Relaxed) >= self.limits.requests {
            let why = format!(
                "request limit: this call may make {} requests",
                self.limits.requests
            );
            return fail(rec, denied(why.clone()), why);
        }
        let in_flight = InFlight(self.usage.clone());
        if self.usage.in_flight.fetch_add(1, Ordering::Relaxed) >= self.limits.concurrent {
            let why = format!(
                "concurrency limit: this call may have {} requests in flight",
                self.limits.concurrent
            );
            return fail(rec, denied(why.clone()), why);
        }
        let d = Dest {
            method: &method,
            scheme: &scheme,
            host: &host,
            port,
        };
        let rule = match self.policy.check(&d) {
            Verdict::Allow(r) => r,
            Verdict::Deny(why) => return fail(rec, denied(why.clone()), why),
        };
        rec.rule = Some(rule);
        let swaps =
            match self.inject_secrets(&mut request, &d, |n: &str| self.operator.secret_value(n)) {
                Ok(s) => s,
                Err(why) => return fail(rec, denied(why.clone()), why),
            };
        rec.secrets = swaps.iter().map(|s| s.name.clone()).collect();
        let sent = Arc::new(AtomicU64::new(0));
        let (usage, cap, sent_here) = (self.usage.clone(), self.limits.bytes_out, sent.clone());
        let request = request.map(move |b| {
            Limited {
                inner: b,
                total: usage,
                here: sent_here,
                cap,
            }
            .boxed_unsync()
        });
        let mut request = request;
        // Allowed by the policy from here on unless an address is refused: a request that
        // then fails (no such host, refused, TLS) is recorded as allowed, with its error.
        rec.allowed = true;
        let uri = request.uri().clone();
        // Resolve here, check every address, and connect only to allowed ones.
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => match tokio::net::lookup_host((host.as_str(), port)).await {
                Ok(a) => a.collect(),
                Err(e) => {
                    let why = format!("could not resolve host: {host} ({e})");
                    return fail(
                        rec,
                        Error::DnsError {
                            rcode: None,
                            info_code: None,
                        },
                        why,
                    );
                }
            },
        };
        let mut allowed = Vec::new();
        let mut first_denial = None;
        for a in &addrs {
            match self.policy.check_address(&d, a.ip()) {
                Verdict::Allow(_) => allowed.push(*a),
                Verdict::Deny(why) => {
                    first_denial.get_or_insert(why);
                }
            }
        }
        if allowed.is_empty() {
            rec.allowed = first_denial.is_none();
            let why = first_denial.unwrap_or_else(|| format!("could not resolve host: {host}"));
            return fail(rec, denied(why.clone()), why);
        }
        let connect_timeout = options
            .and_then(|o| o.connect_timeout)
            .map_or(self.limits.connect_timeout, |t| {
                t.min(self.limits.connect_timeout)
            });
        let first_byte = options
            .and_then(|o| o.first_byte_timeout)
            .map_or(self.limits.first_byte_timeout, |t| {
                t.min(self.limits.first_byte_timeout)
            });
        // The operator's proxy, if any, carries the connection; the checks above stand.
        let proxy = match super::operator::proxy_for(&scheme, &host, port) {
            Ok(p) => p,
            Err(why) => return fail(rec, Error::ConfigurationError, why),
        };
        let targets = match &proxy {
            None => allowed,
            Some(p) => match tokio::net::lookup_host((p.host.as_str(), p.port)).await {
                Ok(a) => a.collect(),
                Err(e) => {
                    let why = format!("could not resolve proxy {}: {e}", p.host);
                    return fail(rec, Error::ConnectionRefused, why);
                }
            },
        };
        let mut stream = None;
        let mut last_err = None;
        for a in &targets {
            match tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(a)).await {
                Ok(Ok(s)) => {
                    stream = Some(s);
                    break;
                }
                Ok(Err(e)) => last_err = Some(e.to_string()),
                Err(_) => last_err = Some("connection timed out".into()),
            }
        }
        let Some(mut tcp) = stream else {
            let via = proxy
                .as_ref()
                .map(|p| format!(" (through proxy {}:{})", p.host, p.port))
                .unwrap_or_default();
            let why = format!(
                "failed to connect to {host} port {port}{via}: {}",
                last_err.unwrap_or_default()
            );
            let e = if why.ends_with("timed out") {
                Error::ConnectionTimeout
            } else {
                Error::ConnectionRefused
            };
            return fail(rec, e, why);
        };
        let proxy_auth = proxy.as_ref().and_then(|p| p.auth.as_ref()).map(|a| {
            use base64::Engine;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(a)
            )
        });
        if let Some(p) = &proxy {
            if scheme == "https" {
                // A tunnel through the proxy; TLS runs end to end inside it.
                let connect = tunnel(&mut tcp, &host, port, proxy_auth.as_deref());
                match tokio::time::timeout(connect_timeout, connect).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        let why = format!("proxy {}:{} refused the tunnel: {e}", p.host, p.port);
                        return fail(rec, Error::ConnectionRefused, why);
                    }
                    Err(_) => {
                        return fail(rec, Error::ConnectionTimeout, "proxy timed out".into());
                    }
                }
            } else if let Some(a) = &proxy_auth
                && let Ok(v) = http::HeaderValue::from_str(a)
            {
                request.headers_mut().insert("proxy-authorization", v);
            }
        }
        // The request line carries only the path and query, except to a plain-HTTP proxy,
        // which takes the absolute form.
        let pq = if proxy.is_some() && scheme == "http" {
            uri.to_string()
        } else {
            uri.path_and_query()
                .map_or("/".to_string(), |p| p.as_str().to_string())
        };
        *request.uri_mut() = match pq.parse() {
            Ok(u) => u,
            Err(_) => return fail(rec, Error::HttpRequestUriInvalid, "bad path".into()),
        };
        let handshake = if scheme == "https" {
            let name = match rustls::pki_types::ServerName::try_from(host.clone()) {
                Ok(n) => n,
                Err(e) => {
                    return fail(
                        rec,
                        Error::HttpRequestUriInvalid,
                        format!("bad TLS name {host}: {e}"),
                    );
                }
            };
            let config = self.operator.tls();
            let tls = tokio_rustls::TlsConnector::from(config);
            let s = match tokio::time::timeout(connect_timeout, tls.connect(name, tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    let why = format!("TLS with {host}: {e}");
                    return fail(rec, Error::TlsCertificateError, why);
                }
                Err(_) => return fail(rec, Error::ConnectionTimeout, "TLS timed out".into()),
            };
            hyper::client::conn::http1::handshake::<_, WasiBody>(TokioIo::new(
                Box::new(s) as Box<dyn Stream>
            ))
            .await
        } else {
            hyper::client::conn::http1::handshake::<_, WasiBody>(TokioIo::new(
                Box::new(tcp) as Box<dyn Stream>
            ))
            .await
        };
        let (mut sender, conn) = match handshake {
            Ok(x) => x,
            Err(e) => return fail(rec, Error::from(e), "HTTP handshake failed".into()),
        };
        let conn_task = tokio::spawn(conn);
        let response = match tokio::time::timeout(first_byte, sender.send_request(request)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                if self.usage.bytes_out.load(Ordering::Relaxed) > self.limits.bytes_out {
                    let why = format!(
                        "upload limit: this call may send {} bytes",
                        self.limits.bytes_out
                    );
                    return fail(rec, denied(why.clone()), why);
                }
                let why = format!("{host}: {e}");
                return fail(rec, Error::from(e), why);
            }
            Err(_) => {
                return fail(
                    rec,
                    Error::ConnectionReadTimeout,
                    "no response in time".into(),
                );
            }
        };
        rec.status = Some(response.status().as_u16());
        let mut response = response;
        scrub_headers(response.headers_mut(), &swaps);
        // The record is written when the body ends (or is dropped), with its size.
        let counted = Arc::new(AtomicU64::new(0));
        let body_done = Finish {
            rec: Some(rec),
            records: self.records.clone(),
            counted: counted.clone(),
            sent,
            started,
            _in_flight: in_flight,
        };
        let idle = options
            .and_then(|o| o.between_bytes_timeout)
            .map_or(self.limits.idle_timeout, |t| {
                t.min(self.limits.idle_timeout)
            });
        let (usage, cap) = (self.usage.clone(), self.limits.bytes_in);
        let response = response.map(move |incoming| {
            Counted {
                inner: incoming,
                counted,
                usage,
                cap,
                idle,
                timer: Box::pin(tokio::time::sleep(idle)),
                _finish: body_done,
                swaps,
                pending: Vec::new(),
                ended: false,
            }
            .boxed_unsync()
        });
        // A deterministic call gets the whole response at once, as its tape keeps it.
        let response = match tape {
            Some((det, key)) => record_reply(det, key, response).await?,
            None => response,
        };
        let io = async move {
            match conn_task.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(Error::from(e)),
                Err(_) => Err(Error::ConnectionTerminated),
            }
        };
        Ok((response, Box::new(io)))
    }

    /// A replayed call's request: answered from the call's tape ([`tape::answer`]), without
    /// reaching the network; recorded for the audit log as a request is.
    #[allow(clippy::type_complexity)]
    fn answer_from_tape(
        &self,
        det: &Determinism,
        key: &str,
        request: http::Request<WasiBody>,
        mut rec: NetRecord,
        started: Instant,
    ) -> Result<
        (
            http::Response<WasiBody>,
            Box<dyn Future<Output = Result<(), Error>> + Send>,
        ),
        Error,
    > {
        // The body goes nowhere, but is read to its end as a server would read it, so a
        // guest that writes it after sending the request is not stopped.
        let body = request.into_body();
        tokio::spawn(async move {
            let _ = body.collect().await;
        });
        rec.rule = Some("replay".into());
        let answer = tape::answer(det, key);
        match &answer {
            Ok((response, bytes)) => {
                rec.allowed = true;
                rec.status = Some(response.status().as_u16());
                rec.bytes_in = *bytes;
            }
            Err(f) => {
                rec.allowed = f.error.is_some();
                rec.error = Some(f.why.clone());
            }
        }
        rec.duration_us = started.elapsed().as_micros() as u64;
        record(&self.records, rec);
        match answer {
            Ok((response, _)) => Ok((response, Box::new(async { Ok(()) }))),
            Err(f) => Err(f.error.unwrap_or_else(|| denied(f.why))),
        }
    }
}

/// Opens a tunnel to `host:port` through an HTTP proxy (`CONNECT`), leaving `tcp` at the
/// start of the tunnelled stream.
async fn tunnel(
    tcp: &mut tokio::net::TcpStream,
    host: &str,
    port: u16,
    auth: Option<&str>,
) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let mut req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
    if let Some(a) = auth {
        req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    tcp.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    // Read the proxy's answer a byte at a time: nothing past its blank line may be consumed.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 << 10 {
            return Err("answer too long".into());
        }
        let b = tcp.read_u8().await.map_err(|e| e.to_string())?;
        head.push(b);
    }
    let text = String::from_utf8_lossy(&head);
    let status = text.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some(c) if c.starts_with('2') => Ok(()),
        _ => Err(status.to_string()),
    }
}

/// Where a request goes: its scheme (`https` when none), its host (lower case, an IP literal
/// without brackets) and its port (the scheme's default when none). The connection is made to
/// exactly this, so the policy and the secrets are checked against it.
fn target(uri: &http::Uri) -> Result<(String, String, u16), Error> {
    let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
    let host = uri
        .host()
        .ok_or(Error::HttpRequestUriInvalid)?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    Ok((scheme, host, port))
}

/// A secret swapped into a request: its placeholder went out as its value.
struct Swap {
    name: String,
    placeholder: String,
    value: String,
}

fn replace_bytes(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || hay.len() < from.len() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

fn scrub_headers(h: &mut http::HeaderMap, swaps: &[Swap]) {
    if swaps.is_empty() {
        return;
    }
    for v in h.values_mut() {
        let mut b = v.as_bytes().to_vec();
        for s in swaps {
            b = replace_bytes(&b, s.value.as_bytes(), s.placeholder.as_bytes());
        }
        if let Ok(nv) = http::HeaderValue::from_bytes(&b) {
            *v = nv;
        }
    }
}

impl Egress {
    /// Puts secrets' values where the guest wrote their placeholders (header values, HTTP
    /// Basic credentials, the URL), for destinations the secret may go to. A placeholder
    /// bound for any other destination refuses the request (the guest never holds a value,
    /// but a request that tries is worth stopping and logging).
    ///
    /// `d` is where the request's bytes go ([`target`] of its URI as the guest sent it):
    /// the one place a secret's rules are checked against.
    fn inject_secrets(
        &self,
        request: &mut http::Request<WasiBody>,
        d: &Dest,
        secret_value: impl Fn(&str) -> Result<String, String>,
    ) -> Result<Vec<Swap>, String> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut swaps = Vec::new();
        for s in &self.policy.secrets {
            let ph = s.placeholder.as_str();
            if ph.is_empty() {
                continue;
            }
            let basic = |v: &http::HeaderValue| -> Option<String> {
                let t = v.to_str().ok()?.strip_prefix("Basic ")?;
                String::from_utf8(b64.decode(t.trim()).ok()?).ok()
            };
            let in_headers = request.headers().values().any(|v| {
                v.as_bytes().windows(ph.len()).any(|w| w == ph.as_bytes())
                    || basic(v).is_some_and(|c| c.contains(ph))
            });
            let in_uri = request.uri().to_string().contains(ph);
            if !in_headers && !in_uri {
                continue;
            }
            if !s.allows(d) {
                return Err(format!(
                    "the request to {} carries secret {}, which may only go to {}",
                    d.host,
                    s.name,
                    s.hosts.join(", ")
                ));
            }
            let value = secret_value(&s.name)?;
            for v in request.headers_mut().values_mut() {
                let new = if let Some(c) = basic(v).filter(|c| c.contains(ph)) {
                    format!("Basic {}", b64.encode(c.replace(ph, &value)))
                } else {
                    String::from_utf8_lossy(v.as_bytes()).replace(ph, &value)
                };
                if new.as_bytes() != v.as_bytes() {
                    *v = http::HeaderValue::from_str(&new)
                        .map_err(|_| format!("secret {} is not a valid header value", s.name))?;
                }
            }
            if in_uri {
                let u = request.uri().to_string().replace(ph, &value);
                *request.uri_mut() = u
                    .parse()
                    .map_err(|_| format!("secret {} does not fit in a URL", s.name))?;
            }
            swaps.push(Swap {
                name: s.name.clone(),
                placeholder: ph.to_string(),
                value,
            });
        }
        Ok(swaps)
    }
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// Writes a request's record once its response body is done with.
struct Finish {
    rec: Option<NetRecord>,
    records: Arc<Mutex<Vec<NetRecord>>>,
    counted: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
    started: Instant,
    _in_flight: InFlight,
}

impl Drop for Finish {
    fn drop(&mut self) {
        if let Some(mut r) = self.rec.take() {
            r.allowed = true;
            r.bytes_in = self.counted.load(Ordering::Relaxed);
            r.bytes_out = self.sent.load(Ordering::Relaxed);
            r.duration_us = self.started.elapsed().as_micros() as u64;
            record(&self.records, r);
        }
    }
}

/// A request body that counts what it sends against the call's [`NetLimits::bytes_out`].
struct Limited {
    inner: WasiBody,
    total: Arc<Usage>,
    here: Arc<AtomicU64>,
    cap: u64,
}

impl Body for Limited {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let f = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(f))) = &f
            && let Some(d) = f.data_ref()
        {
            let n = d.len() as u64;
            self.here.fetch_add(n, Ordering::Relaxed);
            if self.total.bytes_out.fetch_add(n, Ordering::Relaxed) + n > self.cap {
                return Poll::Ready(Some(Err(denied(format!(
                    "upload limit: this call may send {} bytes",
                    self.cap
                )))));
            }
        }
        f
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that counts its bytes (against [`NetLimits::bytes_in`]), fails when the
/// server goes quiet for [`NetLimits::idle_timeout`], and puts placeholders back where the
/// server echoed a secret's value (a value split across frames included).
struct Counted {
    inner: hyper::body::Incoming,
    counted: Arc<AtomicU64>,
    usage: Arc<Usage>,
    cap: u64,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    _finish: Finish,
    swaps: Vec<Swap>,
    /// Bytes held back because a value may continue in the next frame.
    pending: Vec<u8>,
    ended: bool,
}

impl Counted {
    /// Replaces values in `pending` and returns what can be passed on now.
    fn release(&mut self, all: bool) -> Bytes {
        for s in &self.swaps {
            self.pending =
                replace_bytes(&self.pending, s.value.as_bytes(), s.placeholder.as_bytes());
        }
        let keep = if all {
            0
        } else {
            self.swaps
                .iter()
                .map(|s| s.value.len().saturating_sub(1))
                .max()
                .unwrap_or(0)
                .min(self.pending.len())
        };
        let out = self.pending.split_off(0);
        let (now, later) = out.split_at(out.len() - keep);
        self.pending = later.to_vec();
        Bytes::copy_from_slice(now)
    }
}

impl Body for Counted {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                let deadline = tokio::time::Instant::now() + self.idle;
                self.timer.as_mut().reset(deadline);
                if let Some(d) = f.data_ref() {
                    let n = d.len() as u64;
                    self.counted.fetch_add(n, Ordering::Relaxed);
                    if self.usage.bytes_in.fetch_add(n, Ordering::Relaxed) + n > self.cap {
                        self.ended = true;
                        return Poll::Ready(Some(Err(denied(format!(
                            "download limit: this call may receive {} bytes",
                            self.cap
                        )))));
                    }
                }
                if self.swaps.is_empty() {
                    return Poll::Ready(Some(Ok(f)));
                }
                match f.into_data() {
                    Ok(d) => {
                        self.pending.extend_from_slice(&d);
                        let out = self.release(false);
                        Poll::Ready(Some(Ok(Frame::data(out))))
                    }
                    Err(f) => Poll::Ready(Some(Ok(f))),
                }
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(None) => {
                self.ended = true;
                if self.pending.is_empty() {
                    Poll::Ready(None)
                } else {
                    let out = self.release(true);
                    Poll::Ready(Some(Ok(Frame::data(out))))
                }
            }
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.ended = true;
                    Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server answering each connection with `body` after `delay`, then closing.
    fn serve(body: &'static [u8], delay: Duration) -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(mut c) = c else { continue };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let _ = c.read(&mut buf);
                    std::thread::sleep(delay);
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = c.write_all(body);
                });
            }
        });
        port
    }

    fn policy(port: u16) -> Arc<NetPolicy> {
        let mut p = NetPolicy::default();
        p.allow(&[format!("127.0.0.1:{port}")]).unwrap();
        Arc::new(p)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrency_limit_refuses_the_extra_request_until_one_ends() {
        let port = serve(b"slow", Duration::from_millis(300));
        let limits = NetLimits {
            concurrent: 1,
            ..Default::default()
        };
        let e = Egress::new(policy(port), limits, Default::default());
        let url = format!("http://127.0.0.1:{port}/");
        let first = tokio::spawn({
            let (e, url) = (e.clone(), url.clone());
            async move { e.get(&url).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let second = e.get(&url).await;
        let err = second.expect_err("a second request in flight");
        assert!(err.contains("concurrency limit"), "{err}");
        assert_eq!(
            first.await.unwrap().unwrap(),
            (200, Bytes::from_static(b"slow"))
        );
        // The first one is done: the slot is free again.
        assert_eq!(e.get(&url).await.unwrap().0, 200);
        let records = e.records();
        let r = records.lock().unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.iter().filter(|r| r.error.is_some()).count(), 1);
        assert!(r.iter().all(|r| r.allowed || r.error.is_some()));
    }

    mod secrets {
        //! The secret-scoping property: a secret's value leaves only towards a (scheme, host,
        //! port) that one of that secret's rules names, and a request that carries its
        //! placeholder anywhere else is refused. Requests are generated as a guest writes
        //! them (hosts in other cases, with trailing dots, IDNA forms, IP literals in several
        //! spellings, userinfo, explicit default ports, redirect chains between them); the
        //! oracle reads where each one goes with the `url` crate (WHATWG parsing), not with
        //! burrow's own code, and what a rule names from the structured rule it was written
        //! from.
        use super::*;
        use proptest::prelude::*;

        const VALUE: &str = "v4lue-of-the-secret";

        /// A secret's host as the test writes it: `[SCHEME://]HOST[:PORT]`.
        #[derive(Debug, Clone)]
        struct Named {
            scheme: Option<&'static str>,
            host: &'static str,
            port: Option<u16>,
        }

        impl Named {
            fn text(&self) -> String {
                let host = if self.host.contains(':') && !self.host.contains('/') {
                    format!("[{}]", self.host)
                } else {
                    self.host.to_string()
                };
                let mut t = String::new();
                if let Some(s) = self.scheme {
                    t.push_str(s);
                    t.push_str("://");
                }
                t.push_str(&host);
                if let Some(p) = self.port {
                    t.push_str(&format!(":{p}"));
                }
                t
            }

            /// Whether this rule names where `url` goes (the oracle).
            fn names(&self, url: &url::Url) -> bool {
                let scheme = self.scheme.unwrap_or("https");
                let default = if scheme == "http" { 80 } else { 443 };
                if url.scheme() != scheme
                    || url.port_or_known_default() != Some(self.port.unwrap_or(default))
                {
                    return false;
                }
                let host = match url.host() {
                    Some(url::Host::Domain(d)) => d.to_string(),
                    Some(url::Host::Ipv4(a)) => a.to_string(),
                    Some(url::Host::Ipv6(a)) => a.to_string(),
                    None => return false,
                };
                if let Some(suffix) = self.host.strip_prefix("*.") {
                    return host.ends_with(&format!(".{suffix}"));
                }
                if let Ok(net) = self.host.parse::<ipnet::IpNet>() {
                    return host.parse::<IpAddr>().is_ok_and(|a| net.contains(&a));
                }
                match (self.host.parse::<IpAddr>(), host.parse::<IpAddr>()) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => self.host == host,
                }
            }
        }

        const HOSTS: &[&str] = &[
            "127.0.0.1",
            "10.1.2.3",
            "::1",
            "api.example.com",
            "example.com",
            "*.example.com",
            "xn--bcher-kva.example",
            "10.0.0.0/8",
        ];
        /// Spellings of destinations a guest may write (the same host in several forms, and
        /// hosts close to the named ones).
        const REQUEST_HOSTS: &[&str] = &[
            "127.0.0.1",
            "127.0.0.1.",
            "127.1",
            "0x7f.0.0.1",
            "[::1]",
            "[0:0:0:0:0:0:0:1]",
            "[::ffff:127.0.0.1]",
            "10.1.2.3",
            "10.9.9.9",
            "api.example.com",
            "API.Example.COM",
            "api.example.com.",
            "example.com",
            "evil.example.com",
            "example.com.evil.net",
            "apiexample.com",
            "xn--bcher-kva.example",
            "XN--BCHER-KVA.example",
            "localhost",
        ];
        const PORTS: &[u16] = &[80, 443, 8080, 8443, 1];

        fn named() -> impl Strategy<Value = Named> {
            (
                prop::option::of(prop::sample::select(vec!["http", "https"])),
                prop::sample::select(HOSTS.to_vec()),
                prop::option::of(prop::sample::select(PORTS.to_vec())),
            )
                .prop_map(|(scheme, host, port)| Named {
                    // A range names no port.
                    port: if host.contains('/') { None } else { port },
                    scheme,
                    host,
                })
        }

        /// A request as the guest writes it, and where the placeholder goes in it.
        #[derive(Debug, Clone)]
        struct Request {
            scheme: &'static str,
            userinfo: Option<&'static str>,
            host: &'static str,
            port: Option<u16>,
            /// 0: a header, 1: Basic credentials, 2: the query, 3: userinfo, 4: nowhere.
            place: u8,
        }

        fn request() -> impl Strategy<Value = Request> {
            (
                prop::sample::select(vec!["http", "https", "HTTP", "HttpS"]),
                prop::option::of(prop::sample::select(vec!["user", "user:pw"])),
                prop::sample::select(REQUEST_HOSTS.to_vec()),
                prop::option::of(prop::sample::select(PORTS.to_vec())),
                0u8..5,
            )
                .prop_map(|(scheme, userinfo, host, port, place)| Request {
                    scheme,
                    userinfo,
                    host,
                    port,
                    place,
                })
        }

        impl Request {
            fn url(&self, placeholder: &str) -> String {
                let userinfo = match (self.place, self.userinfo) {
                    (3, _) => format!("u:{placeholder}@"),
                    (_, Some(u)) => format!("{u}@"),
                    _ => String::new(),
                };
                let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
                let query = if self.place == 2 {
                    format!("?token={placeholder}")
                } else {
                    String::new()
                };
                format!(
                    "{}://{userinfo}{}{port}/path{query}",
                    self.scheme, self.host
                )
            }
        }

        fn build(r: &Request, placeholder: &str) -> Option<http::Request<WasiBody>> {
            use base64::Engine;
            let body = http_body_util::Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync();
            let mut b = http::Request::get(r.url(placeholder));
            match r.place {
                0 => b = b.header("x-token", format!("Bearer {placeholder}")),
                1 => {
                    let c = base64::engine::general_purpose::STANDARD
                        .encode(format!("x-access-token:{placeholder}"));
                    b = b.header("authorization", format!("Basic {c}"));
                }
                _ => {}
            }
            // A request the HTTP layer cannot even form never leaves.
            b.body(body).ok()
        }

        /// Whether the value went out in `req` in any form the server could read.
        fn carries_value(req: &http::Request<WasiBody>) -> bool {
            use base64::Engine;
            let decoded = |v: &http::HeaderValue| {
                v.to_str()
                    .ok()
                    .and_then(|t| t.strip_prefix("Basic "))
                    .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default()
            };
            req.uri().to_string().contains(VALUE)
                || req.headers().values().any(|v| {
                    String::from_utf8_lossy(v.as_bytes()).contains(VALUE)
                        || decoded(v).contains(VALUE)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            /// Every request of a chain (a redirect is the guest's next request: the egress
            /// layer never follows one itself) is admitted or refused on its own.
            #[test]
            fn the_value_leaves_only_towards_what_a_rule_of_the_secret_names(
                allow in prop::collection::vec(named(), 0..4),
                secret in prop::collection::vec(named(), 1..4),
                other in prop::collection::vec(named(), 0..3),
                chain in prop::collection::vec(request(), 1..4),
            ) {
                let mut policy = NetPolicy::default();
                let rules: Vec<String> = allow.iter().chain(&secret).map(Named::text).collect();
                prop_assume!(policy.allow(&rules).is_ok());
                let rule = |name: &str, n: &[Named]| {
                    let hosts: Vec<String> = n.iter().map(Named::text).collect();
                    crate::net::policy::SecretRule::parse(&format!("{name}@{}", hosts.join(",")))
                };
                let (Ok(s), Ok(o)) = (rule("TOKEN", &secret), rule("OTHER", &other.iter().cloned().chain([Named { scheme: None, host: "example.com", port: None }]).collect::<Vec<_>>())) else {
                    return Err(TestCaseError::reject("rule"));
                };
                let placeholder = s.placeholder.clone();
                policy.set_secret(s);
                policy.set_secret(o);
                let egress = Egress::new(Arc::new(policy.clone()), NetLimits::default(), Default::default());
                for r in &chain {
                    let Some(mut req) = build(r, &placeholder) else { continue };
                    let Ok(url) = url::Url::parse(&req.uri().to_string()) else { continue };
                    let Ok((scheme, host, port)) = target(req.uri()) else { continue };
                    let d = Dest { method: "GET", scheme: &scheme, host: &host, port };
                    if let Verdict::Deny(_) = policy.check(&d) {
                        // Refused before any secret is looked at: nothing leaves.
                        continue;
                    }
                    let named = secret.iter().any(|n| n.names(&url));
                    let lookup = |name: &str| {
                        Ok(if name == "TOKEN" { VALUE.to_string() } else { "other-value".into() })
                    };
                    match egress.inject_secrets(&mut req, &d, lookup) {
                        Ok(swaps) => {
                            if carries_value(&req) {
                                prop_assert!(named, "the value went to {url}, which no rule of {secret:?} names");
                                prop_assert!(swaps.iter().any(|w| w.name == "TOKEN"));
                            }
                            // Where it carries the placeholder, the request goes only where
                            // the secret may go.
                            if r.place < 4 {
                                prop_assert!(named, "a request with the placeholder to {url} was let through");
                            }
                        }
                        Err(why) => {
                            prop_assert!(r.place < 4, "refused without a placeholder: {why}");
                            prop_assert!(why.contains("carries secret TOKEN"), "{why}");
                        }
                    }
                }
            }
        }

        /// The property's other half: where a rule names the destination in its canonical
        /// spelling, the value is swapped in (the property is not met by refusing everything).
        #[test]
        fn the_value_goes_where_the_rule_names_it() {
            let cases: &[(&str, &str, bool)] = &[
                ("127.0.0.1:8080", "http://127.0.0.1:8080/", false),
                ("127.0.0.1:8080", "https://127.0.0.1:8080/", true),
                ("http://127.0.0.1:8080", "http://127.0.0.1:8080/", true),
                ("http://127.0.0.1:8080", "http://127.0.0.1:8081/", false),
                ("http://127.0.0.1", "http://127.0.0.1/", true),
                ("http://127.0.0.1", "http://127.0.0.1:8080/", false),
                ("api.example.com", "https://api.example.com/", true),
                ("api.example.com", "https://api.example.com:443/", true),
                ("api.example.com", "https://api.example.com:8443/", false),
                ("api.example.com", "http://api.example.com/", false),
                ("http://api.example.com", "https://api.example.com/", false),
                ("*.example.com", "https://a.example.com/", true),
                ("*.example.com", "https://example.com/", false),
                ("[::1]:9", "https://[::1]:9/", true),
                ("10.0.0.0/8", "https://10.2.3.4/", true),
                ("10.0.0.0/8", "http://10.2.3.4/", false),
            ];
            for (rule, url, swapped) in cases {
                let mut policy = NetPolicy::default();
                let s = crate::net::policy::SecretRule::parse(&format!("TOKEN@{rule}")).unwrap();
                let ph = s.placeholder.clone();
                policy.set_secret(s);
                let egress =
                    Egress::new(Arc::new(policy), NetLimits::default(), Default::default());
                let body = http_body_util::Empty::<Bytes>::new()
                    .map_err(|never| match never {})
                    .boxed_unsync();
                let mut req = http::Request::get(*url)
                    .header("x-token", ph)
                    .body(body)
                    .unwrap();
                let (scheme, host, port) = target(req.uri()).unwrap();
                let d = Dest {
                    method: "GET",
                    scheme: &scheme,
                    host: &host,
                    port,
                };
                let got = egress.inject_secrets(&mut req, &d, |_| Ok(VALUE.into()));
                assert_eq!(got.is_ok(), *swapped, "{rule} -> {url}: {:?}", got.err());
                assert_eq!(carries_value(&req), *swapped, "{rule} -> {url}");
            }
        }
    }

    #[test]
    fn limits_from_variables() {
        let l = NetLimits::from_vars(|k| match k {
            "BURROW_NET_MAX_CONCURRENT" => Some("4".into()),
            "BURROW_NET_IDLE_TIMEOUT" => Some("5".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(l.concurrent, 4);
        assert_eq!(l.idle_timeout, Duration::from_secs(5));
        assert_eq!(l.requests, NetLimits::default().requests);
        let e = NetLimits::from_vars(|k| (k == "BURROW_NET_MAX_BYTES_IN").then(|| "1G".into()));
        assert_eq!(
            e.unwrap_err(),
            "BURROW_NET_MAX_BYTES_IN=1G: not a whole number"
        );
    }
}
