//! A real PgBouncer for the tests: Debian's `pgbouncer`, configured in a temp dir and started
//! on 127.0.0.1 in front of a test's PostgreSQL (`pg/mod.rs`), as the `postgres` user when
//! the tests run as root (PgBouncer refuses root). Stopped when dropped, or, for the shared
//! one of [`shared`], by a watchdog when the test process ends. Without PgBouncer the tests
//! skip with one line saying what to install, unless `BURROW_REQUIRE_PGBOUNCER=1` (CI).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::pg;

/// A PgBouncer of the test's own, stopped when dropped.
pub struct Bouncer {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

fn pgbouncer_bin() -> Option<PathBuf> {
    ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            let out = Command::new("sh")
                .args(["-c", "command -v pgbouncer"])
                .output()
                .ok()?;
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            p.exists().then_some(p)
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Bouncer {
    /// PgBouncer in `mode` with `pool_size` server connections per database and user, in
    /// front of `server`; None (after one printed line) when it is not installed.
    pub fn start(server: &pg::Server, mode: &str, pool_size: u32) -> Option<Bouncer> {
        let Some(bin) = pgbouncer_bin() else {
            if std::env::var("BURROW_REQUIRE_PGBOUNCER").as_deref() == Ok("1") {
                panic!("BURROW_REQUIRE_PGBOUNCER=1 but pgbouncer is not installed");
            }
            eprintln!("skipping the PgBouncer tests: install it (Debian: apt install pgbouncer)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let d = dir.path().display();
        std::fs::write(dir.path().join("userlist.txt"), "\"burrow\" \"\"\n").expect("userlist");
        std::fs::write(
            dir.path().join("pgbouncer.ini"),
            format!(
                "[databases]\n\
                 * = host=127.0.0.1 port={pg}\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir =\n\
                 auth_type = trust\n\
                 auth_file = {d}/userlist.txt\n\
                 admin_users = burrow\n\
                 pool_mode = {mode}\n\
                 default_pool_size = {pool_size}\n\
                 max_client_conn = 500\n\
                 logfile = {d}/pgbouncer.log\n\
                 pidfile = {d}/pgbouncer.pid\n",
                pg = server.port
            ),
        )
        .expect("pgbouncer.ini");
        // PgBouncer refuses to run as root.
        let mut cmd = if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown of the PgBouncer dir to postgres failed");
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh"]);
            c
        } else {
            Command::new("sh")
        };
        // A watchdog stops it once this test process has ended (a static's destructor never
        // runs); a dropped one is stopped by its pidfile.
        let script = format!(
            "{} '{d}/pgbouncer.ini' & pb=$!; \
             while [ -d /proc/{me} ] && kill -0 $pb 2>/dev/null; do sleep 0.5; done; \
             kill -TERM $pb 2>/dev/null",
            bin.display(),
            me = std::process::id()
        );
        let child = cmd
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pgbouncer starts");
        let bouncer = Bouncer {
            port,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "PgBouncer did not start within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(bouncer)
    }

    /// `db` through this PgBouncer, with `options` (`pool_mode=...`) on the URL.
    pub fn url(&self, db: &str, options: &str) -> String {
        format!("postgres://burrow@127.0.0.1:{}/{db}?{options}", self.port)
    }
}

impl Bouncer {
    /// Runs a command of PgBouncer's admin console.
    pub fn admin(&self, command: &str) -> String {
        let server = pg::server().expect("PostgreSQL's psql");
        let out = Command::new(server.bin().join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "burrow", "-d", "pgbouncer", "-qAt", "-c", command])
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        // PgBouncer exits at once on SIGTERM; its watchdog then ends.
        if let Ok(pid) = std::fs::read_to_string(self._dir.path().join("pgbouncer.pid")) {
            let _ = Command::new("kill").args(["-TERM", pid.trim()]).status();
        }
        let _ = self.child.wait();
    }
}

/// The test process's PgBouncer in transaction mode in front of its PostgreSQL, started on
/// first use; None (after one printed line) when either is not installed.
pub fn shared() -> Option<&'static Bouncer> {
    static BOUNCER: OnceLock<Option<Bouncer>> = OnceLock::new();
    BOUNCER
        .get_or_init(|| Bouncer::start(pg::server()?, "transaction", 10))
        .as_ref()
}
