//! git's object model: SHA-1 object ids, the four object kinds and their framing, loose
//! objects (zlib files under `.git/objects/xx/`), trees and commits as git writes them.

use std::path::{Path, PathBuf};

use ::sha1::{Digest as _, Sha1};

/// A SHA-1 object id.
pub type Oid = [u8; 20];

pub fn hex(oid: &Oid) -> String {
    let mut s = String::with_capacity(40);
    for b in oid {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn parse_hex(s: &str) -> Option<Oid> {
    let s = s.trim();
    if s.len() != 40 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut o = [0u8; 20];
    for (i, b) in o.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(o)
}

/// The kinds of object, numbered as in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Commit = 1,
    Tree = 2,
    Blob = 3,
    Tag = 4,
}

impl Kind {
    pub fn from_pack(n: u8) -> Option<Kind> {
        Some(match n {
            1 => Kind::Commit,
            2 => Kind::Tree,
            3 => Kind::Blob,
            4 => Kind::Tag,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
            Kind::Tag => "tag",
        }
    }

    fn from_name(s: &str) -> Option<Kind> {
        Some(match s {
            "commit" => Kind::Commit,
            "tree" => Kind::Tree,
            "blob" => Kind::Blob,
            "tag" => Kind::Tag,
            _ => return None,
        })
    }
}

/// The id git gives `data` as an object of `kind`: SHA-1 of `"<kind> <len>\0"` and the data.
pub fn hash(kind: Kind, data: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{} {}\0", kind.name(), data.len()).as_bytes());
    h.update(data);
    h.finalize().into()
}

pub fn sha1(data: &[u8]) -> Oid {
    Sha1::digest(data).into()
}

/// Where the loose object `oid` lives.
pub fn loose_path(objects: &Path, oid: &Oid) -> PathBuf {
    let h = hex(oid);
    objects.join(&h[..2]).join(&h[2..])
}

/// Reads a loose object, if there is one.
pub fn read_loose(objects: &Path, oid: &Oid) -> Option<Result<(Kind, Vec<u8>), String>> {
    let raw = std::fs::read(loose_path(objects, oid)).ok()?;
    Some(inflate_loose(&raw).ok_or_else(|| format!("loose object {} is corrupt", hex(oid))))
}

fn inflate_loose(raw: &[u8]) -> Option<(Kind, Vec<u8>)> {
    use std::io::Read as _;
    let mut all = Vec::new();
    flate2::read::ZlibDecoder::new(raw)
        .read_to_end(&mut all)
        .ok()?;
    let nul = all.iter().position(|&b| b == 0)?;
    let head = std::str::from_utf8(&all[..nul]).ok()?;
    let (kind, len) = head.split_once(' ')?;
    let kind = Kind::from_name(kind)?;
    let len: usize = len.parse().ok()?;
    let data = all.split_off(nul + 1);
    (data.len() == len).then_some((kind, data))
}

/// One entry of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    /// As git writes it: 40000, 100644, 100755, 120000 or 160000.
    pub mode: u32,
    pub name: Vec<u8>,
    pub oid: Oid,
}

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.mode == 0o40000
    }
}

pub fn parse_tree(data: &[u8]) -> Result<Vec<TreeEntry>, String> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let sp = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or("malformed tree")?;
        let mode = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or("malformed tree mode")?;
        rest = &rest[sp + 1..];
        let nul = rest.iter().position(|&b| b == 0).ok_or("malformed tree")?;
        let name = rest[..nul].to_vec();
        rest = &rest[nul + 1..];
        if rest.len() < 20 {
            return Err("malformed tree".into());
        }
        let mut oid = [0u8; 20];
        oid.copy_from_slice(&rest[..20]);
        rest = &rest[20..];
        out.push(TreeEntry { mode, name, oid });
    }
    Ok(out)
}

/// The parts of a commit burrow's git reads.
#[derive(Clone, Debug, Default)]
pub struct Commit {
    pub tree: Oid,
    pub parents: Vec<Oid>,
    /// `Name <email> 1700000000 +0000`, as in the object.
    pub author: String,
    pub committer: String,
    pub message: String,
}

pub fn parse_commit(data: &[u8]) -> Result<Commit, String> {
    let text = String::from_utf8_lossy(data);
    let (head, message) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut c = Commit {
        message: message.to_string(),
        ..Commit::default()
    };
    let mut tree = None;
    for line in head.lines() {
        if let Some(t) = line.strip_prefix("tree ") {
            tree = parse_hex(t);
        } else if let Some(p) = line.strip_prefix("parent ") {
            c.parents
                .push(parse_hex(p).ok_or("malformed commit parent")?);
        } else if let Some(a) = line.strip_prefix("author ") {
            c.author = a.to_string();
        } else if let Some(a) = line.strip_prefix("committer ") {
            c.committer = a.to_string();
        }
    }
    c.tree = tree.ok_or("commit without a tree")?;
    Ok(c)
}

/// What an annotated tag points at.
pub fn tag_target(data: &[u8]) -> Option<Oid> {
    let text = std::str::from_utf8(data).ok()?;
    parse_hex(text.lines().next()?.strip_prefix("object ")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            hex(&hash(Kind::Blob, b"hello\n")),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // The empty tree.
        assert_eq!(
            hex(&hash(Kind::Tree, b"")),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn trees_parse() {
        let mut t = b"100644 a.txt\0".to_vec();
        t.extend_from_slice(&[7u8; 20]);
        t.extend_from_slice(b"40000 sub\0");
        t.extend_from_slice(&[9u8; 20]);
        let e = parse_tree(&t).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].mode, 0o100644);
        assert!(e[1].is_tree());
    }
}
