//! Family D: Claude's memory tool, `memory_20250818` (name `memory`: `view`, `create`,
//! `str_replace`, `insert`, `delete`, `rename` under `/memories`). The session's `/memories`
//! is a persisted mount of its system area (like `/tmp`): every memory write is one version
//! of the session, forked, diffed and undone with it, and outside the project's diff and
//! export. Results, errors, path rules, the listing (two levels, sizes as `4K`) and its
//! limits follow the Anthropic SDK's reference implementation
//! (`anthropic.lib.tools.BetaLocalFilesystemMemoryTool`) string for string.
//!
//! It runs on the host against the call's transaction: the six commands are file operations
//! with fixed messages, no guest code runs, and the call is one atomic version like any other.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, Outcome, ToolOutput, Toolbox};
use crate::{Limits, RunError};
use burrow_store::{Kind, ROOT_INO, Txn};

/// The tool's name, as the model calls it.
pub const MEMORY: &str = "memory";
pub const TOOLS: &[&str] = &[MEMORY];
/// Where memories live, as the model sees them.
pub const ROOT: &str = "/memories";
/// The beta header the Messages API wants with this tool.
pub const BETA: &str = "context-management-2025-06-27";
const MAX_LINES: usize = 999_999;
const LINE_NUMBER_WIDTH: usize = 6;
/// Mode of the files and directories the tool creates (the SDK's).
const FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;

/// The tool definition a Messages API request lists (Anthropic-defined schema).
pub fn definitions() -> Value {
    json!([{ "type": "memory_20250818", "name": MEMORY }])
}

/// A memory command.
#[derive(Deserialize, JsonSchema)]
pub struct MemoryInput {
    /// One of `view`, `create`, `str_replace`, `insert`, `delete`, `rename`.
    pub command: String,
    /// A path under /memories (`view`, `create`, `str_replace`, `insert`, `delete`).
    #[serde(default)]
    pub path: Option<String>,
    /// `view` of a file: `[start, end]` lines, 1-indexed; end -1 means to the end.
    #[serde(default)]
    pub view_range: Option<Vec<i64>>,
    /// `create`: the content of the new file.
    #[serde(default)]
    pub file_text: Option<String>,
    /// `str_replace`: the exact text to replace (must occur once).
    #[serde(default)]
    pub old_str: Option<String>,
    /// `str_replace`: the replacement.
    #[serde(default)]
    pub new_str: Option<String>,
    /// `insert`: the line after which to insert (0 = top of the file).
    #[serde(default)]
    pub insert_line: Option<i64>,
    /// `insert`: the text to insert.
    #[serde(default)]
    pub insert_text: Option<String>,
    /// `rename`: the current path.
    #[serde(default)]
    pub old_path: Option<String>,
    /// `rename`: the new path.
    #[serde(default)]
    pub new_path: Option<String>,
}

/// Claude's memory tool (`memory_20250818`) over the session's `/memories`.
pub struct Memory;

impl super::ToolFamily for Memory {
    fn family(&self) -> super::Family {
        super::Family::Memory
    }

    fn names(&self) -> &'static [&'static str] {
        &["memory", "memory_20250818"]
    }

    fn tools(&self) -> &'static [&'static str] {
        TOOLS
    }

    fn definitions(&self) -> Vec<super::schema::ToolDef> {
        use super::schema::{WRITES, def};
        vec![def::<MemoryInput>(MEMORY, WRITES)]
    }

    fn messages_tools(&self) -> Value {
        definitions()
    }

    fn call(
        &self,
        cx: super::Cx<'_>,
        name: &str,
        args: &Value,
        _state: &mut Option<String>,
    ) -> Result<Outcome, RunError> {
        call(cx.tb, cx.txn, name, args, cx.limits, cx.env)
    }
}

/// Runs one memory command in `txn`.
fn call(
    tb: &Toolbox,
    txn: Txn,
    name: &str,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
) -> Result<Outcome, RunError> {
    let mut c = Call::new(tb, txn, limits, env);
    let out = if name != MEMORY {
        ToolOutput::error(format!("Unknown tool: {name}"))
    } else {
        match serde_json::from_value::<MemoryInput>(args.clone()) {
            Ok(i) => match run(c.txn()?, &i) {
                Ok(text) => ToolOutput::text(text),
                Err(msg) => ToolOutput::error(msg),
            },
            Err(e) => ToolOutput::error(format!("invalid input: {e}")),
        }
    };
    Ok(c.finish(out))
}

/// The store path of the memory root (`/memories` is a mount of the system area).
fn store_root() -> String {
    format!("{}/memories", burrow_store::SYSTEM_DIR)
}

/// A validated memory path: its components below the root, symlinks resolved.
#[derive(Clone, PartialEq, Eq)]
struct MemPath(Vec<String>);

impl MemPath {
    fn store(&self) -> String {
        let mut p = store_root();
        for c in &self.0 {
            p.push('/');
            p.push_str(c);
        }
        p
    }

    fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    fn parent(&self) -> MemPath {
        let mut v = self.0.clone();
        v.pop();
        MemPath(v)
    }
}

fn required<'a>(v: &'a Option<String>, name: &str, command: &str) -> Result<&'a str, String> {
    v.as_deref()
        .ok_or_else(|| format!("Parameter `{name}` is required for command: {command}"))
}

fn run(txn: &mut Txn, i: &MemoryInput) -> Result<String, String> {
    ensure_root(txn)?;
    let path = || required(&i.path, "path", &i.command);
    match i.command.as_str() {
        "view" => view(txn, path()?, i.view_range.as_deref()),
        "create" => create(txn, path()?, required(&i.file_text, "file_text", "create")?),
        "str_replace" => str_replace(
            txn,
            path()?,
            required(&i.old_str, "old_str", "str_replace")?,
            required(&i.new_str, "new_str", "str_replace")?,
        ),
        "insert" => insert(
            txn,
            path()?,
            i.insert_line
                .ok_or("Parameter `insert_line` is required for command: insert")?,
            required(&i.insert_text, "insert_text", "insert")?,
        ),
        "delete" => delete(txn, path()?),
        "rename" => rename(
            txn,
            required(&i.old_path, "old_path", "rename")?,
            required(&i.new_path, "new_path", "rename")?,
        ),
        other => Err(format!("Unknown command: {other}")),
    }
}

fn store_err(e: burrow_store::Error) -> String {
    e.to_string()
}

/// `/memories` exists (the SDK makes it when the tool is created).
fn ensure_root(txn: &mut Txn) -> Result<(), String> {
    let root = store_root();
    if txn.stat_at(ROOT_INO, &root, false).is_err() {
        let ino = txn.mkdir_all(&root).map_err(store_err)?;
        txn.set_mode(ino, DIR_MODE).map_err(store_err)?;
    }
    Ok(())
}

/// The SDK's `_validate_path`: the path must start with `/memories`; what follows, resolved
/// as `Path.resolve()` does (`..`, symlinks), must stay under it. Paths resolve from the
/// sandbox's root, where `/memories` is mounted, so `/memories/../memories/x` is inside and
/// `/memories/../tmp` is not.
fn validate(txn: &mut Txn, path: &str) -> Result<MemPath, String> {
    let Some(rest) = path.strip_prefix(ROOT) else {
        return Err(format!("Path must start with /memories, got: {path}"));
    };
    let escape = || format!("Path {path} would escape /memories directory");
    // The resolved path, from the sandbox's root.
    let mut out: Vec<String> = vec!["memories".into()];
    let mut todo: Vec<String> = rest
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(String::from)
        .collect();
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match c.as_str() {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => {
                out.push(c);
                // Only names under /memories can be the tool's symlinks to follow.
                if out.len() < 2 || out[0] != "memories" {
                    continue;
                }
                let sp = MemPath(out[1..].to_vec()).store();
                if let Ok(st) = txn.stat_at(ROOT_INO, &sp, false)
                    && st.kind == Kind::Symlink
                {
                    links += 1;
                    if links > 40 {
                        return Err(escape());
                    }
                    let target = txn.readlink_at(ROOT_INO, &sp).map_err(store_err)?;
                    out.pop();
                    if target.starts_with('/') {
                        out.clear();
                    }
                    for t in target.split('/').filter(|t| !t.is_empty()).rev() {
                        todo.push(t.to_string());
                    }
                }
            }
        }
    }
    if out.first().map(String::as_str) != Some("memories") {
        return Err(escape());
    }
    Ok(MemPath(out[1..].to_vec()))
}

fn kind(txn: &mut Txn, p: &MemPath) -> Option<Kind> {
    txn.stat_at(ROOT_INO, &p.store(), true).ok().map(|s| s.kind)
}

/// `_format_file_size`: `0B`, `512B`, `4K`, `1.5K`, `2M`...
fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".into();
    }
    let units = ["B", "K", "M", "G"];
    let i = (((64 - bytes.leading_zeros()) as usize - 1) / 10).min(units.len() - 1);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    if size == size.trunc() {
        format!("{}{}", size as u64, units[i])
    } else {
        // Python's `.1f`: round half to even on the binary value, as Rust's formatting.
        format!("{size:.1}{}", units[i])
    }
}

/// The size `stat` reports: a file's length; a directory's block (4096), as the sandbox
/// reports directories to guests.
fn size_of(txn: &mut Txn, store_path: &str) -> u64 {
    match txn.stat_at(ROOT_INO, store_path, true) {
        Ok(st) if st.kind == Kind::Dir => 4096,
        Ok(st) => st.size,
        Err(_) => 0,
    }
}

fn read_text(txn: &mut Txn, p: &MemPath, shown: &str) -> Result<String, String> {
    let bytes = txn.read_file(&p.store()).map_err(|_| {
        format!(
            "The file {shown} no longer exists (may have been deleted or renamed concurrently)."
        )
    })?;
    String::from_utf8(bytes).map_err(|_| {
        format!("'utf-8' codec can't decode the content of {shown}: it is not UTF-8 text")
    })
}

fn number(lines: &[&str], first: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(k, l)| format!("{:>LINE_NUMBER_WIDTH$}\t{l}", k + first))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Python's slice bound: negative counts from the end, clamped to the list.
fn py_index(i: i64, len: usize) -> usize {
    if i < 0 {
        (len as i64 + i).max(0) as usize
    } else {
        (i as usize).min(len)
    }
}

fn view(txn: &mut Txn, path: &str, range: Option<&[i64]>) -> Result<String, String> {
    let p = validate(txn, path)?;
    let st = txn
        .stat_at(ROOT_INO, &p.store(), false)
        .map_err(|_| format!("The path {path} does not exist. Please provide a valid path."))?;
    match st.kind {
        Kind::Dir => {
            let mut items: Vec<(String, String)> = Vec::new();
            collect(txn, &p.store(), "", 1, &mut items);
            let mut lines = vec![format!("{}\t{path}", format_size(4096))];
            lines.extend(items.iter().map(|(s, rel)| format!("{s}\t{path}/{rel}")));
            Ok(format!(
                "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{}",
                lines.join("\n")
            ))
        }
        Kind::File => {
            let content = read_text(txn, &p, path)?;
            let lines: Vec<&str> = content.split('\n').collect();
            if lines.len() > MAX_LINES {
                return Err(format!(
                    "File {path} exceeds maximum line limit of 999,999 lines."
                ));
            }
            let (shown, first) = match range {
                Some([a, b]) => {
                    let start = ((*a).max(1) - 1) as usize;
                    let end = if *b == -1 {
                        lines.len()
                    } else {
                        py_index(*b, lines.len())
                    };
                    let start_i = start.min(lines.len());
                    let slice = if end > start_i {
                        &lines[start_i..end]
                    } else {
                        &[][..]
                    };
                    (slice, start + 1)
                }
                _ => (&lines[..], 1),
            };
            Ok(format!(
                "Here's the content of {path} with line numbers:\n{}",
                number(shown, first)
            ))
        }
        Kind::Symlink => Err(format!("Unsupported file type for {path}")),
    }
}

/// The listing's entries below `dir`: (size, relative path), two levels, hidden skipped.
fn collect(txn: &mut Txn, dir: &str, rel: &str, depth: usize, out: &mut Vec<(String, String)>) {
    if depth > 2 {
        return;
    }
    let Ok(ino) = txn.resolve(ROOT_INO, dir, true) else {
        return;
    };
    let Ok(mut entries) = txn.readdir(ino) else {
        return;
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in entries {
        if e.name.starts_with('.') {
            continue;
        }
        let item_rel = if rel.is_empty() {
            e.name.clone()
        } else {
            format!("{rel}/{}", e.name)
        };
        let full = format!("{dir}/{}", e.name);
        // A symlink counts as what it points at, when that stays inside /memories.
        let shown = format!("{ROOT}/{item_rel}");
        if validate(txn, &shown).is_err() {
            continue;
        }
        let Ok(st) = txn.stat_at(ROOT_INO, &full, true) else {
            continue;
        };
        match st.kind {
            Kind::Dir => {
                out.push((format_size(4096), format!("{item_rel}/")));
                if depth < 2 {
                    collect(txn, &full, &item_rel, depth + 1, out);
                }
            }
            Kind::File => out.push((format_size(size_of(txn, &full)), item_rel)),
            Kind::Symlink => {}
        }
    }
}

/// Makes the missing directories of `p` (mode 0700).
fn mkdirs(txn: &mut Txn, p: &MemPath) -> Result<(), String> {
    for n in 1..=p.0.len() {
        let sub = MemPath(p.0[..n].to_vec());
        match kind(txn, &sub) {
            Some(Kind::Dir) => {}
            Some(_) => return Err(format!("[Errno 20] Not a directory: '{}'", sub.store())),
            None => {
                let ino = txn.mkdir_all(&sub.store()).map_err(store_err)?;
                txn.set_mode(ino, DIR_MODE).map_err(store_err)?;
            }
        }
    }
    Ok(())
}

fn write(txn: &mut Txn, p: &MemPath, text: &str) -> Result<(), String> {
    let ino = txn
        .write_file(&p.store(), text.as_bytes())
        .map_err(store_err)?;
    txn.set_mode(ino, FILE_MODE).map_err(store_err)
}

fn create(txn: &mut Txn, path: &str, text: &str) -> Result<String, String> {
    let p = validate(txn, path)?;
    mkdirs(txn, &p.parent())?;
    if txn.stat_at(ROOT_INO, &p.store(), false).is_ok() {
        return Err(format!("File {path} already exists"));
    }
    write(txn, &p, text)?;
    Ok(format!("File created successfully at: {path}"))
}

/// The checks `str_replace` and `insert` share: the path exists and is a file.
fn existing_file(txn: &mut Txn, path: &str) -> Result<(MemPath, String), String> {
    let p = validate(txn, path)?;
    match kind(txn, &p) {
        None => Err(format!(
            "The path {path} does not exist. Please provide a valid path."
        )),
        Some(Kind::File) => {
            let content = read_text(txn, &p, path)?;
            Ok((p, content))
        }
        Some(_) => Err(format!("The path {path} is not a file.")),
    }
}

/// Python's `str.count`: non-overlapping occurrences (an empty needle: one per character
/// position, plus one).
fn py_count(hay: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return hay.chars().count() + 1;
    }
    hay.matches(needle).count()
}

fn str_replace(txn: &mut Txn, path: &str, old: &str, new: &str) -> Result<String, String> {
    let (p, content) = existing_file(txn, path)?;
    match py_count(&content, old) {
        0 => {
            return Err(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            ));
        }
        1 => {}
        _ => {
            // Every starting position, overlapping ones included (the SDK steps by one).
            let mut lines = Vec::new();
            let starts: Vec<usize> = if old.is_empty() {
                content
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain([content.len()])
                    .collect()
            } else {
                let mut v = Vec::new();
                let mut from = 0;
                while let Some(k) = content[from..].find(old) {
                    v.push(from + k);
                    let step = content[from + k..].chars().next().map_or(1, char::len_utf8);
                    from += k + step;
                    if from > content.len() {
                        break;
                    }
                }
                v
            };
            for s in starts {
                lines.push((content[..s].matches('\n').count() + 1).to_string());
            }
            return Err(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                lines.join(", ")
            ));
        }
    }
    let pos = content.find(old).unwrap_or(0);
    let changed = content[..pos].matches('\n').count();
    let new_content = content.replacen(old, new, 1);
    write(txn, &p, &new_content)?;
    let new_lines: Vec<&str> = new_content.split('\n').collect();
    let start = changed.saturating_sub(2);
    let end = (changed + 3).min(new_lines.len());
    let snippet: Vec<String> = (start + 1..=end)
        .map(|n| format!("{n:>LINE_NUMBER_WIDTH$}\t{}", new_lines[n - 1]))
        .collect();
    Ok(format!(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
        snippet.join("\n")
    ))
}

fn insert(txn: &mut Txn, path: &str, line: i64, text: &str) -> Result<String, String> {
    let (p, content) = existing_file(txn, path)?;
    let mut lines: Vec<&str> = content.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    if line < 0 || line as usize > lines.len() {
        return Err(format!(
            "Invalid `insert_line` parameter: {line}. It should be within the range [0, {}].",
            lines.len()
        ));
    }
    let text = text.trim_end_matches('\n');
    lines.insert(line as usize, text);
    let mut new_content = lines.join("\n");
    if !new_content.ends_with('\n') {
        new_content.push('\n');
    }
    write(txn, &p, &new_content)?;
    Ok(format!("The file {path} has been edited."))
}

fn delete(txn: &mut Txn, path: &str) -> Result<String, String> {
    let p = validate(txn, path)?;
    if p.is_root() {
        return Err("Cannot delete the /memories directory itself".into());
    }
    match kind(txn, &p) {
        Some(Kind::File) => txn.unlink_at(ROOT_INO, &p.store()).map_err(store_err)?,
        Some(Kind::Dir) => txn.remove_all(&p.store()).map_err(store_err)?,
        _ => return Err(format!("The path {path} does not exist")),
    }
    Ok(format!("Successfully deleted {path}"))
}

fn rename(txn: &mut Txn, old: &str, new: &str) -> Result<String, String> {
    let from = validate(txn, old)?;
    let to = validate(txn, new)?;
    if from.is_root() {
        return Err("Cannot rename the /memories directory itself".into());
    }
    if kind(txn, &to).is_some() {
        return Err(format!("The destination {new} already exists"));
    }
    mkdirs(txn, &to.parent())?;
    if txn.stat_at(ROOT_INO, &from.store(), false).is_err() {
        return Err(format!("The path {old} does not exist"));
    }
    txn.rename_at(ROOT_INO, &from.store(), ROOT_INO, &to.store())
        .map_err(store_err)?;
    Ok(format!("Successfully renamed {old} to {new}"))
}

#[cfg(test)]
mod tests {
    use super::format_size;

    #[test]
    fn sizes_as_the_sdk_formats_them() {
        for (n, want) in [
            (0, "0B"),
            (5, "5B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1536, "1.5K"),
            (4096, "4K"),
            (1_048_576, "1M"),
            (3_000_000, "2.9M"),
        ] {
            assert_eq!(format_size(n), want, "{n}");
        }
    }
}
