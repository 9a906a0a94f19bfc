//! Family A: Claude Managed Agents `agent_toolset_20260401` (read, write, edit, glob, grep;
//! bash comes with the shell). Inputs and every string follow the reference implementation in
//! the Anthropic Python SDK (`anthropic.lib.tools.agent_toolset`, the release `.ci/run` pins;
//! the differences that remain are listed in docs/CLAUDE.md). The workdir is `/workspace`.

use burrow_store::Txn;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use super::Outcome;
use super::{Call, Failure, ToolOutput, Toolbox, absolute, media_type, proto, workspace_path};
use crate::{Limits, RunError};

/// Text files larger than this are refused by `read` (without a `view_range` that narrows it).
pub const MAX_READ_BYTES: u64 = 110_000;
/// Files larger than this are refused by `edit` (before and after the edit).
pub const MAX_EDIT_BYTES: u64 = 256 * 1024;
pub const GLOB_RESULT_LIMIT: usize = 200;
pub const GREP_OUTPUT_LIMIT: usize = 100 * 1024;
pub const GREP_MAX_LINE_LENGTH: usize = 2000;

/// The tools of this family.
pub const TOOLS: &[&str] = &["bash", "read", "write", "edit", "glob", "grep"];
/// bash output kept (the start), in UTF-16 code units as the reference counts them; the whole
/// output is saved to a file the result names.
pub const BASH_OUTPUT_LIMIT: usize = 30_000;
/// The most of a cut output saved to its file.
const SAVED_OUTPUT_MAX: usize = 32 << 20;
/// bash's default timeout, and the most `timeout_ms` may ask for.
pub const BASH_TIMEOUT_SECS: f64 = 295.0;
/// Ends a bash result after which the shell is gone (a timeout, `exit`, a fatal error).
const SHELL_GONE: &str = "[The shell is gone. Call bash with restart set to true to start a new one. It starts in the original working directory, without the old shell's variables, activated environments and background jobs.]";
/// A bash call on a shell that is gone, without `restart`.
const DID_NOT_RUN: &str = "[This command did not run, because the shell is gone. Call bash with restart set to true to start a new one. It starts in the original working directory, without the old shell's variables, activated environments and background jobs.]";

fn outside(op: &str, p: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{op}: path \"{p}\" is outside the session's working directory"
    ))
}

fn input<T: for<'de> Deserialize<'de>>(op: &str, v: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(v.clone())
        .map_err(|e| ToolOutput::error(format!("{op}: invalid input: {e}")))
}

/// The Managed Agents `agent_toolset_20260401` family. Its state is that of its persistent
/// shells ([`Shells`]): the session's own and one per subagent thread that used bash; for
/// each, whether it is gone (a timeout, `exit`, its thread ended), so bash refuses until
/// `restart`, and where its last cut output was saved, which `read` and `grep` may open. A
/// fork starts new shells.
pub struct AgentToolset;

/// The metadata key of the shells' state (a JSON [`Shells`]; `1` from before meant gone).
const TERMINATED: &str = "bash_terminated";

/// What the family remembers of one persistent shell.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Shell {
    /// The shell ended (a timeout, `exit`, a fatal error): bash refuses until `restart`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gone: bool,
    /// The directory (under `/tmp`) of the last output that was cut, saved whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<String>,
}

/// The session's shells: its own (the fields at the top level, as sessions from before
/// threads kept them) and the named ones of subagent threads.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Shells {
    #[serde(flatten)]
    pub main: Shell,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub named: std::collections::BTreeMap<String, Shell>,
}

impl Shells {
    fn from_state(state: Option<&str>) -> Shells {
        match state {
            None => Shells::default(),
            Some(t) => serde_json::from_str(t).unwrap_or(Shells {
                main: Shell {
                    gone: true,
                    saved: None,
                },
                named: Default::default(),
            }),
        }
    }

    fn to_state(&self) -> Option<String> {
        (*self != Shells::default()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// The shell `name` (None: the session's own).
    fn get(&mut self, name: Option<&str>) -> &mut Shell {
        match name {
            None => &mut self.main,
            Some(n) => self.named.entry(n.to_string()).or_default(),
        }
    }

    /// Drops named shells left with nothing to remember.
    fn tidy(&mut self) {
        self.named.retain(|_, s| *s != Shell::default());
    }

    /// Whether `guest` (absolute) is a shell's saved output or inside its directory.
    fn holds(&self, guest: &str) -> bool {
        std::iter::once(&self.main)
            .chain(self.named.values())
            .filter_map(|s| s.saved.as_deref())
            .any(|d| d == guest || guest.starts_with(&format!("{d}/")))
    }
}

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

    fn close_shell(&self, shell: &str, state: &mut Option<String>) {
        let mut shells = Shells::from_state(state.as_deref());
        if let Some(s) = shells.named.get_mut(shell) {
            s.gone = true;
        } else {
            shells.named.insert(
                shell.to_string(),
                Shell {
                    gone: true,
                    saved: None,
                },
            );
        }
        *state = shells.to_state();
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
            timeout,
            shell: cx_shell,
            roots,
        } = cx;
        let mut shells = Shells::from_state(state.as_deref());
        if name == "bash" {
            let outcome = bash(tb, txn, args, limits, timeout, env, (cx_shell, &mut shells))?;
            shells.tidy();
            *state = shells.to_state();
            return Ok(outcome);
        }
        let reach = Reach {
            shells: &shells,
            roots,
        };
        let mut c = Call::new(tb, txn, limits, env);
        let out = match name {
            "read" => read(&mut c, args, &reach)?,
            "write" => write(&mut c, args, &reach)?,
            "edit" => edit(&mut c, args, &reach)?,
            "glob" => glob(&mut c, args, &reach)?,
            "grep" => grep(&mut c, args, &reach)?,
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

/// Removes ANSI escape sequences (CSI ... final byte), as the reference runner does.
pub fn strip_ansi(s: &str) -> String {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match RE.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").ok()) {
        Some(re) => re.replace_all(s, "").into_owned(),
        None => s.to_string(),
    }
}

/// The bash tool, as the reference runs it: one persistent shell; stdout then stderr (stderr
/// first when the command failed); ANSI escapes stripped; an output over
/// [`BASH_OUTPUT_LIMIT`] cut, saved whole under `/tmp` and named; a shell ended by a timeout,
/// `exit` or a fatal error is gone until `restart`.
fn bash(
    tb: &Toolbox,
    txn: Txn,
    args: &Value,
    limits: &Limits,
    session_timeout: Option<std::time::Duration>,
    env: &[(String, String)],
    (name, shells): (Option<&str>, &mut Shells),
) -> Result<Outcome, RunError> {
    let shell = shells.get(name);
    let keep = |txn: Txn, output: ToolOutput| Outcome {
        txn: Some(txn),
        output,
    };
    let i: BashInput = match input("bash", args) {
        Ok(i) => i,
        Err(e) => return Ok(keep(txn, e)),
    };
    let command = i.command.filter(|c| !c.is_empty());
    let mut txn = txn;
    if i.restart == Some(true) {
        let (t, _) = tb.shell_named(txn, "", true, limits, env, name)?;
        txn = t;
        shell.gone = false;
        if command.is_none() {
            return Ok(keep(txn, ToolOutput::text("bash session restarted")));
        }
    }
    let Some(command) = command else {
        return Ok(keep(txn, ToolOutput::error("bash: command is required")));
    };
    if shell.gone {
        return Ok(keep(txn, ToolOutput::error(DID_NOT_RUN)));
    }
    // The reference's default, and its cap; a session that set its own call timeout keeps it
    // as the default.
    let secs = match i.timeout_ms {
        Some(t) if t > 0 => (t as f64 / 1000.0).min(BASH_TIMEOUT_SECS),
        _ => session_timeout.map_or(BASH_TIMEOUT_SECS, |d| d.as_secs_f64()),
    };
    let limits = Limits {
        timeout: std::time::Duration::from_secs_f64(secs),
        ..limits.clone()
    };
    match tb.shell_named(txn, &command, false, &limits, env, name) {
        Ok((mut txn, report)) => {
            let exited = txn
                .resolve(burrow_store::ROOT_INO, &super::shell_exited_in(name), false)
                .is_ok();
            let stdout = String::from_utf8_lossy(&report.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&report.stderr).into_owned();
            let failed = report.exit_code != 0;
            let mut text = combine(&stdout, &stderr, failed);
            if utf16_len(&text) > BASH_OUTPUT_LIMIT {
                text = cut(&mut txn, text, shell, limits.det.as_ref())?;
            } else {
                text = strip_ansi(&text).trim_end_matches('\n').to_string();
            }
            if exited {
                shell.gone = true;
                let shown = if text.is_empty() {
                    "(no output)"
                } else {
                    &text
                };
                text = format!("{shown}\n{SHELL_GONE}");
            }
            let output = if failed {
                ToolOutput::error(if text.is_empty() {
                    "(no output)".to_string()
                } else {
                    text
                })
            } else {
                ToolOutput::text(text)
            };
            Ok(keep(txn, output))
        }
        // The command is stopped and the call rolled back (so what it printed is not kept);
        // the shell is gone, as the reference kills its process group.
        Err(RunError::Timeout(_)) => {
            shell.gone = true;
            let note = format!("\ncommand timed out after {}s\n", py_general(secs));
            let text = strip_ansi(&combine("", &note, true));
            Ok(Outcome {
                txn: None,
                output: ToolOutput::error(format!("{}\n{SHELL_GONE}", text.trim_end_matches('\n'))),
            })
        }
        Err(e) => Err(e),
    }
}

/// stdout then stderr, or stderr first when the command failed, with a newline between
/// them when there is any stderr (each keeps its own trailing newline).
fn combine(stdout: &str, stderr: &str, failed: bool) -> String {
    let sep = if stderr.is_empty() { "" } else { "\n" };
    if failed {
        format!("{stderr}{sep}{stdout}")
    } else {
        format!("{stdout}{sep}{stderr}")
    }
}

/// Length in UTF-16 code units, as Python's `len(s.encode("utf-16-le")) // 2`.
fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The reference's cut of a long output: its first [`BASH_OUTPUT_LIMIT`] UTF-16 code units,
/// the number of lines left out, and the whole output saved to a new file under
/// `/tmp/bash-output-*/` (the shell's previous one removed), which `read` and `grep` may
/// open.
fn cut(
    txn: &mut Txn,
    full: String,
    shell: &mut Shell,
    det: Option<&crate::determinism::Determinism>,
) -> Result<String, RunError> {
    let mut units = 0;
    let mut end = 0;
    for (i, c) in full.char_indices() {
        if units + c.len_utf16() > BASH_OUTPUT_LIMIT {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    let kept = &full[..end];
    let cut_lines = 1 + full.matches('\n').count() - kept.matches('\n').count();
    let (what, saved) = if full.len() > SAVED_OUTPUT_MAX {
        let mut at = SAVED_OUTPUT_MAX;
        while !full.is_char_boundary(at) {
            at -= 1;
        }
        ("First 32 MiB of output", &full[..at])
    } else {
        ("Full output", full.as_str())
    };
    let saved_to = match save_output(txn, saved.as_bytes(), shell, det) {
        Ok(path) => format!(
            "{what} saved to: {path} \u{2014} use read with view_range to read specific portions. "
        ),
        Err(e) => {
            tracing::warn!(error = %e, "could not save a long bash output");
            String::new()
        }
    };
    Ok(strip_ansi(&format!(
        "{kept}\n\n... [{cut_lines} lines truncated] {saved_to}..."
    )))
}

/// Writes `bytes` to `/tmp/bash-output-XXXXXXXX/tmpXXXXXXXX.txt` (names as Python's
/// `tempfile` makes them) in the call's transaction, removing the shell's previous one. In a
/// deterministic call the names come from its generator.
fn save_output(
    txn: &mut Txn,
    bytes: &[u8],
    shell: &mut Shell,
    det: Option<&crate::determinism::Determinism>,
) -> Result<String, String> {
    let tmp = |guest: &str| crate::wasi_fs::persisted_store_path(guest).unwrap_or_default();
    if let Some(old) = shell.saved.take() {
        let _ = txn.remove_all(&tmp(&old));
    }
    let dir = format!("/tmp/bash-output-{}", temp_name(det));
    let file = format!("{dir}/tmp{}.txt", temp_name(det));
    txn.mkdir_all(&tmp(&dir)).map_err(|e| e.to_string())?;
    let ino = txn
        .write_file(&tmp(&file), bytes)
        .map_err(|e| e.to_string())?;
    let _ = txn.set_mode(ino, 0o600);
    shell.saved = Some(dir);
    Ok(file)
}

/// Eight characters of Python's `tempfile` alphabet.
fn temp_name(det: Option<&crate::determinism::Determinism>) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_";
    let mut b = [0u8; 8];
    match det {
        Some(d) => d.fill(&mut b),
        None => {
            let _ = getrandom::fill(&mut b);
        }
    }
    b.iter()
        .map(|x| ALPHABET[*x as usize % ALPHABET.len()] as char)
        .collect()
}

/// Python's `format(x, "g")`: `0.7`, `295`, `1.5`.
fn py_general(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// Read a text file (raw, no line numbers), or an image or PDF as a content block.
#[derive(Deserialize, JsonSchema)]
pub struct ReadInput {
    /// Path of the file (absolute under /workspace, or relative to it).
    pub file_path: String,
    /// `[start, end]` lines, 1-indexed inclusive; end <= 0 reads to the end of the file.
    pub view_range: Option<Vec<i64>>,
}

/// Where the file tools may reach: the workspace, the directories the session's tool roots
/// name (memory stores mounted elsewhere, as the reference's `allowed_roots`), and the
/// shells' saved outputs, which `read` and `grep` may open though they lie outside.
pub struct Reach<'a> {
    shells: &'a Shells,
    roots: &'a [super::ToolRoot],
}

impl Reach<'_> {
    /// A path to read: relative to the workspace root when inside it, else absolute.
    fn readable(&self, p: &str) -> Option<String> {
        if let Some(rel) = workspace_path(super::WORKSPACE, p) {
            return Some(rel);
        }
        let abs = super::guest_path(super::WORKSPACE, p)?;
        (self.shells.holds(&abs) || self.roots.iter().any(|r| r.holds(&abs))).then_some(abs)
    }

    /// A path `op` may write: as [`Reach::readable`], but never under a read-only root
    /// (the reference's `_reject_read_only`) nor into a saved output.
    fn writable(&self, op: &str, p: &str) -> Result<String, ToolOutput> {
        let abs = super::guest_path(super::WORKSPACE, p).ok_or_else(|| outside(op, p))?;
        if let Some(root) = self.roots.iter().find(|r| r.read_only && r.holds(&abs)) {
            return Err(ToolOutput::error(format!(
                "{op}: {p} is inside read-only directory {}",
                root.path.trim_end_matches('/')
            )));
        }
        if let Some(rel) = workspace_path(super::WORKSPACE, p) {
            return Ok(rel);
        }
        if self.roots.iter().any(|r| r.holds(&abs)) {
            return Ok(abs);
        }
        Err(outside(op, p))
    }
}

fn read(c: &mut Call<'_>, args: &Value, reach: &Reach<'_>) -> Result<ToolOutput, RunError> {
    let i: ReadInput = match input("read", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let Some(rel) = reach.readable(p) else {
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
        Some(MAX_READ_BYTES)
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
    if size > MAX_READ_BYTES && slice.len() as u64 > MAX_READ_BYTES {
        return Ok(ToolOutput::error(if end - start == 1 {
            format!(
                "read: line {} of {p} alone exceeds {MAX_READ_BYTES}-byte limit. The read tool cannot return part of a line, so view_range cannot narrow this further.",
                start + 1
            )
        } else {
            format!(
                "read: view_range [{s}, {e}] of {p} exceeds {MAX_READ_BYTES}-byte limit. Narrow the view_range to read a smaller portion."
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

fn write(c: &mut Call<'_>, args: &Value, reach: &Reach<'_>) -> Result<ToolOutput, RunError> {
    let i: WriteInput = match input("write", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let rel = match reach.writable("write", p) {
        Ok(r) => r,
        Err(e) => return Ok(e),
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

fn edit(c: &mut Call<'_>, args: &Value, reach: &Reach<'_>) -> Result<ToolOutput, RunError> {
    let i: EditInput = match input("edit", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let p = &i.file_path;
    let rel = match reach.writable("edit", p) {
        Ok(r) => r,
        Err(e) => return Ok(e),
    };
    let replace_all = i.replace_all.unwrap_or(false);
    let r = c.op(proto::Edit {
        path: rel,
        old: i.old_string.clone(),
        new: i.new_string.clone(),
        replace_all,
        max_bytes: Some(MAX_EDIT_BYTES),
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
        Err(Failure::Grows { count, size, limit }) => ToolOutput::error(format!(
            "edit: {count} replacements would make {p} {size} bytes, exceeds {limit}-byte limit."
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

fn glob(c: &mut Call<'_>, args: &Value, reach: &Reach<'_>) -> Result<ToolOutput, RunError> {
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
        Some(p) => match reach.readable(p) {
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

fn grep(c: &mut Call<'_>, args: &Value, reach: &Reach<'_>) -> Result<ToolOutput, RunError> {
    let i: GrepInput = match input("grep", args) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let root = match i.path.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => match reach.readable(p) {
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
    use super::*;

    #[test]
    fn output_order_and_cut() {
        assert_eq!(combine("hi\n", "err\n", false), "hi\n\nerr\n");
        assert_eq!(combine("hi\n", "err\n", true), "err\n\nhi\n");
        assert_eq!(combine("", "err\n", false), "\nerr\n");
        assert_eq!(combine("out\n", "", true), "out\n");
        assert_eq!(utf16_len("a\u{1F600}"), 3);
        assert_eq!(py_general(0.7), "0.7");
        assert_eq!(py_general(295.0), "295");
    }
}
