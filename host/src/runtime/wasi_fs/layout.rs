//! Where the guest's paths live in the session's tree: the workspace at the store's root,
//! the fixed mounts outside it (`/tmp`, `/home/agent`, `/memories`, `/run/burrow`) in the
//! store's system area, and the session's persisted directories (memory stores mounted at
//! their `mount_path`) below [`PERSISTED_ROOT`].

use burrow_store::Txn;

use super::WORKSPACE;

/// The persisted mounts outside the workspace: guest path -> directory of the store's
/// system area ([`burrow_store::SYSTEM_DIR`]). They are versioned with the call like the
/// workspace, copied into forks and covered by undo, but are not part of the workspace's
/// diff, export or view.
pub const SYSTEM_MOUNTS: [(&str, &str); 4] = [
    ("/tmp", "tmp"),
    ("/home/agent", "home"),
    // Claude's memory tool (`memory_20250818`): the agent's notes, versioned with it.
    ("/memories", "memories"),
    // The shell's own state (cwd, variables, functions), out of the user's project.
    ("/run/burrow", "run"),
];

/// The system area's file listing a session's persisted directories outside the fixed
/// mounts (one absolute guest path a line): where Managed Agents memory stores are mounted
/// at their `mount_path` (`/mnt/memory/notes`). Each is kept at [`PERSISTED_ROOT`] followed by
/// its guest path, and mounted there for every run of the session, so it is versioned,
/// forked and undone with the session, and stays out of the project's diff and export.
pub const PERSISTED_DIRS: &str = "\0system/mounts";
/// Where the persisted directories' contents live: `\0system/root/mnt/memory/notes` is the
/// guest's `/mnt/memory/notes`.
pub const PERSISTED_ROOT: &str = "\0system/root";

/// Top-level names of the composed root that belong to its fixed parts; a persisted
/// directory may not be at, above or below them (except below the persisted mounts, which
/// need no registration: see [`persisted_store_path`]).
const RESERVED_TOP: [&str; 8] = ["dev", "etc", "usr", "bin", "sbin", "lib", "proc", "sys"];

/// Checks that `guest` may become a persisted directory: a clean absolute path, not `/`, not
/// inside, at or above `/workspace` or a fixed mount (`/tmp`, `/home/agent`, `/memories`,
/// `/run/burrow`, `/opt/burrow`), and not under the computed system directories (`/dev`,
/// `/etc`, `/usr`, `/bin`, ...).
pub fn check_persisted_dir(guest: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("cannot keep {guest} with the session: {why}"));
    let trimmed = guest.trim_end_matches('/');
    if !guest.starts_with('/') || trimmed.is_empty() {
        return bad("not an absolute path below /");
    }
    if trimmed.contains('\0')
        || trimmed
            .split('/')
            .skip(1)
            .any(|c| matches!(c, "" | "." | ".."))
    {
        return bad("not a clean path");
    }
    let overlaps = |m: &str| {
        let within = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}/"));
        within(trimmed, m) || within(m, trimmed)
    };
    let fixed = [WORKSPACE, "/opt/burrow"]
        .into_iter()
        .chain(SYSTEM_MOUNTS.iter().map(|(g, _)| *g));
    if let Some(m) = fixed.into_iter().find(|m| overlaps(m)) {
        return bad(&format!("it overlaps {m}"));
    }
    let top = trimmed[1..].split('/').next().unwrap_or("");
    if RESERVED_TOP.contains(&top) {
        return bad(&format!("/{top} is computed by the sandbox, read-only"));
    }
    Ok(())
}

/// The session's persisted directories, as [`PERSISTED_DIRS`] lists them in `txn`.
pub fn persisted_dirs(txn: &mut Txn) -> Vec<String> {
    match txn.read_file(PERSISTED_DIRS) {
        Ok(b) => String::from_utf8_lossy(&b)
            .lines()
            .filter(|l| check_persisted_dir(l).is_ok())
            .map(|l| l.trim_end_matches('/').to_string())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Makes `guest` a directory kept with the session (see [`PERSISTED_DIRS`]) and returns its
/// store path. A path already persisted (inside `/workspace`, `/tmp`, `/home/agent`, ... or
/// registered before) is only created. Nothing changes when `guest` is refused.
pub fn add_persisted_dir(txn: &mut Txn, guest: &str) -> Result<String, String> {
    let mut known = persisted_dirs(txn);
    let store = match persisted_store_path_in(guest, &known) {
        Some(p) => p,
        None => {
            check_persisted_dir(guest)?;
            known.push(guest.trim_end_matches('/').to_string());
            let text: String = known.iter().map(|d| format!("{d}\n")).collect();
            txn.mkdir_all(burrow_store::SYSTEM_DIR)
                .map_err(|e| e.to_string())?;
            txn.write_file(PERSISTED_DIRS, text.as_bytes())
                .map_err(|e| e.to_string())?;
            persisted_store_path_in(guest, &known)
                .ok_or_else(|| format!("cannot keep {guest} with the session"))?
        }
    };
    if !store.is_empty() {
        txn.mkdir_all(&store).map_err(|e| e.to_string())?;
    }
    Ok(store)
}

/// The guest path of a store path in the system area (`\0system/tmp/x` -> `/tmp/x`,
/// `\0system/root/mnt/m` -> `/mnt/m`), or None for a workspace path.
pub fn system_guest_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix(burrow_store::SYSTEM_DIR)?;
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let (sub, below) = rest.split_once('/').unwrap_or((rest, ""));
    if sub == "root" {
        return Some(format!("/{below}"));
    }
    let guest = SYSTEM_MOUNTS
        .iter()
        .find(|(_, s)| *s == sub)
        .map(|(g, _)| *g)
        .unwrap_or("/");
    Some(match below {
        "" => guest.to_string(),
        b => format!("{guest}/{b}"),
    })
}

/// The store path of a persisted guest path (`/workspace/a` -> `a`, `/tmp/x` ->
/// `\0system/tmp/x`), or None for a path outside the persisted mounts or one with `.`/`..`.
pub fn persisted_store_path(guest: &str) -> Option<String> {
    persisted_store_path_in(guest, &[])
}

/// [`persisted_store_path`], with the session's persisted directories `dirs` too
/// (`/mnt/memory/notes/a` -> `\0system/root/mnt/memory/notes/a`).
pub fn persisted_store_path_in(guest: &str, dirs: &[String]) -> Option<String> {
    if let Some(p) = fixed_store_path(guest) {
        return Some(p);
    }
    let trimmed = guest.trim_end_matches('/');
    if trimmed
        .split('/')
        .skip(1)
        .any(|c| matches!(c, "" | "." | ".."))
    {
        return None;
    }
    dirs.iter()
        .find(|d| trimmed == d.as_str() || trimmed.starts_with(&format!("{d}/")))
        .map(|_| format!("{PERSISTED_ROOT}{trimmed}"))
}

/// Where a symlink's absolute target leads in the session's tree (the store's
/// [`burrow_store::AbsoluteLinks`]): `/workspace/a` is `a`, `/tmp/t` and the other system
/// mounts are in the system area, any other path is where a persisted directory there would
/// be kept (`/mnt/m/x` -> `\0system/root/mnt/m/x`). A target in the computed, read-only
/// directories (`/usr`, `/etc`, ...) is not in the tree, so a link to it dangles.
pub fn link_store_path(guest: &str) -> String {
    fixed_store_path(guest)
        .unwrap_or_else(|| format!("{PERSISTED_ROOT}{}", guest.trim_end_matches('/')))
}

fn fixed_store_path(guest: &str) -> Option<String> {
    let trimmed = guest.trim_end_matches('/');
    if !guest.starts_with('/')
        || trimmed
            .split('/')
            .skip(1)
            .any(|c| matches!(c, "" | "." | ".."))
    {
        return None;
    }
    let below = |mount: &str| {
        trimmed
            .strip_prefix(mount)
            .filter(|r| r.is_empty() || r.starts_with('/'))
            .map(|r| r.trim_start_matches('/').to_string())
    };
    if let Some(rel) = below(WORKSPACE) {
        return Some(rel);
    }
    SYSTEM_MOUNTS.iter().find_map(|(g, sub)| {
        below(g).map(|rel| match rel.as_str() {
            "" => format!("{}/{sub}", burrow_store::SYSTEM_DIR),
            r => format!("{}/{sub}/{r}", burrow_store::SYSTEM_DIR),
        })
    })
}
