//! What std cannot do on wasm32-wasip2 (creating symlinks), or does slowly there (`lstat` of
//! many paths below one directory), done through wasi:filesystem.

use std::path::Path;

/// Whether a file type is a character device (the sandbox's `/dev/null`, `/dev/zero`...).
/// std's WASI file types are stable only for files, directories and symlinks; in the
/// sandbox every other kind is one of `/dev`'s character devices.
pub fn is_char_device(ft: &std::fs::FileType) -> bool {
    !ft.is_file() && !ft.is_dir() && !ft.is_symlink()
}

/// How much of a character device a whole-file read takes (`/dev/zero` and `/dev/urandom`
/// never end; commands here read their inputs whole).
pub const DEVICE_READ: u64 = 1 << 20;

thread_local! {
    /// The outputs of this call's process substitutions, by the fd number their
    /// `/dev/fd/N` names.
    static SUBSTITUTIONS: std::cell::RefCell<Vec<(u32, Vec<u8>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// The standard input of the command running now, which `/dev/stdin` and `/dev/fd/0`
    /// name (the sandbox's own `/dev/stdin` is the whole call's input, not a pipeline's).
    static STDIN: std::cell::RefCell<Option<crate::io::Input>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `stdin` as what `/dev/stdin` reads.
pub fn with_stdin<T>(stdin: &crate::io::Input, f: impl FnOnce() -> T) -> T {
    let prev = STDIN.with(|s| s.borrow_mut().replace(stdin.clone()));
    let r = f();
    STDIN.with(|s| *s.borrow_mut() = prev);
    r
}

/// Whether `path` names the standard input.
pub fn is_stdin(path: &Path) -> bool {
    matches!(path.to_str(), Some("/dev/stdin" | "/dev/fd/0"))
}

use std::cell::RefCell;
use std::rc::Rc;

/// A buffer a `>(...)` reads, shared with the commands that write into it.
pub type Buffer = Rc<RefCell<Vec<u8>>>;

thread_local! {
    /// The buffers this call's `>(...)` write into, by the fd number their `/dev/fd/N` names.
    static OUTPUTS: RefCell<Vec<(u32, Buffer)>> = const { RefCell::new(Vec::new()) };
}

/// The next `/dev/fd/N` number: 63, then down, as bash numbers them.
fn next_fd() -> u32 {
    let used = SUBSTITUTIONS.with(|s| s.borrow().len()) + OUTPUTS.with(|o| o.borrow().len());
    63u32.saturating_sub(used as u32)
}

/// Keeps the output of a `<(...)` and returns the name that reads it.
pub fn substitution(bytes: Vec<u8>) -> String {
    let n = next_fd();
    SUBSTITUTIONS.with(|s| s.borrow_mut().push((n, bytes)));
    format!("/dev/fd/{n}")
}

/// A buffer for a `>(...)`, and the name that writes into it.
pub fn output_substitution() -> (String, Buffer) {
    let n = next_fd();
    let buf = Rc::new(RefCell::new(Vec::new()));
    OUTPUTS.with(|o| o.borrow_mut().push((n, buf.clone())));
    (format!("/dev/fd/{n}"), buf)
}

/// The buffer behind a `/dev/fd/N` of a `>(...)`.
pub fn output_buffer(path: &Path) -> Option<Buffer> {
    let n: u32 = path.to_str()?.strip_prefix("/dev/fd/")?.parse().ok()?;
    OUTPUTS.with(|o| {
        o.borrow()
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, b)| b.clone())
    })
}

/// How many substitutions are alive (to release those a command made when it ends).
pub fn substitutions_mark() -> (usize, usize) {
    (
        SUBSTITUTIONS.with(|s| s.borrow().len()),
        OUTPUTS.with(|o| o.borrow().len()),
    )
}

pub fn substitutions_release(mark: (usize, usize)) {
    SUBSTITUTIONS.with(|s| s.borrow_mut().truncate(mark.0));
    OUTPUTS.with(|o| o.borrow_mut().truncate(mark.1));
}

/// The bytes behind a `/dev/fd/N` of a process substitution.
fn substituted(path: &Path) -> Option<Vec<u8>> {
    let n: u32 = path.to_str()?.strip_prefix("/dev/fd/")?.parse().ok()?;
    SUBSTITUTIONS.with(|s| {
        s.borrow()
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, b)| b.clone())
    })
}

/// Reads a whole file, as `std::fs::read`; a character device gives its first
/// [`DEVICE_READ`] bytes; `/dev/fd/N` of a process substitution gives its output.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    if let Some(b) = substituted(path) {
        return Ok(b);
    }
    if is_stdin(path)
        && let Some(input) = STDIN.with(|s| s.borrow().clone())
    {
        return Ok(crate::io::read_all(&input));
    }
    let meta = std::fs::metadata(path)?;
    if !is_char_device(&meta.file_type()) {
        return std::fs::read(path);
    }
    let mut out = Vec::new();
    let limit = device_limit();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path)?, limit),
        &mut out,
    )?;
    Ok(out)
}

/// The end of the regular file `path` that holds its last `lines` lines (starting at a line's
/// start) or, with `bytes`, its last `bytes` bytes, read backwards a piece at a time: `tail`
/// of a file larger than memory reads only its end. None when `path` is not a regular file
/// that opens (the caller reads it as usual, reporting its error).
pub fn read_tail(
    path: &Path,
    lines: usize,
    bytes: Option<usize>,
) -> Option<std::io::Result<Vec<u8>>> {
    use std::io::{Read, Seek, SeekFrom};
    if path.starts_with("/dev") {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok().filter(|m| m.is_file())?.len();
    let mut read_range = |start: u64, end: u64| -> std::io::Result<Vec<u8>> {
        file.seek(SeekFrom::Start(start))?;
        let mut piece = Vec::with_capacity((end - start) as usize);
        (&mut file).take(end - start).read_to_end(&mut piece)?;
        Ok(piece)
    };
    if let Some(n) = bytes {
        return Some(read_range(len.saturating_sub(n as u64), len));
    }
    const STEP: u64 = 64 << 10;
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let (mut pos, mut found) = (len, 0usize);
    while pos > 0 && lines > 0 {
        let start = pos.saturating_sub(STEP);
        let piece = match read_range(start, pos) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        // The newlines that end the lines before the last `lines`; the file's final
        // newline ends its last line, not one before it.
        let mut cut = None;
        for i in memchr::memrchr_iter(b'\n', &piece) {
            if start + i as u64 + 1 == len {
                continue;
            }
            found += 1;
            if found == lines {
                cut = Some(i + 1);
                break;
            }
        }
        pos = start;
        match cut {
            Some(at) => {
                pieces.push(piece[at..].to_vec());
                break;
            }
            None => pieces.push(piece),
        }
    }
    pieces.reverse();
    Some(Ok(pieces.concat()))
}

/// [`read`] handing the content to `f` a piece at a time: a regular file in pieces of at
/// most `chunk` bytes (so a command that passes data through holds only one piece), anything
/// below `/dev` (stdin, a process substitution, a device: [`read`]'s special cases) whole.
/// `f` is called at least once, and returns whether it wants the next piece.
pub fn read_chunks(
    path: impl AsRef<Path>,
    chunk: usize,
    mut f: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<()> {
    let path = path.as_ref();
    // `/dev/stdin` and a substitution's `/dev/fd/N` are [`read`]'s to interpret. A character
    // device (`/dev/zero`, `/dev/urandom`) is read a piece at a time, as far as [`read`]
    // would take it: `head -c 50000000 /dev/zero` held all of it in memory at once.
    let file = if path.starts_with("/dev") {
        let device = !is_stdin(path)
            && !path.starts_with("/dev/fd/")
            && std::fs::metadata(path).is_ok_and(|m| is_char_device(&m.file_type()));
        if device {
            Some((std::fs::File::open(path)?, device_limit()))
        } else {
            None
        }
    } else {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        meta.is_file().then_some((file, meta.len()))
    };
    let Some((file, len)) = file else {
        f(&read(path)?);
        return Ok(());
    };
    // What the file holds now, no more: the command may be appending to the same file
    // (`cat a >> a`), which would otherwise never reach its end. A small file gets a
    // buffer of its size, not a whole piece.
    let mut file = std::io::Read::take(file, len);
    let size = usize::try_from(len).map_or(chunk, |l| l.min(chunk));
    let mut buf = vec![0; size.max(1)];
    let mut any = false;
    loop {
        match std::io::Read::read(&mut file, &mut buf) {
            // An empty file is one empty piece.
            Ok(0) => {
                if !any {
                    f(&[]);
                }
                return Ok(());
            }
            Ok(n) => {
                any = true;
                if !f(&buf[..n]) {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

thread_local! {
    /// How much of a character device [`read`] takes instead of [`DEVICE_READ`], while a
    /// command that knows how much it wants (`head -c N`) reads.
    static DEVICE_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// How much of a character device the running command reads: [`with_device_limit`]'s, or
/// [`DEVICE_READ`].
fn device_limit() -> u64 {
    DEVICE_LIMIT.with(|l| l.get()).unwrap_or(DEVICE_READ)
}

/// Runs `f` with character devices read up to `limit` bytes (at least [`DEVICE_READ`]).
pub fn with_device_limit<T>(limit: u64, f: impl FnOnce() -> T) -> T {
    let prev = DEVICE_LIMIT.with(|l| l.replace(Some(limit.max(DEVICE_READ))));
    let r = f();
    DEVICE_LIMIT.with(|l| l.set(prev));
    r
}

/// Creates a symlink at `link` (an absolute guest path) pointing at `target`.
#[cfg(target_os = "wasi")]
pub fn symlink(target: &str, link: &Path) -> std::io::Result<()> {
    let dirs = wasip2::filesystem::preopens::get_directories();
    let link = link.to_string_lossy();
    for (dir, root) in &dirs {
        let prefix = format!("{}/", root.trim_end_matches('/'));
        if let Some(rel) = link.strip_prefix(&prefix) {
            return dir.symlink_at(target, rel).map_err(|e| {
                use wasip2::filesystem::types::ErrorCode as C;
                std::io::Error::from(match e {
                    C::Exist => std::io::ErrorKind::AlreadyExists,
                    C::NoEntry => std::io::ErrorKind::NotFound,
                    C::NotDirectory => std::io::ErrorKind::NotADirectory,
                    C::NotPermitted | C::Access => std::io::ErrorKind::PermissionDenied,
                    _ => std::io::ErrorKind::Other,
                })
            });
        }
    }
    Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
}

#[cfg(not(target_os = "wasi"))]
pub fn symlink(target: &str, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Ends the process with a full exit status (std's exit maps every failure to 1 on wasip2).
pub fn exit(code: i32) -> ! {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let _ = std::io::Write::flush(&mut std::io::stderr());
    #[cfg(target_os = "wasi")]
    wasip2::cli::exit::exit_with_code((code & 0xff) as u8);
    std::process::exit(code)
}

thread_local! {
    /// When the innermost `timeout` running now expires.
    static DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` under a deadline `secs` from now (or the enclosing one, if sooner); returns what
/// `f` returned and whether this deadline passed.
pub fn with_deadline<T>(secs: f64, f: impl FnOnce() -> T) -> (T, bool) {
    let mine = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e9));
    let prev = DEADLINE.with(|d| d.get());
    let effective = prev.map_or(mine, |p| p.min(mine));
    DEADLINE.with(|d| d.set(Some(effective)));
    let r = f();
    DEADLINE.with(|d| d.set(prev));
    (r, std::time::Instant::now() >= mine)
}

/// Whether a `timeout` running now has expired (its command must stop).
pub fn deadline_passed() -> bool {
    DEADLINE
        .with(|d| d.get())
        .is_some_and(|t| std::time::Instant::now() >= t)
}

/// The deadline a sleep must not pass.
pub fn deadline() -> Option<std::time::Instant> {
    DEADLINE.with(|d| d.get())
}

/// A duration as `sleep` and `timeout` take it: a number with an optional `s`, `m`, `h` or
/// `d` suffix, in seconds.
pub fn parse_duration(s: &str) -> Option<f64> {
    let (num, mult) = match s.chars().last()? {
        's' => (&s[..s.len() - 1], 1.0),
        'm' => (&s[..s.len() - 1], 60.0),
        'h' => (&s[..s.len() - 1], 3600.0),
        'd' => (&s[..s.len() - 1], 86400.0),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v >= 0.0 && v.is_finite() && !num.starts_with('+')).then_some(v * mult)
}

thread_local! {
    /// A fatal shell error (an unbound variable under `set -u`, `${x:?}`) is unwinding.
    static FATAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks that a fatal shell error is unwinding to the end of its shell.
pub fn set_fatal() {
    FATAL.with(|f| f.set(true));
}

/// Whether a fatal error ended the shell (and forgets it): bash then exits 127 from a
/// non-interactive shell's top level, 1 from a subshell.
pub fn take_fatal() -> bool {
    FATAL.with(|f| f.replace(false))
}

/// What `git status` compares with an index entry: the type, size and modification time of
/// a path, not following a symlink in its last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiteStat {
    pub is_dir: bool,
    pub is_symlink: bool,
    pub len: u64,
    /// Seconds and nanoseconds since the epoch, (0, 0) if unknown.
    pub mtime: (u64, u32),
}

impl LiteStat {
    fn of(meta: &std::fs::Metadata) -> LiteStat {
        LiteStat {
            is_dir: meta.is_dir(),
            is_symlink: meta.file_type().is_symlink(),
            len: meta.len(),
            mtime: mtime(meta),
        }
    }
}

/// A file's modification time as seconds and nanoseconds since the epoch, (0, 0) if
/// unknown (a time before the epoch, or a filesystem without one).
pub fn mtime(meta: &std::fs::Metadata) -> (u64, u32) {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| (d.as_secs(), d.subsec_nanos()))
        .unwrap_or((0, 0))
}

/// `lstat` of many paths below one directory (a work tree), each relative to an open
/// descriptor of its parent directory, kept while consecutive paths share it. On the
/// sandbox this is one host call per path that resolves one name, where std's
/// `symlink_metadata` makes two (wasi-libc asks for a metadata hash to fill `st_ino`) that
/// each resolve the whole path; `git status` of 10,000 files makes 10,000 of them.
pub struct TreeStat {
    root: std::path::PathBuf,
    #[cfg(target_os = "wasi")]
    wasi: wasi_tree::State,
}

impl TreeStat {
    pub fn new(root: &Path) -> TreeStat {
        TreeStat {
            root: root.to_path_buf(),
            #[cfg(target_os = "wasi")]
            wasi: wasi_tree::State::default(),
        }
    }

    /// The work tree this stats paths below.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The attributes of `rel` (a `/`-separated path below the root), or None when it does
    /// not exist or cannot be read.
    pub fn lstat(&mut self, rel: &[u8]) -> Option<LiteStat> {
        #[cfg(target_os = "wasi")]
        if let Some(r) = self.wasi.lstat(&self.root, rel) {
            return r;
        }
        let path = self.root.join(String::from_utf8_lossy(rel).as_ref());
        path.symlink_metadata().ok().map(|m| LiteStat::of(&m))
    }
}

#[cfg(target_os = "wasi")]
mod wasi_tree {
    use std::path::Path;

    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, OpenFlags, PathFlags,
    };

    use super::LiteStat;

    #[derive(Default)]
    pub(super) struct State {
        /// The preopened directory the root is below and the root's path relative to it;
        /// `Some(None)` once found to be outside every preopen (std is used then).
        base: Option<Option<(Descriptor, String)>>,
        /// The parent directory of the last path, open.
        dir: Option<(Vec<u8>, Descriptor)>,
    }

    impl State {
        /// None when this way does not apply (the root is outside the preopens, or a name
        /// is not UTF-8): the caller asks std instead.
        pub(super) fn lstat(&mut self, root: &Path, rel: &[u8]) -> Option<Option<LiteStat>> {
            let rel = std::str::from_utf8(rel).ok()?;
            let (parent, name) = match rel.rfind('/') {
                Some(i) => (&rel[..i], &rel[i + 1..]),
                None => ("", rel),
            };
            if name.is_empty() || name == "." || name == ".." {
                return None;
            }
            if self.dir.as_ref().map(|(p, _)| p.as_slice()) != Some(parent.as_bytes()) {
                let (base, below) = self.base(root)?;
                let path = match (below.is_empty(), parent.is_empty()) {
                    (true, true) => ".".to_string(),
                    (true, false) => parent.to_string(),
                    (false, true) => below.clone(),
                    (false, false) => format!("{below}/{parent}"),
                };
                match base.open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    &path,
                    OpenFlags::DIRECTORY,
                    DescriptorFlags::READ,
                ) {
                    Ok(d) => self.dir = Some((parent.as_bytes().to_vec(), d)),
                    Err(_) => {
                        self.dir = None;
                        return Some(None);
                    }
                }
            }
            let (_, dir) = self.dir.as_ref()?;
            let Ok(st) = dir.stat_at(PathFlags::empty(), name) else {
                return Some(None);
            };
            Some(Some(LiteStat {
                is_dir: st.type_ == DescriptorType::Directory,
                is_symlink: st.type_ == DescriptorType::SymbolicLink,
                len: st.size,
                mtime: st
                    .data_modification_timestamp
                    .map(|t| (t.seconds, t.nanoseconds))
                    .unwrap_or((0, 0)),
            }))
        }

        fn base(&mut self, root: &Path) -> Option<&(Descriptor, String)> {
            if self.base.is_none() {
                let root = root.to_str().map(|r| r.trim_end_matches('/').to_string());
                // The innermost preopen holding the root, as wasi-libc chooses.
                let found = root.and_then(|root| {
                    wasip2::filesystem::preopens::get_directories()
                        .into_iter()
                        .filter_map(|(d, at)| {
                            let at = at.trim_end_matches('/');
                            let below = if root == at {
                                ""
                            } else {
                                root.strip_prefix(at)?.strip_prefix('/')?
                            };
                            Some((d, below.to_string()))
                        })
                        .min_by_key(|(_, below)| below.len())
                });
                self.base = Some(found);
            }
            self.base.as_ref()?.as_ref()
        }
    }
}
