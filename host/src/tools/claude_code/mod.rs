//! Family B: the Claude Code tools (Bash, Read, Write, Edit, Glob, Grep, plus burrow's
//! MultiEdit), as served over MCP and `--schema claude-code`.
//!
//! The contract is Claude Code's own (the version in [`CLAUDE_CODE_VERSION`]): the inputs it
//! accepts, the texts it answers and its error strings, checked call by call against the real
//! CLI by `cli/tests/claude_code_conformance.rs`. Validation refusals are wrapped in
//! `<tool_use_error>…</tool_use_error>`; failures met while running (a missing file for Read,
//! a size cap) are plain error results, as in Claude Code. Paths are absolute under
//! `/workspace` or relative to the shell's cwd; results name files relative to the cwd.
//! Write and Edit need no prior Read; what the session has read ([`Reads`]) decides whether a
//! file that changed since is overwritten (a Write is refused, an Edit that still applies
//! goes through with a note) and whether the success text says the model has the file.
//!
//! - [`read`]: Read (line windows, size and token caps, the partial view, `allow_large`).
//! - [`search`]: Glob and Grep (ripgrep's semantics and output, as Claude Code shapes it).
//! - [`bash`]: Bash (only the working directory persists between calls).

mod bash;
mod read;
mod search;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use bash::BashInput;
pub use read::ReadInput;
pub use search::{GlobInput, GrepInput, OutputMode};

use super::{Call, Failure, Outcome, ToolOutput, Toolbox, absolute, workspace_path};
use crate::{Limits, RunError};

/// The Claude Code release whose behaviour this family follows.
pub const CLAUDE_CODE_VERSION: &str = "2.1.332";
/// The tools of this family. MultiEdit is burrow's addition: Claude Code has none.
pub const TOOLS: &[&str] = &["Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep"];
/// Text files larger than this need a `limit` (Claude Code's 256 KB).
pub const READ_MAX_BYTES: u64 = 256 * 1024;
/// Tokens one Read may return.
pub const READ_MAX_TOKENS: usize = 25_000;
/// What a Read with `allow_large: true` may return. Claude Code lifts its caps to what is
/// left of the model's context this turn (70% of the room before compaction); burrow does
/// not see the conversation, so it lifts them to a fixed budget of that order: 100,000
/// tokens, and 12 bytes per token of file.
pub const READ_LARGE_TOKENS: usize = 100_000;
pub const READ_LARGE_BYTES: u64 = READ_LARGE_TOKENS as u64 * 12;
/// Bash output longer than this (characters) is saved to a file and previewed.
pub const BASH_MAX_CHARS: usize = 30_000;
/// Bash's default and largest timeout, in milliseconds.
pub const BASH_DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const BASH_MAX_TIMEOUT_MS: u64 = 600_000;
/// Glob's result cap.
pub const GLOB_LIMIT: usize = 100;
/// Grep's default head_limit.
pub const GREP_HEAD_LIMIT: usize = 250;
/// Where results too large to return are saved, inside the sandbox.
pub const TOOL_RESULTS_DIR: &str = "/tmp/tool-results";
/// Characters of a saved result shown as its preview.
const PREVIEW_CHARS: usize = 2000;

/// What the session knows of one file: its modification time when Read, Write or Edit last
/// saw it, whether the model has all of it as it was then (a whole-file Read, a Write, an
/// Edit of a file it knew), and whether the last Read was a partial view (over the token
/// cap). Edit's answer depends on these, as Claude Code's file state does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "MarkRepr")]
pub struct ReadMark {
    pub mtime: i64,
    /// The model has the whole file as of `mtime` (Claude Code: a full view whose content is
    /// in the model's context).
    pub known: bool,
    /// The Read returned a partial view (over the token cap).
    pub partial: bool,
}

/// Sessions saved before the mark had `known` stored only the time, or the Read's window.
#[derive(Deserialize)]
#[serde(untagged)]
enum MarkRepr {
    Time(i64),
    Mark {
        mtime: i64,
        #[serde(default)]
        known: Option<bool>,
        #[serde(default)]
        offset: Option<u64>,
        #[serde(default)]
        limit: Option<u64>,
        #[serde(default)]
        partial: bool,
    },
}

impl From<MarkRepr> for ReadMark {
    fn from(r: MarkRepr) -> ReadMark {
        match r {
            MarkRepr::Time(mtime) => ReadMark::written(mtime),
            MarkRepr::Mark {
                mtime,
                known,
                offset,
                limit,
                partial,
            } => ReadMark {
                mtime,
                known: known.unwrap_or(offset.unwrap_or(1) <= 1 && limit.is_none() && !partial),
                partial,
            },
        }
    }
}

impl ReadMark {
    fn written(mtime: i64) -> ReadMark {
        ReadMark {
            mtime,
            known: true,
            partial: false,
        }
    }
}

/// The files this session has read or written ([`ReadMark`]), by path. Kept per session by
/// the caller (the session layer stores it in the session's metadata and hands it to forks).
pub type Reads = BTreeMap<String, ReadMark>;

const MODIFIED: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";
/// Appended to Write's and Edit's success texts when the model has the whole file, as
/// Claude Code does.
const STATE_CURRENT: &str =
    " (file state is current in your context \u{2014} no need to Read it back)";
/// Appended to Edit's success text when the file had changed since the model read it.
const STALE_EDIT: &str = " (note: the file had been modified on disk since you last read it \u{2014} the edit applied cleanly, but the file contains other changes not in your context. Read it before edits that depend on surrounding content.)";

fn refuse(text: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("<tool_use_error>{text}</tool_use_error>"))
}

/// The type an input field must have.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bool,
    /// A number; a numeric string is taken as the number.
    Num,
    /// A number that must be a whole number >= `min`; anything else counts as absent.
    Whole {
        min: u64,
    },
    Array,
}

struct Field {
    name: &'static str,
    kind: Kind,
    required: bool,
}

const fn req(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        required: true,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        required: false,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks `args` against `fields` as Claude Code's input schemas do (unknown and missing
/// parameters, types, numbers given as strings) and returns the input to deserialize, or the
/// refusal in Claude Code's words.
fn validate(tool: &str, args: &Value, fields: &[Field]) -> Result<Value, ToolOutput> {
    let empty = serde_json::Map::new();
    let obj = match args {
        Value::Object(o) => o,
        Value::Null => &empty,
        other => {
            return Err(validation_error(
                tool,
                &[format!(
                    "The parameter `input` type is expected as `object` but provided as `{}`",
                    json_type(other)
                )],
            ));
        }
    };
    let mut issues = Vec::new();
    let mut out = serde_json::Map::new();
    for f in fields {
        let Some(v) = obj.get(f.name) else {
            if f.required {
                issues.push(format!("The required parameter `{}` is missing", f.name));
            }
            continue;
        };
        let number = |v: &Value| match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let expected = match f.kind {
            Kind::Str => v.is_string().then(|| v.clone()).ok_or("string"),
            Kind::Array => v.is_array().then(|| v.clone()).ok_or("array"),
            Kind::Bool => match v {
                Value::Bool(_) => Ok(v.clone()),
                Value::String(s) if s == "true" || s == "false" => Ok(json!(s == "true")),
                _ => Err("boolean"),
            },
            Kind::Num => number(v).map(|n| json!(n)).ok_or("number"),
            Kind::Whole { min } => match number(v) {
                Some(n) if n.fract() == 0.0 && n >= min as f64 && n < 9.0e15 => Ok(json!(n as u64)),
                Some(_) => continue,
                None => Err("number"),
            },
        };
        match expected {
            Ok(v) => {
                out.insert(f.name.to_string(), v);
            }
            Err(t) => issues.push(format!(
                "The parameter `{}` type is expected as `{t}` but provided as `{}`",
                f.name,
                json_type(v)
            )),
        }
    }
    for k in obj.keys() {
        if !fields.iter().any(|f| f.name == k) {
            issues.push(format!("An unexpected parameter `{k}` was provided"));
        }
    }
    if issues.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(validation_error(tool, &issues))
    }
}

fn validation_error(tool: &str, issues: &[String]) -> ToolOutput {
    let plural = if issues.len() == 1 { "issue" } else { "issues" };
    refuse(format!(
        "InputValidationError: {tool} failed due to the following {plural}:\n{}",
        issues.join("\n")
    ))
}

/// [`validate`], then the typed input.
fn input<T: for<'de> Deserialize<'de>>(
    tool: &str,
    args: &Value,
    fields: &[Field],
) -> Result<T, ToolOutput> {
    let v = validate(tool, args, fields)?;
    serde_json::from_value(v).map_err(|e| validation_error(tool, &[e.to_string()]))
}

/// The Claude Code family. Its state: what the session has read (and written), Claude Code's
/// file state that Write's and Edit's answers depend on; a fork has read what its parent had.
pub struct ClaudeCode;

/// The metadata key of what was read (a JSON object of path -> [`ReadMark`]).
const READS_KEY: &str = "claude_code_reads";

impl super::ToolFamily for ClaudeCode {
    fn family(&self) -> super::Family {
        super::Family::ClaudeCode
    }

    fn names(&self) -> &'static [&'static str] {
        &["claude-code", "claude_code"]
    }

    fn tools(&self) -> &'static [&'static str] {
        TOOLS
    }

    fn definitions(&self) -> Vec<super::schema::ToolDef> {
        use super::schema::{READS, WRITES, def};
        vec![
            def::<BashInput>("Bash", WRITES),
            def::<ReadInput>("Read", READS),
            def::<WriteInput>("Write", WRITES),
            def::<EditInput>("Edit", WRITES),
            def::<MultiEditInput>("MultiEdit", WRITES),
            def::<GlobInput>("Glob", READS),
            def::<GrepInput>("Grep", READS),
        ]
    }

    fn state(&self) -> Option<super::StateKey> {
        Some(super::StateKey {
            key: READS_KEY,
            forked: true,
        })
    }

    fn call(
        &self,
        cx: super::Cx<'_>,
        name: &str,
        args: &Value,
        state: &mut Option<String>,
    ) -> Result<Outcome, RunError> {
        let mut reads: Reads = state
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let outcome = call(cx.tb, cx.txn, name, args, cx.limits, cx.env, &mut reads)?;
        // A call rolled back read and wrote nothing.
        if outcome.txn.is_some() {
            *state = serde_json::to_string(&reads).ok();
        }
        Ok(outcome)
    }
}

/// Runs one tool of the family in `txn`.
fn call(
    tb: &Toolbox,
    txn: burrow_store::Txn,
    name: &str,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
    reads: &mut Reads,
) -> Result<Outcome, RunError> {
    let mut c = Call::new(tb, txn, limits, env);
    let mut outcome = match name {
        "Bash" => bash::bash(c, args)?,
        "Read" => {
            let out = read::read(&mut c, args, reads)?;
            c.finish(out)
        }
        "Write" => {
            let out = write(&mut c, args, reads)?;
            c.finish(out)
        }
        "Edit" => {
            let i: EditInput = match input("Edit", args, EDIT_FIELDS) {
                Ok(i) => i,
                Err(e) => return Ok(c.finish(e)),
            };
            let edit = OneEdit {
                old_string: i.old_string,
                new_string: i.new_string,
                replace_all: i.replace_all,
            };
            multi_edit(c, &i.file_path, &[edit], reads, false)?
        }
        "MultiEdit" => {
            let i: MultiEditInput = match input("MultiEdit", args, MULTI_EDIT_FIELDS) {
                Ok(i) => i,
                Err(e) => return Ok(c.finish(e)),
            };
            multi_edit(c, &i.file_path, &i.edits, reads, true)?
        }
        "Glob" => {
            let out = search::glob(&mut c, args)?;
            c.finish(out)
        }
        "Grep" => {
            let out = search::grep(&mut c, args)?;
            c.finish(out)
        }
        other => c.finish(refuse(format!("No such tool available: {other}"))),
    };
    // An empty result is named, as Claude Code does for every tool.
    let blank = outcome.output.content.iter().all(|b| match b {
        super::Content::Text { text } => text.trim().is_empty(),
        _ => false,
    });
    if blank {
        outcome.output.content = vec![super::Content::Text {
            text: format!("({name} completed with no output)"),
        }];
    }
    Ok(outcome)
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

/// Claude Code's answer for a file that is not there, with its "Did you mean" hint: another
/// file in the same directory with the same name but another extension.
fn missing_text(c: &mut Call<'_>, rel: &str) -> String {
    let cwd = c.cwd();
    let mut text = format!("File does not exist. Note: your current working directory is {cwd}.");
    if let Some(name) = same_stem(c, rel) {
        text.push_str(&format!(" Did you mean {name}?"));
    }
    text
}

fn same_stem(c: &mut Call<'_>, rel: &str) -> Option<String> {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (d.to_string(), n),
        None => (".".to_string(), rel),
    };
    let stem = |n: &str| match n.rfind('.') {
        Some(i) if i > 0 => n[..i].to_string(),
        _ => n.to_string(),
    };
    let want = stem(name);
    let txn = c.txn().ok()?;
    let ino = txn
        .resolve(burrow_store::ROOT_INO, &super::store_path(&dir), true)
        .ok()?;
    let mut entries = txn.readdir(ino).ok()?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
        .into_iter()
        .map(|e| e.name)
        .find(|n| n != name && stem(n) == want)
}

/// Whether the file at `rel` changed since the session last read (or wrote) it: Claude Code
/// no longer asks for a Read before Write or Edit, but a file that moved under a Read is
/// overwritten only by an Edit that still applies.
fn changed_since_read(c: &mut Call<'_>, rel: &str, reads: &Reads) -> bool {
    match (reads.get(rel), c.mtime(rel)) {
        (Some(m), Some(now)) => m.mtime != now,
        _ => false,
    }
}

/// Claude Code's byte sizes: `300KB`, `29.3KB`, `1.5MB`, `512 bytes`.
pub fn human_size(bytes: u64) -> String {
    let one = |v: f64| {
        let s = format!("{v:.1}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    };
    let kb = bytes as f64 / 1024.0;
    if kb < 1.0 {
        return format!("{bytes} bytes");
    }
    if kb < 1024.0 {
        return format!("{}KB", one(kb));
    }
    let mb = kb / 1024.0;
    if mb < 1024.0 {
        return format!("{}MB", one(mb));
    }
    format!("{}GB", one(mb / 1024.0))
}

/// Length in UTF-16 code units, the unit Claude Code (JavaScript) counts in.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Saves a result too large to return to a file in the sandbox and answers with Claude
/// Code's `<persisted-output>` preview: `saved` is what the file holds, `text` what the
/// preview shows the start of, `size` the size named.
fn persist(c: &mut Call<'_>, saved: &str, text: &str, size: u64) -> Result<String, RunError> {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(saved.as_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let path = format!("{TOOL_RESULTS_DIR}/{name}.txt");
    let written = c.op(super::proto::Write {
        path: path.clone(),
        content: saved.to_string(),
        mkdirs: true,
    })?;
    if let Err(f) = written {
        return Err(RunError::Host(format!(
            "saving a large result to {path}: {}",
            f.reason()
        )));
    }
    let (preview, more) = preview(text, PREVIEW_CHARS);
    Ok(format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {path}\n\nPreview (first {}):\n{preview}{}</persisted-output>",
        human_size(size),
        human_size(PREVIEW_CHARS as u64),
        if more { "\n...\n" } else { "\n" }
    ))
}

/// The first `max` characters, cut back to the last line break when that keeps over half.
fn preview(text: &str, max: usize) -> (&str, bool) {
    let Some((cut, _)) = text.char_indices().nth(max) else {
        return (text, false);
    };
    let head = &text[..cut];
    match head.rfind('\n') {
        Some(nl) if head[..nl].chars().count() > max / 2 => (&text[..nl], true),
        _ => (head, true),
    }
}

/// Write a file (replacing it).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The absolute path to the file to write.
    pub file_path: String,
    /// The content to write to the file.
    pub content: String,
}

fn write(c: &mut Call<'_>, args: &Value, reads: &mut Reads) -> Result<ToolOutput, RunError> {
    let i: WriteInput = match input("Write", args, WRITE_FIELDS) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let (rel, abs) = match resolve_file(c, &i.file_path) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    // A Write replaces what the model read, unless it read only a partial view.
    if reads.get(&rel).is_some_and(|m| !m.partial) && changed_since_read(c, &rel, reads) {
        return Ok(refuse(MODIFIED));
    }
    let r = c.op(super::proto::Write {
        path: rel.clone(),
        content: i.content.clone(),
        mkdirs: true,
    })?;
    Ok(match r {
        Ok(v) => {
            if let Some(m) = c.mtime(&rel) {
                reads.insert(rel, ReadMark::written(m));
            }
            if v.existed {
                ToolOutput::text(format!(
                    "The file {abs} has been updated successfully.{STATE_CURRENT}"
                ))
            } else {
                ToolOutput::text(format!(
                    "File created successfully at: {abs}{STATE_CURRENT}"
                ))
            }
        }
        Err(Failure::IsADirectory) => refuse(format!(
            "{abs} is a directory, not a file. To create a file inside it, include the file name in file_path."
        )),
        Err(f) => refuse(format!("{abs}: {}", f.reason())),
    })
}

const WRITE_FIELDS: &[Field] = &[req("file_path", Kind::Str), req("content", Kind::Str)];
const EDIT_FIELDS: &[Field] = &[
    req("file_path", Kind::Str),
    req("old_string", Kind::Str),
    req("new_string", Kind::Str),
    opt("replace_all", Kind::Bool),
];
const MULTI_EDIT_FIELDS: &[Field] = &[req("file_path", Kind::Str), req("edits", Kind::Array)];

/// Replace exact text in a file.
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
fn ellipsis(s: &str, n: usize) -> String {
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
    if c.is_dir(&rel) {
        return Ok(c.finish(refuse(format!(
            "Error calling tool ({}): EISDIR: illegal operation on a directory, read",
            if multi { "MultiEdit" } else { "Edit" }
        ))));
    }
    let mut created = false;
    let mark = reads.get(&rel).copied();
    let stale = changed_since_read(&mut c, &rel, reads);
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
            // Claude Code lets "" create a file, or fill one that holds only whitespace.
            let blank = match c.op(super::proto::Read {
                path: rel.clone(),
                max_bytes: Some(4096),
            })? {
                Ok(v) => v.text.is_some_and(|t| t.trim().is_empty()),
                Err(_) => false,
            };
            if exists.is_some() && !blank {
                return Ok(c.abort(refuse("Cannot create new file - file already exists.")));
            }
            let r = c.op(super::proto::Write {
                path: rel.clone(),
                content: e.new_string.clone(),
                mkdirs: true,
            })?;
            if let Err(f) = r {
                return Ok(c.abort(refuse(format!("{abs}: {}", f.reason()))));
            }
            created = exists.is_none();
            continue;
        }
        if exists.is_none() {
            let text = missing_text(&mut c, &rel);
            return Ok(c.abort(refuse(text)));
        }
        let r = c.op(super::proto::Edit {
            path: rel.clone(),
            old: e.old_string.clone(),
            new: e.new_string.clone(),
            replace_all: e.replace_all,
            max_bytes: None,
            crlf: true,
        })?;
        let refusal = match r {
            Ok(_) => continue,
            // The file moved under the model's Read and the edit no longer applies.
            Err(Failure::StringNotFound | Failure::Multiple { .. }) if stale => MODIFIED.into(),
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
    // The model knows the file after the edit when it knew it before (or made it), and the
    // edit did not land on changes it has not seen.
    let known = created || (mark.is_some_and(|m| m.known) && !stale);
    if let Some(mtime) = c.mtime(&rel) {
        reads.insert(
            rel,
            ReadMark {
                mtime,
                known,
                partial: mark.is_some_and(|m| m.partial),
            },
        );
    }
    let suffix = if stale {
        STALE_EDIT
    } else if known {
        STATE_CURRENT
    } else {
        ""
    };
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
                ellipsis(&e.old_string, 50),
                ellipsis(&e.new_string, 50)
            ));
        }
        t
    } else if edits[0].replace_all {
        format!(
            "The file {abs} has been updated. All occurrences were successfully replaced.{suffix}"
        )
    } else {
        format!("The file {abs} has been updated successfully.{suffix}")
    };
    Ok(c.finish(ToolOutput::text(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_previews_read_as_claude_code_writes_them() {
        assert_eq!(human_size(300 * 1024), "300KB");
        assert_eq!(human_size(30_001), "29.3KB");
        assert_eq!(human_size(2000), "2KB");
        assert_eq!(human_size(512), "512 bytes");
        assert_eq!(human_size(3 << 20), "3MB");
        assert_eq!(ellipsis("abcdef", 3), "abc...");
        assert_eq!(preview("short", 10), ("short", false));
        assert_eq!(preview("aaaa\nbbbb\ncc", 11), ("aaaa\nbbbb", true));
        assert_eq!(preview("abcdefghij", 4), ("abcd", true));
    }

    #[test]
    fn validation_speaks_claude_codes_words() {
        let fields = &[
            req("file_path", Kind::Str),
            opt("limit", Kind::Whole { min: 1 }),
        ];
        let text = |r: Result<Value, ToolOutput>| match r {
            Err(ToolOutput { content, .. }) => match &content[0] {
                crate::tools::Content::Text { text } => text.clone(),
                _ => String::new(),
            },
            Ok(v) => v.to_string(),
        };
        assert!(
            text(validate("Read", &json!({}), fields)).ends_with(
                "issue:\nThe required parameter `file_path` is missing</tool_use_error>"
            )
        );
        assert!(
            text(validate(
                "Read",
                &json!({ "file_path": "a", "x": 1 }),
                fields
            ))
            .contains("An unexpected parameter `x` was provided")
        );
        assert!(
            text(validate("Read", &json!({ "file_path": 3 }), fields)).contains(
                "The parameter `file_path` type is expected as `string` but provided as `number`"
            )
        );
        assert_eq!(
            text(validate(
                "Read",
                &json!({ "file_path": "a", "limit": "5" }),
                fields
            )),
            r#"{"file_path":"a","limit":5}"#
        );
        assert_eq!(
            text(validate(
                "Read",
                &json!({ "file_path": "a", "limit": 0 }),
                fields
            )),
            r#"{"file_path":"a"}"#
        );
    }

    #[test]
    fn old_read_marks_still_load() {
        let r: Reads = serde_json::from_str(
            r#"{"a.txt": 5, "b.txt": {"mtime": 6, "offset": 1, "limit": null, "partial": false},
                "c.txt": {"mtime": 7, "offset": 3, "limit": 2, "partial": false},
                "d.txt": {"mtime": 8, "known": false, "partial": true}}"#,
        )
        .unwrap();
        assert_eq!(r["a.txt"], ReadMark::written(5));
        assert!(r["b.txt"].known);
        assert!(!r["c.txt"].known);
        assert!(!r["d.txt"].known && r["d.txt"].partial);
        let back: Reads = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
