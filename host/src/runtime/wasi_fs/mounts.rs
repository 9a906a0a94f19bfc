//! Read-only host directories mounted into a run, reached only through cap-std `Dir`
//! handles: a guest can read what the caller granted and nothing above it (cap-std refuses
//! `..` and symlinks that leave the directory), and can never change it.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use cap_std::fs::{Dir, MetadataExt};
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::streams::{StreamError, StreamResult};

use super::bindings::wasi::filesystem::types::{
    DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, OpenFlags,
};
use super::{FsError, FsResult, datetime};

/// An open file or directory of a mount.
#[derive(Clone)]
pub(crate) enum HostNode {
    Dir(Arc<Dir>),
    File(Arc<std::fs::File>),
}

/// The WASI error code of a host I/O error.
pub(crate) fn io_code(e: &std::io::Error) -> ErrorCode {
    use std::io::ErrorKind as K;
    match e.raw_os_error() {
        Some(40) => return ErrorCode::Loop,
        Some(36) => return ErrorCode::NameTooLong,
        _ => {}
    }
    match e.kind() {
        K::NotFound => ErrorCode::NoEntry,
        K::PermissionDenied => ErrorCode::NotPermitted,
        K::AlreadyExists => ErrorCode::Exist,
        K::NotADirectory => ErrorCode::NotDirectory,
        K::IsADirectory => ErrorCode::IsDirectory,
        K::DirectoryNotEmpty => ErrorCode::NotEmpty,
        K::InvalidInput => ErrorCode::Invalid,
        _ => ErrorCode::Io,
    }
}

fn io(e: std::io::Error) -> FsError {
    FsError::Code(io_code(&e))
}

fn ftype(ft: cap_std::fs::FileType) -> DescriptorType {
    if ft.is_dir() {
        DescriptorType::Directory
    } else if ft.is_symlink() {
        DescriptorType::SymbolicLink
    } else if ft.is_file() {
        DescriptorType::RegularFile
    } else {
        DescriptorType::Unknown
    }
}

fn ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

fn stat_of(m: &cap_std::fs::Metadata) -> DescriptorStat {
    DescriptorStat {
        type_: ftype(m.file_type()),
        link_count: m.nlink(),
        size: m.len(),
        data_access_timestamp: Some(datetime(ns(m.atime(), m.atime_nsec()))),
        data_modification_timestamp: Some(datetime(ns(m.mtime(), m.mtime_nsec()))),
        status_change_timestamp: Some(datetime(ns(m.ctime(), m.ctime_nsec()))),
    }
}

fn metadata(node: &HostNode) -> FsResult<cap_std::fs::Metadata> {
    match node {
        HostNode::Dir(d) => d.dir_metadata().map_err(io),
        HostNode::File(f) => Ok(cap_std::fs::Metadata::from_just_metadata(
            f.metadata().map_err(io)?,
        )),
    }
}

pub(crate) fn stat(node: &HostNode) -> FsResult<DescriptorStat> {
    Ok(stat_of(&metadata(node)?))
}

pub(crate) fn get_type(node: &HostNode) -> FsResult<DescriptorType> {
    Ok(stat(node)?.type_)
}

pub(crate) fn stat_at(dir: &Dir, path: &str, follow: bool) -> FsResult<DescriptorStat> {
    let m = if follow {
        dir.metadata(path)
    } else {
        dir.symlink_metadata(path)
    };
    Ok(stat_of(&m.map_err(io)?))
}

/// (device, inode, mtime, size): identity plus what changes with content.
pub(crate) fn identity(node: &HostNode) -> FsResult<(u64, u64, i64, u64)> {
    let m = metadata(node)?;
    Ok((m.dev(), m.ino(), ns(m.mtime(), m.mtime_nsec()), m.len()))
}

pub(crate) fn identity_at(dir: &Dir, path: &str, follow: bool) -> FsResult<(u64, u64, i64, u64)> {
    let m = if follow {
        dir.metadata(path)
    } else {
        dir.symlink_metadata(path)
    }
    .map_err(io)?;
    Ok((m.dev(), m.ino(), ns(m.mtime(), m.mtime_nsec()), m.len()))
}

/// Opens for reading; anything that would write is `not-permitted`.
pub(crate) fn open_at(
    dir: &Dir,
    path: &str,
    follow: bool,
    oflags: OpenFlags,
    write: bool,
) -> FsResult<HostNode> {
    if write || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::EXCLUSIVE) {
        return Err(ErrorCode::NotPermitted.into());
    }
    let m = dir.symlink_metadata(path).map_err(io)?;
    if m.file_type().is_symlink() && !follow {
        return Err(ErrorCode::Loop.into());
    }
    let m = dir.metadata(path).map_err(io)?;
    if m.is_dir() {
        return Ok(HostNode::Dir(Arc::new(dir.open_dir(path).map_err(io)?)));
    }
    if oflags.contains(OpenFlags::DIRECTORY) {
        return Err(ErrorCode::NotDirectory.into());
    }
    Ok(HostNode::File(Arc::new(
        dir.open(path).map_err(io)?.into_std(),
    )))
}

pub(crate) fn read(file: &std::fs::File, len: u64, offset: u64) -> FsResult<(Vec<u8>, bool)> {
    let mut buf = vec![0u8; len.min(crate::limits::MAX_READ) as usize];
    let n = file.read_at(&mut buf, offset).map_err(io)?;
    buf.truncate(n);
    Ok((buf, n == 0))
}

pub(crate) fn readdir(dir: &Dir) -> FsResult<Vec<DirectoryEntry>> {
    let mut out = Vec::new();
    for e in dir.entries().map_err(io)? {
        let e = e.map_err(io)?;
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        out.push(DirectoryEntry {
            type_: ftype(e.file_type().map_err(io)?),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

pub(crate) fn readlink(dir: &Dir, path: &str) -> FsResult<String> {
    let t = dir.read_link_contents(path).map_err(io)?;
    t.into_os_string()
        .into_string()
        .map_err(|_| ErrorCode::IllegalByteSequence.into())
}

/// `read-via-stream` of a mounted file.
pub(crate) struct HostInput {
    pub file: Arc<std::fs::File>,
    pub pos: u64,
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for HostInput {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::InputStream for HostInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let mut buf = vec![0u8; size.min(crate::limits::MAX_READ as usize)];
        let n = self
            .file
            .read_at(&mut buf, self.pos)
            .map_err(|e| StreamError::LastOperationFailed(e.into()))?;
        if n == 0 && size > 0 {
            return Err(StreamError::Closed);
        }
        buf.truncate(n);
        self.pos += n as u64;
        Ok(Bytes::from(buf))
    }
}
