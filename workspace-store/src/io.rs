//! Import and export: host directories (through cap-std, so symlinks are copied as links and
//! never followed out of the tree) and tar streams. Both directions stream file contents in
//! page-sized blocks, and a transaction spills pages to the database as it goes, so memory
//! stays bounded whatever the size of the tree.

use std::io::{Read, Write};
use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{Error, Result};
use crate::node::{Kind, PAGE_SIZE};
use crate::txn::{Commit, Ino, OpenFlags, ROOT_INO, SetTime, Txn};
use crate::{Store, VersionId};

/// Counts of an import or export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    /// Entries skipped: names that are not UTF-8, special files (devices, sockets, fifos),
    /// tar entries with `..` or unsupported types.
    pub skipped: u64,
}

/// Called after each imported or exported file with the running totals.
pub type Progress<'a> = &'a mut dyn FnMut(&ImportStats);

fn nanos(t: std::time::SystemTime) -> Option<i64> {
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos() as i64)
}

/// Copies everything from `src` into the open file `ino`, one page at a time.
fn copy_in(txn: &mut Txn, ino: Ino, src: &mut dyn Read, stats: &mut ImportStats) -> Result<()> {
    let mut buf = vec![0u8; PAGE_SIZE];
    let mut off = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        txn.write(ino, off, &buf[..n])?;
        off += n as u64;
        stats.bytes += n as u64;
    }
    Ok(())
}

/// What the reading side of a directory import hands to the writing side, in tree order.
enum Walked {
    /// A directory begins: what follows is in it, up to its [`Walked::Leave`].
    Enter(String),
    /// The directory ends, with its permission bits and modification time.
    Leave(u32, Option<i64>),
    /// A regular file begins: its [`Walked::Data`] follow, then its [`Walked::Done`].
    File(String),
    /// The file's next bytes: this range of the batch's bytes.
    Data(usize, usize),
    /// The file ends, with its permission bits and modification time.
    Done(u32, Option<i64>),
    /// A symbolic link: its name, target and modification time.
    Symlink(String, String, Option<i64>),
    /// An entry not imported (see [`ImportStats::skipped`]).
    Skipped,
}

/// Walked entries with their file bytes, sent from the reading side to the writing side
/// together (a send per file cost more than the reading it took off the writer) and sent
/// back empty to be filled again.
#[derive(Default)]
struct Batch {
    items: Vec<Walked>,
    bytes: Vec<u8>,
}

/// A batch is sent when it holds this many bytes (or [`BATCH_ITEMS`] items); a file is read
/// this much at a time.
const BATCH_BYTES: usize = 1 << 20;
const BATCH_ITEMS: usize = 1024;

/// Batches under way from the reader to the writer at most.
const READ_AHEAD: usize = 4;

/// A directory entry's permission bits and modification time.
fn mode_and_mtime(meta: &cap_std::fs::Metadata) -> (u32, Option<i64>) {
    use cap_std::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    (mode, meta.modified().ok().and_then(|t| nanos(t.into_std())))
}

/// The reading side of [`import_tree`]: fills batches and sends them.
struct Reader {
    to: std::sync::mpsc::SyncSender<Result<Batch>>,
    back: std::sync::mpsc::Receiver<Batch>,
    batch: Batch,
}

impl Reader {
    /// Queues `w`, sending the batch when it is full; false when the writer has gone.
    fn push(&mut self, w: Walked) -> bool {
        self.batch.items.push(w);
        if self.batch.items.len() >= BATCH_ITEMS || self.batch.bytes.len() >= BATCH_BYTES {
            return self.send();
        }
        true
    }

    fn send(&mut self) -> bool {
        let next = self.back.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.batch, next);
        self.to.send(Ok(full)).is_ok()
    }

    /// Walks `host` in name order, file contents included; false when the writer has gone.
    fn walk(&mut self, host: &Dir) -> Result<bool> {
        let mut entries: Vec<_> = host.entries()?.collect::<std::io::Result<Vec<_>>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(name) = e.file_name().into_string() else {
                if !self.push(Walked::Skipped) {
                    return Ok(false);
                }
                continue;
            };
            let ft = e.file_type()?;
            let meta = e.metadata()?;
            let (mode, mtime) = mode_and_mtime(&meta);
            let going = if ft.is_dir() {
                let sub = host.open_dir(&name)?;
                self.push(Walked::Enter(name))
                    && self.walk(&sub)?
                    && self.push(Walked::Leave(mode, mtime))
            } else if ft.is_symlink() {
                let target = host.read_link_contents(&name)?;
                match target.into_os_string().into_string() {
                    Ok(target) => self.push(Walked::Symlink(name, target, mtime)),
                    Err(_) => self.push(Walked::Skipped),
                }
            } else if ft.is_file() {
                let mut f = host.open(&name)?;
                if !self.push(Walked::File(name)) {
                    return Ok(false);
                }
                loop {
                    let start = self.batch.bytes.len();
                    (&mut f)
                        .take(BATCH_BYTES as u64)
                        .read_to_end(&mut self.batch.bytes)?;
                    let end = self.batch.bytes.len();
                    if end == start {
                        break;
                    }
                    if !self.push(Walked::Data(start, end)) {
                        return Ok(false);
                    }
                }
                self.push(Walked::Done(mode, mtime))
            } else {
                self.push(Walked::Skipped)
            };
            if !going {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Imports the tree under `host` into the directory `into`. One thread reads the host's
/// files ([`Reader`]) while this one writes them into the transaction, so reading the
/// source and storing it overlap.
fn import_tree(
    txn: &mut Txn,
    host: Dir,
    into: Ino,
    stats: &mut ImportStats,
    progress: &mut dyn FnMut(&ImportStats),
) -> Result<()> {
    let (to, from) = std::sync::mpsc::sync_channel(READ_AHEAD);
    let (back_to, back) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let reader = std::thread::Builder::new()
            .name("burrow-import-read".into())
            .spawn_scoped(s, move || {
                let mut r = Reader {
                    to,
                    back,
                    batch: Batch::default(),
                };
                match r.walk(&host) {
                    Ok(true) => {
                        r.send();
                    }
                    Ok(false) => {}
                    Err(e) => {
                        let _ = r.to.send(Err(e));
                    }
                }
            })?;
        let written = write_walked(txn, from, back_to, into, stats, progress);
        // The receiver is gone, so a reader still sending has stopped.
        let _ = reader.join();
        written
    })
}

/// The writing side of [`import_tree`].
fn write_walked(
    txn: &mut Txn,
    from: std::sync::mpsc::Receiver<Result<Batch>>,
    back: std::sync::mpsc::Sender<Batch>,
    into: Ino,
    stats: &mut ImportStats,
    progress: &mut dyn FnMut(&ImportStats),
) -> Result<()> {
    let mut dirs = vec![into];
    let mut file: Option<(Ino, u64)> = None;
    for batch in from {
        let mut batch = batch?;
        for w in batch.items.drain(..) {
            let here = *dirs
                .last()
                .ok_or(Error::Corrupt("import left its root".into()))?;
            match w {
                Walked::Enter(name) => dirs.push(txn.mkdir_at(here, &name)?),
                Walked::Leave(mode, mtime) => {
                    dirs.pop();
                    txn.set_mode(here, mode)?;
                    txn.set_times(here, None, mtime.map(SetTime::At))?;
                    stats.dirs += 1;
                }
                Walked::File(name) => {
                    let flags = OpenFlags {
                        create: true,
                        exclusive: true,
                        ..Default::default()
                    };
                    file = Some((txn.open_at(here, &name, flags, false)?, 0));
                }
                Walked::Data(start, end) => {
                    let (ino, off) = file
                        .as_mut()
                        .ok_or(Error::Corrupt("file data outside a file".into()))?;
                    let chunk = batch
                        .bytes
                        .get(start..end)
                        .ok_or(Error::Corrupt("file data outside its batch".into()))?;
                    txn.write(*ino, *off, chunk)?;
                    *off += chunk.len() as u64;
                    stats.bytes += chunk.len() as u64;
                }
                Walked::Done(mode, mtime) => {
                    let (ino, _) = file
                        .take()
                        .ok_or(Error::Corrupt("file end outside a file".into()))?;
                    txn.set_mode(ino, mode)?;
                    txn.set_times(ino, None, mtime.map(SetTime::At))?;
                    stats.files += 1;
                    progress(stats);
                }
                Walked::Symlink(name, target, mtime) => {
                    let ino = txn.symlink_at(&target, here, &name)?;
                    txn.set_times(ino, None, mtime.map(SetTime::At))?;
                    stats.symlinks += 1;
                }
                Walked::Skipped => stats.skipped += 1,
            }
        }
        batch.bytes.clear();
        let _ = back.send(batch);
    }
    Ok(())
}

/// A tar member's name (or hard link target) made safe the way GNU tar makes it.
#[derive(Debug, PartialEq, Eq)]
struct TarName {
    /// What remains to extract to, relative (`.` components dropped).
    rel: String,
    /// The prefix GNU's `safer_name_suffix` removes: leading `/`s, or everything up to and
    /// including the last `..` component and the slashes after it ("Removing leading
    /// `dir/../../' from member names").
    removed: String,
    /// The name as written has a `..` component: GNU refuses such a member ("Member name
    /// contains '..'"), though not such a hard link target.
    dotdot: bool,
}

fn tar_name(name: &str) -> TarName {
    let comps: Vec<&str> = name.split('/').collect();
    let dotdot = comps.contains(&"..");
    // Byte offset just past the last `..` component, else 0.
    let mut cut = 0;
    let mut at = 0;
    for c in &comps {
        if *c == ".." {
            cut = at + 2;
        }
        at += c.len() + 1;
    }
    let rest = name[cut.min(name.len())..].trim_start_matches('/');
    let removed = name[..name.len() - rest.len()].to_string();
    let rel = rest
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/");
    TarName {
        rel,
        removed,
        dotdot,
    }
}

fn join(dest: &str, rel: &str) -> String {
    let dest = dest.trim_matches('/');
    match (dest.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_string(),
        (false, true) => dest.to_string(),
        (false, false) => format!("{dest}/{rel}"),
    }
}

impl Store {
    /// Imports the host directory `host` into `dest` (created if missing) of `workspace`, as
    /// one commit. Symlinks are copied as symlinks (never followed); files keep their
    /// permission bits and modification time.
    pub fn import_dir(
        &self,
        workspace: &str,
        host: &Path,
        dest: &str,
        progress: Progress<'_>,
    ) -> Result<(Commit, ImportStats)> {
        let dir = Dir::open_ambient_dir(host, ambient_authority())?;
        let mut txn = self.begin(workspace)?;
        let into = txn.mkdir_all(dest)?;
        let mut stats = ImportStats::default();
        import_tree(&mut txn, dir, into, &mut stats, progress)?;
        txn.set_message(format!("import {}", host.display()));
        Ok((txn.commit()?, stats))
    }

    /// Imports a tar stream into `dest` of `workspace`, as one commit, with member names
    /// made safe as GNU tar makes them (see [`Store::import_tar_warning`]).
    pub fn import_tar(
        &self,
        workspace: &str,
        tar: impl Read,
        dest: &str,
        progress: Progress<'_>,
    ) -> Result<(Commit, ImportStats)> {
        self.import_tar_warning(workspace, tar, dest, progress, &mut |_| {})
    }

    /// [`Store::import_tar`], telling `warn` about every member changed or skipped, in GNU
    /// tar's words: a leading prefix of `/` and `../` components is removed ("Removing leading
    /// `/' from member names", once per prefix); a member with `..` further in is skipped
    /// ("NAME: Member name contains '..'"); a hard link whose target is not in the archive (or
    /// is not a regular file) is skipped ("NAME: Cannot hard link to 'TARGET': No such file
    /// or directory"); devices, fifos and names that are not UTF-8 are skipped with a word
    /// each. Hard links become copies. Skipped members count in [`ImportStats::skipped`].
    pub fn import_tar_warning(
        &self,
        workspace: &str,
        tar: impl Read,
        dest: &str,
        progress: Progress<'_>,
        warn: &mut dyn FnMut(String),
    ) -> Result<(Commit, ImportStats)> {
        let mut txn = self.begin(workspace)?;
        txn.mkdir_all(dest)?;
        let mut stats = ImportStats::default();
        let mut archive = tar::Archive::new(tar);
        let mut removed_seen: Vec<(String, bool)> = Vec::new();
        let mut removal = |removed: &str, link: bool, warn: &mut dyn FnMut(String)| {
            if !removed.is_empty() && !removed_seen.iter().any(|(r, l)| r == removed && *l == link)
            {
                removed_seen.push((removed.to_string(), link));
                let what = if link {
                    "hard link targets"
                } else {
                    "member names"
                };
                warn(format!("Removing leading `{removed}' from {what}"));
            }
        };
        for entry in archive.entries()? {
            let mut entry = entry?;
            let raw = entry.path_bytes().into_owned();
            let shown = String::from_utf8_lossy(&raw).into_owned();
            let Ok(name) = std::str::from_utf8(&raw) else {
                warn(format!("{shown}: skipped: the name is not UTF-8"));
                stats.skipped += 1;
                continue;
            };
            let safe = tar_name(name);
            removal(&safe.removed, false, warn);
            if safe.dotdot {
                warn(format!("{shown}: Member name contains '..'"));
                stats.skipped += 1;
                continue;
            }
            let rel = safe.rel;
            let path = join(dest, &rel);
            let header = entry.header().clone();
            let mode = header.mode().unwrap_or(0o644) & 0o7777;
            let mtime = header.mtime().ok().map(|s| s as i64 * 1_000_000_000);
            let kind = header.entry_type();
            if path.is_empty() {
                continue;
            }
            let parent = match path.rfind('/') {
                Some(i) => &path[..i],
                None => "",
            };
            txn.mkdir_all(parent)?;
            let ino = if kind.is_dir() {
                stats.dirs += 1;
                txn.mkdir_all(&path)?
            } else if kind.is_symlink() {
                let Some(target) = entry
                    .link_name()?
                    .and_then(|t| t.to_str().map(String::from))
                else {
                    warn(format!("{shown}: skipped: the link target is not UTF-8"));
                    stats.skipped += 1;
                    continue;
                };
                let _ = txn.unlink_at(ROOT_INO, &path);
                stats.symlinks += 1;
                txn.symlink_at(&target, ROOT_INO, &path)?
            } else if kind.is_hard_link() {
                let raw_target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let target = tar_name(&String::from_utf8_lossy(&raw_target));
                removal(&target.removed, true, warn);
                let found = if target.rel.is_empty() {
                    Err(Error::NotFound)
                } else {
                    txn.read_file(&join(dest, &target.rel))
                };
                let data = match found {
                    Ok(d) => d,
                    Err(Error::NotFound | Error::IsDir | Error::NotDir) => {
                        // GNU's wording, with the quotes it uses in a UTF-8 locale.
                        warn(format!(
                            "{shown}: Cannot hard link to \u{2018}{}\u{2019}: No such file or directory",
                            target.rel
                        ));
                        stats.skipped += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                stats.files += 1;
                stats.bytes += data.len() as u64;
                txn.write_file(&path, &data)?
            } else if kind.is_file() || kind == tar::EntryType::Continuous {
                let flags = OpenFlags {
                    create: true,
                    truncate: true,
                    ..Default::default()
                };
                let ino = txn.open_at(ROOT_INO, &path, flags, false)?;
                copy_in(&mut txn, ino, &mut entry, &mut stats)?;
                stats.files += 1;
                progress(&stats);
                ino
            } else {
                // PAX/GNU metadata entries are consumed by the tar crate; devices and fifos
                // have no place in a workspace.
                if !matches!(
                    kind,
                    tar::EntryType::XGlobalHeader | tar::EntryType::XHeader
                ) {
                    warn(format!(
                        "{shown}: skipped: devices, fifos and sockets have no place in a workspace"
                    ));
                    stats.skipped += 1;
                }
                continue;
            };
            if !kind.is_symlink() {
                txn.set_mode(ino, mode)?;
            }
            txn.set_times(ino, None, mtime.map(SetTime::At))?;
        }
        txn.set_message("import tar");
        Ok((txn.commit()?, stats))
    }

    /// Exports `version` into the host directory `host`, which must not exist or be empty.
    pub fn export_dir(&self, version: VersionId, host: &Path) -> Result<ImportStats> {
        self.export_dir_with_progress(version, host, &mut |_| {})
    }

    /// [`Store::export_dir`], telling `progress` the running totals after each file.
    pub fn export_dir_with_progress(
        &self,
        version: VersionId,
        host: &Path,
        progress: Progress<'_>,
    ) -> Result<ImportStats> {
        std::fs::create_dir_all(host)?;
        if std::fs::read_dir(host)?.next().is_some() {
            return Err(Error::Exists);
        }
        let dir = Dir::open_ambient_dir(host, ambient_authority())?;
        let mut view = self.view(version)?;
        let mut stats = ImportStats::default();
        export_tree(&mut view, ROOT_INO, &dir, host, &mut stats, progress)?;
        Ok(stats)
    }

    /// Writes `version` as a tar stream (paths relative to the workspace root).
    pub fn export_tar(&self, version: VersionId, out: impl Write) -> Result<ImportStats> {
        self.export_tar_with_progress(version, out, &mut |_| {})
    }

    /// [`Store::export_tar`], telling `progress` the running totals after each file.
    pub fn export_tar_with_progress(
        &self,
        version: VersionId,
        out: impl Write,
        progress: Progress<'_>,
    ) -> Result<ImportStats> {
        let mut view = self.view(version)?;
        let mut builder = tar::Builder::new(out);
        builder.mode(tar::HeaderMode::Complete);
        let mut stats = ImportStats::default();
        tar_tree(&mut view, ROOT_INO, "", &mut builder, &mut stats, progress)?;
        builder.into_inner()?.flush()?;
        Ok(stats)
    }
}

/// Writes the subtree `dir` into `host` (whose path is `host_path`, used only to create
/// symlinks, which cap-std refuses when their target is absolute; store names never contain
/// `/`, `.` or `..`, so the joined path stays inside the export directory).
fn export_tree(
    view: &mut Txn,
    dir: Ino,
    host: &Dir,
    host_path: &Path,
    stats: &mut ImportStats,
    progress: Progress<'_>,
) -> Result<()> {
    for e in view.readdir(dir)? {
        if e.name == crate::SYSTEM_DIR {
            continue; // not part of the workspace
        }
        let st = view.stat(e.ino)?;
        match e.kind {
            Kind::Dir => {
                host.create_dir(&e.name)?;
                let sub = host.open_dir(&e.name)?;
                export_tree(view, e.ino, &sub, &host_path.join(&e.name), stats, progress)?;
                set_perms(host, &e.name, st.mode)?;
                stats.dirs += 1;
            }
            Kind::Symlink => {
                let target = view.readlink_at(dir, &e.name)?;
                symlink(&target, &host_path.join(&e.name))?;
                stats.symlinks += 1;
            }
            Kind::File => {
                let mut f = host.create(&e.name)?;
                let mut buf = vec![0u8; PAGE_SIZE];
                let mut off = 0;
                loop {
                    let n = view.read(e.ino, off, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n])?;
                    off += n as u64;
                }
                let f = f.into_std();
                let mtime =
                    std::time::UNIX_EPOCH + std::time::Duration::from_nanos(st.mtime.max(0) as u64);
                f.set_modified(mtime)?;
                set_perms(host, &e.name, st.mode)?;
                stats.files += 1;
                stats.bytes += off;
                progress(stats);
            }
        }
    }
    Ok(())
}

fn set_perms(host: &Dir, name: &str, mode: u32) -> Result<()> {
    use cap_std::fs::PermissionsExt;
    host.set_permissions(name, cap_std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link)?;
    Ok(())
}

#[cfg(not(unix))]
fn symlink(_target: &str, _link: &Path) -> Result<()> {
    Err(Error::Unsupported("symlinks on this host"))
}

/// Reads a file of a view sequentially (for tar's streaming `append_data`).
struct FileReader<'a> {
    view: &'a mut Txn,
    ino: Ino,
    off: u64,
}

impl Read for FileReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self
            .view
            .read(self.ino, self.off, buf)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.off += n as u64;
        Ok(n)
    }
}

fn tar_tree<W: Write>(
    view: &mut Txn,
    dir: Ino,
    prefix: &str,
    b: &mut tar::Builder<W>,
    stats: &mut ImportStats,
    progress: Progress<'_>,
) -> Result<()> {
    for e in view.readdir(dir)? {
        if e.name == crate::SYSTEM_DIR {
            continue; // not part of the workspace
        }
        let st = view.stat(e.ino)?;
        let path = if prefix.is_empty() {
            e.name.clone()
        } else {
            format!("{prefix}/{}", e.name)
        };
        let mut h = tar::Header::new_gnu();
        h.set_mode(st.mode);
        h.set_mtime((st.mtime.max(0) / 1_000_000_000) as u64);
        match e.kind {
            Kind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                b.append_data(&mut h, format!("{path}/"), std::io::empty())?;
                stats.dirs += 1;
                tar_tree(view, e.ino, &path, b, stats, progress)?;
            }
            Kind::Symlink => {
                let target = view.readlink_at(dir, &e.name)?;
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                b.append_link(&mut h, &path, &target)?;
                stats.symlinks += 1;
            }
            Kind::File => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(st.size);
                let reader = FileReader {
                    view,
                    ino: e.ino,
                    off: 0,
                };
                b.append_data(&mut h, &path, reader)?;
                stats.files += 1;
                stats.bytes += st.size;
                progress(stats);
            }
        }
    }
    Ok(())
}
