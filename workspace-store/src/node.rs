//! The immutable objects of the store and their encoding: file, directory and symlink nodes,
//! page-table pages and directory-trie pages. Objects are named by the BLAKE3 hash of their
//! encoded bytes and never change once written.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Size of a file page (chunk). Files are cut into pages of this size, each stored once.
pub const PAGE_SIZE: usize = 64 * 1024;
/// Number of child hashes in one page-table page.
pub const TABLE_FANOUT: usize = 256;

/// A BLAKE3 content hash naming an object. [`Hash::ZERO`] names "nothing": a hole in a file
/// or an empty subtree of a page table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// The null hash: a hole (all-zero page) or an empty subtree.
    pub const ZERO: Hash = Hash([0; 32]);

    /// Hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Hash {
        Hash(*blake3::hash(bytes).as_bytes())
    }

    /// Is this the null hash?
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 32]
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The hash `hex` (64 hex digits) names, if it is one.
    pub fn from_hex(hex: &str) -> Option<Hash> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Hash(out))
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", &self.to_hex()[..12])
    }
}

/// Kind of a filesystem object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

/// Metadata kept in every file, directory and symlink node. Times are nanoseconds since the
/// Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Permission bits (the low 12 bits of a POSIX mode).
    pub mode: u32,
    pub atime: i64,
    pub mtime: i64,
    pub ctime: i64,
}

/// Aggregates over a subtree, kept in directory entries and trie pages so quotas and sizes
/// are known without walking the tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agg {
    /// Sum of the sizes of the regular files in the subtree.
    pub bytes: u64,
    /// Number of entries (files, directories, symlinks) in the subtree, the subtree's own
    /// root included.
    pub entries: u64,
}

impl Agg {
    pub(crate) fn add(self, o: Agg) -> Agg {
        Agg {
            bytes: self.bytes + o.bytes,
            entries: self.entries + o.entries,
        }
    }
}

/// A reference to a page table: a tree of `depth` levels over the file's pages.
/// Depth 0: `root` is the single page itself. Depth d > 0: `root` is a [`Node::Table`] whose
/// children are depth d-1 references. A zero `root` is an all-hole (all-zero) subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRef {
    pub depth: u8,
    pub root: Hash,
}

impl PageRef {
    pub const EMPTY: PageRef = PageRef {
        depth: 0,
        root: Hash::ZERO,
    };
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    /// Inode number: stable identity across renames, unique within a workspace tree.
    pub ino: u64,
    /// Hash of the child's node.
    pub node: Hash,
    /// Aggregates of the child's subtree.
    pub agg: Agg,
}

/// A directory's listing: a hash-array-mapped trie keyed by BLAKE3(name), canonical for a given
/// set of entries (a level with at most [`BUCKET_MAX`] entries is always a bucket), so equal
/// directories have equal hashes whatever their history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hamt {
    /// Entries sorted by name.
    Bucket(Vec<Entry>),
    /// Children by the next 5 bits of the name hash; `agg` and `count` over all of them.
    Trie {
        count: u64,
        agg: Agg,
        children: Vec<(u8, Hash)>,
    },
}

/// Maximum entries of a bucket before it splits into a trie level.
pub const BUCKET_MAX: usize = 64;
/// Bits of the name hash consumed per trie level (32-way).
pub const TRIE_BITS: usize = 5;

/// A stored node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Node {
    File {
        meta: Meta,
        size: u64,
        pages: PageRef,
    },
    Dir {
        meta: Meta,
        listing: Hamt,
    },
    Symlink {
        meta: Meta,
        target: String,
    },
    /// An interior page of a page table.
    Table(Vec<Hash>),
    /// A non-root page of a directory trie.
    Trie(Hamt),
}

impl Node {
    pub fn encode(&self) -> Vec<u8> {
        // postcard's serialisation of these plain types cannot fail.
        let mut v = vec![NODE_MAGIC];
        v.extend(postcard::to_stdvec(self).unwrap_or_default());
        v
    }

    pub fn decode(bytes: &[u8]) -> Result<Node> {
        match bytes.split_first() {
            Some((&NODE_MAGIC, rest)) => postcard::from_bytes(rest)
                .map_err(|e| Error::Corrupt(format!("undecodable node: {e}"))),
            _ => Err(Error::Corrupt("object is not a node".into())),
        }
    }

    pub fn meta(&self) -> Option<&Meta> {
        match self {
            Node::File { meta, .. } | Node::Dir { meta, .. } | Node::Symlink { meta, .. } => {
                Some(meta)
            }
            _ => None,
        }
    }
}

/// First byte of every encoded node (format version 1).
const NODE_MAGIC: u8 = 0xB1;

/// Hash of a name, the trie key of a directory entry.
pub fn name_key(name: &str) -> [u8; 32] {
    *blake3::hash(name.as_bytes()).as_bytes()
}

/// The `level`-th 5-bit slice of a name key.
pub fn key_slot(key: &[u8; 32], level: usize) -> u8 {
    let bit = level * TRIE_BITS;
    let byte = bit / 8;
    let shift = bit % 8;
    let lo = key[byte % 32] as u16;
    let hi = key[(byte + 1) % 32] as u16;
    (((hi << 8 | lo) >> shift) & 0x1f) as u8
}
