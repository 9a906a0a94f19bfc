//! Where burrow keeps things on the host when not told otherwise (the store, the compiled
//! components' cache, the toolchains), and where the toolchains appear inside the sandbox.
//! Below everything that names them, so sessions and toolchains can both use them.

use std::path::PathBuf;

/// Where the toolchains directory appears inside the sandbox.
pub const TOOLCHAINS_GUEST_DIR: &str = "/opt/burrow/toolchains";

/// The store every front end (CLI, Python package) uses when not told:
/// `$XDG_DATA_HOME/burrow/burrow.db` (`~/.local/share/burrow/burrow.db`).
pub fn default_store_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("burrow").join("burrow.db")
}

/// Where compiled components are cached across processes: `$BURROW_CACHE`, else
/// `$XDG_CACHE_HOME/burrow/components` (`~/.cache/burrow/components`).
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("BURROW_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("burrow")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/burrow")))
        .unwrap_or_else(|| std::env::temp_dir().join("burrow-cache"))
        .join("components")
}

/// The toolchains directory: `$BURROW_TOOLCHAINS`, else `$XDG_DATA_HOME/burrow/toolchains`
/// (`~/.local/share/burrow/toolchains`).
pub fn default_toolchains_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BURROW_TOOLCHAINS") {
        return PathBuf::from(d);
    }
    default_store_path()
        .parent()
        .map(|p| p.join("toolchains"))
        .unwrap_or_else(|| PathBuf::from("toolchains"))
}
