//! `wasi:filesystem` (types + preopens, WASI 0.2.12) implemented over a burrow-store
//! transaction. This replaces wasmtime-wasi's own filesystem, which is tied to host
//! directories: a guest reaches files only through descriptors of this module, and every
//! descriptor names an inode of the transaction, so nothing here can touch the host disk.
//!
//! Needs nothing but the transaction handle ([`FsState`]) and the resource table. Beside
//! it: the composed root (`synth`), read-only host mounts (`mounts`), where guest paths live
//! in the tree (`layout`), the streams of files and devices (`streams`) and `/dev/burrow`
//! (`control`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use burrow_store::{
    Errno, Error as StoreError, Ino, Kind, OpenFlags as StoreOpen, ROOT_INO, SetTime, Stat, Txn,
};
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sync::io::streams::{InputStream, OutputStream};
use wasmtime_wasi_io::bytes::Bytes;

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "burrow:host/filesystem",
        imports: { default: trappable },
        trappable_error_type: {
            "wasi:filesystem/types.error-code" => super::FsError,
        },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::sync::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem/types.descriptor": super::Descriptor,
            "wasi:filesystem/types.directory-entry-stream": super::DirStream,
        },
        require_store_data_send: true,
    });
}

pub(crate) mod control;
mod layout;
mod mounts;
mod streams;
mod synth;

pub use layout::{
    PERSISTED_DIRS, PERSISTED_ROOT, SYSTEM_MOUNTS, add_persisted_dir, check_persisted_dir,
    link_store_path, persisted_dirs, persisted_store_path, persisted_store_path_in,
    system_guest_path,
};
use streams::{DevNull, FileInput, FileOutput, SynthInput, dev_read};

use bindings::wasi::filesystem::{preopens, types};
use mounts::HostNode;
use synth::{Dev, Lookup, Synth};
use types::{
    Advice, DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode,
    MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};

/// The name under which the workspace root is preopened.
pub const WORKSPACE: &str = "/workspace";

/// An error of a filesystem call: a WASI error code, or a trap.
#[derive(Debug)]
pub enum FsError {
    Code(ErrorCode),
    Trap(wasmtime::Error),
}

impl From<ErrorCode> for FsError {
    fn from(c: ErrorCode) -> Self {
        FsError::Code(c)
    }
}

impl From<wasmtime::component::ResourceTableError> for FsError {
    fn from(e: wasmtime::component::ResourceTableError) -> Self {
        FsError::Trap(e.into())
    }
}

impl From<StoreError> for FsError {
    fn from(e: StoreError) -> Self {
        if e.is_store_failure() {
            FsError::Trap(wasmtime::Error::new(StoreFailed(e)))
        } else {
            FsError::Code(error_code(&e))
        }
    }
}

/// The store failed under a filesystem call (its server went away mid-call, say): the run
/// ends with this as its trap, and the call fails whole with the store's error, leaving the
/// session as it was. Handing the program `EIO` instead let it carry on past the failed
/// step (`echo x >> log; echo y > f` wrote `f` only) and commit the rest: found by the
/// chaos harness, where a call that straddled a database restart came back acknowledged
/// and half-applied.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreFailed(pub StoreError);

type FsResult<T> = Result<T, FsError>;

/// The WASI error code of a store error.
pub fn error_code(e: &StoreError) -> ErrorCode {
    match e.errno() {
        Errno::NotFound => ErrorCode::NoEntry,
        Errno::Exists => ErrorCode::Exist,
        Errno::NotDir => ErrorCode::NotDirectory,
        Errno::IsDir => ErrorCode::IsDirectory,
        Errno::NotEmpty => ErrorCode::NotEmpty,
        Errno::Loop => ErrorCode::Loop,
        Errno::NameTooLong => ErrorCode::NameTooLong,
        Errno::Invalid => ErrorCode::Invalid,
        Errno::Quota => ErrorCode::Quota,
        Errno::Unsupported => ErrorCode::Unsupported,
        Errno::Busy => ErrorCode::Busy,
        Errno::Io => ErrorCode::Io,
        Errno::FileTooLarge => ErrorCode::FileTooLarge,
        Errno::Access => ErrorCode::Access,
        Errno::CrossDevice => ErrorCode::CrossDevice,
        Errno::ReadOnly => ErrorCode::ReadOnly,
    }
}

/// The transaction a run works in, shared by descriptors and streams.
pub type SharedTxn = Arc<Mutex<Txn>>;

fn lock(txn: &SharedTxn) -> MutexGuard<'_, Txn> {
    // The transaction is only used from the run's thread; a poisoned lock means a panic in
    // this module, after which the run is rolled back anyway.
    txn.lock().unwrap_or_else(|p| p.into_inner())
}

/// Per-run filesystem state.
pub struct FsState {
    txn: SharedTxn,
    /// The system area's mounts. Their directories are created on first write, so a call
    /// that only reads makes no new version.
    system: Vec<SysMount>,
    /// Read-only host directories and where the guest sees them.
    mounts: Vec<(Arc<cap_std::fs::Dir>, String)>,
    /// The composed root (`/`, `/dev`, `/etc`, the directories above mount points).
    root: synth::Root,
    /// The quota error a guest hit, if any, so the runner can report the limit by name.
    pub quota_hit: Arc<Mutex<Option<String>>>,
    /// Descriptors the guest holds open (bounded by [`MAX_OPEN_DESCRIPTORS`]).
    open: usize,
    /// Set by [`Preopen`]s: the run sees exactly these directories (inode, guest name)
    /// instead of the composed root.
    preopens: Option<Vec<(Ino, String)>>,
    /// The run's standard streams, behind `/dev/stdin`, `/dev/stdout` and `/dev/stderr`.
    stdio: Option<Stdio>,
    /// What serves `/dev/burrow` (`control.rs`).
    control: Option<Arc<dyn control::Handler>>,
    /// A deterministic call: the generator behind `/dev/urandom` (else the system's).
    random: Option<crate::determinism::SharedRng>,
}

/// What `/dev/stdin`, `/dev/stdout` and `/dev/stderr` reach.
pub(crate) struct Stdio {
    pub stdin: Bytes,
    /// A new stream onto the run's stdout (its capture, or a streaming stage's pipe).
    pub stdout: Box<dyn Fn() -> OutputStream + Send + Sync>,
    pub stderr: Box<dyn Fn() -> OutputStream + Send + Sync>,
}

/// A directory of the session offered to a run under a name the guest chooses, as
/// `wasmtime run --dir HOST::GUEST` does (`burrow run --preopen /workspace:/`). A run given
/// any sees exactly these preopens and not the composed root, so a program that expects its
/// data at `/` (the wasi-testsuite does) finds it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preopen {
    /// A directory of the session: `/workspace[/...]`, `/tmp[/...]` or `/home/agent[/...]`.
    pub dir: String,
    /// The name the guest sees, e.g. `/` or `data`.
    pub guest: String,
}

/// Descriptors one run may hold open at once; past it `open-at` fails with
/// `insufficient-memory` (WASI has no EMFILE), so a guest cannot grow host memory by opening
/// files in a loop.
pub const MAX_OPEN_DESCRIPTORS: usize = 4096;

/// A read-only host directory offered to a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: std::path::PathBuf,
    /// Absolute guest path, e.g. `/tools`. Not `/workspace` or inside it.
    pub guest: String,
}

impl FsState {
    /// State for a run in `txn`, with `mounts` opened through cap-std (read-only).
    pub fn new(txn: SharedTxn, mounts: &[Mount], preopens: &[Preopen]) -> std::io::Result<FsState> {
        let invalid = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
        let mut explicit = None;
        if !preopens.is_empty() {
            let mut t = lock(&txn);
            let mut list = Vec::new();
            for p in preopens {
                let path = persisted_store_path(&p.dir).ok_or_else(|| {
                    invalid(format!(
                        "cannot preopen {}: not a directory of the session (/workspace, /tmp, /home/agent)",
                        p.dir
                    ))
                })?;
                let missing_mount_root = SYSTEM_MOUNTS
                    .iter()
                    .any(|(g, _)| *g == p.dir.trim_end_matches('/'));
                let ino = match if path.is_empty() {
                    Ok(ROOT_INO)
                } else {
                    t.resolve(ROOT_INO, &path, true)
                } {
                    Err(StoreError::NotFound) if missing_mount_root => t.mkdir_all(&path),
                    r => r,
                }
                .map_err(|e| invalid(format!("cannot preopen {}: {e}", p.dir)))?;
                if t.stat(ino).map_err(|e| invalid(e.to_string()))?.kind != Kind::Dir {
                    return Err(invalid(format!(
                        "cannot preopen {}: Not a directory",
                        p.dir
                    )));
                }
                if p.guest.is_empty() {
                    return Err(invalid(format!("preopen of {} needs a guest name", p.dir)));
                }
                list.push((ino, p.guest.clone()));
            }
            explicit = Some(list);
        }
        let mut opened = Vec::new();
        for m in mounts {
            let ok = m.guest.starts_with('/')
                && m.guest != "/"
                && !m.guest.split('/').any(|c| c == ".." || c == ".")
                && m.guest != WORKSPACE
                && !m.guest.starts_with(&format!("{WORKSPACE}/"));
            if !ok {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "mount point {} must be an absolute path outside {WORKSPACE}",
                        m.guest
                    ),
                ));
            }
            let dir = cap_std::fs::Dir::open_ambient_dir(&m.host, cap_std::ambient_authority())
                .map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot mount {}: {e}", m.host.display()))
                })?;
            opened.push((Arc::new(dir), m.guest.trim_end_matches('/').to_string()));
        }
        let mut system = system_mounts();
        if explicit.is_none() {
            let dirs = persisted_dirs(&mut lock(&txn));
            system.extend(dirs.into_iter().map(|guest| SysMount {
                path: format!("{PERSISTED_ROOT}{guest}"),
                guest,
                ino: std::cell::Cell::new(None),
            }));
        }
        let root = synth::Root::new(
            std::iter::once(WORKSPACE.to_string())
                .chain(system.iter().map(|m| m.guest.to_string()))
                .chain(opened.iter().map(|(_, g)| g.clone())),
        );
        Ok(FsState {
            txn,
            system,
            root,
            mounts: opened,
            quota_hit: Arc::new(Mutex::new(None)),
            open: 0,
            preopens: explicit,
            stdio: None,
            control: None,
            random: None,
        })
    }
}

impl FsState {
    /// Connects the standard-stream devices to the run's own streams.
    pub(crate) fn set_stdio(&mut self, stdio: Stdio) {
        self.stdio = Some(stdio);
    }

    /// Serves `/dev/burrow` with `handler`.
    pub(crate) fn set_control(&mut self, handler: Arc<dyn control::Handler>) {
        self.control = Some(handler);
    }

    /// Makes `/dev/random` and `/dev/urandom` read from `rng` (a deterministic call's).
    pub(crate) fn set_random(&mut self, rng: crate::determinism::SharedRng) {
        self.random = Some(rng);
    }
}

/// One mount of the system area.
struct SysMount {
    guest: String,
    /// Its directory in the store, relative to the root.
    path: String,
    /// Its directory's inode: looked up on first use (most calls never touch these mounts),
    /// None while the directory does not exist.
    ino: std::cell::Cell<Option<Option<Ino>>>,
}

fn system_mounts() -> Vec<SysMount> {
    SYSTEM_MOUNTS
        .iter()
        .map(|(guest, sub)| SysMount {
            guest: guest.to_string(),
            path: format!("{}/{sub}", burrow_store::SYSTEM_DIR),
            ino: std::cell::Cell::new(None),
        })
        .collect()
}

impl FsState {
    /// The inode of system mount `i`'s directory, if it exists.
    fn system_ino(&self, i: usize) -> Option<Ino> {
        let m = &self.system[i];
        if let Some(known) = m.ino.get() {
            return known;
        }
        let ino = lock(&self.txn).resolve(ROOT_INO, &m.path, false).ok();
        m.ino.set(Some(ino));
        ino
    }
}

/// An open file or directory: an inode of the transaction plus what it was opened for.
pub struct Descriptor {
    ino: Ino,
    dir: bool,
    read: bool,
    write: bool,
    /// Set for descriptors of a read-only host mount (the other fields then only say
    /// whether it is a directory).
    host: Option<HostNode>,
    /// Set for the composed root's own nodes (`/`, `/dev/null`, `/etc/passwd`...).
    synth: Option<Synth>,
    /// Set for the root of a system mount (index in `FsState::system`): its inode is the
    /// mount's, once the directory exists.
    lazy: Option<usize>,
    /// Set for an open `/dev/burrow`: its request and reply.
    channel: Option<control::Shared>,
}

impl Descriptor {
    fn store(ino: Ino, dir: bool, read: bool, write: bool) -> Descriptor {
        Descriptor {
            ino,
            dir,
            read,
            write,
            host: None,
            synth: None,
            lazy: None,
            channel: None,
        }
    }

    /// The root of system mount `i` (created on first write).
    fn system(i: usize) -> Descriptor {
        Descriptor {
            lazy: Some(i),
            ..Descriptor::store(0, true, true, true)
        }
    }

    fn synth(node: Synth) -> Descriptor {
        let dev = matches!(node, Synth::Dev(..));
        let channel = matches!(node, Synth::Dev(_, Dev::Burrow)).then(control::Shared::default);
        Descriptor {
            ino: 0,
            dir: matches!(node, Synth::Dir(_)),
            read: true,
            write: dev,
            host: None,
            synth: Some(node),
            lazy: None,
            channel,
        }
    }

    fn mount(node: HostNode) -> Descriptor {
        Descriptor {
            ino: 0,
            dir: matches!(node, HostNode::Dir(_)),
            read: true,
            write: false,
            host: Some(node),
            synth: None,
            lazy: None,
            channel: None,
        }
    }
}

/// A directory listing being read by the guest.
pub struct DirStream {
    entries: VecDeque<DirectoryEntry>,
}

/// What the generated `add_to_linker` functions hand to the implementation.
pub struct WasiFsView<'a> {
    pub table: &'a mut ResourceTable,
    pub fs: &'a mut FsState,
}

struct WasiFs;

impl HasData for WasiFs {
    type Data<'a> = WasiFsView<'a>;
}

/// Registers burrow's `wasi:filesystem` in `linker`, shadowing wasmtime-wasi's.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> WasiFsView<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    types::add_to_linker::<T, WasiFs>(linker, get)?;
    preopens::add_to_linker::<T, WasiFs>(linker, get)?;
    linker.allow_shadowing(false);
    Ok(())
}

fn descriptor_type(k: Kind) -> DescriptorType {
    match k {
        Kind::File => DescriptorType::RegularFile,
        Kind::Dir => DescriptorType::Directory,
        Kind::Symlink => DescriptorType::SymbolicLink,
    }
}

fn datetime(ns: i64) -> wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime {
    let ns = ns.max(0) as u64;
    wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime {
        seconds: ns / 1_000_000_000,
        nanoseconds: (ns % 1_000_000_000) as u32,
    }
}

fn stat_of(s: Stat) -> DescriptorStat {
    DescriptorStat {
        type_: descriptor_type(s.kind),
        link_count: s.nlink,
        size: if s.kind == Kind::Dir { 4096 } else { s.size },
        data_access_timestamp: Some(datetime(s.atime)),
        data_modification_timestamp: Some(datetime(s.mtime)),
        status_change_timestamp: Some(datetime(s.ctime)),
    }
}

fn set_time(t: NewTimestamp) -> Option<SetTime> {
    match t {
        NewTimestamp::NoChange => None,
        NewTimestamp::Now => Some(SetTime::Now),
        NewTimestamp::Timestamp(d) => Some(SetTime::At(
            (d.seconds as i64).saturating_mul(1_000_000_000) + d.nanoseconds as i64,
        )),
    }
}

fn hash_value(workspace_salt: u64, s: &Stat) -> MetadataHashValue {
    // Identity is the inode number; mix in change time so a changed file hashes differently,
    // as the interface asks.
    let h = blake3_u128(workspace_salt, s.ino, s.mtime, s.size);
    MetadataHashValue {
        lower: h as u64,
        upper: (h >> 64) as u64,
    }
}

fn blake3_u128(a: u64, b: u64, c: i64, d: u64) -> u128 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&a.to_le_bytes());
    hasher.update(&b.to_le_bytes());
    hasher.update(&c.to_le_bytes());
    hasher.update(&d.to_le_bytes());
    let out = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&out.as_bytes()[..16]);
    u128::from_le_bytes(bytes)
}

impl WasiFsView<'_> {
    fn txn(&self) -> MutexGuard<'_, Txn> {
        lock(&self.fs.txn)
    }

    fn desc(&self, fd: &Resource<Descriptor>) -> FsResult<&Descriptor> {
        Ok(self.table.get(fd)?)
    }

    /// The host node of a mount descriptor (None for workspace descriptors).
    fn host(&self, fd: &Resource<Descriptor>) -> FsResult<Option<HostNode>> {
        Ok(self.table.get(fd)?.host.clone())
    }

    /// The workspace directory of a `*-at` call that changes something: mounts are read-only.
    fn mutable_at(&mut self, fd: &Resource<Descriptor>, path: &str) -> FsResult<Ino> {
        if self.host_dir(fd)?.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        self.ensure(fd)?;
        self.at(fd, path)
    }

    /// The inode of a store descriptor; None for a system mount whose directory does not
    /// exist yet (it reads as empty).
    fn ino_of(&self, fd: &Resource<Descriptor>) -> FsResult<Option<Ino>> {
        let d = self.desc(fd)?;
        Ok(match d.lazy {
            Some(i) => self.fs.system_ino(i),
            None => Some(d.ino),
        })
    }

    /// Creates a system mount's directory before the first write into it.
    fn ensure(&mut self, fd: &Resource<Descriptor>) -> FsResult<()> {
        let Some(i) = self.desc(fd)?.lazy else {
            return Ok(());
        };
        if self.fs.system_ino(i).is_none() {
            let path = self.fs.system[i].path.clone();
            let r = self.txn().mkdir_all(&path);
            let ino = self.store(r)?;
            self.fs.system[i].ino.set(Some(Some(ino)));
        }
        Ok(())
    }

    /// The stat of a system mount's directory that does not exist yet: an empty directory.
    fn empty_dir_stat(&self, i: usize) -> DescriptorStat {
        Synth::Dir(self.fs.system[i].guest.to_string()).stat()
    }

    /// The mount directory of a `*-at` call on a mount descriptor.
    fn host_dir(&self, fd: &Resource<Descriptor>) -> FsResult<Option<Arc<cap_std::fs::Dir>>> {
        match self.host(fd)? {
            Some(HostNode::Dir(d)) => Ok(Some(d)),
            Some(HostNode::File(_)) => Err(ErrorCode::NotDirectory.into()),
            None => Ok(None),
        }
    }

    /// The directory a `*-at` call is relative to, after checking `path` stays inside the
    /// preopen: absolute paths and `..` above the root are `not-permitted`, as in WASI.
    fn at(&self, fd: &Resource<Descriptor>, path: &str) -> FsResult<Ino> {
        let d = self.desc(fd)?;
        if d.synth.is_some() {
            // The composed root is read-only (what is below a mount is reached through it).
            return Err(ErrorCode::Access.into());
        }
        if !d.dir {
            return Err(ErrorCode::NotDirectory.into());
        }
        if path.starts_with('/') {
            return Err(ErrorCode::NotPermitted.into());
        }
        if path.contains('\0') {
            return Err(ErrorCode::Invalid.into());
        }
        let ino = match d.lazy {
            // Nothing is below a system directory that does not exist yet.
            Some(i) => self.fs.system_ino(i).ok_or(ErrorCode::NoEntry)?,
            None => d.ino,
        };
        let mut txn = self.txn();
        // Fails (no-entry) for a directory that was removed while open.
        txn.depth(ino)?;
        // As in WASI, a directory descriptor is a capability: `..` may not climb above it.
        let mut depth: i64 = 0;
        let comps: Vec<&str> = path.split('/').collect();
        for (i, c) in comps.iter().enumerate() {
            match *c {
                "" | "." => {}
                ".." => {
                    depth -= 1;
                    if depth < 0 {
                        // As a host filesystem would: a missing directory on the way is
                        // reported before the escape.
                        let prefix = comps[..i].join("/");
                        if !prefix.is_empty() {
                            txn.resolve(ino, &prefix, true)?;
                        }
                        return Err(ErrorCode::NotPermitted.into());
                    }
                }
                _ => depth += 1,
            }
        }
        Ok(ino)
    }

    fn record_quota(&self, e: &StoreError) {
        if e.errno() == Errno::Quota {
            *self.fs.quota_hit.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
    }

    /// The synthetic node of a descriptor, if it is one.
    fn synth(&self, fd: &Resource<Descriptor>) -> FsResult<Option<Synth>> {
        Ok(self.table.get(fd)?.synth.clone())
    }

    /// What `path`, relative to the synthetic directory `dir`, is: a synthetic node, or a
    /// (temporary, uncounted) descriptor of a mount's root with the path below it. The
    /// caller hands the temporary descriptor to [`WasiFsView::via_mount`].
    fn synth_at(
        &mut self,
        dir: &str,
        path: &str,
    ) -> FsResult<Result<Synth, (Resource<Descriptor>, String)>> {
        if path.contains('\0') {
            return Err(ErrorCode::Invalid.into());
        }
        match self.fs.root.lookup(&synth::normalise(dir, path)) {
            Lookup::Synth(n) => Ok(Ok(n)),
            Lookup::NotFound => Err(ErrorCode::NoEntry.into()),
            Lookup::Mount(m, rest) => {
                let d = if m == WORKSPACE {
                    Descriptor::store(ROOT_INO, true, true, true)
                } else if let Some(i) = self.fs.system.iter().position(|s| s.guest == m) {
                    Descriptor::system(i)
                } else if let Some((h, _)) = self.fs.mounts.iter().find(|(_, g)| *g == m) {
                    Descriptor::mount(HostNode::Dir(h.clone()))
                } else {
                    return Err(ErrorCode::NoEntry.into());
                };
                Ok(Err((self.table.push(d)?, rest)))
            }
        }
    }

    /// Runs `f` on the temporary mount-root descriptor [`WasiFsView::synth_at`] made, then
    /// drops it.
    fn via_mount<T>(
        &mut self,
        tmp: Resource<Descriptor>,
        f: impl FnOnce(&mut Self, Resource<Descriptor>) -> FsResult<T>,
    ) -> FsResult<T> {
        let rep = tmp.rep();
        let r = f(self, tmp);
        let _ = self.table.delete(Resource::<Descriptor>::new_own(rep));
        r
    }

    /// The system mount `fd` is the (lazily created) root of, while its directory does not
    /// exist yet.
    fn missing_system(&self, fd: &Resource<Descriptor>) -> FsResult<Option<usize>> {
        Ok(self
            .desc(fd)?
            .lazy
            .filter(|&i| self.fs.system_ino(i).is_none()))
    }

    fn store<T>(&self, r: burrow_store::Result<T>) -> FsResult<T> {
        r.map_err(|e| {
            self.record_quota(&e);
            e.into()
        })
    }
}

impl preopens::Host for WasiFsView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        if let Some(list) = &self.fs.preopens {
            let mut out = Vec::new();
            for (ino, guest) in list {
                let d = self.table.push(Descriptor::store(*ino, true, true, true))?;
                out.push((d, guest.clone()));
            }
            return Ok(out);
        }
        let root = self
            .table
            .push(Descriptor::store(ROOT_INO, true, true, true))?;
        let mut out = vec![(root, WORKSPACE.to_string())];
        for i in 0..self.fs.system.len() {
            let d = self.table.push(Descriptor::system(i))?;
            out.push((d, self.fs.system[i].guest.to_string()));
        }
        for (dir, guest) in &self.fs.mounts {
            let d = self
                .table
                .push(Descriptor::mount(HostNode::Dir(dir.clone())))?;
            out.push((d, guest.clone()));
        }
        let root = self.table.push(Descriptor::synth(Synth::Dir("/".into())))?;
        out.push((root, "/".to_string()));
        Ok(out)
    }
}

impl types::Host for WasiFsView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        match err {
            FsError::Code(c) => Ok(c),
            FsError::Trap(e) => Err(e),
        }
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        let err = self.table.get(&err)?;
        Ok(err.downcast_ref::<StoreError>().map(error_code))
    }
}

impl types::HostDescriptor for WasiFsView<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: u64,
    ) -> FsResult<Resource<InputStream>> {
        if let Some(n) = self.synth(&fd)? {
            let s: InputStream = match n {
                Synth::Dir(_) => return Err(ErrorCode::IsDirectory.into()),
                Synth::File(_, data) => Box::new(SynthInput::File(data, offset)),
                Synth::Dev(_, Dev::Stdin) => {
                    // Copied only when a guest reads `/dev/stdin` (rare), not per run.
                    let data = self.fs.stdio.as_ref().map(|s| Arc::from(&s.stdin[..]));
                    Box::new(SynthInput::File(
                        data.unwrap_or_else(|| Arc::from(Vec::new())),
                        0,
                    ))
                }
                Synth::Dev(_, Dev::Stdout | Dev::Stderr) => {
                    return Err(ErrorCode::BadDescriptor.into());
                }
                Synth::Dev(_, Dev::Burrow) => match self.table.get(&fd)?.channel.clone() {
                    Some(c) => Box::new(control::Replies(c)),
                    None => return Err(ErrorCode::BadDescriptor.into()),
                },
                Synth::Dev(_, d) => Box::new(SynthInput::Dev(d, self.fs.random.clone())),
            };
            return Ok(self.table.push(s)?);
        }
        if let Some(h) = self.host(&fd)? {
            let HostNode::File(file) = h else {
                return Err(ErrorCode::IsDirectory.into());
            };
            let s: InputStream = Box::new(mounts::HostInput { file, pos: offset });
            return Ok(self.table.push(s)?);
        }
        let d = self.desc(&fd)?;
        if d.dir {
            return Err(ErrorCode::IsDirectory.into());
        }
        if !d.read {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let s: InputStream = Box::new(FileInput {
            txn: self.fs.txn.clone(),
            ino: d.ino,
            pos: offset,
        });
        Ok(self.table.push(s)?)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: u64,
    ) -> FsResult<Resource<OutputStream>> {
        self.output(fd, Some(offset))
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<OutputStream>> {
        self.output(fd, None)
    }

    fn advise(&mut self, fd: Resource<Descriptor>, _o: u64, _l: u64, _a: Advice) -> FsResult<()> {
        if self.desc(&fd)?.dir {
            return Err(ErrorCode::BadDescriptor.into());
        }
        Ok(())
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        // Durability is the commit's: a tool call is made durable as one transaction.
        self.desc(&fd)?;
        Ok(())
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        // On `/dev/burrow`, the request written so far is served now.
        if let Some(c) = self.desc(&fd)?.channel.clone() {
            return control::serve(&c, self.fs.control.as_ref()).map_err(FsError::Trap);
        }
        Ok(())
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        if let Some(n) = self.synth(&fd)? {
            return Ok(match n {
                Synth::Dev(..) => DescriptorFlags::READ | DescriptorFlags::WRITE,
                _ => DescriptorFlags::READ,
            });
        }
        if self.host(&fd)?.is_some() {
            return Ok(DescriptorFlags::READ);
        }
        let d = self.desc(&fd)?;
        let mut f = DescriptorFlags::empty();
        if d.read {
            f |= DescriptorFlags::READ;
        }
        if d.write {
            f |= if d.dir {
                DescriptorFlags::MUTATE_DIRECTORY
            } else {
                DescriptorFlags::WRITE
            };
        }
        Ok(f)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        if let Some(n) = self.synth(&fd)? {
            return Ok(n.kind());
        }
        if let Some(h) = self.host(&fd)? {
            return mounts::get_type(&h);
        }
        let Some(ino) = self.ino_of(&fd)? else {
            return Ok(DescriptorType::Directory);
        };
        let st = self.store(self.txn().stat(ino))?;
        Ok(descriptor_type(st.kind))
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: u64) -> FsResult<()> {
        if let Some(n) = self.synth(&fd)? {
            // `> /dev/null` truncates it: nothing to do.
            return match n {
                Synth::Dev(..) => Ok(()),
                _ => Err(ErrorCode::Access.into()),
            };
        }
        if self.host(&fd)?.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        let d = self.desc(&fd)?;
        if d.dir {
            return Err(ErrorCode::BadDescriptor.into());
        }
        if !d.write {
            return Err(ErrorCode::NotPermitted.into());
        }
        let ino = d.ino;
        let r = self.txn().set_size(ino, size);
        self.store(r)
    }

    fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atime: NewTimestamp,
        mtime: NewTimestamp,
    ) -> FsResult<()> {
        if let Some(n) = self.synth(&fd)? {
            return match n {
                Synth::Dev(..) => Ok(()),
                _ => Err(ErrorCode::Access.into()),
            };
        }
        if self.host(&fd)?.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        self.ensure(&fd)?;
        let d = self.desc(&fd)?;
        if !d.write && !d.dir {
            return Err(ErrorCode::NotPermitted.into());
        }
        let ino = self.ino_of(&fd)?.unwrap_or(d.ino);
        let r = self.txn().set_times(ino, set_time(atime), set_time(mtime));
        self.store(r)
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: u64,
        offset: u64,
    ) -> FsResult<(Vec<u8>, bool)> {
        if let Some(n) = self.synth(&fd)? {
            let len = len.min(crate::limits::MAX_READ) as usize;
            return match n {
                Synth::Dir(_) => Err(ErrorCode::BadDescriptor.into()),
                Synth::File(_, data) => {
                    let start = (offset as usize).min(data.len());
                    let end = start.saturating_add(len).min(data.len());
                    Ok((data[start..end].to_vec(), end == data.len()))
                }
                Synth::Dev(_, Dev::Burrow) => match self.table.get(&fd)?.channel.as_ref() {
                    Some(c) => {
                        let (b, end) = control::read(c, len);
                        Ok((b.to_vec(), end))
                    }
                    None => Err(ErrorCode::BadDescriptor.into()),
                },
                Synth::Dev(_, d) => Ok(dev_read(d, len, self.fs.random.as_ref())),
            };
        }
        if let Some(h) = self.host(&fd)? {
            let HostNode::File(file) = h else {
                return Err(ErrorCode::BadDescriptor.into());
            };
            return mounts::read(&file, len, offset);
        }
        let d = self.desc(&fd)?;
        if d.dir {
            return Err(ErrorCode::BadDescriptor.into());
        }
        if !d.read {
            return Err(ErrorCode::NotPermitted.into());
        }
        let ino = d.ino;
        let mut buf = vec![0u8; len.min(crate::limits::MAX_READ) as usize];
        let n = self.store(self.txn().read(ino, offset, &mut buf))?;
        buf.truncate(n);
        Ok((buf, n == 0))
    }

    fn write(&mut self, fd: Resource<Descriptor>, buf: Vec<u8>, offset: u64) -> FsResult<u64> {
        if let Some(n) = self.synth(&fd)? {
            return match n {
                Synth::Dev(_, Dev::Burrow) => match self.table.get(&fd)?.channel.as_ref() {
                    Some(c) => {
                        control::write(c, &buf);
                        Ok(buf.len() as u64)
                    }
                    None => Err(ErrorCode::BadDescriptor.into()),
                },
                Synth::Dev(..) => Ok(buf.len() as u64),
                Synth::Dir(_) => Err(ErrorCode::BadDescriptor.into()),
                Synth::File(..) => Err(ErrorCode::Access.into()),
            };
        }
        let d = self.desc(&fd)?;
        if d.dir {
            return Err(ErrorCode::BadDescriptor.into());
        }
        if !d.write {
            return Err(ErrorCode::NotPermitted.into());
        }
        let ino = d.ino;
        let r = self.txn().write(ino, offset, &buf);
        Ok(self.store(r)? as u64)
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<DirStream>> {
        if let Some(n) = self.synth(&fd)? {
            let Synth::Dir(d) = n else {
                return Err(ErrorCode::NotDirectory.into());
            };
            let entries = self.fs.root.children(&d).into();
            return Ok(self.table.push(DirStream { entries })?);
        }
        if let Some(dir) = self.host_dir(&fd)? {
            let entries = mounts::readdir(&dir)?.into();
            return Ok(self.table.push(DirStream { entries })?);
        }
        let d = self.desc(&fd)?;
        if !d.dir {
            return Err(ErrorCode::NotDirectory.into());
        }
        let Some(ino) = self.ino_of(&fd)? else {
            let entries = VecDeque::new();
            return Ok(self.table.push(DirStream { entries })?);
        };
        let list = self.store(self.txn().readdir(ino))?;
        let entries = list
            .into_iter()
            .filter(|e| e.name != burrow_store::SYSTEM_DIR)
            .map(|e| DirectoryEntry {
                type_: descriptor_type(e.kind),
                name: e.name,
            })
            .collect();
        Ok(self.table.push(DirStream { entries })?)
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let dir = self.mutable_at(&fd, &path)?;
        let r = self.txn().mkdir_at(dir, &path).map(|_| ());
        self.store(r)
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorStat> {
        if let Some(n) = self.synth(&fd)? {
            return Ok(n.stat());
        }
        if let Some(h) = self.host(&fd)? {
            return mounts::stat(&h);
        }
        let Some(ino) = self.ino_of(&fd)? else {
            let i = self.desc(&fd)?.lazy.unwrap_or_default();
            return Ok(self.empty_dir_stat(i));
        };
        let st = self.store(self.txn().stat(ino))?;
        Ok(stat_of(st))
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> FsResult<DescriptorStat> {
        if let Some(n) = self.synth(&fd)? {
            let Synth::Dir(d) = n else {
                return Err(ErrorCode::NotDirectory.into());
            };
            return match self.synth_at(&d, &path)? {
                Ok(n) => Ok(n.stat()),
                Err((tmp, rest)) => self.via_mount(tmp, |v, fd| v.stat_at(fd, flags, rest)),
            };
        }
        if let Some(dir) = self.host_dir(&fd)? {
            return mounts::stat_at(&dir, &path, flags.contains(PathFlags::SYMLINK_FOLLOW));
        }
        if let Some(i) = self.missing_system(&fd)? {
            return match synth::normalise("/", &path).as_str() {
                "/" => Ok(self.empty_dir_stat(i)),
                _ => Err(ErrorCode::NoEntry.into()),
            };
        }
        let dir = self.at(&fd, &path)?;
        let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
        let st = self.store(self.txn().stat_at(dir, &path, follow))?;
        Ok(stat_of(st))
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
        atime: NewTimestamp,
        mtime: NewTimestamp,
    ) -> FsResult<()> {
        let dir = self.mutable_at(&fd, &path)?;
        let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
        let mut txn = self.txn();
        let r = txn
            .resolve(dir, &path, follow)
            .and_then(|ino| txn.set_times(ino, set_time(atime), set_time(mtime)));
        drop(txn);
        self.store(r)
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        old: String,
        new_fd: Resource<Descriptor>,
        new: String,
    ) -> FsResult<()> {
        if self.host(&fd)?.is_some() || self.host(&new_fd)?.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        let dir = self.at(&fd, &old)?;
        let new_dir = self.at(&new_fd, &new)?;
        if flags.contains(PathFlags::SYMLINK_FOLLOW) {
            return Err(ErrorCode::Invalid.into());
        }
        let r = self.txn().link_at(dir, &old, new_dir, &new);
        self.store(r)
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        if let Some(n) = self.synth(&fd)? {
            let Synth::Dir(d) = n else {
                return Err(ErrorCode::NotDirectory.into());
            };
            let target = match self.synth_at(&d, &path) {
                // Creating in a read-only directory is refused; in a missing one, not found.
                Err(FsError::Code(ErrorCode::NoEntry)) if oflags.contains(OpenFlags::CREATE) => {
                    let abs = synth::normalise(&d, &path);
                    let parent = synth::normalise(&abs, "..");
                    return Err(match self.fs.root.lookup(&parent) {
                        Lookup::Synth(Synth::Dir(_)) => ErrorCode::Access,
                        _ => ErrorCode::NoEntry,
                    }
                    .into());
                }
                r => r?,
            };
            return match target {
                Ok(n) => {
                    let writes = flags.contains(DescriptorFlags::WRITE)
                        || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
                    match &n {
                        _ if oflags.contains(OpenFlags::EXCLUSIVE) => Err(ErrorCode::Exist.into()),
                        Synth::Dir(_) if writes => Err(ErrorCode::IsDirectory.into()),
                        Synth::File(..) if writes => Err(ErrorCode::Access.into()),
                        Synth::File(..) | Synth::Dev(..)
                            if oflags.contains(OpenFlags::DIRECTORY) =>
                        {
                            Err(ErrorCode::NotDirectory.into())
                        }
                        _ => {
                            if self.fs.open >= MAX_OPEN_DESCRIPTORS {
                                return Err(ErrorCode::InsufficientMemory.into());
                            }
                            self.fs.open += 1;
                            Ok(self.table.push(Descriptor::synth(n))?)
                        }
                    }
                }
                Err((tmp, rest)) => {
                    self.via_mount(tmp, |v, fd| v.open_at(fd, path_flags, rest, oflags, flags))
                }
            };
        }
        if let Some(dir) = self.host_dir(&fd)? {
            let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
            let write =
                flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
            if self.fs.open >= MAX_OPEN_DESCRIPTORS {
                return Err(ErrorCode::InsufficientMemory.into());
            }
            let node = mounts::open_at(&dir, &path, follow, oflags, write)?;
            self.fs.open += 1;
            return Ok(self.table.push(Descriptor::mount(node))?);
        }
        if self.fs.open >= MAX_OPEN_DESCRIPTORS {
            return Err(ErrorCode::InsufficientMemory.into());
        }
        if let Some(i) = self.missing_system(&fd)? {
            let writes = flags
                .intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY)
                || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
            if synth::normalise("/", &path) == "/" && !oflags.contains(OpenFlags::CREATE) {
                // The (still empty) directory itself: another handle on the same mount.
                self.fs.open += 1;
                return Ok(self.table.push(Descriptor::system(i))?);
            }
            if !writes {
                return Err(ErrorCode::NoEntry.into());
            }
            self.ensure(&fd)?;
        }
        let dir = self.at(&fd, &path)?;
        if flags.intersects(
            DescriptorFlags::FILE_INTEGRITY_SYNC
                | DescriptorFlags::DATA_INTEGRITY_SYNC
                | DescriptorFlags::REQUESTED_WRITE_SYNC,
        ) {
            return Err(ErrorCode::Unsupported.into());
        }
        let want_dir = oflags.contains(OpenFlags::DIRECTORY);
        if want_dir
            && oflags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE)
        {
            return Err(ErrorCode::Invalid.into());
        }
        let write = flags.contains(DescriptorFlags::WRITE)
            || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
        let read = flags.contains(DescriptorFlags::READ) || !flags.contains(DescriptorFlags::WRITE);
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        let open = StoreOpen {
            create: oflags.contains(OpenFlags::CREATE),
            exclusive: oflags.contains(OpenFlags::EXCLUSIVE),
            truncate: oflags.contains(OpenFlags::TRUNCATE),
            directory: want_dir,
        };
        let mut txn = self.txn();
        let r = txn
            .open_at(dir, &path, open, follow)
            .and_then(|ino| Ok((ino, txn.stat(ino)?)));
        drop(txn);
        let (ino, st) = self.store(r)?;
        let is_dir = st.kind == Kind::Dir;
        if is_dir && flags.contains(DescriptorFlags::WRITE) {
            return Err(ErrorCode::IsDirectory.into());
        }
        // The workspace is read-write: a directory descriptor may always mutate it.
        self.fs.open += 1;
        Ok(self
            .table
            .push(Descriptor::store(ino, is_dir, read, write || is_dir))?)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        if let Some(Synth::Dir(d)) = self.synth(&fd)? {
            return match self.synth_at(&d, &path)? {
                Ok(_) => Err(ErrorCode::Invalid.into()),
                Err((tmp, rest)) => self.via_mount(tmp, |v, fd| v.readlink_at(fd, rest)),
            };
        }
        if let Some(dir) = self.host_dir(&fd)? {
            return mounts::readlink(&dir, &path);
        }
        let dir = self.at(&fd, &path)?;
        let r = self.txn().readlink_at(dir, &path);
        self.store(r)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let dir = self.mutable_at(&fd, &path)?;
        let r = self.txn().rmdir_at(dir, &path);
        self.store(r)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old: String,
        new_fd: Resource<Descriptor>,
        new: String,
    ) -> FsResult<()> {
        if self.host(&fd)?.is_some() || self.host(&new_fd)?.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        let dir = self.at(&fd, &old)?;
        self.ensure(&new_fd)?;
        let new_dir = self.at(&new_fd, &new)?;
        let r = self.txn().rename_at(dir, &old, new_dir, &new);
        self.store(r)
    }

    fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        target: String,
        path: String,
    ) -> FsResult<()> {
        let dir = self.mutable_at(&fd, &path)?;
        // In the composed root an absolute target is a path of the session's root, resolved
        // in it ([`link_store_path`]). Given explicit preopens, the run sees only those
        // capabilities and an absolute target names none of them: `not-permitted`, as WASI
        // says.
        if target.starts_with('/') && self.fs.preopens.is_some() {
            return Err(ErrorCode::NotPermitted.into());
        }
        if path.ends_with('/') {
            // As on Linux: a symlink's own name cannot end in a slash.
            let name = path.trim_end_matches('/');
            let mut txn = self.txn();
            return Err(match txn.resolve(dir, name, false) {
                Ok(_) => ErrorCode::Exist.into(),
                Err(e) => e.into(),
            });
        }
        let r = self.txn().symlink_at(&target, dir, &path).map(|_| ());
        self.store(r)
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let dir = self.mutable_at(&fd, &path)?;
        let r = self.txn().unlink_at(dir, &path);
        self.store(r)
    }

    fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        let (da, db) = (self.table.get(&a)?, self.table.get(&b)?);
        if da.synth.is_some() || db.synth.is_some() {
            return Ok(da.synth.as_ref().map(Synth::path) == db.synth.as_ref().map(Synth::path));
        }
        if da.lazy.is_some() || db.lazy.is_some() {
            let eff = |d: &Descriptor| match d.lazy {
                Some(i) => (Some(i), self.fs.system_ino(i)),
                None => (None, Some(d.ino)),
            };
            let (ea, eb) = (eff(da), eff(db));
            return Ok(ea.1.is_some() && ea.1 == eb.1 || ea.0.is_some() && ea.0 == eb.0);
        }
        Ok(match (&da.host, &db.host) {
            (None, None) => da.ino == db.ino,
            (Some(x), Some(y)) => match (mounts::identity(x), mounts::identity(y)) {
                (Ok(x), Ok(y)) => (x.0, x.1) == (y.0, y.1),
                _ => false,
            },
            _ => false,
        })
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<MetadataHashValue> {
        if let Some(n) = self.synth(&fd)? {
            return Ok(synth_hash(n.path()));
        }
        if let Some(h) = self.host(&fd)? {
            let (dev, ino, mtime, size) = mounts::identity(&h)?;
            let v = blake3_u128(dev ^ 1, ino, mtime, size);
            return Ok(MetadataHashValue {
                lower: v as u64,
                upper: (v >> 64) as u64,
            });
        }
        let Some(ino) = self.ino_of(&fd)? else {
            let i = self.desc(&fd)?.lazy.unwrap_or_default();
            return Ok(synth_hash(&self.fs.system[i].guest));
        };
        let st = self.store(self.txn().stat(ino))?;
        Ok(hash_value(0, &st))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> FsResult<MetadataHashValue> {
        if let Some(n) = self.synth(&fd)? {
            let Synth::Dir(d) = n else {
                return Err(ErrorCode::NotDirectory.into());
            };
            return match self.synth_at(&d, &path)? {
                Ok(n) => Ok(synth_hash(n.path())),
                Err((tmp, rest)) => {
                    self.via_mount(tmp, |v, fd| v.metadata_hash_at(fd, flags, rest))
                }
            };
        }
        if let Some(i) = self.missing_system(&fd)? {
            return match synth::normalise("/", &path).as_str() {
                "/" => Ok(synth_hash(&self.fs.system[i].guest)),
                _ => Err(ErrorCode::NoEntry.into()),
            };
        }
        if let Some(dir) = self.host_dir(&fd)? {
            let (dev, ino, mtime, size) =
                mounts::identity_at(&dir, &path, flags.contains(PathFlags::SYMLINK_FOLLOW))?;
            let v = blake3_u128(dev ^ 1, ino, mtime, size);
            return Ok(MetadataHashValue {
                lower: v as u64,
                upper: (v >> 64) as u64,
            });
        }
        let dir = self.at(&fd, &path)?;
        let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
        let st = self.store(self.txn().stat_at(dir, &path, follow))?;
        Ok(hash_value(0, &st))
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(fd)?;
        // Preopens were never counted.
        self.fs.open = self.fs.open.saturating_sub(1);
        Ok(())
    }
}

impl WasiFsView<'_> {
    fn output(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Option<u64>,
    ) -> FsResult<Resource<OutputStream>> {
        if let Some(n) = self.synth(&fd)? {
            return match n {
                Synth::Dev(_, d @ (Dev::Stdout | Dev::Stderr)) => {
                    let s: OutputStream = match (&self.fs.stdio, d) {
                        (Some(io), Dev::Stdout) => (io.stdout)(),
                        (Some(io), _) => (io.stderr)(),
                        (None, _) => Box::new(DevNull),
                    };
                    Ok(self.table.push(s)?)
                }
                Synth::Dev(_, Dev::Stdin) => Err(ErrorCode::BadDescriptor.into()),
                Synth::Dev(_, Dev::Burrow) => match self.table.get(&fd)?.channel.clone() {
                    Some(c) => {
                        let s: OutputStream = Box::new(control::Requests(c));
                        Ok(self.table.push(s)?)
                    }
                    None => Err(ErrorCode::BadDescriptor.into()),
                },
                Synth::Dev(..) => {
                    let s: OutputStream = Box::new(DevNull);
                    Ok(self.table.push(s)?)
                }
                Synth::Dir(_) => Err(ErrorCode::IsDirectory.into()),
                Synth::File(..) => Err(ErrorCode::BadDescriptor.into()),
            };
        }
        let d = self.desc(&fd)?;
        if d.dir {
            return Err(ErrorCode::IsDirectory.into());
        }
        if !d.write {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let s: OutputStream = Box::new(FileOutput {
            txn: self.fs.txn.clone(),
            quota_hit: self.fs.quota_hit.clone(),
            ino: d.ino,
            pos: offset,
        });
        Ok(self.table.push(s)?)
    }
}

impl types::HostDirectoryEntryStream for WasiFsView<'_> {
    fn read_directory_entry(&mut self, s: Resource<DirStream>) -> FsResult<Option<DirectoryEntry>> {
        Ok(self.table.get_mut(&s)?.entries.pop_front())
    }

    fn drop(&mut self, s: Resource<DirStream>) -> wasmtime::Result<()> {
        self.table.delete(s)?;
        Ok(())
    }
}

/// The hash identifying a synthetic node: its path.
fn synth_hash(path: &str) -> MetadataHashValue {
    let h = blake3::hash(path.as_bytes());
    let b = h.as_bytes();
    MetadataHashValue {
        lower: u64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
        upper: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
    }
}
