//! Typed errors of the store. Filesystem errors map one-to-one onto POSIX/WASI error codes
//! (see [`Errno`]); store-level errors (conflict, busy, corrupt) say what to do next.

use crate::VersionId;

/// A POSIX-style error code, the vocabulary shared with `wasi:filesystem`'s `error-code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Errno {
    /// ENOENT
    NotFound,
    /// EEXIST
    Exists,
    /// ENOTDIR
    NotDir,
    /// EISDIR
    IsDir,
    /// ENOTEMPTY
    NotEmpty,
    /// ELOOP
    Loop,
    /// ENAMETOOLONG
    NameTooLong,
    /// EINVAL
    Invalid,
    /// EDQUOT
    Quota,
    /// ENOTSUP
    Unsupported,
    /// EBUSY (store contention)
    Busy,
    /// EIO (corruption, SQLite failure, host I/O)
    Io,
    /// EFBIG (file offset beyond the maximum)
    FileTooLarge,
    /// EACCES: the operation is not permitted on this object
    Access,
    /// EXDEV: rename across workspaces or mounts
    CrossDevice,
    /// EROFS
    ReadOnly,
}

/// Every error the store returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no such file or directory")]
    NotFound,
    #[error("file already exists")]
    Exists,
    #[error("not a directory")]
    NotDir,
    #[error("is a directory")]
    IsDir,
    #[error("directory not empty")]
    NotEmpty,
    #[error("too many levels of symbolic links")]
    Loop,
    #[error("file name too long")]
    NameTooLong,
    #[error("invalid argument: {0}")]
    Invalid(&'static str),
    #[error("file too large")]
    FileTooLarge,
    #[error("permission denied")]
    Access,
    #[error("read-only: this is a view of an old version, not a transaction on a workspace")]
    ReadOnly,
    #[error("quota exceeded: {what} would be {would_be}, limit is {limit}")]
    QuotaExceeded {
        /// `"bytes"` or `"entries"`.
        what: &'static str,
        would_be: u64,
        limit: u64,
    },
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    #[error(
        "conflict: workspace '{workspace}' moved from version {expected} to {actual} while this transaction ran; retry on the new head"
    )]
    Conflict {
        workspace: String,
        expected: VersionId,
        actual: VersionId,
    },
    #[error("store is busy: another process holds the write lock; retry shortly")]
    Busy,
    /// Transient: the operation changed nothing and can simply be run again.
    #[error("retry: {0}")]
    Retry(String),
    /// A write's [`crate::backend::Guard`] no longer held (a GC sweep began): nothing was
    /// written. The store handles it (waits for the sweep, puts its objects again, retries)
    /// and never returns it.
    #[error("a garbage collection began sweeping while this commit was written; retry")]
    Fenced,
    /// The store's configuration contradicts what was asked (e.g. another `--objects`).
    #[error("store configuration: {0}")]
    Config(String),
    #[error("no workspace named '{0}'")]
    NoWorkspace(String),
    #[error("a workspace named '{0}' already exists")]
    WorkspaceExists(String),
    #[error("no version {0}")]
    NoVersion(VersionId),
    #[error("no label named '{0}'")]
    NoLabel(String),
    #[error("{path} is not a burrow store ({why})")]
    NotAStore { path: String, why: String },
    #[error("store schema version {found} is newer than this burrow understands ({supported})")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("store is corrupt: {0}")]
    Corrupt(String),
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    /// A store server (PostgreSQL) refused, failed or could not be reached; the operation
    /// changed nothing it did not report.
    #[error("store server: {0}")]
    Server(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => Error::Busy,
            Some(ErrorCode::NotADatabase) => Error::NotAStore {
                path: String::from("file"),
                why: "not an SQLite database".into(),
            },
            _ => Error::Sqlite(e),
        }
    }
}

impl Error {
    /// Whether the store itself failed (its server, its database file, its object storage,
    /// a lock held too long, a concurrent writer), as opposed to a condition of the files the
    /// operation named. A tool call that meets one cannot have done what it meant to: it
    /// fails whole, rather than hand its program an I/O error the program might step over.
    pub fn is_store_failure(&self) -> bool {
        matches!(
            self,
            Error::Server(_)
                | Error::Sqlite(_)
                | Error::Io(_)
                | Error::Corrupt(_)
                | Error::Config(_)
                | Error::NotAStore { .. }
                | Error::SchemaTooNew { .. }
                | Error::Busy
                | Error::Retry(_)
                | Error::Fenced
                | Error::Conflict { .. }
        )
    }

    /// The POSIX/WASI error code this error maps onto.
    pub fn errno(&self) -> Errno {
        match self {
            Error::NotFound | Error::NoWorkspace(_) | Error::NoVersion(_) | Error::NoLabel(_) => {
                Errno::NotFound
            }
            Error::Exists | Error::WorkspaceExists(_) => Errno::Exists,
            Error::NotDir => Errno::NotDir,
            Error::IsDir => Errno::IsDir,
            Error::NotEmpty => Errno::NotEmpty,
            Error::Loop => Errno::Loop,
            Error::NameTooLong => Errno::NameTooLong,
            Error::Invalid(_) => Errno::Invalid,
            Error::FileTooLarge => Errno::FileTooLarge,
            Error::Access => Errno::Access,
            Error::ReadOnly => Errno::ReadOnly,
            Error::QuotaExceeded { .. } => Errno::Quota,
            Error::Unsupported(_) => Errno::Unsupported,
            Error::Busy | Error::Retry(_) | Error::Fenced | Error::Conflict { .. } => Errno::Busy,
            Error::NotAStore { .. }
            | Error::SchemaTooNew { .. }
            | Error::Corrupt(_)
            | Error::Config(_)
            | Error::Sqlite(_)
            | Error::Server(_)
            | Error::Io(_) => Errno::Io,
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
