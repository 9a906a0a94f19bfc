//! How git writes the things every command prints: paths quoted as core.quotePath quotes
//! them, relative to the working directory, abbreviated ids, `commit`/`commits`, and the
//! tracking lines of status and checkout.

use std::path::Path;

use super::object::{Oid, hex};
use super::repo::Repo;
use super::walk::Tracking;

/// A path as git prints it by default (core.quotePath on): in double quotes with C escapes
/// when it has control characters, quotes, backslashes or bytes above ASCII.
pub(crate) fn quote(path: &[u8]) -> String {
    quote_as(path, true, false)
}

/// A path as git's `quote_c_style` writes it: quoted when it has control characters, `"` or
/// a backslash, bytes above ASCII with `high` (core.quotePath, octal escapes), or a space with
/// `space` (status's short and porcelain formats).
pub(crate) fn quote_as(path: &[u8], high: bool, space: bool) -> String {
    let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f || (high && b >= 0x80);
    if !path.iter().any(|&b| needs(b) || (space && b == b' ')) {
        return String::from_utf8_lossy(path).into_owned();
    }
    let mut bytes = vec![b'"'];
    for &b in path {
        match b {
            b'"' => bytes.extend_from_slice(b"\\\""),
            b'\\' => bytes.extend_from_slice(b"\\\\"),
            0x07 => bytes.extend_from_slice(b"\\a"),
            0x08 => bytes.extend_from_slice(b"\\b"),
            b'\t' => bytes.extend_from_slice(b"\\t"),
            b'\n' => bytes.extend_from_slice(b"\\n"),
            0x0b => bytes.extend_from_slice(b"\\v"),
            0x0c => bytes.extend_from_slice(b"\\f"),
            b'\r' => bytes.extend_from_slice(b"\\r"),
            _ if needs(b) => bytes.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            _ => bytes.push(b),
        }
    }
    bytes.push(b'"');
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether core.quotePath is on (git's default): bytes above ASCII printed as octal escapes.
pub(crate) fn quotes_high_bytes(repo: &Repo) -> bool {
    !matches!(
        repo.config("core.quotepath")
            .map(|v| v.to_ascii_lowercase())
            .as_deref(),
        Some("false" | "no" | "off" | "0")
    )
}

/// `path` (from the top of the work tree) relative to `cwd` (also from the top).
pub(crate) fn relative(path: &[u8], cwd: &[u8]) -> Vec<u8> {
    if cwd.is_empty() {
        return path.to_vec();
    }
    let p: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let c: Vec<&[u8]> = cwd.split(|&b| b == b'/').collect();
    let common = p.iter().zip(&c).take_while(|(a, b)| a == b).count();
    let mut out = Vec::new();
    for _ in common..c.len() {
        out.extend_from_slice(b"../");
    }
    let rest = p[common..].join(&b'/');
    out.extend_from_slice(&rest);
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// The working directory from the top of the work tree (`src/lib`), empty at the top.
pub(crate) fn prefix(repo: &Repo, cwd: &Path) -> Vec<u8> {
    repo.work
        .as_ref()
        .and_then(|w| cwd.strip_prefix(w).ok())
        .map(|p| p.to_string_lossy().as_bytes().to_vec())
        .unwrap_or_default()
}

pub(crate) fn abbrev(oid: &Oid) -> String {
    hex(oid)[..7].to_string()
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "commit" } else { "commits" }
}

/// git's tracking lines ("Your branch is up to date with 'origin/main'."), as status and
/// checkout print them.
pub(crate) fn tracking_text(u: &str, tracking: Tracking) -> String {
    let mut out = String::new();
    match tracking {
            Some(Some((0, 0))) => out.push_str(&format!("Your branch is up to date with '{u}'.\n")),
            Some(Some((a, 0))) => out.push_str(&format!(
                "Your branch is ahead of '{u}' by {a} {}.\n  (use \"git push\" to publish your local commits)\n",
                plural(a)
            )),
            Some(Some((0, b))) => out.push_str(&format!(
                "Your branch is behind '{u}' by {b} {}, and can be fast-forwarded.\n  (use \"git pull\" to update your local branch)\n",
                plural(b)
            )),
            Some(Some((a, b))) => out.push_str(&format!(
                "Your branch and '{u}' have diverged,\nand have {a} and {b} different commits each, respectively.\n  (use \"git pull\" if you want to integrate the remote branch with yours)\n"
            )),
            Some(None) => out.push_str(&format!(
                "Your branch is based on '{u}', but the upstream is gone.\n  (use \"git branch --unset-upstream\" to fixup)\n"
            )),
            None => {}
        }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_relative_and_quoted() {
        assert_eq!(relative(b"src/a.rs", b"src"), b"a.rs");
        assert_eq!(relative(b"README", b"src/x"), b"../../README");
        assert_eq!(quote(b"a b"), "a b");
        assert_eq!(quote("é".as_bytes()), "\"\\303\\251\"");
        // status's short formats quote a space; core.quotePath=false leaves high bytes.
        assert_eq!(quote_as(b"a b", true, true), "\"a b\"");
        assert_eq!(quote_as("é".as_bytes(), false, true), "é");
        assert_eq!(quote_as(b"t\tq\"\x07", false, false), "\"t\\tq\\\"\\a\"");
    }
}
