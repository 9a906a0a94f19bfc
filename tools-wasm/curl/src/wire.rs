//! curl's wire: URLs (parsing, joining redirects) and the request itself, over
//! `wasi:http/outgoing-handler` (off WASI, in the crate's unit tests, there is no network).

use super::*;

pub(super) struct Target {
    pub(super) scheme: String,
    /// `host[:port]` as written (for the Host header and authority).
    pub(super) authority: String,
    pub(super) host: String,
    pub(super) port: u16,
    /// Path and query, starting with `/`.
    pub(super) path: String,
    #[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
    pub(super) userinfo: Option<String>,
}

impl Target {
    /// The last segment of the path (without the query), as `-O` and wget name the file;
    /// `index.html` when there is none.
    pub(super) fn file_name(&self) -> String {
        self.path
            .split('?')
            .next()
            .and_then(|p| p.rsplit('/').next())
            .filter(|n| !n.is_empty())
            .unwrap_or("index.html")
            .to_string()
    }
}

pub(super) fn parse_url(url: &str) -> Option<Target> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), url),
    };
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let (auth, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path
    };
    let (userinfo, hostport) = match auth.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, auth),
    };
    let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
        let (h, after) = r.split_once(']')?;
        (h.to_string(), after.strip_prefix(':').map(str::to_string))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => {
            if scheme == "https" {
                443
            } else {
                80
            }
        }
    };
    Some(Target {
        scheme,
        authority: hostport.to_string(),
        host,
        port,
        path,
        userinfo,
    })
}

/// A redirect's `Location` resolved against the request's URL.
pub(super) fn join_url(base: &Target, loc: &str) -> String {
    if loc.contains("://") {
        loc.to_string()
    } else if loc.starts_with("//") {
        format!("{}:{loc}", base.scheme)
    } else if loc.starts_with('/') {
        format!("{}://{}{loc}", base.scheme, base.authority)
    } else {
        let dir = base
            .path
            .split('?')
            .next()
            .unwrap_or("/")
            .rsplit_once('/')
            .map_or("", |(d, _)| d);
        format!("{}://{}{dir}/{loc}", base.scheme, base.authority)
    }
}

#[cfg(target_os = "wasi")]
mod wasi_http {
    use super::*;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, RequestOptions,
        Scheme,
    };
    use wasip2::io::streams::StreamError;

    pub struct Response {
        pub status: u16,
        headers: Vec<(String, Vec<u8>)>,
        inner: IncomingResponse,
    }

    impl Response {
        pub fn header(&self, name: &str) -> Option<String> {
            self.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        }

        pub fn head_text(&self) -> String {
            let mut s = format!("HTTP/1.1 {}{}\r\n", self.status, reason(self.status));
            for (k, v) in &self.headers {
                s.push_str(&format!("{k}: {}\r\n", String::from_utf8_lossy(v)));
            }
            s.push_str("\r\n");
            s
        }

        pub fn read_body(&self, mut sink: impl FnMut(&[u8]) -> bool) -> Result<(), (i32, String)> {
            let body = self
                .inner
                .consume()
                .map_err(|_| (56, "Failure when receiving data from the peer".to_string()))?;
            let stream = body
                .stream()
                .map_err(|_| (56, "Failure when receiving data from the peer".to_string()))?;
            loop {
                match stream.blocking_read(64 * 1024) {
                    Ok(chunk) => {
                        if !sink(&chunk) {
                            return Err((23, "Failure writing output to destination".into()));
                        }
                    }
                    Err(StreamError::Closed) => return Ok(()),
                    Err(StreamError::LastOperationFailed(e)) => {
                        return Err(body_failure(
                            wasip2::http::types::http_error_code(&e),
                            &e.to_debug_string(),
                        ));
                    }
                }
            }
        }

        pub fn drop_body(self) {}
    }

    fn reason(status: u16) -> String {
        let r = match status {
            200 => "OK",
            201 => "Created",
            204 => "No Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            304 => "Not Modified",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            500 => "Internal Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            _ => "",
        };
        if r.is_empty() {
            String::new()
        } else {
            format!(" {r}")
        }
    }

    /// curl's exit code and message for an error while reading a response body: the error
    /// code when the host gave one, else what its description says.
    fn body_failure(code: Option<ErrorCode>, debug: &str) -> (i32, String) {
        let burrow = match &code {
            Some(ErrorCode::InternalError(Some(m))) => m.split_once("burrow: ").map(|(_, m)| m),
            _ => debug.split_once("burrow: ").map(|(_, m)| m),
        };
        if let Some(m) = burrow {
            return if m.starts_with("download limit") {
                (63, format!("Exceeded the maximum allowed file size ({m})"))
            } else {
                (
                    56,
                    format!("Failure when receiving data from the peer: {m}"),
                )
            };
        }
        let timed_out = matches!(
            code,
            Some(ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout)
        ) || debug.contains("ConnectionReadTimeout")
            || debug.contains("timed out")
            || debug.contains("timeout");
        if timed_out {
            return (28, "Operation timed out".to_string());
        }
        (
            56,
            format!("Failure when receiving data from the peer: {debug}"),
        )
    }

    /// curl's exit code and message for a wasi:http error.
    fn failure(t: &Target, e: &ErrorCode) -> (i32, String) {
        let host = &t.host;
        let port = t.port;
        match e {
            ErrorCode::InternalError(Some(m)) if m.starts_with("burrow: ") => {
                let m = &m["burrow: ".len()..];
                if m.starts_with("could not resolve") {
                    (6, format!("Could not resolve host: {host}"))
                } else if m.starts_with("upload limit") {
                    (55, format!("Failed sending data to the peer: {m}"))
                } else {
                    (7, format!("Failed to connect to {host} port {port}: {m}"))
                }
            }
            ErrorCode::DnsError(_) | ErrorCode::DnsTimeout | ErrorCode::DestinationNotFound => {
                (6, format!("Could not resolve host: {host}"))
            }
            ErrorCode::ConnectionRefused
            | ErrorCode::DestinationUnavailable
            | ErrorCode::DestinationIpProhibited
            | ErrorCode::DestinationIpUnroutable
            | ErrorCode::HttpRequestDenied => (
                7,
                format!("Failed to connect to {host} port {port}: Couldn't connect to server"),
            ),
            ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::HttpResponseTimeout => (28, "Operation timed out".into()),
            ErrorCode::TlsCertificateError | ErrorCode::TlsProtocolError => (
                60,
                "SSL certificate problem: unable to get local issuer certificate".into(),
            ),
            ErrorCode::ConnectionTerminated | ErrorCode::HttpResponseIncomplete => {
                (52, "Empty reply from server".into())
            }
            other => (
                56,
                format!("Failure when receiving data from the peer: {other:?}"),
            ),
        }
    }

    pub fn request(
        o: &Opts,
        t: &Target,
        method: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, (i32, String)> {
        let fields = Fields::new();
        for (k, v) in request_headers(o, t, body) {
            let _ = fields.append(&k, &v);
        }
        let req = OutgoingRequest::new(fields);
        let m = match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "PATCH" => Method::Patch,
            "OPTIONS" => Method::Options,
            other => Method::Other(other.to_string()),
        };
        let bad = |_| {
            (
                3,
                "URL rejected: Malformed input to a URL function".to_string(),
            )
        };
        req.set_method(&m).map_err(bad)?;
        req.set_scheme(Some(&if t.scheme == "https" {
            Scheme::Https
        } else {
            Scheme::Http
        }))
        .map_err(bad)?;
        let authority = if t.host.contains(':') {
            format!("[{}]:{}", t.host, t.port)
        } else {
            format!("{}:{}", t.host, t.port)
        };
        req.set_authority(Some(&authority)).map_err(bad)?;
        req.set_path_with_query(Some(&t.path)).map_err(bad)?;
        let out = req
            .body()
            .map_err(|_| (55, "Failed sending data to the peer".to_string()))?;
        let options = RequestOptions::new();
        let ns = |s: f64| (s * 1e9) as u64;
        if let Some(c) = o.connect_timeout.or(o.max_time) {
            let _ = options.set_connect_timeout(Some(ns(c)));
        }
        if let Some(m) = o.max_time {
            let _ = options.set_first_byte_timeout(Some(ns(m)));
        }
        let fut = match body {
            // No body: finished before the request goes, so it is sent as empty (not as
            // an open chunked stream), as curl sends it.
            None => {
                OutgoingBody::finish(out, None).map_err(|e| failure(t, &e))?;
                outgoing_handler::handle(req, Some(options)).map_err(|e| failure(t, &e))?
            }
            // A body streams after the request starts (its length is in the headers).
            Some(b) => {
                let fut =
                    outgoing_handler::handle(req, Some(options)).map_err(|e| failure(t, &e))?;
                let stream = out
                    .write()
                    .map_err(|_| (55, "Failed sending data to the peer".to_string()))?;
                for chunk in b.chunks(4096) {
                    stream
                        .blocking_write_and_flush(chunk)
                        .map_err(|_| (55, "Failed sending data to the peer".to_string()))?;
                }
                drop(stream);
                OutgoingBody::finish(out, None).map_err(|e| failure(t, &e))?;
                fut
            }
        };
        fut.subscribe().block();
        let resp = match fut.get() {
            Some(Ok(Ok(r))) => r,
            Some(Ok(Err(e))) => return Err(failure(t, &e)),
            _ => return Err((56, "Failure when receiving data from the peer".into())),
        };
        let headers = resp.headers().entries().into_iter().collect();
        Ok(Response {
            status: resp.status(),
            headers,
            inner: resp,
        })
    }
}

#[cfg(target_os = "wasi")]
pub(super) use wasi_http::request;

#[cfg(not(target_os = "wasi"))]
mod native {
    use super::*;

    /// Off WASI (unit tests of the crate) there is no network.
    pub struct Response {
        pub status: u16,
    }

    impl Response {
        pub fn header(&self, _name: &str) -> Option<String> {
            None
        }
        pub fn head_text(&self) -> String {
            String::new()
        }
        pub fn read_body(&self, _sink: impl FnMut(&[u8]) -> bool) -> Result<(), (i32, String)> {
            Ok(())
        }
        pub fn drop_body(self) {}
    }

    pub fn request(
        _o: &Opts,
        t: &Target,
        _method: &str,
        _body: Option<&[u8]>,
    ) -> Result<Response, (i32, String)> {
        Err((
            7,
            format!("Failed to connect to {} port {}", t.host, t.port),
        ))
    }
}

#[cfg(not(target_os = "wasi"))]
pub(super) use native::request;
