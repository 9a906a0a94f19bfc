//! `burrow bench`'s git rows: burrow's git (the shell's `git`, over the egress layer) against
//! the machine's native git on the same generated repository served by `git http-backend`
//! on 127.0.0.1, in the same run: clone, `git status` of the clean clone, `git diff --stat`
//! after ten edits. Without git the rows are skipped with a note. The CGI wrapper is also
//! the smart-HTTP server of cli/tests/git.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::{BenchError, Ctx, Measure, R, source_tree, stats};

/// git's `http-backend` program, if git is installed.
pub fn http_backend() -> Option<PathBuf> {
    let out = Command::new("git").arg("--exec-path").output().ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("git-http-backend");
    p.is_file().then_some(p)
}

/// Serves the bare repositories under `root` over smart HTTP (`git http-backend` behind a
/// CGI wrapper) on 127.0.0.1; those under `root/private/` only to HTTP Basic
/// `x-access-token:TOKEN` when a token is given. Returns the port; the server lives as long
/// as the process.
pub fn serve_git_http(root: PathBuf, token: Option<String>) -> std::io::Result<u16> {
    let backend =
        http_backend().ok_or_else(|| std::io::Error::other("git-http-backend not found"))?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (backend, root, token) = (backend.clone(), root.clone(), token.clone());
            std::thread::spawn(move || {
                let _ = cgi(conn, &backend, &root, token.as_deref());
            });
        }
    });
    Ok(port)
}

fn cgi(
    mut conn: std::net::TcpStream,
    backend: &Path,
    root: &Path,
    token: Option<&str>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("GET").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers: Vec<(String, String)> = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path.starts_with("/private/") {
        use base64::Engine;
        let want = token.map(|t| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{t}"))
            )
        });
        if want.is_none() || header("authorization") != want {
            write!(
                conn,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )?;
            return Ok(());
        }
    }
    let mut child = Command::new(backend)
        .env_clear()
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("stdin"))?;
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut out = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut out)?;
    }
    let _ = feeder.join();
    let _ = child.wait();
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (head, content) = match split {
        Some((i, n)) => (
            String::from_utf8_lossy(&out[..i]).into_owned(),
            &out[i + n..],
        ),
        None => (String::new(), &out[..]),
    };
    let mut status = "200 OK".to_string();
    let mut resp = String::new();
    for l in head.lines() {
        if let Some(s) = l.strip_prefix("Status:") {
            status = s.trim().to_string();
        } else if !l.is_empty() {
            resp.push_str(l.trim_end());
            resp.push_str("\r\n");
        }
    }
    write!(
        conn,
        "HTTP/1.1 {status}\r\n{resp}content-length: {}\r\nconnection: close\r\n\r\n",
        content.len()
    )?;
    conn.write_all(content)
}

fn native_git(dir: &Path, args: &[&str]) -> R<()> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()?;
    if !out.status.success() {
        return Err(BenchError::Other(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

pub(super) fn git(cx: &mut Ctx, report: &mut dyn FnMut(&Measure)) -> R<()> {
    if !cx.wants("git") {
        return Ok(());
    }
    if http_backend().is_none() {
        eprintln!("bench: git rows skipped: git is not installed (apt-get install git)");
        return Ok(());
    }
    let (files, each) = if cx.cfg.quick {
        (200, 1000)
    } else {
        (10_000, 10_000)
    };
    let base = cx.dir.path().join("git");
    let src = base.join("src");
    std::fs::create_dir_all(&src)?;
    let bytes = source_tree(&src, files, each)?;
    native_git(&src, &["init", "-q", "-b", "main"])?;
    native_git(&src, &["add", "-A"])?;
    native_git(&src, &["commit", "-q", "-m", "generated"])?;
    let served = base.join("served");
    std::fs::create_dir_all(&served)?;
    native_git(&base, &["clone", "-q", "--bare", "src", "served/repo.git"])?;
    let port = serve_git_http(served, None)?;
    let url = format!("http://127.0.0.1:{port}/repo.git");

    let sb = cx.sandbox("git.db")?;
    let runs = cx.n(1, 3);
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut last_session = String::new();
    for i in 0..runs {
        let id = sb.create(None)?.id;
        let mut rule = burrow_host::net::NetPolicy::default();
        rule.allow(&[format!("127.0.0.1:{port}")])
            .map_err(|e| BenchError::Other(e.to_string()))?;
        sb.set_net(&id, rule)?;
        let t = Instant::now();
        let r = sb.sh(&id, &format!("git clone -q {url} repo"))?;
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        if r.report.exit_code != 0 {
            return Err(BenchError::Other(format!(
                "burrow's git clone: {}",
                String::from_utf8_lossy(&r.report.stderr)
            )));
        }
        let dir = base.join(format!("native-{i}"));
        std::fs::create_dir_all(&dir)?;
        let t = Instant::now();
        native_git(&dir, &["clone", "-q", &url, "repo"])?;
        theirs.push(t.elapsed().as_secs_f64() * 1e3);
        last_session = id;
    }
    let native_clone = stats(theirs);
    cx.record(
        &format!("git.clone_{files}files"),
        "ms",
        stats(ours),
        Some(native_clone.0),
        &format!(
            "git clone of a generated {files}-file, {:.1} MB repository from git http-backend on loopback, a shell call; baseline: native git clone of the same",
            bytes as f64 / 1e6
        ),
        report,
    );
    // status of the clean clone, then diff --stat after ten edits.
    let native_repo = base.join("native-0/repo");
    let n = cx.n(3, 10);
    let time_both = |cmd: &str, args: &[&str]| -> R<((f64, f64), (f64, f64))> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let t = Instant::now();
            let r = sb.sh(
                &last_session,
                &format!("cd /workspace/repo && {cmd} >/dev/null"),
            )?;
            a.push(t.elapsed().as_secs_f64() * 1e3);
            if r.report.exit_code != 0 {
                return Err(BenchError::Other(format!(
                    "{cmd}: {}",
                    String::from_utf8_lossy(&r.report.stderr)
                )));
            }
            let t = Instant::now();
            native_git(&native_repo, args)?;
            b.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok((stats(a), stats(b)))
    };
    let (ours, theirs) = time_both("git status", &["status"])?;
    cx.record(
        "git.status_clean",
        "ms",
        ours,
        Some(theirs.0),
        "git status of the clean clone, a shell call; baseline: native git status",
        report,
    );
    let edit = "for f in $(git ls-files | head -10); do echo edited >> $f; done";
    let r = sb.sh(&last_session, &format!("cd /workspace/repo && {edit}"))?;
    if r.report.exit_code != 0 {
        return Err(BenchError::Other("editing the clone failed".into()));
    }
    let out = Command::new("bash")
        .args(["-c", edit])
        .current_dir(&native_repo)
        .status()?;
    if !out.success() {
        return Err(BenchError::Other("editing the native clone failed".into()));
    }
    let (ours, theirs) = time_both("git diff --stat", &["diff", "--stat"])?;
    cx.record(
        "git.diff_stat_10_edits",
        "ms",
        ours,
        Some(theirs.0),
        "git diff --stat after 10 edited files, a shell call; baseline: native git",
        report,
    );
    Ok(())
}
