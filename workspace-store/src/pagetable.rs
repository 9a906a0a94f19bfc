//! Page tables: the tree from a file to its pages. A write rewrites only the pages it touched
//! and the table pages on their paths (O(log n)); the shape is canonical for a given content
//! (trailing holes trimmed, all-hole subtrees are [`Hash::ZERO`]) so equal files hash equal.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::node::{Hash, Node, PageRef, TABLE_FANOUT};
use crate::objects::{Objects, Pending};

/// Pages covered by one subtree at `depth`.
fn span(depth: u8) -> u64 {
    (TABLE_FANOUT as u64).saturating_pow(depth as u32)
}

/// The smallest depth whose tree covers `npages` pages.
pub(crate) fn depth_for(npages: u64) -> u8 {
    let mut d = 0;
    while span(d) < npages {
        d += 1;
    }
    d
}

fn table(pending: &Pending, objs: &Objects, h: &Hash) -> Result<Vec<Hash>> {
    if h.is_zero() {
        return Ok(Vec::new());
    }
    match &*pending.node(objs, h)? {
        Node::Table(v) => Ok(v.clone()),
        _ => Err(Error::Corrupt(format!(
            "{} is not a page table",
            h.to_hex()
        ))),
    }
}

/// The hash of page `idx` ([`Hash::ZERO`] for a hole).
pub(crate) fn lookup(pending: &Pending, objs: &Objects, pages: PageRef, idx: u64) -> Result<Hash> {
    let (mut h, mut d, mut idx) = (pages.root, pages.depth, idx);
    if idx >= span(d) {
        return Ok(Hash::ZERO);
    }
    while d > 0 {
        if h.is_zero() {
            return Ok(Hash::ZERO);
        }
        let s = span(d - 1);
        let i = (idx / s) as usize;
        idx %= s;
        h = match &*pending.node(objs, &h)? {
            Node::Table(v) => v.get(i).copied().unwrap_or(Hash::ZERO),
            _ => {
                return Err(Error::Corrupt(format!(
                    "{} is not a page table",
                    h.to_hex()
                )));
            }
        };
        d -= 1;
    }
    Ok(h)
}

/// A new page table: `old` with the pages in `dirty` replaced and everything at index
/// `npages` or beyond dropped.
pub(crate) fn update(
    pending: &mut Pending,
    objs: &Objects,
    old: PageRef,
    npages: u64,
    dirty: &BTreeMap<u64, Hash>,
) -> Result<PageRef> {
    let depth = depth_for(npages);
    let (mut root, mut d) = (old.root, old.depth);
    while d > depth {
        root = table(pending, objs, &root)?
            .first()
            .copied()
            .unwrap_or(Hash::ZERO);
        d -= 1;
    }
    while d < depth {
        if !root.is_zero() {
            root = pending.put_node(Node::Table(vec![root]));
        }
        d += 1;
    }
    let root = rebuild(pending, objs, root, depth, 0, npages, dirty)?;
    Ok(PageRef { depth, root })
}

fn rebuild(
    pending: &mut Pending,
    objs: &Objects,
    h: Hash,
    d: u8,
    base: u64,
    npages: u64,
    dirty: &BTreeMap<u64, Hash>,
) -> Result<Hash> {
    if base >= npages {
        return Ok(Hash::ZERO);
    }
    let end = base.saturating_add(span(d));
    let touched = dirty.range(base..end).next().is_some();
    if !touched && end <= npages {
        return Ok(h);
    }
    if d == 0 {
        return Ok(dirty.get(&base).copied().unwrap_or(h));
    }
    let mut children = table(pending, objs, &h)?;
    children.resize(TABLE_FANOUT, Hash::ZERO);
    let s = span(d - 1);
    for (i, child) in children.iter_mut().enumerate() {
        let cbase = base + i as u64 * s;
        *child = rebuild(pending, objs, *child, d - 1, cbase, npages, dirty)?;
    }
    while children.last().is_some_and(Hash::is_zero) {
        children.pop();
    }
    if children.is_empty() {
        return Ok(Hash::ZERO);
    }
    Ok(pending.put_node(Node::Table(children)))
}
