//! What std cannot do on wasm32-wasip2 (creating symlinks), done through wasi:filesystem.

use std::path::Path;

use crate::shell::Shell;

/// Whether a file type is a character device (the sandbox's `/dev/null`, `/dev/zero`...).
/// std's WASI file types are stable only for files, directories and symlinks; in the
/// sandbox every other kind is one of `/dev`'s character devices.
pub fn is_char_device(ft: &std::fs::FileType) -> bool {
    !ft.is_file() && !ft.is_dir() && !ft.is_symlink()
}

/// How much of a character device a whole-file read takes (`/dev/zero` and `/dev/urandom`
/// never end; commands here read their inputs whole).
pub const DEVICE_READ: u64 = 1 << 20;

/// Reads a whole file, as `std::fs::read`; a character device gives its first
/// [`DEVICE_READ`] bytes.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    let meta = std::fs::metadata(path)?;
    if !is_char_device(&meta.file_type()) {
        return std::fs::read(path);
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path)?, DEVICE_READ),
        &mut out,
    )?;
    Ok(out)
}

/// Creates a symlink at `link` (an absolute guest path) pointing at `target`.
#[cfg(target_os = "wasi")]
pub fn symlink(_sh: &Shell, target: &str, link: &Path) -> std::io::Result<()> {
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
pub fn symlink(_sh: &Shell, target: &str, link: &Path) -> std::io::Result<()> {
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
