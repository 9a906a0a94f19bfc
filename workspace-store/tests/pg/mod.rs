//! A real PostgreSQL server for the tests: Debian's `postgresql` binaries, initialised in a
//! temp dir and started on 127.0.0.1 (as the `postgres` user when the tests run as root),
//! one server per test process, stopped when the process ends. Without PostgreSQL the tests
//! skip with one line saying what to install, unless `BURROW_REQUIRE_POSTGRES=1` (CI).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Server {
    pub port: u16,
    bin: PathBuf,
    _dir: tempfile::TempDir,
    _child: Child,
}

fn bindir() -> Option<PathBuf> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if p.join("initdb").exists() && p.join("postgres").exists() {
            return Some(p);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("postgres").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A command run as the server's owner (`postgres` when we are root: initdb refuses root).
fn as_owner(bin: &Path, prog: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(prog));
        c
    } else {
        Command::new(bin.join(prog))
    }
}

fn start() -> Option<Server> {
    let Some(bin) = bindir() else {
        if std::env::var("BURROW_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            panic!("BURROW_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries were found");
        }
        eprintln!(
            "skipping the PostgreSQL tests: install PostgreSQL (Debian: apt install postgresql)"
        );
        return None;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    if is_root() {
        let ok = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "chown of the PostgreSQL data dir to postgres failed");
    }
    let out = as_owner(&bin, "initdb")
        .args(["-D"])
        .arg(&data)
        .args([
            "-U",
            "burrow",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ])
        .output()
        .expect("initdb runs");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    // A statics' destructor never runs, so the server is stopped by a watchdog that waits
    // for this test process to end (or the server to stop) and then shuts it down.
    let postgres = format!(
        "{} -D '{}' -h 127.0.0.1 -p {port} -k '{}' -c fsync=off -c max_connections=200",
        bin.join("postgres").display(),
        data.display(),
        dir.path().display()
    );
    let script = format!(
        "{postgres} & pg=$!; while [ -d /proc/{me} ] && kill -0 $pg 2>/dev/null; do sleep 0.5; done; \
         kill -INT $pg 2>/dev/null; wait $pg; rm -rf '{}'",
        dir.path().display(),
        me = std::process::id()
    );
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", "sh", "-c", &script]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", &script]);
        c
    };
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("postgres starts");
    let server = Server {
        port,
        bin,
        _dir: dir,
        _child: child,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if server.psql("postgres", "SELECT 1").is_ok() {
            return Some(server);
        }
        assert!(
            Instant::now() < deadline,
            "PostgreSQL did not start within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Server {
    /// Runs one SQL statement with psql.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "burrow",
                "-d",
                db,
            ])
            .args(["-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    pub fn url(&self, db: &str) -> String {
        format!("postgres://burrow@127.0.0.1:{}/{db}", self.port)
    }

    /// A new, empty database; returns its URL.
    pub fn fresh_db(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE {name}"))
            .expect("create database");
        self.url(&name)
    }
}

/// The test process's server, started on first use; None (after one printed line) when
/// PostgreSQL is not installed.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER.get_or_init(start).as_ref()
}
