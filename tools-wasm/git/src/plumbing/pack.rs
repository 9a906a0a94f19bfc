//! Packfiles: indexing a received pack as `git index-pack` does (every object's id, CRC-32 and
//! offset, deltas resolved base first so memory holds one delta chain at a time), the `.idx`
//! version 2 file beside it, and reading objects back out of a pack through its index.

use std::rc::Rc;

use foldhash::{HashMap, HashMapExt};

use super::object::{Kind, Oid, hash, sha1};

const OFS_DELTA: u8 = 6;
const REF_DELTA: u8 = 7;

/// One entry's header: its type, the inflated size, where its zlib data starts, and its base
/// when it is a delta.
struct Header {
    kind: u8,
    size: usize,
    data: usize,
    base: Base,
}

enum Base {
    None,
    Offset(usize),
    Id(Oid),
}

fn corrupt(what: &str) -> String {
    format!("fatal: pack is corrupt: {what}")
}

fn header(pack: &[u8], at: usize) -> Result<Header, String> {
    header_at(pack, at, at)
}

/// The entry header at `pack[at..]`; `abs` is where that byte is in the whole pack (an
/// offset delta's base is counted back from it).
fn header_at(pack: &[u8], at: usize, abs: usize) -> Result<Header, String> {
    let byte = |i: usize| {
        pack.get(i)
            .copied()
            .ok_or_else(|| corrupt("truncated entry"))
    };
    let mut i = at;
    let mut c = byte(i)?;
    i += 1;
    let kind = (c >> 4) & 7;
    let mut size = (c & 15) as usize;
    let mut shift = 4;
    while c & 0x80 != 0 {
        c = byte(i)?;
        i += 1;
        if shift > 60 {
            return Err(corrupt("entry size overflows"));
        }
        size |= ((c & 0x7f) as usize) << shift;
        shift += 7;
    }
    let base = match kind {
        OFS_DELTA => {
            let mut c = byte(i)?;
            i += 1;
            let mut off = (c & 0x7f) as usize;
            while c & 0x80 != 0 {
                c = byte(i)?;
                i += 1;
                off = ((off + 1) << 7) | (c & 0x7f) as usize;
            }
            Base::Offset(
                abs.checked_sub(off)
                    .ok_or_else(|| corrupt("delta base offset"))?,
            )
        }
        REF_DELTA => {
            let id = pack
                .get(i..i + 20)
                .ok_or_else(|| corrupt("truncated delta base"))?;
            i += 20;
            Base::Id(id.try_into().map_err(|_| corrupt("delta base"))?)
        }
        1..=4 => Base::None,
        _ => return Err(corrupt("unknown object type")),
    };
    Ok(Header {
        kind,
        size,
        data: i,
        base,
    })
}

/// Inflates the zlib stream at `at` (which must give `size` bytes); returns the bytes and
/// where the stream ended.
fn inflate(pack: &[u8], at: usize, size: usize) -> Result<(Vec<u8>, usize), String> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut z = Decompress::new(true);
    let mut out = Vec::with_capacity(size + 64);
    loop {
        let input = pack.get(at + z.total_in() as usize..).unwrap_or(&[]);
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let status = z
            .decompress_vec(input, &mut out, FlushDecompress::None)
            .map_err(|_| corrupt("bad zlib data"))?;
        if status == Status::StreamEnd {
            break;
        }
        if out.len() == out.capacity() {
            out.reserve(4096);
        } else if z.total_in() == before_in && z.total_out() == before_out {
            return Err(corrupt("truncated zlib data"));
        }
    }
    if out.len() != size {
        return Err(corrupt("object size mismatch"));
    }
    Ok((out, at + z.total_in() as usize))
}

/// Applies a git delta to `base`.
pub fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || corrupt("bad delta");
    let mut i = 0;
    let varint = |i: &mut usize| -> Result<usize, String> {
        let mut v = 0usize;
        let mut shift = 0;
        loop {
            let c = *delta.get(*i).ok_or_else(bad)?;
            *i += 1;
            v |= ((c & 0x7f) as usize) << shift;
            shift += 7;
            if c & 0x80 == 0 || shift > 63 {
                return Ok(v);
            }
        }
    };
    let src = varint(&mut i)?;
    let dst = varint(&mut i)?;
    if src != base.len() {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(dst);
    while i < delta.len() {
        let op = delta[i];
        i += 1;
        if op & 0x80 != 0 {
            let mut off = 0usize;
            let mut len = 0usize;
            for k in 0..4 {
                if op & (1 << k) != 0 {
                    off |= (*delta.get(i).ok_or_else(bad)? as usize) << (8 * k);
                    i += 1;
                }
            }
            for k in 0..3 {
                if op & (0x10 << k) != 0 {
                    len |= (*delta.get(i).ok_or_else(bad)? as usize) << (8 * k);
                    i += 1;
                }
            }
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(off..off + len).ok_or_else(bad)?);
        } else if op != 0 {
            let n = op as usize;
            out.extend_from_slice(delta.get(i..i + n).ok_or_else(bad)?);
            i += n;
        } else {
            return Err(bad());
        }
    }
    if out.len() != dst {
        return Err(bad());
    }
    Ok(out)
}

/// A pack's index: each object's id, CRC-32 of its entry and offset, sorted by id.
pub struct Index {
    pub entries: Vec<(Oid, u32, u64)>,
    /// The pack's trailing checksum (its name: `pack-<hex>.pack`).
    pub checksum: Oid,
}

/// Indexes a whole pack as received: checks its header and checksum, finds every entry and
/// computes every object's id (deltas applied to their bases, in-pack bases only).
pub fn index(pack: &[u8]) -> Result<Index, String> {
    if pack.len() < 32 || &pack[..4] != b"PACK" {
        return Err(corrupt("not a pack"));
    }
    let version = u32::from_be_bytes([pack[4], pack[5], pack[6], pack[7]]);
    if version != 2 && version != 3 {
        return Err(format!("fatal: unsupported pack version {version}"));
    }
    let count = u32::from_be_bytes([pack[8], pack[9], pack[10], pack[11]]) as usize;
    let end = pack.len() - 20;
    if sha1(&pack[..end])[..] != pack[end..] {
        return Err(corrupt("pack checksum mismatch"));
    }
    let checksum: Oid = pack[end..].try_into().map_err(|_| corrupt("checksum"))?;

    struct Entry {
        offset: usize,
        crc: u32,
        oid: Option<Oid>,
        /// The real kind once known (a delta's is its base's).
        kind: Option<Kind>,
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(count);
    let mut by_offset: HashMap<usize, usize> = HashMap::with_capacity(count);
    let mut children_of_offset: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut children_of_id: HashMap<Oid, Vec<usize>> = HashMap::new();
    let mut at = 12;
    for n in 0..count {
        if at >= end {
            return Err(corrupt("fewer objects than its header says"));
        }
        let h = header(pack, at)?;
        let (data, next) = inflate(pack, h.data, h.size)?;
        let mut e = Entry {
            offset: at,
            crc: crc32fast::hash(&pack[at..next]),
            oid: None,
            kind: None,
        };
        match h.base {
            Base::None => {
                let kind = Kind::from_pack(h.kind).ok_or_else(|| corrupt("object type"))?;
                e.oid = Some(hash(kind, &data));
                e.kind = Some(kind);
            }
            Base::Offset(b) => children_of_offset.entry(b).or_default().push(n),
            Base::Id(id) => children_of_id.entry(id).or_default().push(n),
        }
        by_offset.insert(at, n);
        entries.push(e);
        at = next;
    }
    if at != end {
        return Err(corrupt("bytes after its last object"));
    }

    // Resolve deltas from each full object down its tree of deltas; only the chain being
    // walked is held in memory.
    let roots: Vec<usize> = (0..count).filter(|&i| entries[i].oid.is_some()).collect();
    for root in roots {
        let oid = entries[root].oid.unwrap_or_default();
        let has_children = children_of_offset.contains_key(&entries[root].offset)
            || children_of_id.contains_key(&oid);
        if !has_children {
            continue;
        }
        let h = header(pack, entries[root].offset)?;
        let (data, _) = inflate(pack, h.data, h.size)?;
        let kind = entries[root].kind.unwrap_or(Kind::Blob);
        let mut stack: Vec<(usize, Rc<Vec<u8>>)> = vec![(root, Rc::new(data))];
        while let Some((i, data)) = stack.pop() {
            let oid = entries[i].oid.unwrap_or_default();
            let mut kids = children_of_offset
                .remove(&entries[i].offset)
                .unwrap_or_default();
            kids.extend(children_of_id.remove(&oid).unwrap_or_default());
            for k in kids {
                let h = header(pack, entries[k].offset)?;
                let (delta, _) = inflate(pack, h.data, h.size)?;
                let full = apply_delta(&data, &delta)?;
                entries[k].oid = Some(hash(kind, &full));
                entries[k].kind = Some(kind);
                stack.push((k, Rc::new(full)));
            }
        }
    }
    let unresolved = entries.iter().filter(|e| e.oid.is_none()).count();
    if unresolved > 0 {
        return Err(format!("fatal: pack has {unresolved} unresolved deltas"));
    }
    let mut out: Vec<(Oid, u32, u64)> = entries
        .iter()
        .map(|e| (e.oid.unwrap_or_default(), e.crc, e.offset as u64))
        .collect();
    out.sort_unstable_by_key(|e| e.0);
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(Index {
        entries: out,
        checksum,
    })
}

/// The `.idx` (version 2) for `index`.
/// A pack of whole (undeltified, zlib-compressed) objects, as `push` sends it.
pub fn write_pack(objects: &[(Kind, std::rc::Rc<Vec<u8>>)]) -> Result<Vec<u8>, String> {
    use std::io::Write as _;
    let mut out = b"PACK".to_vec();
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    for (kind, data) in objects {
        // Type and size: 3 type bits and 4 size bits, then 7 size bits a byte.
        let mut size = data.len();
        let mut byte = ((*kind as u8) << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data)
            .map_err(|e| format!("fatal: cannot compress an object: {e}"))?;
        out.extend(
            z.finish()
                .map_err(|e| format!("fatal: cannot compress an object: {e}"))?,
        );
    }
    let sum = super::object::sha1(&out);
    out.extend_from_slice(&sum);
    Ok(out)
}

pub fn write_idx(index: &Index) -> Vec<u8> {
    let mut out = Vec::with_capacity(1072 + index.entries.len() * 28);
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (oid, _, _) in &index.entries {
        fanout[oid[0] as usize] += 1;
    }
    let mut total = 0;
    for f in fanout {
        total += f;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (oid, _, _) in &index.entries {
        out.extend_from_slice(oid);
    }
    for (_, crc, _) in &index.entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large: Vec<u64> = Vec::new();
    for (_, _, off) in &index.entries {
        if *off < 0x8000_0000 {
            out.extend_from_slice(&(*off as u32).to_be_bytes());
        } else {
            out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
            large.push(*off);
        }
    }
    for off in large {
        out.extend_from_slice(&off.to_be_bytes());
    }
    out.extend_from_slice(&index.checksum);
    let sum = sha1(&out);
    out.extend_from_slice(&sum);
    out
}

/// An object read out of a pack: its kind and bytes (shared with the pack's cache).
pub type Object = (Kind, Rc<Vec<u8>>);

/// A pack read whole into memory with its index, for reading objects.
pub struct Pack {
    data: Source,
    /// Sorted by id.
    ids: Vec<(Oid, u64)>,
    /// Recently inflated objects by offset (delta bases are read again and again).
    cache: std::cell::RefCell<HashMap<u64, Object>>,
    cached_bytes: std::cell::Cell<usize>,
}

/// Where a pack's bytes are: in memory (a pack just received), or in its file, read one
/// entry at a time so that a command needing a few objects of a large pack reads only
/// those.
enum Source {
    Memory(Vec<u8>),
    File {
        file: std::cell::RefCell<std::fs::File>,
        /// Every entry's offset, sorted, and the end of the last entry (the checksum's
        /// start): an entry's bytes run to the next offset.
        bounds: Vec<u64>,
    },
}

const CACHE_BYTES: usize = 32 << 20;

impl Pack {
    pub fn new(data: Vec<u8>, ids: Vec<(Oid, u64)>) -> Pack {
        Pack {
            data: Source::Memory(data),
            ids,
            cache: Default::default(),
            cached_bytes: Default::default(),
        }
    }

    /// Opens `pack-X.pack` with its `pack-X.idx`; entries are read from the file on demand.
    pub fn open(pack: &std::path::Path) -> Result<Pack, String> {
        let file = std::fs::File::open(pack).map_err(|e| format!("{}: {e}", pack.display()))?;
        let len = file
            .metadata()
            .map_err(|e| format!("{}: {e}", pack.display()))?
            .len();
        let idx_path = pack.with_extension("idx");
        let idx = std::fs::read(&idx_path).map_err(|e| format!("{}: {e}", idx_path.display()))?;
        let ids = read_idx(&idx)?;
        let mut bounds: Vec<u64> = ids.iter().map(|(_, o)| *o).collect();
        bounds.sort_unstable();
        bounds.push(len.saturating_sub(20));
        Ok(Pack {
            data: Source::File {
                file: std::cell::RefCell::new(file),
                bounds,
            },
            ids,
            cache: Default::default(),
            cached_bytes: Default::default(),
        })
    }

    /// The header and inflated data of the entry at `offset`.
    fn entry(&self, offset: u64) -> Result<(Header, Vec<u8>), String> {
        match &self.data {
            Source::Memory(data) => {
                let h = header(data, offset as usize)?;
                let (d, _) = inflate(data, h.data, h.size)?;
                Ok((h, d))
            }
            Source::File { file, bounds } => {
                use std::io::{Read, Seek, SeekFrom};
                let k = bounds
                    .binary_search(&offset)
                    .map_err(|_| corrupt("entry offset"))?;
                let end = *bounds.get(k + 1).ok_or_else(|| corrupt("entry offset"))?;
                let mut buf = vec![0u8; end.saturating_sub(offset) as usize];
                let mut f = file.borrow_mut();
                f.seek(SeekFrom::Start(offset))
                    .and_then(|_| f.read_exact(&mut buf))
                    .map_err(|_| corrupt("truncated entry"))?;
                let h = header_at(&buf, 0, offset as usize)?;
                let (d, _) = inflate(&buf, h.data, h.size)?;
                Ok((h, d))
            }
        }
    }

    pub fn ids(&self) -> impl Iterator<Item = &Oid> {
        self.ids.iter().map(|(o, _)| o)
    }

    pub fn read(&self, oid: &Oid) -> Option<Result<Object, String>> {
        let i = self.ids.binary_search_by(|(o, _)| o.cmp(oid)).ok()?;
        Some(self.read_at(self.ids[i].1, 0))
    }

    fn read_at(&self, offset: u64, depth: u32) -> Result<Object, String> {
        if let Some(hit) = self.cache.borrow().get(&offset) {
            return Ok(hit.clone());
        }
        if depth > 10_000 {
            return Err(corrupt("delta chain too long"));
        }
        let (h, data) = self.entry(offset)?;
        let (kind, full) = match h.base {
            Base::None => (
                Kind::from_pack(h.kind).ok_or_else(|| corrupt("object type"))?,
                data,
            ),
            Base::Offset(b) => {
                let (kind, base) = self.read_at(b as u64, depth + 1)?;
                (kind, apply_delta(&base, &data)?)
            }
            Base::Id(id) => {
                let i = self
                    .ids
                    .binary_search_by(|(o, _)| o.cmp(&id))
                    .map_err(|_| corrupt("delta base missing"))?;
                let (kind, base) = self.read_at(self.ids[i].1, depth + 1)?;
                (kind, apply_delta(&base, &data)?)
            }
        };
        let full = Rc::new(full);
        let size = full.len();
        if size < CACHE_BYTES / 4 {
            if self.cached_bytes.get() + size > CACHE_BYTES {
                self.cache.borrow_mut().clear();
                self.cached_bytes.set(0);
            }
            self.cache.borrow_mut().insert(offset, (kind, full.clone()));
            self.cached_bytes.set(self.cached_bytes.get() + size);
        }
        Ok((kind, full))
    }
}

/// The ids and offsets of a version 2 `.idx`.
pub fn read_idx(idx: &[u8]) -> Result<Vec<(Oid, u64)>, String> {
    let bad = || "fatal: pack index is corrupt".to_string();
    if idx.len() < 8 + 1024 + 40 || &idx[..4] != b"\xfftOc" || idx[4..8] != 2u32.to_be_bytes() {
        return Err(bad());
    }
    let u32_at = |i: usize| -> Result<u32, String> {
        idx.get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(bad)
    };
    let n = u32_at(8 + 255 * 4)? as usize;
    let ids = 8 + 1024;
    let offsets = ids + n * 20 + n * 4;
    let large = offsets + n * 4;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let oid: Oid = idx
            .get(ids + i * 20..ids + i * 20 + 20)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?;
        let o = u32_at(offsets + i * 4)?;
        let off = if o & 0x8000_0000 == 0 {
            o as u64
        } else {
            let j = large + (o & 0x7fff_ffff) as usize * 8;
            let b = idx.get(j..j + 8).ok_or_else(bad)?;
            u64::from_be_bytes(b.try_into().map_err(|_| bad())?)
        };
        out.push((oid, off));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pack of one blob and a delta of it, made by hand.
    fn pack_of(objects: &[(u8, Vec<u8>, Option<usize>)]) -> Vec<u8> {
        use std::io::Write as _;
        let mut p = b"PACK".to_vec();
        p.extend_from_slice(&2u32.to_be_bytes());
        p.extend_from_slice(&(objects.len() as u32).to_be_bytes());
        let mut offsets = Vec::new();
        for (kind, data, base) in objects {
            let at = p.len();
            offsets.push(at);
            let mut size = data.len();
            let mut c = (kind << 4) | (size & 15) as u8;
            size >>= 4;
            while size > 0 {
                p.push(c | 0x80);
                c = (size & 0x7f) as u8;
                size >>= 7;
            }
            p.push(c);
            if let Some(b) = base {
                // A one-byte negative offset is enough here.
                p.push((at - offsets[*b]) as u8);
            }
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(data).unwrap();
            p.extend_from_slice(&z.finish().unwrap());
        }
        let sum = sha1(&p);
        p.extend_from_slice(&sum);
        p
    }

    #[test]
    fn deltas_resolve_to_their_ids() {
        let base = b"hello world\n".to_vec();
        // Copy 6 bytes from offset 0, then insert "git\n".
        let delta = vec![12, 10, 0x90, 6, 4, b'g', b'i', b't', b'\n'];
        let pack = pack_of(&[(3, base.clone(), None), (OFS_DELTA, delta, Some(0))]);
        let idx = index(&pack).unwrap();
        assert_eq!(idx.entries.len(), 2);
        let want = hash(Kind::Blob, b"hello git\n");
        assert!(idx.entries.iter().any(|e| e.0 == want));
        let ids = read_idx(&write_idx(&idx)).unwrap();
        let p = Pack::new(pack, ids);
        let (kind, data) = p.read(&want).unwrap().unwrap();
        assert_eq!(kind, Kind::Blob);
        assert_eq!(&data[..], b"hello git\n");
    }
}
