//! Family C: the Messages API client tools, `bash_20250124` (name `bash`) and
//! `text_editor_20250728` (name `str_replace_based_edit_tool`). Strings follow Anthropic's
//! reference implementation of these tools. Paths are absolute under `/workspace` or relative
//! to the shell's cwd.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Call, Failure, Outcome, ToolOutput, Toolbox, absolute, proto, sandbox_path, store_path,
};
use crate::{Limits, RunError};

/// Tool names, as the model calls them.
pub const BASH: &str = "bash";
pub const EDITOR: &str = "str_replace_based_edit_tool";
pub const TOOLS: &[&str] = &[BASH, EDITOR];
/// The tool definitions a Messages API request lists (Anthropic-defined schemas).
pub fn definitions() -> Value {
    json!([
        { "type": "bash_20250124", "name": BASH },
        { "type": "text_editor_20250728", "name": EDITOR },
    ])
}

/// bash output kept (the tail), in bytes.
pub const BASH_OUTPUT_LIMIT: usize = 100 * 1024;
/// Lines of context around an edit in the snippet shown back.
const SNIPPET_LINES: usize = 4;
/// Largest file `view` reads.
pub const VIEW_MAX_BYTES: u64 = 16 * 1024 * 1024;
const CLIPPED: &str = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/// The Messages API client tools (`bash_20250124`, `text_editor_20250728`).
pub struct Api;

impl super::ToolFamily for Api {
    fn family(&self) -> super::Family {
        super::Family::Api
    }

    fn names(&self) -> &'static [&'static str] {
        &["api", "messages-api"]
    }

    fn tools(&self) -> &'static [&'static str] {
        TOOLS
    }

    fn definitions(&self) -> Vec<super::schema::ToolDef> {
        use super::schema::{WRITES, def};
        vec![
            def::<BashInput>(BASH, WRITES),
            def::<EditorInput>(EDITOR, WRITES),
        ]
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

/// Runs one tool of the family in `txn`.
fn call(
    tb: &Toolbox,
    txn: burrow_store::Txn,
    name: &str,
    args: &Value,
    limits: &Limits,
    env: &[(String, String)],
) -> Result<Outcome, RunError> {
    let mut c = Call::new(tb, txn, limits, env);
    let out = match name {
        BASH => return bash(c, args),
        EDITOR | "str_replace_editor" => editor(&mut c, args)?,
        other => ToolOutput::error(format!("Unknown tool: {other}")),
    };
    Ok(c.finish(out))
}

/// Run commands in a persistent bash session.
#[derive(Deserialize, JsonSchema)]
pub struct BashInput {
    /// The bash command to run.
    #[serde(default)]
    pub command: Option<String>,
    /// Restart the bash session (resets variables, functions and cwd; files stay).
    #[serde(default)]
    pub restart: Option<bool>,
}

fn bash(mut c: Call<'_>, args: &Value) -> Result<Outcome, RunError> {
    let i: BashInput = match serde_json::from_value(args.clone()) {
        Ok(i) => i,
        Err(e) => return Ok(c.finish(ToolOutput::error(format!("invalid input: {e}")))),
    };
    if i.restart == Some(true) {
        c.shell("", true, None)?;
        return Ok(c.finish(ToolOutput::text("tool has been restarted.")));
    }
    let Some(command) = i.command.filter(|c| !c.trim().is_empty()) else {
        return Ok(c.finish(ToolOutput::error("no command provided.")));
    };
    let secs = c.limits.timeout.as_secs_f64();
    match c.shell(&command, false, None) {
        Ok(report) => {
            let mut out = String::from_utf8_lossy(&report.merged)
                .trim_end_matches('\n')
                .to_string();
            if super::keep_tail(&mut out, BASH_OUTPUT_LIMIT) || report.merged_dropped > 0 {
                out = format!("[output truncated]\n{out}");
            }
            if out.is_empty() {
                out = "(no output)".into();
            }
            let output = if report.exit_code == 0 {
                ToolOutput::text(out)
            } else {
                ToolOutput::error(out)
            };
            Ok(c.finish(output))
        }
        Err(RunError::Timeout(_)) => Ok(c.abort(ToolOutput::error(format!(
            "timed out: bash has not returned in {secs} seconds and must be restarted"
        )))),
        Err(e) => Err(e),
    }
}

/// View, create and edit files.
#[derive(Deserialize, JsonSchema)]
pub struct EditorInput {
    /// One of `view`, `create`, `str_replace`, `insert`.
    pub command: String,
    /// Absolute path to the file or directory.
    pub path: String,
    /// `view`: `[start, end]` lines, 1-indexed; end -1 means to the end.
    #[serde(default)]
    #[schemars(with = "Option<Vec<i64>>")]
    pub view_range: Option<Value>,
    /// `create`: the content of the new file.
    #[serde(default)]
    pub file_text: Option<String>,
    /// `str_replace`: the exact text to replace (must occur once).
    #[serde(default)]
    pub old_str: Option<String>,
    /// `str_replace`: the replacement (default empty); `insert`: the text (same as insert_text).
    #[serde(default)]
    pub new_str: Option<String>,
    /// `insert`: the line after which to insert (0 = top of the file).
    #[serde(default)]
    pub insert_line: Option<i64>,
    /// `insert`: the text to insert.
    #[serde(default)]
    pub insert_text: Option<String>,
    /// `view`: truncate the output to this many characters.
    #[serde(default)]
    pub max_characters: Option<usize>,
}

fn editor(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: EditorInput = match serde_json::from_value(args.clone()) {
        Ok(i) => i,
        Err(e) => return Ok(ToolOutput::error(format!("invalid input: {e}"))),
    };
    let cwd = c.cwd();
    let Some(rel) = sandbox_path(&cwd, &i.path) else {
        return Ok(ToolOutput::error(format!(
            "The path {} is outside the workspace {}. Please provide a path under it.",
            i.path,
            super::WORKSPACE
        )));
    };
    let path = absolute(&rel);
    let required = |name: &str| {
        ToolOutput::error(format!(
            "Parameter `{name}` is required for command: {}",
            i.command
        ))
    };
    let stat = c
        .txn()?
        .stat_at(burrow_store::ROOT_INO, &store_path(&rel), true)
        .ok()
        .map(|s| s.kind);
    let is_dir = stat == Some(burrow_store::Kind::Dir);
    if i.command != "create" && stat.is_none() {
        return Ok(ToolOutput::error(format!(
            "The path {path} does not exist. Please provide a valid path."
        )));
    }
    if is_dir && i.command != "view" {
        return Ok(ToolOutput::error(format!(
            "The path {path} is a directory and only the `view` command can be used on directories"
        )));
    }
    Ok(match i.command.as_str() {
        "view" if is_dir => view_dir(c, &rel, &path, i.view_range.is_some())?,
        "view" => view_file(c, &rel, &path, i.view_range.as_ref(), i.max_characters)?,
        "create" => {
            let Some(text) = i.file_text else {
                return Ok(required("file_text"));
            };
            if stat.is_some() {
                return Ok(ToolOutput::error(format!(
                    "File already exists at: {path}. Cannot overwrite files using command `create`."
                )));
            }
            match c.op(proto::Write {
                path: rel.clone(),
                content: text,
                mkdirs: true,
            })? {
                Ok(_) => ToolOutput::text(format!("File created successfully at: {path}")),
                Err(f) => ToolOutput::error(format!("{path}: {}", f.reason())),
            }
        }
        "str_replace" => {
            let Some(old) = i.old_str else {
                return Ok(required("old_str"));
            };
            let new = i.new_str.unwrap_or_default();
            str_replace(c, &rel, &path, &old, &new)?
        }
        "insert" => {
            let Some(line) = i.insert_line else {
                return Ok(required("insert_line"));
            };
            let Some(text) = i.insert_text.or(i.new_str) else {
                return Ok(required("insert_text"));
            };
            insert(c, &rel, &path, line, &text)?
        }
        other => ToolOutput::error(format!(
            "Unrecognized command {other}. The allowed commands for the {EDITOR} tool are: view, create, str_replace, insert"
        )),
    })
}

/// Python's `str.expandtabs()` (tab stops every 8 columns).
fn expand_tabs(s: &str) -> String {
    if !s.contains('\t') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut col = 0;
    for ch in s.chars() {
        match ch {
            '\t' => {
                let n = 8 - col % 8;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            '\n' | '\r' => {
                out.push(ch);
                col = 0;
            }
            c => {
                out.push(c);
                col += 1;
            }
        }
    }
    out
}

/// `Here's the result of running `cat -n` on …` followed by numbered lines.
fn numbered(content: &str, descriptor: &str, first_line: usize) -> String {
    let mut out = format!("Here's the result of running `cat -n` on {descriptor}:\n");
    for (n, line) in expand_tabs(content).split('\n').enumerate() {
        out.push_str(&format!("{:6}\t{line}\n", n + first_line));
    }
    out
}

fn view_dir(c: &mut Call<'_>, rel: &str, path: &str, ranged: bool) -> Result<ToolOutput, RunError> {
    if ranged {
        return Ok(ToolOutput::error(
            "The `view_range` parameter is not allowed when `path` points to a directory.",
        ));
    }
    let v = match c.op(proto::List {
        path: rel.to_string(),
        depth: 2,
    })? {
        Ok(v) => v,
        Err(f) => return Ok(ToolOutput::error(format!("{path}: {}", f.reason()))),
    };
    let mut out = format!(
        "Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{path}\n"
    );
    let mut entries: Vec<String> = v.entries.iter().map(|e| absolute(&e.path)).collect();
    entries.sort();
    for e in entries {
        out.push_str(&e);
        out.push('\n');
    }
    Ok(ToolOutput::text(out))
}

fn view_file(
    c: &mut Call<'_>,
    rel: &str,
    path: &str,
    range: Option<&Value>,
    max_chars: Option<usize>,
) -> Result<ToolOutput, RunError> {
    let v = match c.op(proto::Read {
        path: rel.to_string(),
        max_bytes: Some(VIEW_MAX_BYTES),
    })? {
        Ok(v) => v,
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(ToolOutput::error(format!(
                "The file {path} is {size} bytes, larger than the {limit}-byte limit of `view`. Use bash (head, sed -n, grep -n) to read parts of it."
            )));
        }
        Err(f) => return Ok(ToolOutput::error(format!("{path}: {}", f.reason()))),
    };
    let Some(text) = v.text.as_deref() else {
        return Ok(ToolOutput::error(format!(
            "The file {path} is not valid UTF-8 text and cannot be viewed."
        )));
    };
    let (mut content, first) = match range {
        None => (text.to_string(), 1),
        Some(r) => {
            let pair = r
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((a[0].as_i64()?, a[1].as_i64()?)));
            let Some((init, fin)) = pair else {
                return Ok(ToolOutput::error(
                    "Invalid `view_range`. It should be a list of two integers.",
                ));
            };
            let lines: Vec<&str> = text.split('\n').collect();
            let n = lines.len() as i64;
            let vr = format!("[{init}, {fin}]");
            if init < 1 || init > n {
                return Ok(ToolOutput::error(format!(
                    "Invalid `view_range`: {vr}. Its first element `{init}` should be within the range of lines of the file: [1, {n}]"
                )));
            }
            if fin > n {
                return Ok(ToolOutput::error(format!(
                    "Invalid `view_range`: {vr}. Its second element `{fin}` should be smaller than the number of lines in the file: `{n}`"
                )));
            }
            if fin != -1 && fin < init {
                return Ok(ToolOutput::error(format!(
                    "Invalid `view_range`: {vr}. Its second element `{fin}` should be larger or equal than its first `{init}`"
                )));
            }
            let end = if fin == -1 { n } else { fin };
            (
                lines[(init - 1) as usize..end as usize].join("\n"),
                init as usize,
            )
        }
    };
    if let Some(max) = max_chars
        && let Some((cut, _)) = content.char_indices().nth(max)
    {
        content.truncate(cut);
        content.push_str(CLIPPED);
    }
    Ok(ToolOutput::text(numbered(&content, path, first)))
}

/// Python's repr of a list of line numbers: `[1, 5]`.
fn py_list(lines: &[usize]) -> String {
    let items: Vec<String> = lines.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn str_replace(
    c: &mut Call<'_>,
    rel: &str,
    path: &str,
    old: &str,
    new: &str,
) -> Result<ToolOutput, RunError> {
    let r = c.op(proto::Edit {
        path: rel.to_string(),
        old: old.to_string(),
        new: new.to_string(),
        replace_all: false,
        max_bytes: None,
        crlf: false,
    })?;
    let v = match r {
        Ok(v) => v,
        Err(Failure::StringNotFound) => {
            return Ok(ToolOutput::error(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            )));
        }
        Err(Failure::Multiple { lines, .. }) => {
            return Ok(ToolOutput::error(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines {}. Please ensure it is unique",
                py_list(&lines)
            )));
        }
        Err(f) => return Ok(ToolOutput::error(format!("{path}: {}", f.reason()))),
    };
    let updated = v.text.as_str();
    let at = v.first_line.max(1) - 1;
    let start = at.saturating_sub(SNIPPET_LINES);
    let end = at + SNIPPET_LINES + new.matches('\n').count();
    let lines: Vec<&str> = updated.split('\n').collect();
    let snippet = lines[start.min(lines.len())..(end + 1).min(lines.len())].join("\n");
    Ok(ToolOutput::text(format!(
        "The file {path} has been edited. {}Review the changes and make sure they are as expected. Edit the file again if necessary.",
        numbered(&snippet, &format!("a snippet of {path}"), start + 1)
    )))
}

fn insert(
    c: &mut Call<'_>,
    rel: &str,
    path: &str,
    line: i64,
    text: &str,
) -> Result<ToolOutput, RunError> {
    let invalid = |n: usize| {
        ToolOutput::error(format!(
            "Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {n}]"
        ))
    };
    if line < 0 {
        let n = match c.op(proto::Read {
            path: rel.to_string(),
            max_bytes: Some(VIEW_MAX_BYTES),
        })? {
            Ok(v) => v.text.map_or(0, |t| t.split('\n').count()),
            Err(_) => 0,
        };
        return Ok(invalid(n));
    }
    let r = c.op(proto::Insert {
        path: rel.to_string(),
        line: line as u64,
        text: text.to_string(),
    })?;
    let v = match r {
        Ok(v) => v,
        Err(Failure::InvalidLine { lines }) => return Ok(invalid(lines)),
        Err(f) => return Ok(ToolOutput::error(format!("{path}: {}", f.reason()))),
    };
    let updated = v.text.as_str();
    let at = line as usize;
    let lines: Vec<&str> = updated.split('\n').collect();
    let start = at.saturating_sub(SNIPPET_LINES);
    let end = (at + text.split('\n').count() + SNIPPET_LINES).min(lines.len());
    let snippet = lines[start.min(end)..end].join("\n");
    Ok(ToolOutput::text(format!(
        "The file {path} has been edited. {}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
        numbered(&snippet, "a snippet of the edited file", start + 1)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_expand_like_python() {
        assert_eq!(expand_tabs("a\tb"), "a       b");
        assert_eq!(expand_tabs("abcdefgh\tx"), "abcdefgh        x");
        assert_eq!(
            numbered("x\ny", "f", 3),
            "Here's the result of running `cat -n` on f:\n     3\tx\n     4\ty\n"
        );
        assert_eq!(py_list(&[1, 5]), "[1, 5]");
    }
}
