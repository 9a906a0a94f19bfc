//! Family A: Claude Managed Agents `agent_toolset_20260401` (read, write, edit, glob, grep;
//! bash comes with the shell). Inputs and every string follow the reference implementation in
//! the Anthropic Python SDK (`anthropic.lib.tools.agent_toolset`). The workdir is `/workspace`.

use burrow_store::Txn;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use super::Outcome;
use super::{Call, Failure, ToolOutput, Toolbox, absolute, media_type, proto, workspace_path};
use crate::{Limits, RunError};

/// Text files larger than this are refused by `read` and `edit`.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
pub const GLOB_RESULT_LIMIT: usize = 200;
pub const GREP_OUTPUT_LIMIT: usize = 100 * 1024;
pub const GREP_MAX_LINE_LENGTH: usize = 2000;

/// The tools of this family.
pub const TOOLS: &[&str] = &["bash", "read", "write", "edit", "glob", "grep"];
/// bash output kept (the tail), in bytes.
pub const BASH_OUTPUT_LIMIT: usize = 100 * 1024;

/// Python's `repr` of a string, as the reference puts paths in its messages.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn outside(op: &str, p: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{op}: path {} is outside the session's working directory",
        py_repr(p)
    ))
}

fn input<T: for<'de> Deserialize<'de>>(op: &str, v: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(v.clone())
        .map_err(|e| ToolOutput::error(format!("{op}: invalid input: {e}")))
}

/// The Managed Agents `agent_toolset_20260401` family. Its state: that the persistent shell
/// died (a timed-out command), so bash refuses until `restart`; a fork starts a new shell.
pub struct AgentToolset;

/// The metadata key of the dead-shell flag (its value is `1`).
const TERMINATED: &str = "bash_terminated";

impl super::ToolFamily for AgentToolset {
    fn family(&self) -> super::Family {
        super::Family::AgentToolset
    }

    fn names(&self) -> &'static [&'static str] {
        &["agent-toolset", "agent_toolset", "agent_toolset_20260401"]
    }

    fn tools(&self) -> &'static [&'static str] {
        TOOLS
    }

    fn definitions(&self) -> Vec<super::schema::ToolDef> {
        use super::schema::{READS, WRITES, def};
        vec![
            def::<BashInput>("bash", WRITES),
            def::<ReadInput>("read", READS),
            def::<WriteInput>("write", WRITES),
            def::<EditInput>("edit", WRITES),
            def::<GlobInput>("glob", READS),
            def::<GrepInput>("grep", READS),
        ]
    }

    fn state(&self) -> Option<super::StateKey> {
        Some(super::StateKey {
            key: TERMINATED,
            forked: false,
        })
    }

    fn call(
        &self,
        cx: super::Cx<'_>,
        name: &str,
        args: &Value,
        state: &mut Option<String>,
    ) -> Result<Outcome, RunError> {
        let super::Cx {
            tb,
            txn,
            limits,
            env,
        } = cx;
        if name == "bash" {
            let restart = args.get("restart").and_then(Value::as_bool) == Some(true);
            if state.is_some() && !restart {
                return Ok(Outcome {
                    txn: Some(txn),
                    output: ToolOutput::error("bash: bash session terminated; restart required"),
                });
            }
            let (outcome, terminated) = bash(tb, txn, args, limits, env)?;
            *state = terminated.then(|| "1".to_string());
            return Ok(outcome);
        }
        let mut c = Call::new(tb, txn, limits, env);
        let out = match name {
            "read" => read(&mut c, args)?,
            "write" => write(&mut c, args)?,
            "edit" => edit(&mut c, args)?,
            "glob" => glob(&mut c, args)?,
            "grep" => grep(&mut c, args)?,
            other => ToolOutput::error(format!("unknown tool: {other}")),
        };
        Ok(c.finish(out))
    }
}

/// Execute a bash command in a persistent shell session (stderr merged into stdout).
#[derive(Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command to execute.
    pub command: Option<String>,
    /// Restart the shell session (variables, functions and cwd reset; files stay).
    pub restart: Option<bool>,
    /// Timeout in milliseconds (0 or absent: the runner's default).
    pub timeout_ms: Option<i64>,
}

/// Python's str() of a float number of seconds (`120.0`, `1.5`).
fn py_float(secs: f64) -> String {
    if secs.fract() == 0.0 {
        format!("{secs:.1}")
    } else {
        format!("{secs}")
    }
}

/// Removes ANSI escape sequences (CSI ... final byte), as the reference runner does.
pub fn strip_ansi(s: &str) -> String {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match RE.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").ok()) {
        Some(re) => re.replace_all(s, "").into_owned(),
        None => s.to_string(),
    }
}

/// The bash tool: its outcome, and whether the shell died (a timeout).
fn bash(
    tb: &Toolbox,
    txn: Txn,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
) -> Result<(Outcome, bool), RunError> {
    let keep = |txn: Txn, output: ToolOutput| {
        (
            Outcome {
                txn: Some(txn),
                output,
            },
            false,
        )
    };
    let i: BashInput = match input("bash", args) {
        Ok(i) => i,
        Err(e) => return Ok(keep(txn, e)),
    };
    if i.restart == Some(true) {
        let (txn, _) = tb.shell(txn, "", true, limits, env)?;
        return Ok(keep(txn, ToolOutput::text("bash session restarted")));
    }
    let Some(command) = i.command.filter(|c| !c.is_empty()) else {
        return Ok(keep(txn, ToolOutput::error("bash: command is required")));
    };
    // 0 or absent: the runner's default, which is the session's timeout setting.
    let timeout_ms = match i.timeout_ms {
        Some(t) if t > 0 => t as u64,
        _ => limits.timeout.as_millis() as u64,
    };
    let limits = Limits {
        timeout: std::time::Duration::from_millis(timeout_ms),
        ..limits.clone()
    };
    match tb.shell(txn, &command, false, &limits, env) {
        Ok((txn, report)) => {
            let text = strip_ansi(&String::from_utf8_lossy(&report.merged));
            let mut out = text.trim_end_matches('\n').to_string();
            let mut truncated = report.merged_dropped > 0;
            truncated |= super::keep_tail(&mut out, BASH_OUTPUT_LIMIT);
            if truncated {
                out = format!("[output truncated]\n{out}");
            }
            let output = if report.exit_code != 0 {
                ToolOutput::error(out)
            } else {
                ToolOutput::text(out)
            };
            Ok(keep(txn, output))
        }
        Err(RunError::Timeout(_)) => Ok((
            Outcome {
                txn: None,
                output: ToolOutput::error(format!(
                    "bash: bash command timed out after {}s",
                    py_float(timeout_ms as f64 / 1000.0)
                )),
            },
            true,
        )),
        Err(e) => Err(e),
    }
}

/// Read a text file (raw, no line numbers), or an image or PDF as a content block.
#[derive(Deserialize, JsonSchema)]
pub struct ReadInput {
    /// Path of the file (absolute under /workspace, or relative to it).
    pub file_path: String,
    /// `[start, end]` lines, 1-indexed inclusive; end <= 0 reads to the end of the file.
    pub view_range: Option<Vec<i64>>,
}

fn read(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: ReadInput = match input("read", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = workspace_path(super::WORKSPACE, p) else {
        return Ok(outside("read", p));
    };
    let range = i.view_range.filter(|v| !v.is_empty());
    if range.as_ref().is_some_and(|v| v.len() != 2) {
        return Ok(ToolOutput::error(
            "read: view_range must be [start_line, end_line]",
        ));
    }
    if let Some(media) = media_type(&rel) {
        let limit = super::media_limit(media);
        let r = c.op(proto::Read {
            path: rel.clone(),
            max_bytes: Some(limit),
        })?;
        return Ok(match r {
            Err(Failure::NotRegular) => ToolOutput::error(format!("read: {p}: not a regular file")),
            Err(_) if range.is_some() => {
                ToolOutput::error("read: view_range is not supported for image/PDF files")
            }
            Err(Failure::TooLarge { size, limit }) => ToolOutput::error(format!(
                "read: {p} is {size} bytes, exceeds {limit}-byte limit for image/PDF files."
            )),
            Err(f) => ToolOutput::error(format!("read: {p}: {}", f.reason())),
            Ok(_) if range.is_some() => {
                ToolOutput::error("read: view_range is not supported for image/PDF files")
            }
            Ok(v) => ToolOutput {
                content: vec![super::media_block(media, &v)],
                is_error: false,
            },
        });
    }
    // Over the cap, a view_range still reads its lines (up to the cap).
    let max = if range.is_some() {
        None
    } else {
        Some(MAX_FILE_BYTES)
    };
    let r = c.op(proto::Read {
        path: rel.clone(),
        max_bytes: max,
    })?;
    let v = match r {
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(ToolOutput::error(format!(
                "read: {p} is {size} bytes, exceeds {limit}-byte limit. Use the view_range parameter to read specific line ranges, e.g. view_range: [1, 500]."
            )));
        }
        Err(f) => return Ok(ToolOutput::error(format!("read: {p}: {}", f.reason()))),
        Ok(v) => v,
    };
    let Some(text) = v.text.as_deref() else {
        return Ok(ToolOutput::error(format!(
            "read: {p}: not valid UTF-8 text (binary files are only supported for image/PDF extensions)"
        )));
    };
    let Some(range) = range else {
        return Ok(ToolOutput::text(text));
    };
    let (s, e) = (range[0], range[1]);
    let lines: Vec<&str> = text.split('\n').collect();
    let start = (s - 1).max(0) as usize;
    let end = if e > 0 {
        (e as usize).min(lines.len())
    } else {
        lines.len()
    };
    let size = v.size;
    let slice = if start >= end {
        String::new()
    } else {
        lines[start..end].join("\n")
    };
    if size > MAX_FILE_BYTES && slice.len() as u64 > MAX_FILE_BYTES {
        return Ok(ToolOutput::error(if end - start == 1 {
            format!(
                "read: line {} of {p} alone exceeds {MAX_FILE_BYTES}-byte limit. The read tool cannot return part of a line, so view_range cannot narrow this further.",
                start + 1
            )
        } else {
            format!(
                "read: view_range [{s}, {e}] of {p} exceeds {MAX_FILE_BYTES}-byte limit. Narrow the view_range to read a smaller portion."
            )
        }));
    }
    Ok(ToolOutput::text(slice))
}

/// Create or replace a file (parent directories are created).
#[derive(Deserialize, JsonSchema)]
pub struct WriteInput {
    /// Path of the file.
    pub file_path: String,
    /// The file's new content.
    pub content: String,
}

fn write(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: WriteInput = match input("write", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = workspace_path(super::WORKSPACE, p) else {
        return Ok(outside("write", p));
    };
    let r = c.op(proto::Write {
        path: rel,
        content: i.content.clone(),
        mkdirs: true,
    })?;
    Ok(match r {
        // Python's len() counts characters, not bytes.
        Ok(_) => ToolOutput::text(format!("wrote {} bytes to {p}", i.content.chars().count())),
        Err(f) => ToolOutput::error(format!("write: {p}: {}", f.reason())),
    })
}

/// Replace exact text in a file; old_string must be unique unless replace_all.
#[derive(Deserialize, JsonSchema)]
pub struct EditInput {
    /// Path of the file.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
}

fn edit(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: EditInput = match input("edit", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = workspace_path(super::WORKSPACE, p) else {
        return Ok(outside("edit", p));
    };
    let replace_all = i.replace_all.unwrap_or(false);
    let r = c.op(proto::Edit {
        path: rel,
        old: i.old_string.clone(),
        new: i.new_string.clone(),
        replace_all,
        max_bytes: Some(MAX_FILE_BYTES),
        crlf: false,
    })?;
    Ok(match r {
        Ok(v) => {
            let n = v.replaced;
            ToolOutput::text(format!("edited {p} ({n} replacement(s))"))
        }
        Err(Failure::NotRegular) => ToolOutput::error(format!("edit: {p}: not a regular file")),
        Err(Failure::TooLarge { size, limit }) => ToolOutput::error(format!(
            "edit: {p} is {size} bytes, exceeds {limit}-byte limit. The edit tool loads the whole file and cannot modify a file this large."
        )),
        Err(Failure::NotUtf8) => ToolOutput::error(format!(
            "edit: {p}: not valid UTF-8 text (cannot edit binary files)"
        )),
        Err(Failure::StringNotFound) => {
            ToolOutput::error(format!("edit: old_string not found in {p}"))
        }
        Err(Failure::Multiple { count, .. }) => ToolOutput::error(format!(
            "edit: old_string appears {count} times in {p} (must be unique)"
        )),
        Err(f) => ToolOutput::error(format!("edit: {p}: {}", f.reason())),
    })
}

/// Find files by glob pattern (doublestar, e.g. `**/*.go`), newest first.
#[derive(Deserialize, JsonSchema)]
pub struct GlobInput {
    /// Relative glob pattern.
    pub pattern: String,
    /// Directory to search from (default /workspace).
    pub path: Option<String>,
}

fn glob(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GlobInput = match input("glob", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    if i.pattern.starts_with('/') {
        return Ok(ToolOutput::error(
            "glob: absolute pattern not permitted; pass a relative pattern (and optionally path)",
        ));
    }
    if i.pattern.split('/').any(|c| c == "..") {
        return Ok(ToolOutput::error(
            "glob: '..' is not permitted in the pattern",
        ));
    }
    let root = match i.path.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => match workspace_path(super::WORKSPACE, p) {
            Some(r) => r,
            None => return Ok(outside("glob", p)),
        },
        None => ".".to_string(),
    };
    let r = c.op(proto::Glob {
        pattern: i.pattern.clone(),
        path: root,
        limit: GLOB_RESULT_LIMIT,
        files_only: false,
    })?;
    Ok(match r {
        Ok(v) => {
            let paths: Vec<String> = v.matches.iter().map(|m| absolute(&m.path)).collect();
            if paths.is_empty() {
                ToolOutput::text("no matches")
            } else {
                ToolOutput::text(paths.join("\n"))
            }
        }
        // A missing or non-directory root globs to nothing, as pathlib does.
        Err(Failure::NotFound | Failure::NotADirectory) => ToolOutput::text("no matches"),
        Err(Failure::InvalidPattern { message }) => ToolOutput::error(format!("glob: {message}")),
        Err(f) => ToolOutput::error(format!("glob: {}", f.reason())),
    })
}

/// Search file contents with a regular expression; prints `path:line:text`.
#[derive(Deserialize, JsonSchema)]
pub struct GrepInput {
    /// Regular expression (Rust regex / ripgrep syntax).
    pub pattern: String,
    /// File or directory to search (default /workspace).
    pub path: Option<String>,
}

fn grep(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GrepInput = match input("grep", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let root = match i.path.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => match workspace_path(super::WORKSPACE, p) {
            Some(r) => r,
            None => return Ok(outside("grep", p)),
        },
        None => ".".to_string(),
    };
    let r = c.op(proto::Grep {
        pattern: i.pattern.clone(),
        path: root,
        max_line: Some(GREP_MAX_LINE_LENGTH),
        skip_dirs: vec![".git".into(), "node_modules".into()],
        ..Default::default()
    })?;
    let v = match r {
        Ok(v) => v,
        Err(Failure::NotFound) => return Ok(ToolOutput::text("no matches")),
        Err(Failure::InvalidPattern { message }) => {
            return Ok(ToolOutput::error(format!("grep: invalid regex: {message}")));
        }
        Err(f) => return Ok(ToolOutput::error(format!("grep: {}", f.reason()))),
    };
    let mut out = String::new();
    let mut truncated = false;
    let mut budget = GREP_OUTPUT_LIMIT as i64;
    'files: for f in &v.files {
        let path = absolute(&f.path);
        for l in &f.lines {
            if !l.is_match {
                continue;
            }
            let line = format!("{path}:{}:{}", l.line, l.text);
            budget -= line.len() as i64 + 1;
            if budget < 0 {
                truncated = true;
                break 'files;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&line);
        }
    }
    if truncated {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("[output truncated at {GREP_OUTPUT_LIMIT} bytes]"));
    }
    Ok(ToolOutput::text(if out.is_empty() {
        "no matches".to_string()
    } else {
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::py_repr;

    #[test]
    fn python_repr_of_paths() {
        assert_eq!(py_repr("../x"), "'../x'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\nb"), "'a\\nb'");
    }
}
