//! Shared test support: the guest programs are built for wasm32-wasip2 once per test run.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Builds the `tools-wasm` guests (once) and returns the path of `name`.wasm.
pub fn guest(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let root = workspace_root();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let status = std::process::Command::new(env!("CARGO"))
            .current_dir(&root)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "-p",
                "fs-probe",
            ])
            .status()
            .expect("run cargo build for the guests");
        assert!(status.success(), "building the wasm guests failed");
        target.join("wasm32-wasip2").join("release")
    });
    dir.join(format!("{name}.wasm"))
}

/// A fresh engine with its own component cache directory.
pub fn engine(cache: &Path) -> burrow_host::Engine {
    burrow_host::Engine::new(burrow_host::EngineConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..Default::default()
    })
    .expect("engine")
}

/// A small deterministic generator (xorshift64) for randomised tests: the same seed gives the
/// same case on every machine, so a failure can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// Serves `app` on 127.0.0.1 (the fakes of remote APIs): the runtime that runs it (keep it
/// alive) and its base URL.
pub fn serve(app: axum::Router) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the fake server");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    rt.spawn(async move { axum::serve(listener, app).await });
    (rt, base)
}

/// A session sandbox on a fresh store in `dir`, sharing the test binaries' component cache.
pub fn sandbox(dir: &Path) -> burrow_host::Sandbox {
    burrow_host::Sandbox::open_with(
        dir.join("s.db"),
        burrow_host::SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            ..Default::default()
        },
    )
    .expect("open a sandbox")
}

/// Runs `cmd` through session `id`'s shell: (exit code, stdout, stderr); a call that fails
/// (rolled back) panics with its error.
pub fn sh(sb: &burrow_host::Sandbox, id: &str, cmd: &str) -> (i32, String, String) {
    let r = sb.sh(id, cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    (
        r.report.exit_code,
        String::from_utf8_lossy(&r.report.stdout).into_owned(),
        String::from_utf8_lossy(&r.report.stderr).into_owned(),
    )
}

/// Runs the real `burrow` binary on store `db` with compiled components cached in `cache`:
/// (exit code, stdout, stderr).
pub fn burrow_cli(db: &Path, cache: &Path, args: &[&str]) -> (i32, String, String) {
    burrow_cli_env(db, cache, &[], args)
}

/// [`burrow_cli`] with extra environment variables for the burrow process.
pub fn burrow_cli_env(
    db: &Path,
    cache: &Path,
    envs: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
        // Hermetic: the machine's installed toolchains only where a test names them.
        .env("BURROW_TOOLCHAINS", db.with_file_name("no-toolchains"))
        .envs(envs.iter().copied())
        .env("BURROW_STORE", db)
        .env("BURROW_CACHE", cache)
        .args(args)
        .output()
        .expect("run burrow");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A store in a temporary directory driven through the real CLI.
pub struct Cli {
    pub db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cli {
    pub fn new() -> Cli {
        let dir = tempfile::tempdir().expect("tempdir");
        Cli {
            db: dir.path().join("s.db"),
            _dir: dir,
        }
    }

    /// `burrow ARGS`: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache");
        burrow_cli(&self.db, &cache, args)
    }

    /// `burrow ARGS` with extra environment variables.
    pub fn run_env(&self, envs: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache");
        burrow_cli_env(&self.db, &cache, envs, args)
    }

    /// `burrow ARGS`, which must succeed: its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "burrow {args:?}: {out}{err}");
        out
    }
}

/// The compiled-component cache the test binaries share.
pub fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")
}

/// A `burrow serve` child process, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `burrow serve` on store `db` on a loopback port, with `extra` arguments.
pub fn start(db: &Path, extra: &[&str]) -> Server {
    start_env(db, extra, &[])
}

/// [`start`] with extra environment variables for the burrow process.
pub fn start_env(db: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .envs(envs.iter().copied())
        .env("BURROW_STORE", db)
        .env("BURROW_CACHE", cache())
        .env_remove("BURROW_TOKEN")
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start burrow serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the listening line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    Server {
        child,
        base,
        _dir: None,
    }
}

/// `bash` as the reference for the shell's tests: run with the default action for the
/// signals a job can inherit ignored (a job started in the background of a script inherits
/// SIGINT and SIGQUIT ignored, and `nohup` SIGHUP), which bash would then list in `trap -p`
/// and refuse to trap, whatever the terminal this test suite was started from.
pub fn reference_bash() -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut c = Command::new("bash");
    // SAFETY: signal(2) is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for s in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c
}

/// A TLS server configuration with a certificate for 127.0.0.1 and localhost from a
/// throwaway CA, and that CA's PEM (for the client side to trust).
pub fn tls_server_config() -> (std::sync::Arc<rustls::ServerConfig>, String) {
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
    (config, ca_cert.pem())
}
