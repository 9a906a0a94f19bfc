//! What std cannot do on wasm32-wasip2 (creating symlinks), done through wasi:filesystem.

use std::path::Path;

use crate::shell::Shell;

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
