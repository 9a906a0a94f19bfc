//! Revisions as git reads them (gitrevisions(7)): a name (`HEAD`, a branch, tag or
//! remote-tracking branch, `ORIG_HEAD`, a full or abbreviated id), a reflog entry
//! (`stash@{1}`) or upstream (`@{u}`), then steps (`~N`, `^N`, `^{commit}`, `^{tree}`,
//! `^{}`, ...); `REV:path` for what a tree has at a path and `:path` / `:N:path` for the
//! index. Failures carry what git prints on the way (`error: ...`) and, for a path that is
//! not there, the message git dies with where it diagnoses the name.

use std::collections::BTreeSet;

use super::object::{Kind, Oid, hex, parse_commit, parse_hex, tag_target};
use super::repo::{Repo, entry_at, load_all, upstream_of};

/// Why a revision names no object.
#[derive(Debug, Default)]
pub(crate) struct RevError {
    /// What git prints each time it tries the name (`error: object ... is a tree, not a
    /// commit`).
    pub errors: Vec<String>,
    /// The message git dies with when it diagnoses the name instead of calling it unknown
    /// (`fatal: path 'x' does not exist in 'HEAD'`).
    pub fatal: Option<String>,
    /// What git dies with as soon as it reads the name (`fatal: no upstream configured for
    /// branch 'main'`).
    pub dies: Option<String>,
}

impl RevError {
    fn error(e: String) -> RevError {
        RevError {
            errors: vec![e],
            ..RevError::default()
        }
    }

    fn fatal(f: String) -> RevError {
        RevError {
            fatal: Some(f),
            ..RevError::default()
        }
    }

    fn dies(f: String) -> RevError {
        RevError {
            dies: Some(f),
            ..RevError::default()
        }
    }
}

/// A revision: see the module comment. None where git would not find it.
pub fn resolve(repo: &Repo, rev: &str) -> Option<Oid> {
    lookup(repo, rev, b"").ok()
}

/// A revision given in the directory `pre` (from the top of the work tree), which `./` and
/// `../` in its path are relative to.
pub(crate) fn lookup(repo: &Repo, rev: &str, pre: &[u8]) -> Result<Oid, RevError> {
    if let Some(rest) = rev.strip_prefix(':') {
        return index_path(repo, rest, pre);
    }
    // The first `:` outside `^{...}` ends the tree-ish.
    let mut depth = 0;
    let colon = rev.char_indices().find_map(|(i, c)| {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ':' if depth == 0 => return Some(i),
            _ => {}
        }
        None
    });
    if let Some(i) = colon {
        let (treeish, path) = (&rev[..i], &rev[i + 1..]);
        let id = lookup(repo, treeish, pre)?;
        return tree_path(repo, treeish, id, path, pre);
    }
    let split = rev.find(['~', '^']).unwrap_or(rev.len());
    let mut id = base(repo, &rev[..split])?;
    let mut s = split;
    while s < rev.len() {
        let op = rev.as_bytes()[s];
        if op != b'~' && op != b'^' {
            return Err(RevError::default());
        }
        if op == b'^' && rev[s + 1..].starts_with('{') {
            let close = rev[s..].find('}').ok_or_else(RevError::default)? + s;
            let name = &rev[..=close];
            id = peel_to(repo, id, &rev[s + 2..close], name)?;
            s = close + 1;
            continue;
        }
        let digits = rev[s + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = if digits == 0 {
            1
        } else {
            rev[s + 1..s + 1 + digits]
                .parse()
                .map_err(|_| RevError::default())?
        };
        s += 1 + digits;
        id = commit_of(repo, id)?;
        if op == b'~' {
            for _ in 0..n {
                id = *parents(repo, &id)?.first().ok_or_else(RevError::default)?;
            }
        } else if n > 0 {
            id = *parents(repo, &id)?
                .get(n - 1)
                .ok_or_else(RevError::default)?;
        }
    }
    Ok(id)
}

/// The commit `id` is or its tags lead to, with git's complaint about anything else.
fn commit_of(repo: &Repo, id: Oid) -> Result<Oid, RevError> {
    let mut id = id;
    loop {
        let (kind, data) = repo.read(&id).map_err(|_| RevError::default())?;
        match kind {
            Kind::Commit => return Ok(id),
            Kind::Tag => id = tag_target(&data).ok_or_else(RevError::default)?,
            k => {
                return Err(RevError::error(format!(
                    "error: object {} is a {}, not a commit",
                    hex(&id),
                    k.name()
                )));
            }
        }
    }
}

fn parents(repo: &Repo, id: &Oid) -> Result<Vec<Oid>, RevError> {
    let data = repo
        .read_kind(id, Kind::Commit)
        .map_err(|_| RevError::default())?;
    Ok(parse_commit(&data)
        .map_err(|_| RevError::default())?
        .parents)
}

/// `^{type}` (`commit`, `tree`, `blob`, `tag`, `object`) and `^{}`: tags are followed and a
/// commit leads to its tree, as git's `peel_to_type`; `name` is the revision so far, for
/// git's message.
fn peel_to(repo: &Repo, id: Oid, what: &str, name: &str) -> Result<Oid, RevError> {
    let mut id = id;
    let want = match what {
        "" => {
            // Every tag peeled.
            loop {
                match repo.read(&id).map_err(|_| RevError::default())? {
                    (Kind::Tag, data) => id = tag_target(&data).ok_or_else(RevError::default)?,
                    _ => return Ok(id),
                }
            }
        }
        "object" => {
            repo.read(&id).map_err(|_| RevError::default())?;
            return Ok(id);
        }
        "commit" => Kind::Commit,
        "tree" => Kind::Tree,
        "blob" => Kind::Blob,
        "tag" => Kind::Tag,
        // `^{/text}` and anything else.
        _ => return Err(RevError::default()),
    };
    loop {
        let (kind, data) = repo.read(&id).map_err(|_| RevError::default())?;
        if kind == want {
            return Ok(id);
        }
        id = match kind {
            Kind::Tag => tag_target(&data).ok_or_else(RevError::default)?,
            Kind::Commit => parse_commit(&data).map_err(|_| RevError::default())?.tree,
            k => {
                return Err(RevError::error(format!(
                    "error: {name}: expected {} type, but the object dereferences to {} type",
                    want.name(),
                    k.name()
                )));
            }
        };
    }
}

/// The full names git tries for a short one, in its order.
fn candidates(name: &str) -> [String; 6] {
    [
        name.to_string(),
        format!("refs/{name}"),
        format!("refs/tags/{name}"),
        format!("refs/heads/{name}"),
        format!("refs/remotes/{name}"),
        format!("refs/remotes/{name}/HEAD"),
    ]
}

/// The ref a short name is (`dev` is `refs/heads/dev`), as git finds it.
pub(crate) fn full_ref(repo: &Repo, name: &str) -> Option<String> {
    if name == "HEAD" || name == "@" {
        return Some("HEAD".into());
    }
    candidates(name)
        .into_iter()
        .find(|n| (n.starts_with("refs/") || pseudo(n)) && repo.resolve_ref(n).is_some())
}

/// A ref outside `refs/` that git reads by name: `ORIG_HEAD`, `MERGE_HEAD`, ...
fn pseudo(name: &str) -> bool {
    name.ends_with("HEAD") && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// The object a name before any step names.
fn base(repo: &Repo, name: &str) -> Result<Oid, RevError> {
    if let Some(at) = name.find("@{")
        && let Some(spec) = name[at + 2..].strip_suffix('}')
    {
        return at_spec(repo, &name[..at], spec);
    }
    let name = if name == "@" { "HEAD" } else { name };
    if name == "HEAD" {
        return repo.head().1.ok_or_else(RevError::default);
    }
    if name == "FETCH_HEAD" {
        // Its first line's id.
        let text = std::fs::read_to_string(repo.git_dir.join(name)).unwrap_or_default();
        return text
            .get(..40)
            .and_then(parse_hex)
            .ok_or_else(RevError::default);
    }
    if let Some(id) = full_ref(repo, name).and_then(|n| repo.resolve_ref(&n)) {
        return Ok(id);
    }
    parse_hex(name)
        .or_else(|| abbreviated(repo, name))
        .ok_or_else(RevError::default)
}

/// `NAME@{N}` (the reflog's Nth entry back, the stash's only beyond 0; no name is the
/// current branch) and `@{u}` / `@{upstream}` (the branch's upstream).
fn at_spec(repo: &Repo, name: &str, spec: &str) -> Result<Oid, RevError> {
    let (head_ref, _) = repo.head();
    let current = head_ref
        .as_deref()
        .map(|b| b.trim_start_matches("refs/heads/"));
    if matches!(spec.to_ascii_lowercase().as_str(), "u" | "upstream") {
        let branch = match name {
            "" | "HEAD" | "@" => current
                .ok_or_else(|| RevError::dies("fatal: HEAD does not point to a branch".into()))?,
            n => n,
        };
        if repo.resolve_ref(&format!("refs/heads/{branch}")).is_none() {
            return Err(RevError::dies(format!("fatal: no such branch: '{branch}'")));
        }
        let up = upstream_of(repo, branch).ok_or_else(|| {
            RevError::dies(format!(
                "fatal: no upstream configured for branch '{branch}'"
            ))
        })?;
        return repo
            .resolve_ref(&format!("refs/remotes/{up}"))
            .ok_or_else(RevError::default);
    }
    let n: usize = spec.parse().map_err(|_| RevError::default())?;
    let full = match name {
        "" => head_ref.clone().ok_or_else(RevError::default)?,
        n => full_ref(repo, n).ok_or_else(RevError::default)?,
    };
    if n == 0 {
        return repo.resolve_ref(&full).ok_or_else(RevError::default);
    }
    // burrow's git keeps the stash's reflog whole, not the others (commits write none).
    if full != "refs/stash" {
        return Err(RevError::dies(format!(
            "fatal: '{name}@{{{spec}}}': burrow's git keeps no reflog for '{full}'"
        )));
    }
    let log = std::fs::read_to_string(repo.git_dir.join("logs").join(&full)).unwrap_or_default();
    let ids: Vec<Oid> = log
        .lines()
        .filter_map(|l| parse_hex(l.split(' ').nth(1)?))
        .collect();
    if n >= ids.len() {
        let shown = if name.is_empty() {
            full.trim_start_matches("refs/heads/")
        } else {
            name
        };
        return Err(RevError::dies(format!(
            "fatal: log for '{shown}' only has {} entries",
            ids.len()
        )));
    }
    Ok(ids[ids.len() - 1 - n])
}

/// The one object whose id starts with `prefix` (4 to 39 hex digits).
fn abbreviated(repo: &Repo, prefix: &str) -> Option<Oid> {
    if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let p = prefix.to_ascii_lowercase();
    let mut found: BTreeSet<Oid> = BTreeSet::new();
    let dir = repo.objects().join(&p[..2]);
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let name = format!("{}{}", &p[..2], e.file_name().to_string_lossy());
            if name.starts_with(&p)
                && let Some(id) = parse_hex(&name)
            {
                found.insert(id);
            }
        }
    }
    for id in repo.pack_ids() {
        if hex(&id).starts_with(&p) {
            found.insert(id);
        }
    }
    (found.len() == 1)
        .then(|| found.into_iter().next())
        .flatten()
}

/// A path of `REV:path` or `:path` from the top: relative to `pre` only when it starts with
/// `./` or `../`, as git reads it.
fn full_path(path: &str, pre: &[u8]) -> Vec<u8> {
    if path.starts_with("./") || path.starts_with("../") || path == "." || path == ".." {
        scope_of(pre, path)
    } else {
        scope_of(b"", path)
    }
}

/// `REV:path`: what the tree of `id` has at `path` (the tree itself for an empty one).
fn tree_path(repo: &Repo, treeish: &str, id: Oid, path: &str, pre: &[u8]) -> Result<Oid, RevError> {
    let tree = peel_to(repo, id, "tree", treeish).map_err(|_| RevError::default())?;
    let full = full_path(path, pre);
    let at = |p: &[u8]| entry_at(repo, &tree, p).ok().flatten();
    if let Some((_, id)) = at(&full) {
        return Ok(id);
    }
    let shown = String::from_utf8_lossy(&full);
    let mut in_dir = pre.to_vec();
    if !pre.is_empty() {
        in_dir.push(b'/');
        in_dir.extend_from_slice(&full);
    }
    if !pre.is_empty() && at(&in_dir).is_some() {
        let in_dir = String::from_utf8_lossy(&in_dir);
        return Err(RevError::fatal(format!(
            "fatal: path '{in_dir}' exists, but not '{shown}'\n\
             hint: Did you mean '{treeish}:{in_dir}' aka '{treeish}:./{shown}'?"
        )));
    }
    Err(RevError::fatal(format!(
        "fatal: path '{shown}' does not exist in '{treeish}'"
    )))
}

/// `:path` and `:N:path`: the index's entry at stage N (0 by default).
fn index_path(repo: &Repo, spec: &str, pre: &[u8]) -> Result<Oid, RevError> {
    if spec.starts_with('/') {
        // `:/text`, a commit by its message.
        return Err(RevError::default());
    }
    let b = spec.as_bytes();
    let (stage, path) = if b.len() >= 2 && (b'0'..=b'3').contains(&b[0]) && b[1] == b':' {
        (b[0] - b'0', &spec[2..])
    } else {
        (0, spec)
    };
    let full = full_path(path, pre);
    let index = load_all(repo).map_err(|_| RevError::default())?;
    let find = |p: &[u8]| {
        index
            .iter()
            .find(|e| e.path == p && e.stage == stage)
            .map(|e| e.oid)
    };
    if let Some(id) = find(&full) {
        return Ok(id);
    }
    let shown = String::from_utf8_lossy(&full);
    let mut in_dir = pre.to_vec();
    if !pre.is_empty() {
        in_dir.push(b'/');
        in_dir.extend_from_slice(&full);
    }
    if !pre.is_empty() && find(&in_dir).is_some() {
        let in_dir = String::from_utf8_lossy(&in_dir);
        return Err(RevError::fatal(format!(
            "fatal: path '{in_dir}' is in the index, but not '{shown}'\n\
             hint: Did you mean ':{stage}:{in_dir}' aka ':{stage}:./{shown}'?"
        )));
    }
    let on_disk = repo
        .work
        .as_ref()
        .is_some_and(|w| w.join(shown.as_ref()).symlink_metadata().is_ok());
    Err(RevError::fatal(if on_disk {
        format!("fatal: path '{shown}' exists on disk, but not in the index")
    } else {
        format!("fatal: path '{shown}' does not exist (neither on disk nor in the index)")
    }))
}

/// `p` as a path from the top: `pre` (the working directory from the top) joined with it,
/// `.` and `..` folded.
pub(crate) fn scope_of(pre: &[u8], p: &str) -> Vec<u8> {
    let mut parts: Vec<Vec<u8>> = if pre.is_empty() {
        Vec::new()
    } else {
        pre.split(|&b| b == b'/').map(<[u8]>::to_vec).collect()
    };
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c.as_bytes().to_vec()),
        }
    }
    parts.join(&b'/')
}
