//! Network egress through the real CLI against HTTP servers this test starts on 127.0.0.1:
//! deny by default with a message that says how to allow, allow rules by address and port,
//! hostnames that resolve to a non-public address refused unless that address is allowed,
//! redirects re-checked, curl's exit codes, streaming to a file, the audit log (`net`
//! events, no query values), and forks inheriting the policy.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use sha2::Digest;

/// A tiny HTTP/1.1 server: `/hello` (200), `/big` (1 MiB), `/redirect?to=URL` (302), else
/// 404. Returns its port.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let head = line.starts_with("HEAD");
                let mut headers = String::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                    headers.push_str(&h);
                }
                let length: usize = headers
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .and_then(|v| v.trim().parse().ok())
                    })
                    .unwrap_or(0);
                let mut sent = vec![0u8; length];
                if std::io::Read::read_exact(&mut reader, &mut sent).is_err() {
                    return;
                }
                let (status, extra, body): (&str, String, Vec<u8>) = if path.starts_with("/show") {
                    // What curl sent that does not depend on its version.
                    let mut out =
                        format!("{} {path}\n", line.split_whitespace().next().unwrap_or(""));
                    for l in headers.lines() {
                        let low = l.to_ascii_lowercase();
                        if ["authorization", "content-type", "content-length", "x-"]
                            .iter()
                            .any(|p| low.starts_with(p))
                        {
                            out.push_str(&low);
                            out.push('\n');
                        }
                    }
                    out.push_str(&String::from_utf8_lossy(&sent));
                    ("200 OK", String::new(), out.into_bytes())
                } else if let Some(code) = path.strip_prefix("/status/") {
                    let code = match code {
                        "201" => "201 Created",
                        "204" => "204 No Content",
                        "400" => "400 Bad Request",
                        "403" => "403 Forbidden",
                        "500" => "500 Internal Server Error",
                        _ => "404 Not Found",
                    };
                    ("", code.to_string(), b"status body\n".to_vec())
                } else if path == "/echo" {
                    // The request's headers, in the body and in a response header.
                    let auth = headers
                        .lines()
                        .find_map(|l| l.strip_prefix("authorization: "))
                        .unwrap_or("")
                        .to_string();
                    // A digest of what arrived proves what the guest cannot see.
                    let digest: String = sha2::Sha256::digest(auth.as_bytes())
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    (
                        "200 OK",
                        format!("X-Seen: {auth}\r\nX-Seen-Sha256: {digest}\r\n"),
                        headers.into_bytes(),
                    )
                } else if path == "/hello" {
                    ("200 OK", String::new(), b"hello\n".to_vec())
                } else if path == "/big" {
                    ("200 OK", String::new(), vec![b'x'; 1 << 20])
                } else if let Some(to) = path.strip_prefix("/redirect?to=") {
                    ("302 Found", format!("Location: {to}\r\n"), Vec::new())
                } else {
                    ("404 Not Found", String::new(), b"no\n".to_vec())
                };
                // A status given in `extra` (the /status/ endpoints) replaces the default.
                let (status, extra) = if status.is_empty() {
                    (extra.clone(), String::new())
                } else {
                    (status.to_string(), extra)
                };
                let body = if status.starts_with("204") {
                    Vec::new()
                } else {
                    body
                };
                // Lower-case names, as wasi:http hands them to the guest, so `curl -i`
                // prints the same under both.
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\n{}content-length: {}\r\n\r\n",
                    extra
                        .split_inclusive("\r\n")
                        .map(|l| match l.split_once(':') {
                            Some((n, v)) => format!("{}:{v}", n.to_ascii_lowercase()),
                            None => l.to_string(),
                        })
                        .collect::<String>(),
                    body.len()
                );
                if !head {
                    let _ = conn.write_all(&body);
                }
            });
        }
    });
    port
}

/// The CLI with the helpers these tests use.
struct B(common::Cli);

impl B {
    fn new() -> B {
        B(common::Cli::new())
    }

    fn ok(&self, args: &[&str]) -> String {
        self.0.ok(args)
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.0.run(args)
    }

    /// `burrow sh S CMD`: (status, stdout, stderr).
    fn sh(&self, s: &str, cmd: &str) -> (i32, String, String) {
        self.run(&["sh", s, cmd])
    }
}

#[test]
fn deny_by_default_then_allow_by_address() {
    let port = serve();
    let b = B::new();
    b.ok(&["session", "new", "--name", "n"]);
    let url = format!("http://127.0.0.1:{port}/hello");
    let (code, out, err) = b.sh("n", &format!("curl -sS {url}; echo rc=$?"));
    assert_eq!(code, 0);
    assert_eq!(out, "rc=7\n");
    assert!(
        err.contains(&format!(
            "curl: (7) Failed to connect to 127.0.0.1 port {port}: network access to 127.0.0.1 is denied: this session has no network rule (allow it with `burrow net SESSION --allow 127.0.0.1:{port}`)"
        )),
        "{err}"
    );
    b.ok(&["net", "n", "--allow", &format!("127.0.0.1:{port}")]);
    let (_, out, err) = b.sh("n", &format!("curl -s {url}; echo rc=$?"));
    assert_eq!(out, "hello\nrc=0\n", "{err}");
    // Another port of the same address is not allowed.
    let other = serve();
    let (_, out, _) = b.sh(
        "n",
        &format!("curl -s http://127.0.0.1:{other}/hello; echo rc=$?"),
    );
    assert_eq!(out, "rc=7\n");
    // The audit log: one event per request, allowed or not, without query values.
    b.sh("n", &format!("curl -s '{url}?token=secret' >/dev/null"));
    let log = b.ok(&["log", "n", "--kind", "net"]);
    assert_eq!(log.lines().count(), 4, "{log}");
    assert!(log.contains(r#""allowed":false"#) && log.contains(r#""allowed":true"#));
    assert!(
        log.contains(&format!(r#""rule":"127.0.0.1:{port}""#)),
        "{log}"
    );
    assert!(
        !log.contains("token"),
        "a query value reached the log: {log}"
    );
    // Forks inherit the policy; revoking it in the parent leaves the fork's.
    let fork = b.ok(&["fork", "n"]).trim().to_string();
    b.ok(&["net", "n", "--revoke", &format!("127.0.0.1:{port}")]);
    let (_, out, _) = b.sh(&fork, &format!("curl -s {url}"));
    assert_eq!(out, "hello\n");
    let (_, out, _) = b.sh("n", &format!("curl -s {url}; echo rc=$?"));
    assert_eq!(out, "rc=7\n");
    // Allowed but nobody listening: curl's 7, recorded as allowed with its error.
    b.ok(&["net", "n", "--allow", "127.0.0.1:1"]);
    let (_, out, _) = b.sh("n", "curl -s http://127.0.0.1:1/; echo rc=$?");
    assert_eq!(out, "rc=7\n");
    let log = b.ok(&["log", "n", "--kind", "net"]);
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains(r#""allowed":true"#) && last.contains("failed to connect"),
        "{last}"
    );
}

#[test]
fn hostnames_that_resolve_to_private_addresses_need_the_address_allowed() {
    let port = serve();
    let b = B::new();
    // A hostname rule alone: localhost resolves to loopback, which no rule names.
    b.ok(&[
        "session",
        "new",
        "--name",
        "h",
        "--allow-net",
        &format!("localhost:{port}"),
    ]);
    let (_, out, err) = b.sh(
        "h",
        &format!("curl -sS http://localhost:{port}/hello; echo rc=$?"),
    );
    assert_eq!(out, "rc=7\n");
    assert!(err.contains("resolves to"), "{err}");
    assert!(err.contains("non-public address"), "{err}");
    // With the address allowed as well, the name works.
    b.ok(&["net", "h", "--allow", &format!("127.0.0.1:{port}")]);
    let (_, out, err) = b.sh("h", &format!("curl -s http://localhost:{port}/hello"));
    assert_eq!(out, "hello\n", "{err}");
}

#[test]
fn curl_flags_redirects_and_exit_codes() {
    let port = serve();
    let denied = serve();
    let b = B::new();
    b.ok(&[
        "session",
        "new",
        "--name",
        "curl",
        "--allow-net",
        &format!("127.0.0.1:{port}"),
    ]);
    let base = format!("http://127.0.0.1:{port}");
    let cases: Vec<(String, &str)> = vec![
        (
            format!(
                "curl -s -o big.bin -w '%{{http_code}} %{{size_download}}\\n' {base}/big; wc -c < big.bin"
            ),
            "200 1048576\n1048576\n",
        ),
        (format!("curl -sf {base}/missing; echo rc=$?"), "rc=22\n"),
        (format!("curl -s {base}/missing; echo rc=$?"), "no\nrc=0\n"),
        (
            format!("curl -s --fail-with-body {base}/missing; echo rc=$?"),
            "no\nrc=22\n",
        ),
        (
            format!("curl -sI {base}/hello | head -1"),
            "HTTP/1.1 200 OK\r\n",
        ),
        (
            format!("curl -sL '{base}/redirect?to={base}/hello'"),
            "hello\n",
        ),
        (
            format!("curl -s -w '%{{http_code}}\\n' '{base}/redirect?to={base}/hello'"),
            "302\n",
        ),
        (
            format!("curl -sL '{base}/redirect?to=http://127.0.0.1:{denied}/hello'; echo rc=$?"),
            "rc=7\n",
        ),
        (
            "curl -s http://nonexistent.invalid/; echo rc=$?".to_string(),
            "rc=7\n",
        ),
        ("curl --frobnicate x; echo rc=$?".to_string(), "rc=2\n"),
        ("curl -F a=b http://x/; echo rc=$?".to_string(), "rc=2\n"),
        ("curl -s ftp://x/; echo rc=$?".to_string(), "rc=1\n"),
        ("which curl".to_string(), "/usr/bin/curl\n"),
        (
            format!("wget -q {base}/hello && cat hello && wget -q {base}/hello && cat hello.1"),
            "hello\nhello\n",
        ),
        (format!("wget -qO- {base}/hello"), "hello\n"),
        (
            format!("wget -q -O w.txt '{base}/redirect?to={base}/hello'; cat w.txt"),
            "hello\n",
        ),
        (format!("wget -q {base}/missing; echo rc=$?"), "rc=8\n"),
        (
            format!("wget -q http://127.0.0.1:{denied}/hello; echo rc=$?"),
            "rc=4\n",
        ),
        ("wget --mirror http://x/; echo rc=$?".to_string(), "rc=2\n"),
    ];
    let mut failures = Vec::new();
    for (cmd, want) in &cases {
        let (_, out, err) = b.sh("curl", cmd);
        if out != *want {
            failures.push(format!("{cmd}\n want {want:?}\n got  {out:?} {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let (_, _, err) = b.sh("curl", "curl --frobnicate x");
    assert_eq!(
        err,
        "curl: option --frobnicate: is unknown\ncurl: try 'curl --help' or 'curl --manual' for more information\n"
    );
}

#[test]
fn secrets_reach_only_their_hosts_and_never_the_guest() {
    let port = serve();
    let b = B::new();
    let value = "s3cr3t-value-4711";
    let env = [("TOKEN", value)];
    let (code, _, err) = b.0.run_env(
        &env,
        &[
            "session",
            "new",
            "--name",
            "sec",
            "--allow-net",
            &format!("127.0.0.1:{port}"),
            "--allow-net",
            &format!("localhost:{port}"),
            "--secret",
            "TOKEN@127.0.0.1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let sh = |cmd: &str| b.0.run_env(&env, &["sh", "sec", cmd]);
    // The guest holds a placeholder.
    let (_, out, _) = sh("echo $TOKEN");
    assert!(out.starts_with("burrow-secret-"), "{out}");
    let placeholder = out.trim().to_string();
    // Sent to its host, the value goes out; the echo comes back as the placeholder.
    let (_, out, err) = sh(&format!(
        "curl -s -i -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:{port}/echo"
    ));
    assert!(!out.contains(value) && !err.contains(value), "{out}{err}");
    assert!(
        out.contains(&format!("x-seen: Bearer {placeholder}")),
        "the echo of the value comes back as the placeholder: {out}"
    );
    let want: String = sha2::Sha256::digest(format!("Bearer {value}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        out.contains(&format!("x-seen-sha256: {want}")),
        "the server should have received the value: {out}"
    );
    // HTTP Basic credentials built from the placeholder (curl -u) get the value too.
    let (_, out, _) = sh(&format!(
        "curl -s -u \"x-access-token:$TOKEN\" http://127.0.0.1:{port}/echo"
    ));
    assert!(out.contains("authorization: Basic "), "{out}");
    assert!(!out.contains(value));
    // To a host the secret is not bound to: refused, and logged.
    let (_, out, err) = sh(&format!(
        "curl -sS -H \"Authorization: Bearer $TOKEN\" http://localhost:{port}/echo; echo rc=$?"
    ));
    assert_eq!(out, "rc=7\n");
    assert!(err.contains("carries secret TOKEN"), "{err}");
    // Never in the store's log or the workspace.
    let log = b.ok(&["log", "sec"]);
    assert!(!log.contains(value), "{log}");
    assert!(log.contains(r#""secrets":["TOKEN"]"#), "{log}");
    // Without the variable in burrow's environment, the request is refused with the reason.
    let (_, out, err) = b.run(&[
        "sh",
        "sec",
        &format!(
            "curl -sS -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:{port}/echo; echo rc=$?"
        ),
    ]);
    assert_eq!(out, "rc=7\n");
    assert!(
        err.contains("secret TOKEN is not set in burrow's environment"),
        "{err}"
    );
}

/// A TLS server with a certificate for 127.0.0.1 and localhost from a throwaway CA: its port
/// and the CA's PEM.
fn serve_tls() -> (u16, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&key, &ca_cert, &ca_key)
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(tcp) = conn else { continue };
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(tls) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut s = rustls::StreamOwned::new(tls, tcp);
                let mut reader = BufReader::new(&mut s);
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                }
                let body = "hello over tls\n";
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    (port, ca_cert.pem())
}

#[test]
fn https_with_a_private_ca() {
    let (port, ca_pem) = serve_tls();
    let b = B::new();
    let ca_file = b.0.db.with_file_name("ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    b.ok(&[
        "session",
        "new",
        "--name",
        "tls",
        "--allow-net",
        &format!("127.0.0.1:{port}"),
    ]);
    let url = format!("https://127.0.0.1:{port}/");
    // Trusted through BURROW_CA_FILE (an operator setting the guest never sees).
    let ca = ca_file.to_str().unwrap();
    let (_, out, err) = b.0.run_env(
        &[("BURROW_CA_FILE", ca)],
        &["sh", "tls", &format!("curl -sS {url}")],
    );
    assert_eq!(out, "hello over tls\n", "{err}");
    // Without it the certificate is unknown: curl's 60.
    let (_, out, err) = b.run(&["sh", "tls", &format!("curl -sS {url}; echo rc=$?")]);
    assert_eq!(out, "rc=60\n");
    assert!(err.contains("SSL certificate problem"), "{err}");
}

/// Invocations compared with real curl (run by bash on this machine) against the same local
/// server: stdout, stderr and the exit status must agree. `{U}` is the server's base URL.
const CURL_CORPUS: &[&str] = &[
    "curl -s {U}/hello",
    "curl {U}/hello 2>/dev/null",
    "curl -sS {U}/hello",
    "curl -s {U}/status/404; echo \" rc=$?\"",
    "curl -sf {U}/status/404; echo rc=$?",
    "curl -sSf {U}/status/404; echo rc=$?",
    "curl -s --fail-with-body {U}/status/500; echo rc=$?",
    "curl -sf {U}/status/201; echo rc=$?",
    "curl -s -o /dev/null -w '%{http_code}\\n' {U}/status/403",
    "curl -s -o /dev/null -w '%{http_code}\\n' {U}/hello",
    "curl -s -w '\\n%{http_code} %{size_download}\\n' {U}/hello",
    "curl -s -o out.txt {U}/hello; cat out.txt",
    "curl -s --output out2.txt {U}/big; wc -c < out2.txt",
    "curl -sO {U}/hello; cat hello",
    "curl -s -i {U}/hello",
    "curl -s -i {U}/status/404",
    "curl -sI {U}/hello",
    "curl -s --head {U}/status/404",
    "curl -s -X POST {U}/show",
    "curl -s -X DELETE {U}/show/x",
    "curl -s -X PUT -d 'a=1' {U}/show",
    "curl -s -d 'a=1&b=2' {U}/show",
    "curl -s -d a=1 -d b=2 {U}/show",
    "curl -s --data-raw '@notafile' {U}/show",
    "printf 'x=1\\ny=2\\n' > f.txt; curl -s -d @f.txt {U}/show",
    "printf 'x=1\\ny=2\\n' > f.txt; curl -s --data-binary @f.txt {U}/show",
    "curl -s -H 'Content-Type: application/json' -d '{\"k\":1}' {U}/show",
    "curl -s -H 'X-One: 1' -H 'X-Two: two words' {U}/show",
    "curl -s -G -d q=burrow -d n=1 {U}/show",
    "curl -s -u alice:secret {U}/show",
    "curl -s --user bob: {U}/show",
    "curl -s -A 'agent/1.0' -o /dev/null -w '%{http_code}\\n' {U}/hello",
    "curl -s -L '{U}/redirect?to={U}/hello'",
    "curl -s '{U}/redirect?to={U}/hello'; echo rc=$?",
    "curl -s -w '%{http_code}\\n' -o /dev/null '{U}/redirect?to={U}/hello'",
    "curl -s -L -w '%{http_code} %{num_redirects}\\n' -o /dev/null '{U}/redirect?to={U}/hello'",
    "curl -s -L --max-redirs 0 '{U}/redirect?to={U}/hello'; echo rc=$?",
    "curl -s -L -i '{U}/redirect?to={U}/hello'",
    "curl -sL -X POST -d a=1 '{U}/redirect?to={U}/show'",
    "curl -s -m 5 {U}/hello",
    "curl -s --connect-timeout 5 {U}/hello",
    "curl -s --url {U}/hello",
    "curl -s {U}/hello -o o3.txt && cat o3.txt",
    "curl -s {U}/hello | wc -c",
    "curl; echo rc=$?",
    "curl -s; echo rc=$?",
    "curl --nonexistent-flag {U}/hello; echo rc=$?",
];

#[test]
fn curl_agrees_with_real_curl() {
    let real = std::process::Command::new("curl").arg("--version").output();
    if real.is_err() {
        assert!(
            std::env::var_os("BURROW_REQUIRE_REFERENCE").is_none(),
            "curl is required (BURROW_REQUIRE_REFERENCE)"
        );
        println!("SKIPPED: the curl comparison needs curl (apt-get install curl)");
        return;
    }
    let port = serve();
    let base = format!("http://127.0.0.1:{port}");
    let b = B::new();
    b.ok(&[
        "session",
        "new",
        "--name",
        "base",
        "--allow-net",
        &format!("127.0.0.1:{port}"),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (i, snippet) in CURL_CORPUS.iter().enumerate() {
        let cmd = snippet.replace("{U}", &base);
        let dir = tmp.path().join(format!("c{i}"));
        std::fs::create_dir(&dir).unwrap();
        let want = std::process::Command::new("bash")
            .arg("-c")
            .arg(&cmd)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &dir)
            .output()
            .unwrap();
        let fork = b.ok(&["fork", "base"]).trim().to_string();
        let (code, out, err) = b.run(&["sh", &fork, &cmd]);
        let want = (
            want.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&want.stdout).into_owned(),
            String::from_utf8_lossy(&want.stderr).into_owned(),
        );
        if (code, &out, &err) != (want.0, &want.1, &want.2) {
            failures.push(format!(
                "--- {cmd}\n curl:   {:?} {:?} {:?}\n burrow: {code} {out:?} {err:?}",
                want.0, want.1, want.2
            ));
        }
    }
    println!(
        "curl corpus: {}/{} invocations identical to real curl",
        CURL_CORPUS.len() - failures.len(),
        CURL_CORPUS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
