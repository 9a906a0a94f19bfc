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
    Some(launch(bin, dir))
}

/// Starts a server on `dir/data` (made by initdb, or by pg_basebackup for a standby) on a
/// free port of 127.0.0.1, and waits until it answers.
fn launch(bin: PathBuf, dir: tempfile::TempDir) -> Server {
    let data = dir.path().join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    // A static's destructor never runs, so the server is stopped by a watchdog that waits
    // for this test process to end and then shuts it down and removes its files. A server
    // stopped while the process lives (a test's [`Private`] one) is left to its owner.
    let postgres = format!(
        "{} -D '{}' -h 127.0.0.1 -p {port} -k '{}' -c fsync=off -c max_connections=200",
        bin.join("postgres").display(),
        data.display(),
        dir.path().display()
    );
    let script = format!(
        "{postgres} & pg=$!; while [ -d /proc/{me} ] && kill -0 $pg 2>/dev/null; do sleep 0.5; done; \
         if [ ! -d /proc/{me} ]; then kill -INT $pg 2>/dev/null; wait $pg; rm -rf '{}'; fi",
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
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "PostgreSQL did not start within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Server {
    /// The directory of PostgreSQL's programs (`psql`, `pg_ctl`, `pg_basebackup`).
    pub fn bin(&self) -> &Path {
        &self.bin
    }

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

/// A server of a test's own, which it may stop and start again (the shared one of
/// [`server`] must stay up for the other tests). Stopped when dropped.
pub struct Private {
    pub server: Server,
    data: PathBuf,
    /// The server started by [`Private::restart`], reaped on drop.
    restarted: std::sync::Mutex<Option<Child>>,
}

impl Private {
    /// None when PostgreSQL is not installed (after the one printed line).
    pub fn start() -> Option<Private> {
        let server = start()?;
        let data = server._dir.path().join("data");
        Some(Private {
            server,
            data,
            restarted: std::sync::Mutex::new(None),
        })
    }

    /// A streaming replica of `primary` (a private server: it will be stopped), made with
    /// `pg_basebackup -R` and started on a port of its own; it answers reads until
    /// [`Private::promote`].
    pub fn standby_of(primary: &Server) -> Private {
        let dir = tempfile::tempdir().expect("tempdir");
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown of the standby's dir to postgres failed");
        }
        let data = dir.path().join("data");
        let out = as_owner(&primary.bin, "pg_basebackup")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "burrow",
            ])
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "-c", "fast", "--no-sync"])
            .output()
            .expect("pg_basebackup runs");
        assert!(
            out.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let server = launch(primary.bin.clone(), dir);
        Private {
            server,
            data,
            restarted: std::sync::Mutex::new(None),
        }
    }

    /// Promotes this standby (`pg_ctl promote`) and waits until it takes writes.
    pub fn promote(&self) {
        let out = as_owner(&self.server.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["promote", "-w"])
            .output()
            .expect("pg_ctl runs");
        assert!(
            out.status.success(),
            "pg_ctl promote failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .server
            .psql("postgres", "SELECT pg_is_in_recovery()")
            .map(|r| r.trim() != "f")
            .unwrap_or(true)
        {
            assert!(
                Instant::now() < deadline,
                "the standby was not promoted within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `standby` has replayed everything this server has written so far.
    pub fn wait_replayed(&self, standby: &Private) {
        let lsn = self
            .server
            .psql("postgres", "SELECT pg_current_wal_lsn()")
            .expect("the primary's position");
        let caught_up = format!(
            "SELECT pg_last_wal_replay_lsn() >= '{}'::pg_lsn",
            lsn.trim()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while standby
            .server
            .psql("postgres", &caught_up)
            .map(|r| r.trim() != "t")
            .unwrap_or(true)
        {
            assert!(
                Instant::now() < deadline,
                "the standby did not catch up within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn postmaster_pid(&self) -> Option<String> {
        std::fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string))
    }

    /// Sets `synchronous_standby_names` to `names` and waits until the server has reloaded
    /// it. With a standby name that never connects, every commit that waits for the WAL
    /// flush then waits for ever (until `""` is set again), and one made with
    /// `synchronous_commit` off returns at once: how tests see which commits wait.
    pub fn require_standby(&self, names: &str) {
        let set = format!("ALTER SYSTEM SET synchronous_standby_names = '{names}'");
        self.server.psql("postgres", &set).expect("alter system");
        self.server
            .psql("postgres", "SELECT pg_reload_conf()")
            .expect("reload");
        self.wait_for_setting("synchronous_standby_names", names);
    }

    /// Turns TLS on with this certificate chain and key (PEM), and waits until the server
    /// has reloaded it.
    pub fn enable_tls(&self, cert_pem: &str, key_pem: &str) {
        let cert = self.data.join("test-server.crt");
        let key = self.data.join("test-server.key");
        std::fs::write(&cert, cert_pem).expect("write the certificate");
        std::fs::write(&key, key_pem).expect("write the key");
        // The server refuses a key that others can read; it must own it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        if is_root() {
            let ok = Command::new("chown")
                .arg("postgres:postgres")
                .args([&cert, &key])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown of the TLS files to postgres failed");
        }
        for sql in [
            format!("ALTER SYSTEM SET ssl_cert_file = '{}'", cert.display()),
            format!("ALTER SYSTEM SET ssl_key_file = '{}'", key.display()),
            "ALTER SYSTEM SET ssl = on".to_string(),
            "SELECT pg_reload_conf()".to_string(),
        ] {
            self.server.psql("postgres", &sql).expect("TLS settings");
        }
        self.wait_for_setting("ssl", "on");
    }

    /// Puts `line` first in `pg_hba.conf`: it holds from the next [`Private::restart`].
    pub fn prepend_hba(&self, line: &str) {
        let path = self.data.join("pg_hba.conf");
        let old = std::fs::read_to_string(&path).expect("read pg_hba.conf");
        std::fs::write(&path, format!("{line}\n{old}")).expect("write pg_hba.conf");
    }

    fn wait_for_setting(&self, name: &str, value: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self
            .server
            .psql("postgres", &format!("SHOW {name}"))
            .expect("show")
            .trim()
            != value
        {
            assert!(Instant::now() < deadline, "the reload was not seen in 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server (fast shutdown: open sessions are disconnected) and waits for it.
    pub fn stop(&self) {
        if let Some(pid) = self.postmaster_pid() {
            let _ = Command::new("kill").args(["-INT", &pid]).status();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.data.join("postmaster.pid").exists() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not stop within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A crash and a restart: `pg_ctl restart -m immediate` (every server process ends at
    /// once, without a checkpoint or flushing the WAL buffers; the server recovers from its
    /// WAL on start), and waits until it answers again. The server then runs under pg_ctl
    /// with the options it was started with; [`Drop`] stops it by its pid file as before.
    pub fn restart_immediate(&self) {
        let log = self.server._dir.path().join("pg_ctl.log");
        let out = as_owner(&self.server.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["restart", "-m", "immediate", "-w", "-t", "60", "-l"])
            .arg(&log)
            .stdin(Stdio::null())
            .output()
            .expect("pg_ctl runs");
        assert!(
            out.status.success(),
            "pg_ctl restart -m immediate failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.server.psql("postgres", "SELECT 1").is_err() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not come back within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts it again on the same data and port, and waits until it answers.
    pub fn restart(&self) {
        let postgres = format!(
            "exec {} -D '{}' -h 127.0.0.1 -p {} -k '{}' -c fsync=off",
            self.server.bin.join("postgres").display(),
            self.data.display(),
            self.server.port,
            self.server._dir.path().display()
        );
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh", "-c", &postgres]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", &postgres]);
            c
        };
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts again");
        *self.restarted.lock().unwrap_or_else(|p| p.into_inner()) = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.server.psql("postgres", "SELECT 1").is_err() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not restart within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        self.stop();
        if let Some(mut c) = self
            .restarted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = c.wait();
        }
    }
}
