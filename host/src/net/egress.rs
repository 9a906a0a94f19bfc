//! The egress layer: every `wasi:http/outgoing-handler` request of a guest goes through
//! [`Egress::send_request`] (wasmtime-wasi-http's `WasiHttpHooks`), which checks it against the
//! session's [`NetPolicy`], resolves the host itself and checks every address it resolved to
//! (so DNS cannot route a hostname rule to a private address), connects, speaks TLS with
//! rustls (the webpki roots plus `BURROW_CA_FILE`), and records one [`NetRecord`] per request
//! for the session's audit log. Raw `wasi:sockets` stay denied.

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

/// Limits of one call's network use (defaults in [`NetLimits::default`]).
#[derive(Debug, Clone)]
pub struct NetLimits {
    /// Requests one call may make.
    pub requests: u32,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            requests: 1000,
            connect_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(60),
        }
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

/// The TLS client configuration: webpki's roots, plus the PEM certificates of
/// `BURROW_CA_FILE` when set (a private CA; the tests use their own).
pub fn tls_config(ca_file: Option<&std::path::Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    if let Some(path) = ca_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read CA file {}: {e}", path.display()))?;
        for c in certs {
            let c = c.map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
            roots
                .add(c)
                .map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The process's TLS configuration, built on first use: webpki's roots plus
/// `BURROW_CA_FILE` (an operator setting; guests never see it).
pub fn shared_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static TLS: std::sync::OnceLock<Result<Arc<rustls::ClientConfig>, String>> =
        std::sync::OnceLock::new();
    TLS.get_or_init(|| {
        let ca = std::env::var_os("BURROW_CA_FILE").map(std::path::PathBuf::from);
        tls_config(ca.as_deref()).map(Arc::new)
    })
    .clone()
}

/// A call's egress: its policy, limits and audit records.
#[derive(Clone)]
pub struct Egress {
    policy: Arc<NetPolicy>,
    limits: NetLimits,
    count: Arc<AtomicU32>,
    records: Arc<Mutex<Vec<NetRecord>>>,
}

impl Egress {
    pub fn new(policy: Arc<NetPolicy>, limits: NetLimits) -> Egress {
        Egress {
            policy,
            limits,
            count: Arc::new(AtomicU32::new(0)),
            records: Arc::new(Mutex::new(Vec::new())),
        }
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
        let fail = |mut rec: NetRecord, e: Error, why: String| {
            rec.duration_us = started.elapsed().as_micros() as u64;
            rec.error = Some(why);
            record(&self.records, rec);
            Err(e)
        };
        if self.count.fetch_add(1, Ordering::Relaxed) >= self.limits.requests {
            let why = format!(
                "request limit: this call may make {} requests",
                self.limits.requests
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
        let swaps = match self.inject_secrets(&mut request, &d) {
            Ok(s) => s,
            Err(why) => return fail(rec, denied(why.clone()), why),
        };
        rec.secrets = swaps.iter().map(|s| s.name.clone()).collect();
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
        let mut stream = None;
        let mut last_err = None;
        for a in &allowed {
            match tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(a)).await {
                Ok(Ok(s)) => {
                    stream = Some(s);
                    break;
                }
                Ok(Err(e)) => last_err = Some(e.to_string()),
                Err(_) => last_err = Some("connection timed out".into()),
            }
        }
        let Some(tcp) = stream else {
            let why = format!(
                "failed to connect to {host} port {port}: {}",
                last_err.unwrap_or_default()
            );
            let e = if why.ends_with("timed out") {
                Error::ConnectionTimeout
            } else {
                Error::ConnectionRefused
            };
            return fail(rec, e, why);
        };
        // The request line carries only the path and query (no proxy form).
        let pq = uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string());
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
            let config = match shared_tls() {
                Ok(c) => c,
                Err(why) => return fail(rec, Error::ConfigurationError, why),
            };
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
            started,
        };
        let response = response.map(move |incoming| {
            Counted {
                inner: incoming,
                counted,
                _finish: body_done,
                swaps,
                pending: Vec::new(),
                ended: false,
            }
            .boxed_unsync()
        });
        let io = async move {
            match conn_task.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(Error::from(e)),
                Err(_) => Err(Error::ConnectionTerminated),
            }
        };
        Ok((response, Box::new(io)))
    }
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
    fn inject_secrets(
        &self,
        request: &mut http::Request<WasiBody>,
        d: &Dest,
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
            let value = std::env::var(&s.name)
                .map_err(|_| format!("secret {} is not set in burrow's environment", s.name))?;
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
    started: Instant,
}

impl Drop for Finish {
    fn drop(&mut self) {
        if let Some(mut r) = self.rec.take() {
            r.allowed = true;
            r.bytes_in = self.counted.load(Ordering::Relaxed);
            r.duration_us = self.started.elapsed().as_micros() as u64;
            record(&self.records, r);
        }
    }
}

/// A response body that counts its bytes and puts placeholders back where the server
/// echoed a secret's value (a value split across frames included).
struct Counted {
    inner: hyper::body::Incoming,
    counted: Arc<AtomicU64>,
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
                if let Some(d) = f.data_ref() {
                    self.counted.fetch_add(d.len() as u64, Ordering::Relaxed);
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
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
