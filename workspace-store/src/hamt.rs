//! Directory listings as a persistent hash-array-mapped trie. Insert and remove rewrite one
//! bucket and the trie pages above it (O(log n)), never the whole listing; the shape depends
//! only on the set of entries, so equal directories have equal hashes.

use crate::error::{Error, Result};
use crate::node::{Agg, BUCKET_MAX, Entry, Hamt, Hash, Node, TRIE_BITS, key_slot, name_key};
use crate::objects::{Objects, Pending};

/// Beyond this level every 256-bit key is used up: the level is always a bucket.
const MAX_LEVEL: usize = 256 / TRIE_BITS;

pub(crate) fn count(h: &Hamt) -> u64 {
    match h {
        Hamt::Bucket(v) => v.len() as u64,
        Hamt::Trie { count, .. } => *count,
    }
}

pub(crate) fn agg(h: &Hamt) -> Agg {
    match h {
        Hamt::Bucket(v) => v.iter().fold(Agg::default(), |a, e| a.add(e.agg)),
        Hamt::Trie { agg, .. } => *agg,
    }
}

fn child(pending: &Pending, objs: &Objects, h: &Hash) -> Result<Hamt> {
    match &*pending.node(objs, h)? {
        Node::Trie(t) => Ok(t.clone()),
        _ => Err(Error::Corrupt(format!("{} is not a trie page", h.to_hex()))),
    }
}

/// The entry named `name`, if any.
pub(crate) fn get(
    pending: &Pending,
    objs: &Objects,
    h: &Hamt,
    name: &str,
) -> Result<Option<Entry>> {
    let key = name_key(name);
    let mut cur = std::borrow::Cow::Borrowed(h);
    let mut lvl = 0;
    loop {
        match &*cur {
            Hamt::Bucket(v) => {
                return Ok(v
                    .binary_search_by(|e| e.name.as_str().cmp(name))
                    .ok()
                    .map(|i| v[i].clone()));
            }
            Hamt::Trie { children, .. } => {
                let slot = key_slot(&key, lvl);
                match children.iter().find(|(s, _)| *s == slot) {
                    None => return Ok(None),
                    Some((_, c)) => cur = std::borrow::Cow::Owned(child(pending, objs, c)?),
                }
            }
        }
        lvl += 1;
    }
}

/// Appends every entry to `out` (trie order; callers sort when they need name order).
pub(crate) fn entries(
    pending: &Pending,
    objs: &Objects,
    h: &Hamt,
    out: &mut Vec<Entry>,
) -> Result<()> {
    match h {
        Hamt::Bucket(v) => out.extend(v.iter().cloned()),
        Hamt::Trie { children, .. } => {
            for (_, c) in children {
                entries(pending, objs, &child(pending, objs, c)?, out)?;
            }
        }
    }
    Ok(())
}

/// Builds the canonical trie of `list` at `lvl`.
fn build(pending: &mut Pending, mut list: Vec<Entry>, lvl: usize) -> Hamt {
    if list.len() <= BUCKET_MAX || lvl >= MAX_LEVEL {
        list.sort_by(|a, b| a.name.cmp(&b.name));
        return Hamt::Bucket(list);
    }
    let count = list.len() as u64;
    let total = list.iter().fold(Agg::default(), |a, e| a.add(e.agg));
    let mut groups: Vec<Vec<Entry>> = (0..32).map(|_| Vec::new()).collect();
    for e in list {
        let slot = key_slot(&name_key(&e.name), lvl) as usize;
        groups[slot].push(e);
    }
    let mut children = Vec::new();
    for (slot, g) in groups.into_iter().enumerate() {
        if !g.is_empty() {
            let sub = build(pending, g, lvl + 1);
            children.push((slot as u8, pending.put_node(Node::Trie(sub))));
        }
    }
    Hamt::Trie {
        count,
        agg: total,
        children,
    }
}

/// `h` with `entry` inserted (replacing an entry of the same name).
pub(crate) fn insert(
    pending: &mut Pending,
    objs: &Objects,
    h: &Hamt,
    lvl: usize,
    entry: Entry,
) -> Result<Hamt> {
    match h {
        Hamt::Bucket(v) => {
            let mut v = v.clone();
            match v.binary_search_by(|e| e.name.cmp(&entry.name)) {
                Ok(i) => v[i] = entry,
                Err(i) => v.insert(i, entry),
            }
            Ok(build(pending, v, lvl))
        }
        Hamt::Trie {
            count,
            agg: total,
            children,
        } => {
            let slot = key_slot(&name_key(&entry.name), lvl);
            let old = match children.iter().find(|(s, _)| *s == slot) {
                Some((_, c)) => child(pending, objs, c)?,
                None => Hamt::Bucket(Vec::new()),
            };
            let new = insert(pending, objs, &old, lvl + 1, entry)?;
            let count = count - self::count(&old) + self::count(&new);
            let total = sub(*total, agg(&old)).add(agg(&new));
            let hash = pending.put_node(Node::Trie(new));
            let mut children = children.clone();
            match children.binary_search_by(|(s, _)| s.cmp(&slot)) {
                Ok(i) => children[i].1 = hash,
                Err(i) => children.insert(i, (slot, hash)),
            }
            Ok(Hamt::Trie {
                count,
                agg: total,
                children,
            })
        }
    }
}

/// `h` without the entry named `name` (unchanged if there is none).
pub(crate) fn remove(
    pending: &mut Pending,
    objs: &Objects,
    h: &Hamt,
    lvl: usize,
    name: &str,
) -> Result<Hamt> {
    match h {
        Hamt::Bucket(v) => {
            let mut v = v.clone();
            if let Ok(i) = v.binary_search_by(|e| e.name.as_str().cmp(name)) {
                v.remove(i);
            }
            Ok(Hamt::Bucket(v))
        }
        Hamt::Trie {
            count,
            agg: total,
            children,
        } => {
            let slot = key_slot(&name_key(name), lvl);
            let Some(pos) = children.iter().position(|(s, _)| *s == slot) else {
                return Ok(h.clone());
            };
            let old = child(pending, objs, &children[pos].1)?;
            let new = remove(pending, objs, &old, lvl + 1, name)?;
            let count = count - self::count(&old) + self::count(&new);
            let total = sub(*total, agg(&old)).add(agg(&new));
            let mut children = children.clone();
            if count as usize <= BUCKET_MAX {
                let mut all = Vec::new();
                for (i, (_, c)) in children.iter().enumerate() {
                    if i == pos {
                        entries(pending, objs, &new, &mut all)?;
                    } else {
                        entries(pending, objs, &child(pending, objs, c)?, &mut all)?;
                    }
                }
                return Ok(build(pending, all, lvl));
            }
            if self::count(&new) == 0 {
                children.remove(pos);
            } else {
                children[pos].1 = pending.put_node(Node::Trie(new));
            }
            Ok(Hamt::Trie {
                count,
                agg: total,
                children,
            })
        }
    }
}

fn sub(a: Agg, b: Agg) -> Agg {
    Agg {
        bytes: a.bytes.saturating_sub(b.bytes),
        entries: a.entries.saturating_sub(b.entries),
    }
}
