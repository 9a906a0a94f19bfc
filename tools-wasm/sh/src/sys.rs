//! What std cannot do on wasm32-wasip2 (creating symlinks), done through wasi:filesystem.

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
    static STDIN: std::cell::RefCell<Option<crate::shell::io::Input>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `stdin` as what `/dev/stdin` reads.
pub fn with_stdin<T>(stdin: &crate::shell::io::Input, f: impl FnOnce() -> T) -> T {
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
        return Ok(crate::shell::io::read_all(&input));
    }
    let meta = std::fs::metadata(path)?;
    if !is_char_device(&meta.file_type()) {
        return std::fs::read(path);
    }
    let mut out = Vec::new();
    let limit = DEVICE_LIMIT.with(|l| l.get()).unwrap_or(DEVICE_READ);
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path)?, limit),
        &mut out,
    )?;
    Ok(out)
}

thread_local! {
    /// How much of a character device [`read`] takes instead of [`DEVICE_READ`], while a
    /// command that knows how much it wants (`head -c N`) reads.
    static DEVICE_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
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
