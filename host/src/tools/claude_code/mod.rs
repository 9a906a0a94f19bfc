//! Family B: the Claude Code / Agent SDK tools (Bash, Read, Write, Edit, MultiEdit, Glob,
//! Grep), as served over MCP. Strings follow Claude Code; refusals are wrapped in
//! `<tool_use_error>…</tool_use_error>`. Paths are absolute under `/workspace` or relative to
//! the shell's cwd. Unlike the other families, Write, Edit and MultiEdit refuse to touch an
//! existing file the session has not read, or that changed since it was read ([`Reads`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, Failure, Outcome, ToolOutput, Toolbox, absolute, media_type, workspace_path};
use crate::{Limits, RunError};

/// The tools of this family.
pub const TOOLS: &[&str] = &["Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep"];
/// Lines Read returns by default.
pub const READ_DEFAULT_LINES: usize = 2000;
/// Longer lines are cut by Read.
pub const READ_MAX_LINE_CHARS: usize = 2000;
/// Text files larger than this need offset/limit.
pub const READ_MAX_BYTES: u64 = 256 * 1024;
/// Bash output kept, in characters.
pub const BASH_MAX_CHARS: usize = 30_000;
/// Bash's default and largest timeout, in milliseconds.
pub const BASH_DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const BASH_MAX_TIMEOUT_MS: u64 = 600_000;
/// Glob's result cap.
pub const GLOB_LIMIT: usize = 100;
/// Grep's default head_limit.
pub const GREP_HEAD_LIMIT: usize = 250;

/// The files this session has read, with the modification time they had then: the
/// read-before-write rule. Kept per session by the caller (the session layer stores it in the
/// session's metadata and hands it to forks).
pub type Reads = BTreeMap<String, i64>;

const NOT_READ: &str = "File has not been read yet. Read it first before writing to it.";
const MODIFIED: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";

fn refuse(text: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("<tool_use_error>{text}</tool_use_error>"))
}

fn input<T: for<'de> Deserialize<'de>>(tool: &str, v: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(v.clone()).map_err(|e| {
        refuse(format!(
            "InputValidationError: {tool} failed due to the following issue:\n{e}"
        ))
    })
}

/// Runs one tool of the family in `txn`.
pub fn call(
    tb: &Toolbox,
    txn: burrow_store::Txn,
    name: &str,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
    reads: &mut Reads,
) -> Result<Outcome, RunError> {
    let mut c = Call::new(tb, txn, limits, env);
    let out = match name {
        "Bash" => return bash(c, args),
        "Read" => read(&mut c, args, reads)?,
        "Write" => write(&mut c, args, reads)?,
        "Edit" => {
            let i: EditInput = match input("Edit", args) {
                Ok(i) => i,
                Err(e) => return Ok(c.finish(e)),
            };
            let edit = OneEdit {
                old_string: i.old_string,
                new_string: i.new_string,
                replace_all: i.replace_all,
            };
            return multi_edit(c, &i.file_path, &[edit], reads, false);
        }
        "MultiEdit" => {
            let i: MultiEditInput = match input("MultiEdit", args) {
                Ok(i) => i,
                Err(e) => return Ok(c.finish(e)),
            };
            return multi_edit(c, &i.file_path, &i.edits, reads, true);
        }
        "Glob" => glob(&mut c, args)?,
        "Grep" => grep(&mut c, args)?,
        other => refuse(format!("No such tool available: {other}")),
    };
    Ok(c.finish(out))
}

/// Resolves a caller's path against the session cwd: (workspace-relative, absolute).
fn resolve(c: &mut Call<'_>, p: &str) -> Result<(String, String), ToolOutput> {
    let cwd = c.cwd();
    resolved(workspace_path(&cwd, p), p)
}

/// [`resolve`] for Read, Write and Edit, which also take files under `/tmp` as Claude Code
/// does on Linux (then both forms are the absolute guest path).
fn resolve_file(c: &mut Call<'_>, p: &str) -> Result<(String, String), ToolOutput> {
    let cwd = c.cwd();
    resolved(super::sandbox_path(&cwd, p), p)
}

fn resolved(rel: Option<String>, p: &str) -> Result<(String, String), ToolOutput> {
    match rel {
        Some(rel) => {
            let abs = absolute(&rel);
            Ok((rel, abs))
        }
        None => Err(refuse(format!(
            "Path {p} is outside the session's workspace ({}); only paths under it can be used.",
            super::WORKSPACE
        ))),
    }
}

fn missing(c: &mut Call<'_>) -> ToolOutput {
    let cwd = c.cwd();
    refuse(format!(
        "File does not exist. Note: your current working directory is {cwd}."
    ))
}

/// The read-before-write rule for an existing file at `rel`.
fn check_read(c: &mut Call<'_>, rel: &str, reads: &Reads) -> Option<ToolOutput> {
    let now = c.mtime(rel)?;
    match reads.get(rel) {
        None => Some(refuse(NOT_READ)),
        Some(&seen) if seen != now => Some(refuse(MODIFIED)),
        Some(_) => None,
    }
}

/// Run a shell command. Output is stdout and stderr merged; the cwd persists between calls.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to execute.
    pub command: String,
    /// Optional timeout in milliseconds (max 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Clear, concise description of what this command does in 5-10 words.
    #[serde(default)]
    pub description: Option<String>,
    /// Not supported by burrow (every call runs to completion); must be false or absent.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

fn bash(mut c: Call<'_>, args: &Value) -> Result<Outcome, RunError> {
    let i: BashInput = match input("Bash", args) {
        Ok(i) => i,
        Err(e) => return Ok(c.finish(e)),
    };
    if i.run_in_background == Some(true) {
        return Ok(c.finish(refuse(
            "run_in_background is not supported: every burrow tool call runs to completion as one transaction",
        )));
    }
    let timeout_ms = i
        .timeout
        .filter(|&t| t > 0)
        .unwrap_or(BASH_DEFAULT_TIMEOUT_MS)
        .min(BASH_MAX_TIMEOUT_MS);
    let limits = Limits {
        timeout: std::time::Duration::from_millis(timeout_ms),
        ..c.limits.clone()
    };
    match c.shell(&i.command, false, Some(&limits)) {
        Ok(report) => {
            let text = String::from_utf8_lossy(&report.merged);
            let mut out = trim_output(&text);
            truncate_chars(&mut out, BASH_MAX_CHARS);
            if report.exit_code != 0 {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("Exit code {}", report.exit_code));
            }
            let output = match (report.exit_code, out.is_empty()) {
                (0, true) => ToolOutput::text("(No content)"),
                (0, false) => ToolOutput::text(out),
                _ => ToolOutput::error(out),
            };
            Ok(c.finish(output))
        }
        Err(RunError::Timeout(_)) => Ok(c.abort(ToolOutput::error(format!(
            "Command timed out after {}",
            human_duration(timeout_ms)
        )))),
        Err(e) => Err(e),
    }
}

/// Leading blank lines and trailing whitespace removed.
fn trim_output(text: &str) -> String {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() && line.ends_with('\n') {
            start += line.len();
        } else {
            break;
        }
    }
    text[start..].trim_end().to_string()
}

/// Keeps the first `max` characters, noting how many lines were cut.
fn truncate_chars(out: &mut String, max: usize) {
    if let Some((cut, _)) = out.char_indices().nth(max) {
        let dropped = out[cut..].lines().count();
        out.truncate(cut);
        out.push_str(&format!("\n\n... [{dropped} lines truncated] ..."));
    }
}

/// `2m 0s`, `45s`, `1.5s` style.
fn human_duration(ms: u64) -> String {
    if ms >= 60_000 {
        format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// Read a file: numbered lines `N<TAB>text`, 1-indexed; images and PDFs as content blocks.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The absolute path to the file to read.
    pub file_path: String,
    /// The line number to start reading from (1-indexed).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The number of lines to read (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

fn read(c: &mut Call<'_>, args: &Value, reads: &mut Reads) -> Result<ToolOutput, RunError> {
    let i: ReadInput = match input("Read", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let (rel, _) = match resolve_file(c, &i.file_path) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let media = media_type(&rel);
    let windowed = i.offset.is_some() || i.limit.is_some();
    let max = match media {
        Some(m) => Some(super::media_limit(m)),
        None if windowed => None,
        None => Some(READ_MAX_BYTES),
    };
    let v = match c.op(json!({ "op": "read", "path": rel, "max_bytes": max }))? {
        Ok(v) => v,
        Err(Failure::NotFound | Failure::NotADirectory) => return Ok(missing(c)),
        Err(Failure::NotRegular) => {
            return Ok(refuse("EISDIR: illegal operation on a directory, read"));
        }
        Err(Failure::TooLarge { size, limit }) if media.is_none() => {
            return Ok(refuse(format!(
                "File content ({}KB) exceeds maximum allowed size ({}KB). Please use offset and limit parameters to read specific portions of the file, or use the Grep tool to search for specific content.",
                size / 1024,
                limit / 1024
            )));
        }
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(refuse(format!(
                "File is {size} bytes, which exceeds the {limit}-byte limit for images and PDFs."
            )));
        }
        Err(f) => return Ok(refuse(format!("{}: {}", i.file_path, f.reason()))),
    };
    if let Some(mtime) = c.mtime(&rel) {
        reads.insert(rel.clone(), mtime);
    }
    if let Some(m) = media {
        return Ok(ToolOutput {
            content: vec![super::media_block(m, &v)],
            is_error: false,
        });
    }
    let Some(text) = v.get("text").and_then(Value::as_str) else {
        return Ok(refuse(
            "This tool cannot read binary files. Use Bash (e.g. xxd or od) to inspect them.",
        ));
    };
    if text.is_empty() {
        return Ok(ToolOutput::text(
            "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
        ));
    }
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    let offset = i.offset.unwrap_or(1).max(1) as usize;
    if offset > lines.len() {
        return Ok(ToolOutput::text(format!(
            "<system-reminder>Warning: the file exists but is shorter than the provided offset ({offset}). The file has {} lines.</system-reminder>",
            lines.len()
        )));
    }
    let limit = i.limit.map_or(READ_DEFAULT_LINES, |l| l as usize);
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let shown = match line.char_indices().nth(READ_MAX_LINE_CHARS) {
            Some((cut, _)) => &line[..cut],
            None => line,
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{}\t{shown}", n + 1));
    }
    Ok(ToolOutput::text(out))
}

/// Write a file (replacing it). An existing file must have been read first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The absolute path to the file to write.
    pub file_path: String,
    /// The content to write to the file.
    pub content: String,
}

fn write(c: &mut Call<'_>, args: &Value, reads: &mut Reads) -> Result<ToolOutput, RunError> {
    let i: WriteInput = match input("Write", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let (rel, abs) = match resolve_file(c, &i.file_path) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    if let Some(refusal) = check_read(c, &rel, reads) {
        return Ok(refusal);
    }
    let r = c.op(json!({ "op": "write", "path": rel, "content": i.content, "mkdirs": true }))?;
    Ok(match r {
        Ok(v) => {
            if let Some(m) = c.mtime(&rel) {
                reads.insert(rel, m);
            }
            if v.get("existed").and_then(Value::as_bool) == Some(true) {
                ToolOutput::text(format!("The file {abs} has been updated successfully."))
            } else {
                ToolOutput::text(format!("File created successfully at: {abs}"))
            }
        }
        Err(Failure::IsADirectory) => refuse("EISDIR: illegal operation on a directory, open"),
        Err(f) => refuse(format!("{abs}: {}", f.reason())),
    })
}

/// Replace exact text in a file. An existing file must have been read first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The absolute path to the file to modify.
    pub file_path: String,
    /// The text to replace (empty to create a new file).
    pub old_string: String,
    /// The text to replace it with (must be different from old_string).
    pub new_string: String,
    /// Replace all occurrences of old_string (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// One edit of a MultiEdit.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OneEdit {
    /// The text to replace.
    pub old_string: String,
    /// The text to replace it with.
    pub new_string: String,
    /// Replace all occurrences of old_string (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Several edits to one file, applied in order, all or none.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditInput {
    /// The absolute path to the file to modify.
    pub file_path: String,
    /// Edits applied one after another, each to the result of the previous one.
    pub edits: Vec<OneEdit>,
}

/// First `n` characters, `...` when cut.
fn preview(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

/// Edit and MultiEdit: every edit in order inside the call; any refusal rolls all back.
fn multi_edit(
    mut c: Call<'_>,
    file_path: &str,
    edits: &[OneEdit],
    reads: &mut Reads,
    multi: bool,
) -> Result<Outcome, RunError> {
    let (rel, abs) = match resolve_file(&mut c, file_path) {
        Ok(p) => p,
        Err(e) => return Ok(c.finish(e)),
    };
    if edits.is_empty() {
        return Ok(c.finish(refuse(
            "InputValidationError: MultiEdit failed due to the following issue:\nedits must contain at least one edit",
        )));
    }
    let mut created = false;
    for (n, e) in edits.iter().enumerate() {
        if e.old_string == e.new_string {
            return Ok(c.abort(refuse(
                "No changes to make: old_string and new_string are exactly the same.",
            )));
        }
        if multi
            && edits[..n]
                .iter()
                .any(|prev| !e.old_string.is_empty() && prev.new_string.contains(&e.old_string))
        {
            return Ok(c.abort(refuse(format!(
                "Cannot edit file: old_string is a substring of a new_string from a previous edit.\nString: {}",
                e.old_string
            ))));
        }
        let exists = c.mtime(&rel);
        if e.old_string.is_empty() {
            let empty = match c.op(json!({ "op": "read", "path": rel, "max_bytes": 1 }))? {
                Ok(v) => v.get("size").and_then(Value::as_u64) == Some(0),
                Err(_) => false,
            };
            if exists.is_some() && !empty {
                return Ok(c.abort(refuse("Cannot create new file - file already exists.")));
            }
            if exists.is_some()
                && !created
                && let Some(refusal) = check_read(&mut c, &rel, reads)
            {
                return Ok(c.abort(refusal));
            }
            let r = c.op(
                json!({ "op": "write", "path": rel, "content": e.new_string, "mkdirs": true }),
            )?;
            if let Err(f) = r {
                return Ok(c.abort(refuse(format!("{abs}: {}", f.reason()))));
            }
            created = exists.is_none();
            continue;
        }
        if exists.is_none() {
            let refusal = missing(&mut c);
            return Ok(c.abort(refusal));
        }
        if !created
            && n == 0
            && let Some(refusal) = check_read(&mut c, &rel, reads)
        {
            return Ok(c.abort(refusal));
        }
        let r = c.op(json!({
            "op": "edit", "path": rel, "old": e.old_string, "new": e.new_string,
            "replace_all": e.replace_all, "crlf": true,
        }))?;
        let refusal = match r {
            Ok(_) => continue,
            Err(Failure::StringNotFound) => format!(
                "String to replace not found in file.\nString: {}",
                e.old_string
            ),
            Err(Failure::Multiple { count, .. }) => format!(
                "Found {count} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {}",
                e.old_string
            ),
            Err(Failure::NotRegular) => "EISDIR: illegal operation on a directory, read".into(),
            Err(Failure::NotUtf8) => "This tool cannot edit binary files.".into(),
            Err(f) => format!("{abs}: {}", f.reason()),
        };
        return Ok(c.abort(refuse(refusal)));
    }
    if let Some(m) = c.mtime(&rel) {
        reads.insert(rel, m);
    }
    let text = if multi {
        let mut t = format!(
            "Applied {} edit{} to {abs}:",
            edits.len(),
            if edits.len() == 1 { "" } else { "s" }
        );
        for (n, e) in edits.iter().enumerate() {
            t.push_str(&format!(
                "\n{}. Replaced \"{}\" with \"{}\"",
                n + 1,
                preview(&e.old_string, 50),
                preview(&e.new_string, 50)
            ));
        }
        t
    } else if created {
        format!("File created successfully at: {abs}")
    } else if edits[0].replace_all {
        format!("The file {abs} has been updated. All occurrences were successfully replaced.")
    } else {
        format!("The file {abs} has been updated successfully.")
    };
    Ok(c.finish(ToolOutput::text(text)))
}

/// Find files by glob pattern (e.g. `**/*.rs`), newest first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The glob pattern to match files against.
    pub pattern: String,
    /// The directory to search in (default: the current working directory).
    #[serde(default)]
    pub path: Option<String>,
}

fn glob(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GlobInput = match input("Glob", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let base = i
        .path
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| c.cwd());
    // An absolute pattern inside the workspace is taken relative to the workspace root.
    let (pattern, base) = match i.pattern.strip_prefix(super::WORKSPACE) {
        Some(rest) if i.pattern.starts_with('/') => (
            rest.trim_start_matches('/').to_string(),
            super::WORKSPACE.to_string(),
        ),
        _ if i.pattern.starts_with('/') => {
            return Ok(refuse(format!(
                "Path {} is outside the session's workspace ({}); only paths under it can be used.",
                i.pattern,
                super::WORKSPACE
            )));
        }
        _ => (i.pattern.clone(), base),
    };
    let (rel, abs) = match resolve(c, &base) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let r = c.op(json!({ "op": "glob", "pattern": pattern, "path": rel, "limit": GLOB_LIMIT }))?;
    Ok(match r {
        Ok(v) => {
            let paths = match_paths(&v, "matches");
            let total = v.get("total").and_then(Value::as_u64).unwrap_or(0) as usize;
            if paths.is_empty() {
                ToolOutput::text("No files found")
            } else {
                let mut out = paths.join("\n");
                if total > paths.len() {
                    out.push_str(
                        "\n(Results are truncated. Consider using a more specific path or pattern.)",
                    );
                }
                ToolOutput::text(out)
            }
        }
        Err(Failure::NotFound) => refuse(format!("Directory does not exist: {abs}")),
        Err(Failure::NotADirectory) => refuse(format!("Path is not a directory: {abs}")),
        Err(Failure::InvalidPattern { message }) => {
            refuse(format!("Invalid glob pattern: {message}"))
        }
        Err(f) => refuse(format!("{abs}: {}", f.reason())),
    })
}

/// Absolute paths of the `key` array of a component answer.
fn match_paths(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("path").and_then(Value::as_str).map(absolute))
                .collect()
        })
        .unwrap_or_default()
}

/// Search file contents with a regular expression (ripgrep syntax and semantics).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// The regular expression to search for.
    pub pattern: String,
    /// File or directory to search in (default: the current working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob (e.g. `*.js`, `*.{ts,tsx}`).
    #[serde(default)]
    pub glob: Option<String>,
    /// Only files of this type (rg --type: js, py, rust, go, java, ...).
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// `content` (matching lines), `files_with_matches` (paths, default) or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Case insensitive search.
    #[serde(default, rename = "-i")]
    pub ignore_case: Option<bool>,
    /// Show line numbers (content mode; default true).
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Lines of context after each match (content mode).
    #[serde(default, rename = "-A")]
    pub after: Option<u64>,
    /// Lines of context before each match (content mode).
    #[serde(default, rename = "-B")]
    pub before: Option<u64>,
    /// Lines of context around each match (content mode).
    #[serde(default, rename = "-C")]
    pub around: Option<u64>,
    /// Alias of -C.
    #[serde(default)]
    pub context: Option<u64>,
    /// Print only the matched parts of lines (content mode).
    #[serde(default, rename = "-o")]
    pub only_matching: Option<bool>,
    /// Let `.` match newlines and patterns span lines.
    #[serde(default)]
    pub multiline: Option<bool>,
    /// Keep the first N lines or entries of the output (default 250, 0 = all).
    #[serde(default)]
    pub head_limit: Option<u64>,
    /// Skip the first N lines or entries before head_limit.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// What Grep prints.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

/// ripgrep's built-in file types that agents use, as globs.
fn type_glob(t: &str) -> Option<&'static str> {
    Some(match t {
        "rust" | "rs" => "*.rs",
        "py" | "python" => "*.{py,pyi}",
        "js" => "*.{js,jsx,mjs,cjs,vue}",
        "ts" | "typescript" => "*.{ts,tsx,cts,mts}",
        "go" => "*.go",
        "java" => "*.{java,jsp,properties}",
        "c" => "*.{c,h,H}",
        "cpp" => "*.{C,cc,cpp,cxx,c++,h,hh,hpp,hxx,inl}",
        "cs" | "csharp" => "*.cs",
        "rb" | "ruby" => "*.{rb,gemspec}",
        "php" => "*.{php,php3,php4,php5,phtml}",
        "swift" => "*.swift",
        "kotlin" => "*.{kt,kts}",
        "scala" => "*.{scala,sbt}",
        "sh" => "*.{sh,bash,zsh,ksh}",
        "md" | "markdown" => "*.{md,markdown,mdx,mkd}",
        "json" => "*.{json,jsonl}",
        "yaml" => "*.{yaml,yml}",
        "toml" => "*.toml",
        "html" => "*.{htm,html,xhtml}",
        "css" => "*.{css,scss,sass,less}",
        "sql" => "*.sql",
        "txt" => "*.txt",
        "xml" => "*.{xml,xsd,xsl}",
        _ => return None,
    })
}

fn grep(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GrepInput = match input("Grep", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let base = i
        .path
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| c.cwd());
    let (rel, abs) = match resolve(c, &base) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let mut globs = Vec::new();
    if let Some(t) = &i.file_type {
        match type_glob(t) {
            Some(g) => globs.push(g.to_string()),
            None => return Ok(refuse(format!("unrecognized file type: {t}"))),
        }
    }
    globs.extend(i.glob.clone());
    let mode = i.output_mode.unwrap_or_default();
    let around = i.around.or(i.context).unwrap_or(0);
    let (before, after) = if mode == OutputMode::Content {
        (i.before.unwrap_or(around), i.after.unwrap_or(around))
    } else {
        (0, 0)
    };
    let r = c.op(json!({
        "op": "grep", "pattern": i.pattern, "path": rel, "globs": globs,
        "ignore_case": i.ignore_case.unwrap_or(false), "multiline": i.multiline.unwrap_or(false),
        "gitignore": true, "skip_dirs": [".git", ".svn", ".hg", ".bzr", ".jj", ".burrow"],
        "before": before, "after": after,
    }))?;
    let v = match r {
        Ok(v) => v,
        Err(Failure::NotFound) => {
            return Ok(refuse(format!("Path does not exist: {abs}")));
        }
        Err(Failure::InvalidPattern { message }) => {
            return Ok(refuse(format!("Invalid regular expression: {message}")));
        }
        Err(f) => return Ok(refuse(format!("{abs}: {}", f.reason()))),
    };
    let mut files: Vec<&Value> = v
        .get("files")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let skip = i.offset.unwrap_or(0) as usize;
    let head = match i.head_limit {
        Some(0) => usize::MAX,
        Some(n) => n as usize,
        None => GREP_HEAD_LIMIT,
    };
    let window =
        |rows: Vec<String>| -> Vec<String> { rows.into_iter().skip(skip).take(head).collect() };
    let path_of = |f: &Value| absolute(f.get("path").and_then(Value::as_str).unwrap_or(""));
    let hits = |f: &Value| -> Vec<Value> {
        f.get("lines")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Ok(match mode {
        OutputMode::FilesWithMatches => {
            // Newest first, as Claude Code lists them.
            files.sort_by_key(|f| {
                std::cmp::Reverse(
                    f.get("mtime_ns")
                        .and_then(Value::as_str)
                        .and_then(|t| t.parse::<i128>().ok())
                        .unwrap_or(0),
                )
            });
            let n = files.len();
            let rows = window(files.iter().map(|f| path_of(f)).collect());
            if n == 0 {
                ToolOutput::text("No files found")
            } else {
                ToolOutput::text(format!(
                    "Found {n} file{}\n{}",
                    if n == 1 { "" } else { "s" },
                    rows.join("\n")
                ))
            }
        }
        OutputMode::Count => {
            let mut total = 0;
            let mut rows = Vec::new();
            for f in &files {
                let count = hits(f)
                    .iter()
                    .filter(|l| l.get("match").and_then(Value::as_bool) == Some(true))
                    .count();
                total += count;
                rows.push(format!("{}:{count}", path_of(f)));
            }
            let n = files.len();
            if n == 0 {
                ToolOutput::text("No matches found")
            } else {
                ToolOutput::text(format!(
                    "{}\n\nFound {total} total occurrence{} across {n} file{}.",
                    window(rows).join("\n"),
                    if total == 1 { "" } else { "s" },
                    if n == 1 { "" } else { "s" }
                ))
            }
        }
        OutputMode::Content => {
            let numbers = i.line_numbers.unwrap_or(true);
            let only = i.only_matching.unwrap_or(false);
            let rx = if only {
                regex::RegexBuilder::new(&i.pattern)
                    .case_insensitive(i.ignore_case.unwrap_or(false))
                    .build()
                    .ok()
            } else {
                None
            };
            let mut rows = Vec::new();
            let context = before > 0 || after > 0;
            for f in &files {
                let path = path_of(f);
                let mut last: Option<u64> = None;
                for l in hits(f) {
                    let n = l.get("line").and_then(Value::as_u64).unwrap_or(0);
                    let text = l.get("text").and_then(Value::as_str).unwrap_or("");
                    let is_match = l.get("match").and_then(Value::as_bool) == Some(true);
                    // rg's group separator: between non-adjacent groups and between files.
                    let gap = match last {
                        Some(p) => n > p + 1,
                        None => !rows.is_empty(),
                    };
                    if context && gap {
                        rows.push("--".to_string());
                    }
                    last = Some(n);
                    let sep = if is_match { ':' } else { '-' };
                    let prefix = if numbers {
                        format!("{path}{sep}{n}{sep}")
                    } else {
                        format!("{path}{sep}")
                    };
                    match &rx {
                        Some(rx) if is_match => {
                            for m in rx.find_iter(text) {
                                rows.push(format!("{prefix}{}", m.as_str()));
                            }
                        }
                        Some(_) => {}
                        None => rows.push(format!("{prefix}{text}")),
                    }
                }
            }
            if rows.is_empty() {
                ToolOutput::text("No matches found")
            } else {
                ToolOutput::text(window(rows).join("\n"))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_trimmed_and_capped_like_claude_code() {
        assert_eq!(trim_output("\n  \nhello\n  world  \n\n"), "hello\n  world");
        let mut s = "a\n".repeat(20);
        truncate_chars(&mut s, 10);
        assert_eq!(s, "a\na\na\na\na\n\n\n... [15 lines truncated] ...");
        assert_eq!(human_duration(120_000), "2m 0s");
        assert_eq!(human_duration(1500), "1.5s");
        assert_eq!(preview("abcdef", 3), "abc...");
    }
}
