//! A repository on the guest filesystem: finding `.git` from the working directory, reading
//! objects (loose, then packs), refs (loose files, `packed-refs`, symbolic refs), and the
//! index file (version 2, as git writes it).

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::object::{self, Kind, Oid, hex, parse_hex};
use super::pack::Pack;

pub struct Repo {
    pub git_dir: PathBuf,
    /// The working tree's top (None for a bare repository).
    pub work: Option<PathBuf>,
    packs: OnceCell<Vec<Pack>>,
}

impl Repo {
    pub fn at(git_dir: PathBuf, work: Option<PathBuf>) -> Repo {
        Repo {
            git_dir,
            work,
            packs: OnceCell::new(),
        }
    }

    /// The repository `dir` is in: the nearest ancestor with a `.git` directory.
    pub fn discover(dir: &Path) -> Option<Repo> {
        let mut d = Some(dir);
        while let Some(p) = d {
            let g = p.join(".git");
            if g.join("HEAD").is_file() {
                return Some(Repo::at(g, Some(p.to_path_buf())));
            }
            d = p.parent();
        }
        None
    }

    pub fn objects(&self) -> PathBuf {
        self.git_dir.join("objects")
    }

    fn packs(&self) -> &[Pack] {
        self.packs.get_or_init(|| {
            let dir = self.objects().join("pack");
            let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "pack"))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names.iter().filter_map(|p| Pack::open(p).ok()).collect()
        })
    }

    pub fn read(&self, oid: &Oid) -> Result<(Kind, Rc<Vec<u8>>), String> {
        // Packs first (a lookup in memory), as git does; then the loose object's file.
        for p in self.packs() {
            if let Some(r) = p.read(oid) {
                return r;
            }
        }
        if let Some(r) = object::read_loose(&self.objects(), oid) {
            return r.map(|(k, d)| (k, Rc::new(d)));
        }
        Err(format!("fatal: bad object {}", hex(oid)))
    }

    /// The ids of every packed object.
    pub fn pack_ids(&self) -> Vec<Oid> {
        self.packs().iter().flat_map(|p| p.ids().copied()).collect()
    }

    /// Reads an object that must be of `kind` (tags are peeled to it).
    pub fn read_kind(&self, oid: &Oid, kind: Kind) -> Result<Rc<Vec<u8>>, String> {
        self.peel(oid, kind).map(|(_, data)| data)
    }

    /// The commit `oid` is or a tag names (its id).
    pub fn peel_commit(&self, oid: &Oid) -> Result<Oid, String> {
        self.peel(oid, Kind::Commit).map(|(id, _)| id)
    }

    /// The object of `kind` that `oid` is, or that the tags from it lead to: its id and data.
    pub fn peel(&self, oid: &Oid, kind: Kind) -> Result<(Oid, Rc<Vec<u8>>), String> {
        let mut oid = *oid;
        for _ in 0..16 {
            let (k, data) = self.read(&oid)?;
            if k == kind {
                return Ok((oid, data));
            }
            if k == Kind::Tag
                && let Some(t) = object::tag_target(&data)
            {
                oid = t;
                continue;
            }
            return Err(format!(
                "fatal: object {} is a {}, not a {}",
                hex(&oid),
                k.name(),
                kind.name()
            ));
        }
        Err(format!("fatal: bad object {}", hex(&oid)))
    }

    /// Every ref in `packed-refs` (name, id), in file order.
    pub fn packed_refs(&self) -> Vec<(String, Oid)> {
        let Ok(text) = std::fs::read_to_string(self.git_dir.join("packed-refs")) else {
            return Vec::new();
        };
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
            .filter_map(|l| {
                let (id, name) = l.split_once(' ')?;
                Some((name.to_string(), parse_hex(id)?))
            })
            .collect()
    }

    /// A ref's own value: a symbolic ref's target name, or an id.
    pub fn read_ref(&self, name: &str) -> Option<RefValue> {
        if let Ok(text) = std::fs::read_to_string(self.git_dir.join(name)) {
            let t = text.trim_end();
            if let Some(target) = t.strip_prefix("ref: ") {
                return Some(RefValue::Symbolic(target.to_string()));
            }
            return parse_hex(t).map(RefValue::Id);
        }
        self.packed_refs()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| RefValue::Id(o))
    }

    /// A ref's id, following symbolic refs.
    pub fn resolve_ref(&self, name: &str) -> Option<Oid> {
        let mut name = name.to_string();
        for _ in 0..8 {
            match self.read_ref(&name)? {
                RefValue::Id(o) => return Some(o),
                RefValue::Symbolic(t) => name = t,
            }
        }
        None
    }

    /// HEAD: the branch it names (None when detached) and its commit (None when unborn).
    pub fn head(&self) -> (Option<String>, Option<Oid>) {
        match self.read_ref("HEAD") {
            Some(RefValue::Symbolic(t)) => {
                let id = self.resolve_ref(&t);
                (Some(t), id)
            }
            Some(RefValue::Id(o)) => (None, Some(o)),
            None => (None, None),
        }
    }

    /// Every ref under `prefix` (e.g. `refs/heads/`), loose and packed, sorted by name.
    pub fn refs_under(&self, prefix: &str) -> Vec<(String, Oid)> {
        let mut out: std::collections::BTreeMap<String, Oid> = self
            .packed_refs()
            .into_iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .collect();
        fn walk(
            repo: &Repo,
            dir: &Path,
            name: &str,
            out: &mut std::collections::BTreeMap<String, Oid>,
        ) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for e in rd.flatten() {
                let n = format!("{name}{}", e.file_name().to_string_lossy());
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(repo, &e.path(), &format!("{n}/"), out);
                } else if let Some(o) = repo.resolve_ref(&n) {
                    out.insert(n, o);
                }
            }
        }
        walk(self, &self.git_dir.join(prefix), prefix, &mut out);
        out.into_iter().collect()
    }

    /// A value of `.git/config` (`section.key` or `section.sub.key`), the last one set; a
    /// `git -c key=value` of this command wins.
    pub fn config(&self, key: &str) -> Option<String> {
        if let Some(v) = OVERRIDES.with(|o| {
            o.borrow()
                .iter()
                .rev()
                .find(|(k, _)| same_key(k, key))
                .map(|(_, v)| v.clone())
        }) {
            return Some(v);
        }
        let text = std::fs::read_to_string(self.git_dir.join("config")).ok()?;
        config_get(&text, key)
    }
}

thread_local! {
    /// `git -c key=value` settings of the command running.
    static OVERRIDES: std::cell::RefCell<Vec<(String, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with `overrides` (`git -c`) in force.
pub fn with_overrides<T>(overrides: Vec<(String, String)>, f: impl FnOnce() -> T) -> T {
    let old = OVERRIDES.with(|o| std::mem::replace(&mut *o.borrow_mut(), overrides));
    let r = f();
    OVERRIDES.with(|o| *o.borrow_mut() = old);
    r
}

/// Whether two config keys name the same setting: section and key ignore case, a
/// subsection does not.
fn same_key(a: &str, b: &str) -> bool {
    match (split_key(a), split_key(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

pub enum RefValue {
    Id(Oid),
    Symbolic(String),
}

/// Reads `key` from config text: sections `[core]` and `[remote "origin"]`, keys compared
/// case-insensitively (the subsection exactly), the last value winning as in git.
pub fn config_get(text: &str, key: &str) -> Option<String> {
    let (section, name) = key.rsplit_once('.')?;
    let (sec, sub) = match section.split_once('.') {
        Some((s, sub)) => (s, Some(sub)),
        None => (section, None),
    };
    let mut current: Option<(String, Option<String>)> = None;
    let mut found = None;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('#') || l.starts_with(';') || l.is_empty() {
            continue;
        }
        if let Some(h) = l.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            current = Some(match h.split_once(' ') {
                Some((s, rest)) => (
                    s.to_ascii_lowercase(),
                    Some(rest.trim().trim_matches('"').to_string()),
                ),
                None => (h.to_ascii_lowercase(), None),
            });
            continue;
        }
        let Some((cs, csub)) = &current else { continue };
        if *cs != sec.to_ascii_lowercase() || csub.as_deref() != sub {
            continue;
        }
        let (k, v) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim().trim_matches('"').to_string()),
            None => (l, "true".to_string()),
        };
        if k.eq_ignore_ascii_case(name) {
            found = Some(v);
        }
    }
    found
}

/// `(section, subsection, name)` of a config key, the section and name lowercased as git
/// compares them.
fn split_key(key: &str) -> Option<(String, Option<String>, String)> {
    let (section, name) = key.rsplit_once('.')?;
    let (sec, sub) = match section.split_once('.') {
        Some((s, sub)) => (s, Some(sub.to_string())),
        None => (section, None),
    };
    Some((sec.to_ascii_lowercase(), sub, name.to_ascii_lowercase()))
}

/// A section header line's section and subsection.
fn header_of(line: &str) -> Option<(String, Option<String>)> {
    let h = line.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(match h.split_once(' ') {
        Some((s, rest)) => (
            s.to_ascii_lowercase(),
            Some(rest.trim().trim_matches('"').to_string()),
        ),
        None => match h.split_once('.') {
            // The old `[section.sub]` form.
            Some((s, sub)) => (s.to_ascii_lowercase(), Some(sub.to_string())),
            None => (h.to_ascii_lowercase(), None),
        },
    })
}

/// A value as git writes it: quoted when it has leading or trailing spaces or a comment
/// character, with `"` and `\` escaped.
fn quote_value(v: &str) -> String {
    let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
    if v.starts_with(' ') || v.ends_with(' ') || v.contains(['#', ';']) {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

/// Config text with `key` set to `value` (its last occurrence replaced, or added to its
/// section, or a new section at the end).
pub fn config_set(text: &str, key: &str, value: &str) -> String {
    let Some((sec, sub, name)) = split_key(key) else {
        return text.to_string();
    };
    let leaf = key.rsplit_once('.').map(|(_, n)| n).unwrap_or(key);
    let line = format!("\t{leaf} = {}", quote_value(value));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut in_section = false;
    let mut last_key = None;
    let mut section_end = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some((s, su)) = header_of(l) {
            in_section = s == sec && su == sub;
            if in_section {
                section_end = Some(i);
            }
            continue;
        }
        if in_section {
            section_end = Some(i);
            let k = l.split('=').next().unwrap_or("").trim();
            if k.eq_ignore_ascii_case(&name) {
                last_key = Some(i);
            }
        }
    }
    match (last_key, section_end) {
        (Some(i), _) => lines[i] = line,
        (None, Some(i)) => lines.insert(i + 1, line),
        (None, None) => {
            lines.push(match &sub {
                Some(su) => format!("[{sec} \"{su}\"]"),
                None => format!("[{sec}]"),
            });
            lines.push(line);
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Config text without `key`; None when it was not set.
pub fn config_unset(text: &str, key: &str) -> Option<String> {
    let (sec, sub, name) = split_key(key)?;
    let mut in_section = false;
    let mut found = false;
    let mut out = String::new();
    for l in text.lines() {
        if let Some((s, su)) = header_of(l) {
            in_section = s == sec && su == sub;
        } else if in_section
            && l.split('=')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case(&name)
        {
            found = true;
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    found.then_some(out)
}

/// Every `section[.sub].key=value` of config text, as `git config --list` prints them.
pub fn config_entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for l in text.lines() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some((s, sub)) = header_of(t) {
            current = Some(match sub {
                Some(su) => format!("{s}.{su}"),
                None => s,
            });
            continue;
        }
        let Some(c) = &current else { continue };
        let (k, v) = match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim().trim_matches('"').to_string()),
            None => (t, "true".to_string()),
        };
        out.push((format!("{c}.{}", k.to_ascii_lowercase()), v));
    }
    out
}

/// One entry of the index.
#[derive(Clone, Debug)]
pub struct IndexEntry {
    pub path: Vec<u8>,
    pub mode: u32,
    pub oid: Oid,
    pub size: u32,
    pub mtime: (u32, u32),
    /// 0, or 1-3 for an unmerged path's base, ours and theirs.
    pub stage: u8,
}

/// A file's modification time as the index keeps it (seconds, nanoseconds); (0, 0) when
/// unknown, which never matches a stat check.
pub fn mtime_of(meta: &std::fs::Metadata) -> (u32, u32) {
    let (secs, nanos) = sh_utility::sys::mtime(meta);
    (secs as u32, nanos)
}

/// The index file (version 2, no extensions) for `entries`, which must be sorted by path.
pub fn write_index(entries: &[IndexEntry]) -> Vec<u8> {
    let mut out = b"DIRC".to_vec();
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    for e in entries {
        let start = out.len();
        for v in [
            e.mtime.0, e.mtime.1, // ctime: the sandbox has none of its own
            e.mtime.0, e.mtime.1, 0, 0, e.mode, 0, 0, e.size,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(&e.oid);
        let flags = e.path.len().min(0xfff) as u16 | (u16::from(e.stage & 3) << 12);
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&e.path);
        // NUL-padded to a multiple of 8, at least one NUL.
        let len = out.len() - start;
        let pad = 8 - len % 8;
        out.extend(std::iter::repeat_n(0u8, pad));
    }
    let sum = object::sha1(&out);
    out.extend_from_slice(&sum);
    out
}

/// The entries of an index file (versions 2 and 3; stage-0 and conflicted entries alike).
pub fn read_index(data: &[u8]) -> Result<Vec<IndexEntry>, String> {
    let bad = || "fatal: index file corrupt".to_string();
    if data.len() < 32 || &data[..4] != b"DIRC" {
        return Err(bad());
    }
    let version = u32::from_be_bytes(data[4..8].try_into().map_err(|_| bad())?);
    if version != 2 && version != 3 {
        return Err(format!(
            "fatal: index file version {version} is not supported by burrow's git"
        ));
    }
    let n = u32::from_be_bytes(data[8..12].try_into().map_err(|_| bad())?) as usize;
    let u32_at = |i: usize| -> Result<u32, String> {
        data.get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(bad)
    };
    let mut at = 12;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = at;
        let mtime = (u32_at(at + 8)?, u32_at(at + 12)?);
        let mode = u32_at(at + 24)?;
        let size = u32_at(at + 36)?;
        let oid: Oid = data
            .get(at + 40..at + 60)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?;
        let flags = u16::from_be_bytes(
            data.get(at + 60..at + 62)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        at += 62;
        if flags & 0x4000 != 0 {
            at += 2;
        }
        let end = data[at..].iter().position(|&b| b == 0).ok_or_else(bad)? + at;
        let path = data[at..end].to_vec();
        at = end;
        let len = at - start;
        at = start + len + (8 - len % 8);
        out.push(IndexEntry {
            path,
            mode,
            oid,
            size,
            mtime,
            stage: ((flags >> 12) & 3) as u8,
        });
    }
    Ok(out)
}

/// The upstream of branch `b` (`branch.<b>.remote` and `.merge`), as `origin/main`.
pub(crate) fn upstream_of(repo: &Repo, b: &str) -> Option<String> {
    let remote = repo.config(&format!("branch.{b}.remote"))?;
    let merge = repo.config(&format!("branch.{b}.merge"))?;
    // Without the remote's fetch refspec there is no remote-tracking ref to compare with.
    repo.config(&format!("remote.{remote}.fetch"))?;
    Some(format!(
        "{remote}/{}",
        merge.trim_start_matches("refs/heads/")
    ))
}

/// Every entry of the index, all stages (none without an index file).
pub(crate) fn load_all(repo: &Repo) -> Result<Vec<IndexEntry>, String> {
    match std::fs::read(repo.git_dir.join("index")) {
        Ok(d) => read_index(&d),
        Err(_) => Ok(Vec::new()),
    }
}

/// The tree entry at `path` (from the top) in `tree`, the tree itself for an empty path.
pub(crate) fn entry_at(repo: &Repo, tree: &Oid, path: &[u8]) -> Result<Option<(u32, Oid)>, String> {
    let parts: Vec<&[u8]> = path
        .split(|&b| b == b'/')
        .filter(|p| !p.is_empty())
        .collect();
    let mut cur = (0o40000, *tree);
    for part in parts {
        if cur.0 != 0o40000 {
            return Ok(None);
        }
        let entries = object::parse_tree(&repo.read_kind(&cur.1, Kind::Tree)?)?;
        match entries.into_iter().find(|e| e.name == part) {
            Some(e) => cur = (e.mode, e.oid),
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values() {
        let c = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://x/y.git\n";
        assert_eq!(config_get(c, "core.bare").as_deref(), Some("false"));
        assert_eq!(
            config_get(c, "remote.origin.url").as_deref(),
            Some("https://x/y.git")
        );
        assert_eq!(config_get(c, "remote.other.url"), None);
    }

    #[test]
    fn config_is_set_and_unset_as_git_does() {
        let c = "[core]\n\tbare = false\n";
        let c = config_set(c, "user.name", "Ada Lovelace");
        assert_eq!(c, "[core]\n\tbare = false\n[user]\n\tname = Ada Lovelace\n");
        let c = config_set(&c, "user.email", "ada@example.com");
        let c = config_set(&c, "user.name", "Ada");
        assert_eq!(config_get(&c, "user.name").as_deref(), Some("Ada"));
        assert_eq!(
            config_get(&c, "user.email").as_deref(),
            Some("ada@example.com")
        );
        let c = config_set(&c, "remote.up.url", "https://x");
        assert!(c.ends_with("[remote \"up\"]\n\turl = https://x\n"), "{c}");
        let c = config_unset(&c, "user.name").unwrap();
        assert_eq!(config_get(&c, "user.name"), None);
        assert!(config_unset(&c, "user.name").is_none());
        assert_eq!(config_entries(&c)[0], ("core.bare".into(), "false".into()));
    }

    #[test]
    fn index_round_trips() {
        let e = vec![
            IndexEntry {
                path: b"a.txt".to_vec(),
                mode: 0o100644,
                oid: [1; 20],
                size: 3,
                mtime: (5, 6),
                stage: 0,
            },
            IndexEntry {
                path: b"dir/a-rather-long-name.rs".to_vec(),
                mode: 0o100755,
                oid: [2; 20],
                size: 9,
                mtime: (7, 8),
                stage: 2,
            },
        ];
        let back = read_index(&write_index(&e)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].path, e[1].path);
        assert_eq!(back[1].mode, 0o100755);
        assert_eq!(back[0].oid, [1; 20]);
        // An unmerged entry keeps its stage.
        assert_eq!((back[0].stage, back[1].stage), (0, 2));
    }
}
