//! Family A: Claude Managed Agents `agent_toolset_20260401` (read, write, edit, glob, grep;
//! bash comes with the shell). Inputs and every string follow the reference implementation in
//! the Anthropic Python SDK (`anthropic.lib.tools.agent_toolset`). The workdir is `/workspace`.

use burrow_store::Txn;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Content, Failure, Source, ToolOutput, Toolbox, absolute, workspace_path};
use crate::{Limits, RunError};

/// Text files larger than this are refused by `read` and `edit`.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Largest image, as base64.
pub const MAX_IMAGE_BASE64_BYTES: u64 = 5 * 1024 * 1024;
/// Largest PDF.
pub const MAX_PDF_BYTES: u64 = 20 * 1024 * 1024;
pub const GLOB_RESULT_LIMIT: usize = 200;
pub const GREP_OUTPUT_LIMIT: usize = 100 * 1024;
pub const GREP_MAX_LINE_LENGTH: usize = 2000;

/// The tools of this family.
pub const TOOLS: &[&str] = &["bash", "read", "write", "edit", "glob", "grep"];
/// bash output kept (the tail), in bytes.
pub const BASH_OUTPUT_LIMIT: usize = 100 * 1024;

/// What a call did: the transaction to commit (None when the call was rolled back, as a
/// timed-out bash command is), the result, and whether the bash session is now terminated.
pub struct Outcome {
    pub txn: Option<Txn>,
    pub output: ToolOutput,
    pub bash_terminated: bool,
}

fn media_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

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

/// Runs one tool of the family in `txn`.
pub fn call(
    tb: &Toolbox,
    txn: Txn,
    name: &str,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
) -> Result<Outcome, RunError> {
    if name == "bash" {
        return bash(tb, txn, args, limits, env);
    }
    let mut txn = Some(txn);
    let mut op = |req: Value| -> Result<Result<Value, Failure>, RunError> {
        let t = txn
            .take()
            .ok_or_else(|| RunError::Host("transaction lost".into()))?;
        let (t, r) = tb.fs_op(t, &req, limits)?;
        txn = Some(t);
        Ok(r)
    };
    let out = match name {
        "read" => read(&mut op, args)?,
        "write" => write(&mut op, args)?,
        "edit" => edit(&mut op, args)?,
        "glob" => glob(&mut op, args)?,
        "grep" => grep(&mut op, args)?,
        other => ToolOutput::error(format!("unknown tool: {other}")),
    };
    let txn = txn.ok_or_else(|| RunError::Host("transaction lost".into()))?;
    Ok(Outcome {
        txn: Some(txn),
        output: out,
        bash_terminated: false,
    })
}

#[derive(Deserialize)]
struct BashInput {
    command: Option<String>,
    restart: Option<bool>,
    timeout_ms: Option<i64>,
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

fn bash(
    tb: &Toolbox,
    txn: Txn,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
) -> Result<Outcome, RunError> {
    let keep = |txn: Txn, output: ToolOutput| Outcome {
        txn: Some(txn),
        output,
        bash_terminated: false,
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
            if out.len() > BASH_OUTPUT_LIMIT {
                let mut cut = out.len() - BASH_OUTPUT_LIMIT;
                while !out.is_char_boundary(cut) {
                    cut += 1;
                }
                out = out[cut..].to_string();
                truncated = true;
            }
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
        Err(RunError::Timeout(_)) => Ok(Outcome {
            txn: None,
            output: ToolOutput::error(format!(
                "bash: bash command timed out after {}s",
                py_float(timeout_ms as f64 / 1000.0)
            )),
            bash_terminated: true,
        }),
        Err(e) => Err(e),
    }
}

type Op<'a> = dyn FnMut(Value) -> Result<Result<Value, Failure>, RunError> + 'a;

#[derive(Deserialize)]
struct ReadInput {
    file_path: String,
    view_range: Option<Vec<i64>>,
}

fn read(op: &mut Op<'_>, args: &Value) -> Result<ToolOutput, RunError> {
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
        let limit = if media == "application/pdf" {
            MAX_PDF_BYTES
        } else {
            (MAX_IMAGE_BASE64_BYTES / 4) * 3
        };
        let r = op(json!({ "op": "read", "path": rel, "max_bytes": limit }))?;
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
            Ok(v) => {
                let data = match (v.get("base64"), v.get("text")) {
                    (Some(Value::String(b)), _) => b.clone(),
                    (_, Some(Value::String(t))) => {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.encode(t.as_bytes())
                    }
                    _ => String::new(),
                };
                let source = Source {
                    kind: "base64".into(),
                    media_type: media.into(),
                    data,
                };
                ToolOutput {
                    content: vec![if media == "application/pdf" {
                        Content::Document { source }
                    } else {
                        Content::Image { source }
                    }],
                    is_error: false,
                }
            }
        });
    }
    // Over the cap, a view_range still reads its lines (up to the cap).
    let max = if range.is_some() {
        None
    } else {
        Some(MAX_FILE_BYTES)
    };
    let r = op(json!({ "op": "read", "path": rel, "max_bytes": max }))?;
    let v = match r {
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(ToolOutput::error(format!(
                "read: {p} is {size} bytes, exceeds {limit}-byte limit. Use the view_range parameter to read specific line ranges, e.g. view_range: [1, 500]."
            )));
        }
        Err(f) => return Ok(ToolOutput::error(format!("read: {p}: {}", f.reason()))),
        Ok(v) => v,
    };
    let Some(text) = v.get("text").and_then(Value::as_str) else {
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
    let size = v.get("size").and_then(Value::as_u64).unwrap_or(0);
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

#[derive(Deserialize)]
struct WriteInput {
    file_path: String,
    content: String,
}

fn write(op: &mut Op<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: WriteInput = match input("write", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = workspace_path(super::WORKSPACE, p) else {
        return Ok(outside("write", p));
    };
    let r = op(json!({ "op": "write", "path": rel, "content": i.content, "mkdirs": true }))?;
    Ok(match r {
        // Python's len() counts characters, not bytes.
        Ok(_) => ToolOutput::text(format!("wrote {} bytes to {p}", i.content.chars().count())),
        Err(f) => ToolOutput::error(format!("write: {p}: {}", f.reason())),
    })
}

#[derive(Deserialize)]
struct EditInput {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: Option<bool>,
}

fn edit(op: &mut Op<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: EditInput = match input("edit", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = workspace_path(super::WORKSPACE, p) else {
        return Ok(outside("edit", p));
    };
    let replace_all = i.replace_all.unwrap_or(false);
    let r = op(json!({
        "op": "edit", "path": rel, "old": i.old_string, "new": i.new_string,
        "replace_all": replace_all, "max_bytes": MAX_FILE_BYTES,
    }))?;
    Ok(match r {
        Ok(v) => {
            let n = v.get("replaced").and_then(Value::as_u64).unwrap_or(1);
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

#[derive(Deserialize)]
struct GlobInput {
    pattern: String,
    path: Option<String>,
}

fn glob(op: &mut Op<'_>, args: &Value) -> Result<ToolOutput, RunError> {
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
    let r = op(
        json!({ "op": "glob", "pattern": i.pattern, "path": root, "limit": GLOB_RESULT_LIMIT }),
    )?;
    Ok(match r {
        Ok(v) => {
            let paths: Vec<String> = v
                .get("matches")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m.get("path").and_then(Value::as_str).map(absolute))
                        .collect()
                })
                .unwrap_or_default();
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

#[derive(Deserialize)]
struct GrepInput {
    pattern: String,
    path: Option<String>,
}

fn grep(op: &mut Op<'_>, args: &Value) -> Result<ToolOutput, RunError> {
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
    let r = op(json!({
        "op": "grep", "pattern": i.pattern, "path": root,
        "max_line": GREP_MAX_LINE_LENGTH, "skip_dirs": [".git", "node_modules"],
    }))?;
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
    'files: for f in v
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let path = absolute(f.get("path").and_then(Value::as_str).unwrap_or(""));
        for l in f
            .get("lines")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if l.get("match").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let line = format!(
                "{path}:{}:{}",
                l.get("line").and_then(Value::as_u64).unwrap_or(0),
                l.get("text").and_then(Value::as_str).unwrap_or("")
            );
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
