//! A real S3-API server for the tests: moto's server mode (`moto_server`, from PyPI's
//! `moto[server]`), a separate process speaking S3 over HTTP on 127.0.0.1, one per test
//! process, stopped when the process ends. `BURROW_MOTO_SERVER` names the program (`.ci/run`
//! installs it in a venv); otherwise it is looked up on PATH. Without it the tests skip with
//! one line saying what to install, unless `BURROW_REQUIRE_S3=1` (CI).
//!
//! moto was chosen because it installs from PyPI in seconds (RustFS and s3s-fs would each
//! add minutes of compiling to CI) and implements the parts of the API the store uses:
//! signed PUT/GET/HEAD, ListObjectsV2 with Last-Modified, and DeleteObjects.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Server {
    pub port: u16,
    _child: Child,
}

/// The credentials the tests sign with (moto accepts any).
pub const KEY_ID: &str = "burrow-test";
pub const SECRET: &str = "burrow-test-secret";

fn program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BURROW_MOTO_SERVER") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("moto_server"))
        .find(|p| p.exists())
}

fn start() -> Option<Server> {
    let Some(prog) = program() else {
        if std::env::var("BURROW_REQUIRE_S3").as_deref() == Ok("1") {
            panic!("BURROW_REQUIRE_S3=1 but moto_server was not found (BURROW_MOTO_SERVER)");
        }
        eprintln!(
            "skipping the object storage tests: install moto's S3 server (pip install 'moto[server]')"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    // A static's destructor never runs: a watchdog stops the server when this process ends.
    let script = format!(
        "'{}' -H 127.0.0.1 -p {port} & s=$!; while [ -d /proc/{me} ] && kill -0 $s 2>/dev/null; do sleep 0.5; done; kill $s 2>/dev/null; wait $s",
        prog.display(),
        me = std::process::id()
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let server = Server {
        port,
        _child: child,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.request("GET", "/").is_err() {
        assert!(
            Instant::now() < deadline,
            "moto_server did not answer within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(server)
}

impl Server {
    /// One HTTP/1.1 request with a dummy signature (moto wants one on deletes but does not
    /// check it); returns the status and the whole response.
    fn exchange(&self, method: &str, path: &str) -> std::io::Result<(u16, String)> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nAuthorization: AWS4-HMAC-SHA256 Credential={KEY_ID}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0\r\nConnection: close\r\n\r\n",
            self.port
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        let status = out
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad response: {out:.80}")))?;
        Ok((status, out))
    }

    /// [`Server::exchange`]'s status.
    pub fn request(&self, method: &str, path: &str) -> std::io::Result<u16> {
        Ok(self.exchange(method, path)?.0)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A new, empty bucket; returns the `s3://` URL of a prefix in it.
    pub fn fresh_bucket(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "t{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let status = self
            .request("PUT", &format!("/{name}"))
            .expect("create bucket");
        assert_eq!(status, 200, "creating bucket {name}");
        format!(
            "s3://{name}/store?endpoint={}&region=us-east-1",
            self.endpoint()
        )
    }

    /// How many objects a bucket's listing shows.
    pub fn count(&self, url: &str) -> usize {
        self.keys(url).len()
    }

    /// The keys a bucket's listing shows.
    pub fn keys(&self, url: &str) -> Vec<String> {
        let bucket = url
            .trim_start_matches("s3://")
            .split('/')
            .next()
            .unwrap_or_default();
        let (_, body) = self
            .exchange("GET", &format!("/{bucket}?list-type=2&max-keys=100000"))
            .expect("list the bucket");
        body.split("<Key>")
            .skip(1)
            .filter_map(|k| k.split("</Key>").next())
            .map(str::to_string)
            .collect()
    }
}

/// The credentials as [`burrow_store::Location::object_options`].
pub fn options() -> Vec<(String, String)> {
    vec![
        ("access_key_id".into(), KEY_ID.into()),
        ("secret_access_key".into(), SECRET.into()),
    ]
}

/// The credentials as a `burrow` process reads them.
pub fn env() -> [(&'static str, &'static str); 2] {
    [
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ]
}

/// The test process's server, started on first use; None (after one printed line) when
/// moto is not installed.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER.get_or_init(start).as_ref()
}
