//! sh-curl: curl and wget for burrow's shell, over the session's wasi:http client (its
//! network policy, secrets and audit apply); `get` for pip.

use std::io::Write;

use sh_utility::Ctx;
use sh_utility::io::Io;

mod body;
mod wire;

use body::{Decode, Out, form_part, multipart, percent_encode, urlencode_source};
use wire::{Target, join_url, parse_url, request};

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
    verbose: bool,
    compressed: bool,
    retry: u32,
    retry_delay: Option<f64>,
    retry_max_time: Option<f64>,
    retry_connrefused: bool,
    retry_all_errors: bool,
    /// `-F` parts: (name, filename, content type, content).
    form: Vec<FormPart>,
    /// The body's content type when not the form-urlencoded default (`-F`'s multipart).
    body_type: Option<String>,
    referer: Option<String>,
    range: Option<String>,
}

/// One part of a `multipart/form-data` body.
struct FormPart {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
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
    "-T",
    "--upload-file",
    "-c",
    "--cookie-jar",
    "-b",
    "--cookie",
    "-k",
    "--insecure",
    "-x",
    "--proxy",
    "-K",
    "--config",
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
            verbose: false,
            compressed: false,
            retry: 0,
            retry_delay: None,
            retry_max_time: None,
            retry_connrefused: false,
            retry_all_errors: false,
            form: Vec::new(),
            body_type: None,
            referer: None,
            range: None,
        }
    }
}

/// `wget URL`: GET (or `--post-data`) with redirects followed, the body saved to the URL's
/// file name (`name.1` if that exists), `-O FILE` or `-O -` (stdout). `-q` is quiet; `-S`
/// prints the response headers on stderr. wget's exit codes: 4 network failure, 8 an error
/// response. Options wget has that this one does not are refused.
pub fn wget(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
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
        let now = sh_utility::time::strftime(
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
            let base = target.file_name();
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
                    io.eprint(&format!("{name}: {}\n", sh_utility::format::io_msg(&e)));
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

pub fn curl(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::new();
    // Expand combined short flags (-sSL) first; a valued one takes the rest or the next arg.
    let valued_short = "oXHdwuAmebFr";
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
                        Ok(sh_utility::io::read_all(&io.stdin))
                    } else {
                        sh_utility::sys::read(sh.path(f))
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
            "-v" | "--verbose" => o.verbose = true,
            // burrow's curl never draws a progress meter.
            "--no-progress-meter" => {}
            "--compressed" => o.compressed = true,
            "-e" | "--referer" => {
                let v = val!();
                let v = v.strip_suffix(";auto").unwrap_or(&v).to_string();
                o.referer = (!v.is_empty()).then_some(v);
            }
            "-r" | "--range" => {
                let v = val!();
                o.range = Some(v);
            }
            "--retry" | "--retry-delay" | "--retry-max-time" => {
                let v = val!();
                let Ok(n) = v.parse::<f64>().map(|n| n.max(0.0)) else {
                    return usage(
                        io,
                        &format!("option {name}: expected a proper numerical parameter"),
                    );
                };
                match name.as_str() {
                    "--retry" => o.retry = n as u32,
                    "--retry-delay" => o.retry_delay = Some(n),
                    _ => o.retry_max_time = Some(n),
                }
            }
            "--retry-connrefused" => o.retry_connrefused = true,
            "--retry-all-errors" => o.retry_all_errors = true,
            "--data-urlencode" => {
                let v = val!();
                let (prefix, content) = match urlencode_source(sh, io, &v) {
                    Ok(x) => x,
                    Err(code) => return code,
                };
                let d = o.data.get_or_insert_with(Vec::new);
                if !d.is_empty() {
                    d.push(b'&');
                }
                d.extend(prefix.into_bytes());
                // As curl: a space becomes `+`.
                d.extend(percent_encode(&content).replace("%20", "+").into_bytes());
            }
            "-F" | "--form" => {
                let v = val!();
                match form_part(sh, &v) {
                    Ok(part) => o.form.push(part),
                    Err(None) => return usage(io, &format!("option {name}: is badly used here")),
                    Err(Some(_)) => {
                        return err(
                            io,
                            &o,
                            26,
                            "Failed to open/read local data from file/application",
                        );
                    }
                }
            }
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
    if !o.form.is_empty() {
        if o.data.is_some() {
            warn(
                io,
                &o,
                "You can only select one HTTP request method! You asked for both POST (-d, --data) and multipart formpost (-F, --form).",
            );
            return 2;
        }
        let (body, boundary) = multipart(&o.form);
        o.data = Some(body);
        o.body_type = Some(format!("multipart/form-data; boundary={boundary}"));
    }
    // --retry: transient failures (timeouts, 408/429/5xx answers, refused connections with
    // --retry-connrefused, anything with --retry-all-errors) run the transfer again.
    let started = std::time::Instant::now();
    let mut left = o.retry;
    let mut sleep_ms: u64 = o.retry_delay.map_or(1000, |d| (d * 1000.0) as u64);
    loop {
        let mut seen = Attempt::default();
        let code = transfer(sh, io, &o, url.clone(), &mut seen);
        let done = |code: i32| {
            if let Some(w) = &seen.write_out {
                io.print(w);
            }
            code
        };
        // A destination the session's policy refuses is not a transient failure.
        if seen.refused_by_burrow {
            return done(code);
        }
        if left == 0
            || o.retry_max_time
                .is_some_and(|m| m > 0.0 && started.elapsed().as_secs_f64() >= m)
        {
            return done(code);
        }
        let http_transient = matches!(seen.status, Some(408 | 429 | 500 | 502 | 503 | 504));
        let reason = if matches!(code, 6 | 28) {
            ": timeout"
        } else if o.retry_connrefused && code == 7 {
            ": connection refused"
        } else if (code == 0 || ((o.fail || o.fail_with_body) && code == 22)) && http_transient {
            ": HTTP error"
        } else if code != 0 && o.retry_all_errors {
            "(retrying all errors)"
        } else {
            return done(code);
        };
        let ms = seen
            .retry_after
            .map_or(sleep_ms, |s| s.saturating_mul(1000));
        warn(
            io,
            &o,
            &format!(
                "Problem {reason}. Will retry in {} seconds. {left} retries left.",
                ms / 1000
            ),
        );
        left -= 1;
        if o.retry_delay.is_none() {
            sleep_ms = (sleep_ms * 2).min(600_000);
        }
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// What one transfer saw, for `--retry`: the last status and its `Retry-After` (seconds).
#[derive(Default)]
struct Attempt {
    status: Option<u16>,
    retry_after: Option<u64>,
    /// The egress layer refused the request (policy, secrets, limits).
    refused_by_burrow: bool,
    /// What `-w` prints for this attempt.
    write_out: Option<String>,
}

/// One transfer (redirects followed): the output written, curl's exit code returned.
fn transfer(sh: &dyn Ctx, io: &Io, o: &Opts, mut url: String, seen: &mut Attempt) -> i32 {
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
            None => return err(io, o, 3, "URL rejected: Malformed input to a URL function"),
        };
        if o.verbose {
            let mut v = format!(
                "* Connecting to {} port {} through burrow's egress\n> {method} {} HTTP/1.1\r\n> Host: {}\r\n",
                target.host, target.port, target.path, target.authority
            );
            for (k, val) in request_headers(o, &target, body.as_deref()) {
                v.push_str(&format!(
                    "> {}: {}\r\n",
                    title_case(&k),
                    String::from_utf8_lossy(&val)
                ));
            }
            v.push_str("> \r\n");
            io.eprint(&v);
        }
        let r = request(o, &target, &method, body.as_deref());
        let resp = match r {
            Ok(r) => r,
            Err((code, msg)) => {
                seen.refused_by_burrow = msg.contains(" is denied")
                    || msg.contains("carries secret")
                    || msg.contains(" limit: ");
                return err(io, o, code, &msg);
            }
        };
        let status = resp.status;
        seen.status = Some(status);
        seen.retry_after = resp
            .header("retry-after")
            .and_then(|v| v.trim().parse().ok());
        if o.verbose {
            let head = resp.head_text();
            let v: String = head
                .split_inclusive("\r\n")
                .map(|l| format!("< {l}"))
                .collect();
            io.eprint(&v);
        }
        let redirect = matches!(status, 301 | 302 | 303 | 307 | 308);
        if o.location
            && redirect
            && let Some(loc) = resp.header("location")
        {
            if redirects >= o.max_redirs {
                return err(
                    io,
                    o,
                    47,
                    &format!("Maximum ({}) redirects followed", o.max_redirs),
                );
            }
            redirects += 1;
            if o.include {
                io.print(&resp.head_text());
            }
            url = join_url(&target, &loc);
            if o.verbose {
                io.eprint(&format!("* Issue another request to this URL: '{url}'\n"));
            }
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
            let dest_name = o
                .output
                .clone()
                .or_else(|| o.remote_name.then(|| target.file_name()));
            if let Some(name) = dest_name.filter(|n| n != "-") {
                match std::fs::File::create(sh.path(&name)) {
                    Ok(f) => out_file = Some(f),
                    Err(e) => {
                        return err(
                            io,
                            o,
                            23,
                            &format!(
                                "client returned ERROR on write of 0 bytes ({})",
                                sh_utility::format::io_msg(&e)
                            ),
                        );
                    }
                }
            }
            // --compressed: a gzip or deflate body is decoded on its way out.
            let encoding = o
                .compressed
                .then(|| resp.header("content-encoding"))
                .flatten()
                .map(|e| e.trim().to_ascii_lowercase());
            let sink = Out {
                io,
                file: out_file.take(),
            };
            let mut w = match encoding.as_deref() {
                Some("gzip" | "x-gzip") => Decode::Gzip(flate2::write::GzDecoder::new(sink)),
                Some("deflate") => Decode::Zlib(flate2::write::ZlibDecoder::new(sink)),
                _ => Decode::Plain(sink),
            };
            let mut bad = None;
            let r = resp.read_body(|chunk| {
                size += chunk.len() as u64;
                match w.write_all(chunk) {
                    Ok(()) => true,
                    Err(e) => {
                        bad = Some(e);
                        false
                    }
                }
            });
            let finished = w.finish();
            if let Some(e) = bad.or(finished.err()) {
                return match e.kind() {
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => err(
                        io,
                        o,
                        61,
                        &format!("Error while processing content unencoding: {e}"),
                    ),
                    _ => err(io, o, 23, "Failure writing output to destination"),
                };
            }
            if let Err((code, msg)) = r {
                return err(io, o, code, &msg);
            }
        } else {
            resp.drop_body();
        }
        if o.verbose {
            io.eprint(&format!(
                "* Connection #0 to host {} left intact\n",
                target.host
            ));
        }
        // -w is written once, after the last attempt (see the retry loop).
        if let Some(w) = &o.write_out {
            seen.write_out = Some(write_out(w, status, &url, size, redirects));
        }
        if failing {
            return err(
                io,
                o,
                22,
                &format!("The requested URL returned error: {status}"),
            );
        }
        return 0;
    }
}

/// A header name as curl shows it in `-v` (`user-agent` as `User-Agent`).
fn title_case(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The headers a request carries besides `Host`, in curl's order.
fn request_headers(o: &Opts, t: &Target, body: Option<&[u8]>) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |k: &str, v: &[u8]| out.push((k.to_string(), v.to_vec()));
    let has = |k: &str| o.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k));
    // curl's order: credentials, range, agent, accept, encodings, referer, the caller's
    // headers, then the body's.
    let user = o.user.clone().or_else(|| t.userinfo.clone());
    if let Some(u) = user
        && !has("authorization")
    {
        add(
            "authorization",
            format!("Basic {}", base64(u.as_bytes())).as_bytes(),
        );
    }
    if let Some(r) = &o.range
        && !has("range")
    {
        add("range", format!("bytes={r}").as_bytes());
    }
    if !has("user-agent") {
        add("user-agent", b"curl/8.5.0");
    }
    if !has("accept") {
        add("accept", b"*/*");
    }
    if o.compressed && !has("accept-encoding") {
        add("accept-encoding", b"deflate, gzip");
    }
    if let Some(r) = &o.referer
        && !has("referer")
    {
        add("referer", r.as_bytes());
    }
    for (k, v) in &o.headers {
        if !v.is_empty() {
            add(&k.to_ascii_lowercase(), v.as_bytes());
        }
    }
    if let Some(b) = body {
        add("content-length", b.len().to_string().as_bytes());
    }
    if body.is_some() && !has("content-type") {
        let t = o
            .body_type
            .as_deref()
            .unwrap_or("application/x-www-form-urlencoded");
        add("content-type", t.as_bytes());
    }
    out
}

/// curl's warning lines: `Warning: ` and the text wrapped at 79 columns at a blank.
fn warn(io: &Io, o: &Opts, text: &str) {
    if o.silent {
        return;
    }
    const WIDTH: usize = 79 - "Warning: ".len();
    let t = format!("{text}\n");
    let mut rest = t.as_bytes();
    let mut out = String::new();
    while !rest.is_empty() {
        out.push_str("Warning: ");
        if rest.len() > WIDTH {
            let mut cut = WIDTH - 1;
            while cut > 0 && !matches!(rest[cut], b' ' | b'\t') {
                cut -= 1;
            }
            if cut == 0 {
                cut = WIDTH - 1;
            }
            out.push_str(&String::from_utf8_lossy(&rest[..=cut]));
            out.push('\n');
            rest = &rest[cut + 1..];
        } else {
            out.push_str(&String::from_utf8_lossy(rest));
            rest = &[];
        }
    }
    io.eprint(&out);
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

/// A whole response fetched for another utility (pip): status, final URL, headers, body.
pub struct Fetched {
    pub status: u16,
    pub url: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// GETs `url` through the session's egress as curl would, following up to 10 redirects,
/// with `accept` as the Accept header. The error is curl's message for what failed.
pub fn get(url: &str, accept: &str, agent: &str) -> Result<Fetched, String> {
    send(
        "GET",
        url,
        &[("Accept", accept), ("User-Agent", agent)],
        None,
    )
}

/// The scheme, `host[:port]` and whether credentials are written in `url`.
pub fn url_parts(url: &str) -> Option<(String, String, bool)> {
    let t = parse_url(url)?;
    Some((t.scheme, t.authority, t.userinfo.is_some()))
}

/// A request for another utility (pip, git) through the session's egress: `method` with
/// `headers` and `body`, credentials in the URL sent as HTTP Basic. A GET follows up to 10
/// redirects (the final URL is in the answer); other methods are not redirected. The error is
/// curl's message for what failed.
pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Fetched, String> {
    let mut o = Opts::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-type") {
            o.body_type = Some(v.to_string());
        } else {
            o.headers.push((k.to_string(), v.to_string()));
        }
    }
    let mut url = url.to_string();
    for _ in 0..=10 {
        let t = parse_url(&url).ok_or_else(|| format!("URL rejected: {url}"))?;
        let resp = request(&o, &t, method, body).map_err(|(_, why)| why)?;
        if method == "GET"
            && matches!(resp.status, 301 | 302 | 303 | 307 | 308)
            && let Some(loc) = resp.header("location")
        {
            url = join_url(&t, &loc);
            resp.drop_body();
            continue;
        }
        let mut body = Vec::new();
        resp.read_body(|chunk| {
            body.extend_from_slice(chunk);
            true
        })
        .map_err(|(_, why)| why)?;
        return Ok(Fetched {
            status: resp.status,
            content_type: resp.header("content-type").unwrap_or_default(),
            url,
            body,
        });
    }
    Err("Maximum (10) redirects followed".into())
}

/// curl and wget, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[&[
    sh_utility::Command {
        name: "curl",
        run: |sh, argv, io| Ok(curl(sh, &argv[1..], io)),
    },
    sh_utility::Command {
        name: "wget",
        run: |sh, argv, io| Ok(wget(sh, &argv[1..], io)),
    },
]];
