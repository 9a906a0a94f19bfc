//! The fs-tools protocol, typed once for both sides: the host's tool families send a
//! [`Request`] (as JSON on the component's stdin) and read a [`Response`] of the operation's
//! reply type (as JSON on its stdout); the component (`tools-wasm/fs-tools`) reads and answers
//! the same types. Each operation is a struct implementing [`Op`], which names its reply, so
//! a caller gets a typed answer or a [`Failure`] (the facts of what went wrong; each family
//! words them its own way).
//!
//! Paths are relative to the workspace root (the component's working directory) and already
//! checked by the host to stay inside it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// An operation and its reply type.
pub trait Op: Into<Request> {
    type Reply: Serialize + DeserializeOwned;
}

/// What the component is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Read(Read),
    Write(Write),
    Edit(Edit),
    Insert(Insert),
    Glob(Glob),
    Grep(Grep),
    List(List),
}

/// The component's answer: the operation's reply, or why it failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response<T> {
    Ok(T),
    Err(Failure),
}

impl<T> From<Response<T>> for Result<T, Failure> {
    fn from(r: Response<T>) -> Self {
        match r {
            Response::Ok(t) => Ok(t),
            Response::Err(f) => Err(f),
        }
    }
}

/// Why an operation failed: facts, which each tool family words its own way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    NotFound,
    NotADirectory,
    IsADirectory,
    NotRegular,
    PermissionDenied,
    Exists,
    Loop,
    TooLarge {
        size: u64,
        limit: u64,
    },
    NotUtf8,
    StringNotFound,
    Multiple {
        count: usize,
        lines: Vec<usize>,
    },
    /// An edit with `replace_all` whose `count` replacements would make the file `size`
    /// bytes, over the request's `max_bytes`.
    Grows {
        count: usize,
        size: u64,
        limit: u64,
    },
    InvalidLine {
        lines: usize,
    },
    InvalidPattern {
        message: String,
    },
    Io {
        message: String,
    },
}

impl Failure {
    /// A filesystem error in the words of the Managed Agents reference runner (lower-case
    /// strerror phrases: `no such file or directory`, `is a directory`, ...).
    pub fn reason(&self) -> String {
        match self {
            Failure::NotFound => "no such file or directory".into(),
            Failure::NotADirectory => "not a directory".into(),
            Failure::IsADirectory => "is a directory".into(),
            Failure::PermissionDenied => "permission denied".into(),
            Failure::Exists => "file already exists".into(),
            Failure::Loop => "too many levels of symbolic links".into(),
            Failure::NotRegular => "not a regular file".into(),
            Failure::Io { message } => message.to_lowercase(),
            other => format!("{other:?}").to_lowercase(),
        }
    }
}

macro_rules! op {
    ($name:ident => $reply:ty) => {
        impl Op for $name {
            type Reply = $reply;
        }
        impl From<$name> for Request {
            fn from(o: $name) -> Request {
                Request::$name(o)
            }
        }
    };
}

/// A whole file, or a refusal when larger than `max_bytes`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Read {
    pub path: String,
    pub max_bytes: Option<u64>,
}

/// A file's bytes: as text when they are UTF-8, else base64.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReadReply {
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}
op!(Read => ReadReply);

/// Create or replace a file; with `mkdirs`, its parents are created.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Write {
    pub path: String,
    pub content: String,
    pub mkdirs: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriteReply {
    /// Whether the file was there before.
    pub existed: bool,
    pub bytes: usize,
}
op!(Write => WriteReply);

/// Replace `old` by `new` (once, or everywhere with `replace_all`). With `crlf`, a file with
/// CRLF line endings is matched on LF and written back with CRLF.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Edit {
    pub path: String,
    pub old: String,
    pub new: String,
    pub replace_all: bool,
    pub max_bytes: Option<u64>,
    #[serde(default)]
    pub crlf: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EditReply {
    /// Occurrences of `old`.
    pub count: usize,
    pub replaced: usize,
    /// The line of the first occurrence (1-based).
    pub first_line: usize,
    /// The file's new text (with LF line endings).
    pub text: String,
}
op!(Edit => EditReply);

/// Insert `text` after line `line` (0 = top).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Insert {
    pub path: String,
    pub line: u64,
    pub text: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InsertReply {
    pub text: String,
    /// Lines the file had before.
    pub lines: usize,
}
op!(Insert => InsertReply);

/// Files matching `pattern` under `path`, newest first, at most `limit`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Glob {
    pub pattern: String,
    pub path: String,
    pub limit: usize,
    /// Regular files only (ripgrep's `--files`), no directories.
    #[serde(default)]
    pub files_only: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GlobReply {
    /// Matches before `limit` cut them.
    pub total: usize,
    pub matches: Vec<Found>,
}

/// A path and its modification time (nanoseconds, as text: it exceeds JSON's safe integers).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Found {
    pub path: String,
    pub mtime_ns: String,
}
op!(Glob => GlobReply);

/// Lines matching `pattern` under `path` (a file or a directory).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Grep {
    pub pattern: String,
    pub path: String,
    #[serde(default)]
    pub ignore_case: bool,
    #[serde(default)]
    pub multiline: bool,
    /// Only files whose path (or name) matches this glob...
    pub glob: Option<String>,
    /// ...and every one of these (a family's `glob` and `type` filters)...
    #[serde(default)]
    pub globs: Vec<String>,
    /// ...and at least one of these, when there are any (ripgrep's repeated `--glob`)...
    #[serde(default)]
    pub any_globs: Vec<String>,
    /// ...and none of these (ripgrep's `--glob '!pattern'`).
    #[serde(default)]
    pub not_globs: Vec<String>,
    /// Honour .gitignore files (with git's rules: negations, anchoring, directories).
    #[serde(default)]
    pub gitignore: bool,
    /// Skip lines longer than this.
    pub max_line: Option<usize>,
    /// Directory names never descended into.
    #[serde(default)]
    pub skip_dirs: Vec<String>,
    /// Lines of context before and after each match.
    #[serde(default)]
    pub before: usize,
    #[serde(default)]
    pub after: usize,
    /// Stop after this many matching lines in total.
    pub max_matches: Option<usize>,
    /// Match lines with their `\r` of a CRLF ending, as ripgrep does (the text answered is
    /// still without it).
    #[serde(default)]
    pub keep_cr: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GrepReply {
    pub files: Vec<GrepFile>,
    /// Matching lines.
    pub total: usize,
    /// Stopped at `max_matches`.
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GrepFile {
    pub path: String,
    pub mtime_ns: String,
    pub lines: Vec<GrepLine>,
}

/// A matching line or a line of context.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GrepLine {
    /// 1-based.
    pub line: usize,
    pub text: String,
    #[serde(rename = "match")]
    pub is_match: bool,
    /// Matches on the line.
    pub count: usize,
}
op!(Grep => GrepReply);

/// Entries under a directory, `depth` levels deep, hidden ones and node_modules skipped.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct List {
    pub path: String,
    pub depth: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ListReply {
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub dir: bool,
    pub size: u64,
}
op!(List => ListReply);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_tagged_by_op() {
        let r: Request = Read {
            path: "a".into(),
            max_bytes: Some(3),
        }
        .into();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"op": "read", "path": "a", "max_bytes": 3})
        );
        let back: Request =
            serde_json::from_str(r#"{"op":"grep","pattern":"x","path":"."}"#).unwrap();
        assert!(matches!(back, Request::Grep(g) if g.pattern == "x" && !g.gitignore));
        let f: Response<ReadReply> =
            serde_json::from_str(r#"{"err":{"kind":"too_large","size":5,"limit":4}}"#).unwrap();
        assert!(matches!(
            Result::from(f),
            Err(Failure::TooLarge { size: 5, limit: 4 })
        ));
    }
}
