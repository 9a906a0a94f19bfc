//! `curl`: HTTP(S) through `wasi:http/outgoing-handler`, so every request (and every
//! redirect) passes the session's egress policy on the host. The flags agents use, with
//! curl's messages and exit codes (6 could not resolve, 7 could not connect or denied, 22 an
//! HTTP error with `-f`, 28 timeout, 47 too many redirects); a flag curl has but burrow does
//! not implement is refused (exit 2), never ignored. The body streams to stdout or `-o FILE`.

use std::io::Write;

use crate::io::Io;
use crate::shell::Shell;

struct Opts {
    silent: bool,
    show_error: bool,
    fail: bool,
    fail_with_body: bool,
    location: bool,
    max_redirs: u32,
    output: Option<String>,
    remote_name: bool,
    method: Option<String>,
    headers: Vec<(String, String)>,
    data: Option<Vec<u8>>,
    get: bool,
    include: bool,
    head: bool,
    write_out: Option<String>,
    user: Option<String>,
    max_time: Option<f64>,
    connect_timeout: Option<f64>,
    url: Option<String>,
}

/// curl's wording for an exit code's error line.
fn err(io: &Io, o: &Opts, code: i32, msg: &str) -> i32 {
    if !o.silent || o.show_error {
        io.eprint(&format!("curl: ({code}) {msg}\n"));
    }
    code
}

fn usage(io: &Io, msg: &str) -> i32 {
    io.eprint(&format!(
        "curl: {msg}\ncurl: try 'curl --help' or 'curl --manual' for more information\n"
    ));
    2
}

/// Options of real curl that burrow's does not implement yet.
const UNSUPPORTED: &[&str] = &[
    "-F",
    "--form",
    "-v",
    "--verbose",
    "--data-urlencode",
    "-T",
    "--upload-file",
    "-c",
    "--cookie-jar",
    "-b",
    "--cookie",
    "-e",
    "--referer",
    "-k",
    "--insecure",
    "-x",
    "--proxy",
    "--compressed",
    "--retry",
    "-K",
    "--config",
    "-r",
    "--range",
    "-C",
    "--continue-at",
    "-Z",
    "--parallel",
    "--http2",
    "-4",
    "-6",
    "--resolve",
    "--cacert",
    "-E",
    "--cert",
    "-#",
    "--progress-bar",
    "-N",
    "--no-buffer",
];

#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
fn base64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `--name=value` as (`--name`, Some(value)); anything else as itself.
fn long_value(a: &str) -> (String, Option<String>) {
    match a.split_once('=') {
        Some((n, v)) if a.starts_with("--") => (n.to_string(), Some(v.to_string())),
        _ => (a.to_string(), None),
    }
}

impl Opts {
    fn new() -> Opts {
        Opts {
            silent: false,
            show_error: false,
            fail: false,
            fail_with_body: false,
            location: false,
            max_redirs: 50,
            output: None,
            remote_name: false,
            method: None,
            headers: Vec::new(),
            data: None,
            get: false,
            include: false,
            head: false,
            write_out: None,
            user: None,
            max_time: None,
            connect_timeout: None,
            url: None,
        }
    }
}

/// `wget URL`: GET (or `--post-data`) with redirects followed, the body saved to the URL's
/// file name (`name.1` if that exists), `-O FILE` or `-O -` (stdout). `-q` is quiet; `-S`
/// prints the response headers on stderr. wget's exit codes: 4 network failure, 8 an error
/// response. Options wget has that this one does not are refused.
pub fn wget(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::new();
    o.location = true;
    o.max_redirs = 20;
    let (mut quiet, mut show_headers) = (false, false);
    let mut output: Option<String> = None;
    let mut urls: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        let (name, inline) = long_value(&a);
        let mut value = || {
            inline.clone().or_else(|| {
                i += 1;
                args.get(i - 1).cloned()
            })
        };
        match name.as_str() {
            "-q" | "--quiet" => quiet = true,
            "-S" | "--server-response" => show_headers = true,
            "-qO" | "-qO-" => {
                quiet = true;
                output = if name == "-qO-" {
                    Some("-".into())
                } else {
                    value()
                };
            }
            "-O" | "--output-document" => output = value(),
            "-O-" => output = Some("-".into()),
            "--header" => {
                if let Some(v) = value()
                    && let Some((k, val)) = v.split_once(':')
                {
                    o.headers
                        .push((k.trim().to_string(), val.trim().to_string()));
                }
            }
            "-U" | "--user-agent" => {
                if let Some(v) = value() {
                    o.headers.push(("User-Agent".into(), v));
                }
            }
            "--post-data" => o.data = value().map(String::into_bytes),
            "-T" | "--timeout" => o.max_time = value().and_then(|v| v.parse().ok()),
            "--max-redirect" => o.max_redirs = value().and_then(|v| v.parse().ok()).unwrap_or(20),
            "--user" | "--http-user" => o.user = value(),
            n if n.starts_with('-') && n.len() > 1 => {
                io.eprint(&format!(
                    "wget: unrecognized option '{n}' (not supported in burrow's wget)\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.\n"
                ));
                return 2;
            }
            _ => urls.push(a),
        }
    }
    if urls.is_empty() {
        io.eprint("wget: missing URL\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.\n");
        return 1;
    }
    let mut status = 0;
    for url in urls {
        let url = if url.contains("://") {
            url
        } else {
            format!("http://{url}")
        };
        let now = crate::text::strftime(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            "%Y-%m-%d %H:%M:%S",
        );
        if !quiet {
            io.eprint(&format!("--{now}--  {url}\n"));
        }
        let mut current = url.clone();
        let mut redirects = 0;
        let method = if o.data.is_some() { "POST" } else { "GET" };
        let mut body = o.data.clone();
        let (target, resp) = loop {
            let Some(t) = parse_url(&current) else {
                io.eprint(&format!("{current}: Invalid URL.\n"));
                return 1;
            };
            if !quiet {
                io.eprint(&format!("Connecting to {}:{}... ", t.host, t.port));
            }
            match request(
                &o,
                &t,
                if body.is_some() { method } else { "GET" },
                body.as_deref(),
            ) {
                Err((_, msg)) => {
                    if !quiet {
                        io.eprint(&format!("failed: {msg}.\n"));
                    }
                    return 4;
                }
                Ok(r) => {
                    if !quiet {
                        io.eprint(&format!(
                            "connected.\nHTTP request sent, awaiting response... {}\n",
                            r.status
                        ));
                    }
                    if show_headers {
                        for l in r.head_text().lines().filter(|l| !l.is_empty()) {
                            io.eprint(&format!("  {l}\n"));
                        }
                    }
                    if matches!(r.status, 301 | 302 | 303 | 307 | 308)
                        && let Some(loc) = r.header("location")
                    {
                        if redirects >= o.max_redirs {
                            io.eprint(&format!("{} redirections exceeded.\n", o.max_redirs));
                            return 8;
                        }
                        redirects += 1;
                        current = join_url(&t, &loc);
                        body = None;
                        if !quiet {
                            io.eprint(&format!("Location: {loc} [following]\n"));
                        }
                        continue;
                    }
                    break (t, r);
                }
            }
        };
        if resp.status >= 400 {
            if !quiet {
                io.eprint(&format!("{now} ERROR {}.\n\n", resp.status));
            }
            status = 8;
            continue;
        }
        let name = output.clone().unwrap_or_else(|| {
            let base = target
                .path
                .split('?')
                .next()
                .and_then(|p| p.rsplit('/').next())
                .filter(|n| !n.is_empty())
                .unwrap_or("index.html")
                .to_string();
            let mut name = base.clone();
            let mut k = 1;
            while sh.path(&name).exists() {
                name = format!("{base}.{k}");
                k += 1;
            }
            name
        });
        let mut size = 0u64;
        let r = if name == "-" {
            resp.read_body(|c| {
                size += c.len() as u64;
                io.out.write(c);
                true
            })
        } else {
            match std::fs::File::create(sh.path(&name)) {
                Ok(mut f) => resp.read_body(|c| {
                    size += c.len() as u64;
                    f.write_all(c).is_ok()
                }),
                Err(e) => {
                    io.eprint(&format!("{name}: {}\n", crate::builtins::io_msg(&e)));
                    return 3;
                }
            }
        };
        if let Err((_, msg)) = r {
            io.eprint(&format!("Read error ({msg}).\n"));
            return 4;
        }
        if !quiet && name != "-" {
            io.eprint(&format!(
                "Saving to: ‘{name}’\n\n{now} - ‘{name}’ saved [{size}]\n\n"
            ));
        }
    }
    status
}

pub fn curl(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::new();
    // Expand combined short flags (-sSL) first; a valued one takes the rest or the next arg.
    let valued_short = "oXHdwuAmeb";
    let mut argv: Vec<String> = Vec::new();
    for a in args {
        if a.starts_with('-') && !a.starts_with("--") && a.len() > 2 {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                argv.push(format!("-{c}"));
                if valued_short.contains(c) && k + 1 < chars.len() {
                    argv.push(chars[k + 1..].iter().collect());
                    break;
                }
                k += 1;
            }
        } else {
            argv.push(a.clone());
        }
    }
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].clone();
        i += 1;
        let (name, inline) = long_value(&a);
        let mut value = |what: &str| -> Result<String, i32> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            if i < argv.len() {
                i += 1;
                return Ok(argv[i - 1].clone());
            }
            Err(usage(io, &format!("option {what}: requires parameter")))
        };
        macro_rules! val {
            () => {
                match value(&name) {
                    Ok(v) => v,
                    Err(c) => return c,
                }
            };
        }
        match name.as_str() {
            "-s" | "--silent" => o.silent = true,
            "-S" | "--show-error" => o.show_error = true,
            "-f" | "--fail" => o.fail = true,
            "--fail-with-body" => o.fail_with_body = true,
            "-L" | "--location" => o.location = true,
            "--max-redirs" => {
                let v = val!();
                match v.parse() {
                    Ok(n) => o.max_redirs = n,
                    Err(_) => {
                        return usage(
                            io,
                            "option --max-redirs: expected a proper numerical parameter",
                        );
                    }
                }
            }
            "-o" | "--output" => o.output = Some(val!()),
            "-O" | "--remote-name" => o.remote_name = true,
            "-X" | "--request" => o.method = Some(val!()),
            "-H" | "--header" => {
                let v = val!();
                if let Some((k, val)) = v.split_once(':') {
                    o.headers
                        .push((k.trim().to_string(), val.trim().to_string()));
                }
            }
            "-A" | "--user-agent" => {
                let v = val!();
                o.headers.push(("User-Agent".into(), v));
            }
            "-d" | "--data" | "--data-raw" | "--data-binary" | "--data-ascii" => {
                let v = val!();
                let bytes = if let Some(f) = v.strip_prefix('@').filter(|_| name != "--data-raw") {
                    let read = if f == "-" {
                        Ok(crate::io::read_all(&io.stdin))
                    } else {
                        crate::sys::read(sh.path(f))
                    };
                    match read {
                        Ok(mut b) => {
                            if name != "--data-binary" {
                                b.retain(|c| *c != b'\n' && *c != b'\r');
                            }
                            b
                        }
                        Err(_) => {
                            io.eprint(&format!("Warning: Couldn't read data from file \"{f}\", this makes an empty POST.\n"));
                            Vec::new()
                        }
                    }
                } else {
                    v.into_bytes()
                };
                let d = o.data.get_or_insert_with(Vec::new);
                if !d.is_empty() {
                    d.push(b'&');
                }
                d.extend(bytes);
            }
            "-G" | "--get" => o.get = true,
            "-i" | "--include" => o.include = true,
            "-I" | "--head" => o.head = true,
            "-w" | "--write-out" => o.write_out = Some(val!()),
            "-u" | "--user" => o.user = Some(val!()),
            "-m" | "--max-time" => match val!().parse() {
                Ok(t) => o.max_time = Some(t),
                Err(_) => {
                    return usage(
                        io,
                        "option --max-time: expected a proper numerical parameter",
                    );
                }
            },
            "--connect-timeout" => match val!().parse() {
                Ok(t) => o.connect_timeout = Some(t),
                Err(_) => {
                    return usage(
                        io,
                        "option --connect-timeout: expected a proper numerical parameter",
                    );
                }
            },
            "--url" => o.url = Some(val!()),
            n if UNSUPPORTED.contains(&n) => {
                return usage(
                    io,
                    &format!("option {n}: is not supported in burrow's curl"),
                );
            }
            n if n.starts_with('-') && n.len() > 1 => {
                return usage(io, &format!("option {n}: is unknown"));
            }
            _ => {
                if o.url.is_some() {
                    return usage(io, "only one URL at a time is supported in burrow's curl");
                }
                o.url = Some(a);
            }
        }
    }
    let Some(url) = o.url.clone() else {
        if args.is_empty() {
            io.eprint("curl: try 'curl --help' or 'curl --manual' for more information\n");
            return 2;
        }
        return usage(io, "no URL specified!");
    };
    if let Some((scheme, _)) = url.split_once("://")
        && !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
    {
        return err(
            io,
            &o,
            1,
            &format!("Protocol \"{scheme}\" not supported or disabled in libcurl"),
        );
    }
    let mut url = url;
    if o.get
        && let Some(d) = o.data.take()
    {
        let sep = if url.contains('?') { '&' } else { '?' };
        url = format!("{url}{sep}{}", String::from_utf8_lossy(&d));
    }
    let mut method = o.method.clone().unwrap_or_else(|| {
        if o.head {
            "HEAD".into()
        } else if o.data.is_some() {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    let mut body = o.data.clone();
    let mut redirects = 0;
    let mut out_file: Option<std::fs::File> = None;
    loop {
        let target = match parse_url(&url) {
            Some(t) => t,
            None => return err(io, &o, 3, "URL rejected: Malformed input to a URL function"),
        };
        let r = request(&o, &target, &method, body.as_deref());
        let resp = match r {
            Ok(r) => r,
            Err((code, msg)) => return err(io, &o, code, &msg),
        };
        let status = resp.status;
        let redirect = matches!(status, 301 | 302 | 303 | 307 | 308);
        if o.location
            && redirect
            && let Some(loc) = resp.header("location")
        {
            if redirects >= o.max_redirs {
                return err(
                    io,
                    &o,
                    47,
                    &format!("Maximum ({}) redirects followed", o.max_redirs),
                );
            }
            redirects += 1;
            if o.include {
                io.print(&resp.head_text());
            }
            url = join_url(&target, &loc);
            if matches!(status, 301..=303) && method != "HEAD" {
                // As curl: the body is not sent again; a method given with -X stays.
                if o.method.is_none() {
                    method = "GET".into();
                }
                body = None;
            }
            continue;
        }
        let failing = status >= 400 && (o.fail || o.fail_with_body);
        if o.include || o.head {
            io.print(&resp.head_text());
        }
        let mut size = 0u64;
        if !(failing && o.fail) && method != "HEAD" {
            // The body streams to its destination chunk by chunk.
            let dest_name = o.output.clone().or_else(|| {
                o.remote_name.then(|| {
                    target
                        .path
                        .split('?')
                        .next()
                        .and_then(|p| p.rsplit('/').next())
                        .filter(|n| !n.is_empty())
                        .unwrap_or("index.html")
                        .to_string()
                })
            });
            if let Some(name) = dest_name.filter(|n| n != "-") {
                match std::fs::File::create(sh.path(&name)) {
                    Ok(f) => out_file = Some(f),
                    Err(e) => {
                        return err(
                            io,
                            &o,
                            23,
                            &format!(
                                "client returned ERROR on write of 0 bytes ({})",
                                crate::builtins::io_msg(&e)
                            ),
                        );
                    }
                }
            }
            let r = resp.read_body(|chunk| {
                size += chunk.len() as u64;
                match &mut out_file {
                    Some(f) => f.write_all(chunk).is_ok(),
                    None => {
                        io.out.write(chunk);
                        true
                    }
                }
            });
            if let Err((code, msg)) = r {
                return err(io, &o, code, &msg);
            }
        } else {
            resp.drop_body();
        }
        if let Some(w) = &o.write_out {
            io.print(&write_out(w, status, &url, size, redirects));
        }
        if failing {
            return err(
                io,
                &o,
                22,
                &format!("The requested URL returned error: {status}"),
            );
        }
        return 0;
    }
}

fn write_out(fmt: &str, status: u16, url: &str, size: u64, redirects: u32) -> String {
    let mut s = fmt.replace("\\n", "\n").replace("\\t", "\t");
    for (k, v) in [
        ("%{http_code}", format!("{status:03}")),
        ("%{response_code}", format!("{status:03}")),
        ("%{url_effective}", url.to_string()),
        ("%{size_download}", size.to_string()),
        ("%{num_redirects}", redirects.to_string()),
    ] {
        s = s.replace(k, &v);
    }
    s
}

struct Target {
    scheme: String,
    /// `host[:port]` as written (for the Host header and authority).
    authority: String,
    host: String,
    port: u16,
    /// Path and query, starting with `/`.
    path: String,
    #[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
    userinfo: Option<String>,
}

fn parse_url(url: &str) -> Option<Target> {
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
fn join_url(base: &Target, loc: &str) -> String {
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
mod wire {
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
                        return Err((
                            56,
                            format!(
                                "Failure when receiving data from the peer: {}",
                                e.to_debug_string()
                            ),
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

    /// curl's exit code and message for a wasi:http error.
    fn failure(t: &Target, e: &ErrorCode) -> (i32, String) {
        let host = &t.host;
        let port = t.port;
        match e {
            ErrorCode::InternalError(Some(m)) if m.starts_with("burrow: ") => {
                let m = &m["burrow: ".len()..];
                if m.starts_with("could not resolve") {
                    (6, format!("Could not resolve host: {host}"))
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
        let add = |k: &str, v: &[u8]| {
            let _ = fields.append(k, v);
        };
        let has = |k: &str| o.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k));
        if !has("user-agent") {
            add("user-agent", b"curl/8.5.0");
        }
        if !has("accept") {
            add("accept", b"*/*");
        }
        let user = o.user.clone().or_else(|| t.userinfo.clone());
        if let Some(u) = user
            && !has("authorization")
        {
            add(
                "authorization",
                format!("Basic {}", base64(u.as_bytes())).as_bytes(),
            );
        }
        // After credentials, in curl's order: the caller's headers, then the body's.
        for (k, v) in &o.headers {
            if !v.is_empty() {
                add(&k.to_ascii_lowercase(), v.as_bytes());
            }
        }
        if let Some(b) = body {
            add("content-length", b.len().to_string().as_bytes());
        }
        if body.is_some() && !has("content-type") {
            add("content-type", b"application/x-www-form-urlencoded");
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
        let headers = resp
            .headers()
            .entries()
            .into_iter()
            .map(|(k, v)| (k, v))
            .collect();
        Ok(Response {
            status: resp.status(),
            headers,
            inner: resp,
        })
    }
}

#[cfg(target_os = "wasi")]
use wire::request;

#[cfg(not(target_os = "wasi"))]
mod wire_native {
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
use wire_native::request;
