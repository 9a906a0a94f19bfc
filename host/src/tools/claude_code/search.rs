//! Glob and Grep, as Claude Code runs them through ripgrep and shapes the output.
//!
//! - Glob is `rg --files --glob PATTERN --sort=modified --no-ignore --hidden`: files only,
//!   oldest first, hidden and ignored files included; a pattern without `/` matches a file
//!   name at any depth (gitignore rules), one with `/` is anchored at the search directory.
//! - Grep is `rg --hidden` with the VCS directories excluded and `.gitignore` honoured, lines
//!   over 500 bytes omitted (`--max-columns 500`), CRLF lines matched with their `\r`.
//!   Results name files relative to the cwd, context lines (`path-N-text`) too. Count rows
//!   are in path order and their totals count every file, shown or not. A pattern ripgrep
//!   rejects (a bad regex, a literal `\n` without `multiline`, an unknown type) fails the
//!   search with ripgrep's own message.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    Call, Failure, Field, GLOB_LIMIT, GREP_HEAD_LIMIT, Kind, ToolOutput, input, js_len, opt,
    persist, refuse, req, resolve,
};
use crate::RunError;

/// Grep results longer than this (characters) are saved to a file and previewed.
const GREP_MAX_CHARS: usize = 20_000;
/// Glob results longer than this are saved to a file and previewed.
const GLOB_MAX_CHARS: usize = 50_000;
/// ripgrep's `--max-columns` as Claude Code sets it.
const MAX_COLUMNS: usize = 500;
/// Directories Grep never searches.
const VCS_DIRS: &[&str] = &[".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];
/// The most files one Glob collects before sorting (then the count is a floor).
const GLOB_COLLECT_MAX: usize = 50_000;

/// `p` relative to `cwd` when it is under it, else unchanged (Claude Code's display path).
fn display(cwd: &str, p: &str) -> String {
    match p.strip_prefix(cwd) {
        Some(rest) if rest.starts_with('/') => rest[1..].to_string(),
        Some("") => String::new(),
        _ if cwd == "/" && p.starts_with('/') => p[1..].to_string(),
        _ => p.to_string(),
    }
}

fn not_found(what: &str, path: &str, cwd: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{what}: {path}. Note: your current working directory is {cwd}."
    ))
}

/// A search ripgrep refuses to start, in Claude Code's words around ripgrep's.
fn rg_rejected(message: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "Search failed \u{2014} ripgrep rejected the pattern, glob, or file type without searching:\nrg: {}",
        message.trim()
    ))
}

/// ripgrep's complaint about `pattern`, if it has one: the regex parse error of the pattern
/// as ripgrep compiles it (inside `(?:…)`), or, outside multiline mode, a literal line
/// break, which a line-oriented search could never match.
fn rg_pattern_error(pattern: &str, multiline: bool) -> Option<String> {
    if let Err(e) = regex::Regex::new(&format!("(?:{pattern})")) {
        return Some(e.to_string());
    }
    if multiline || pattern.contains('\n') {
        // (A pattern holding a real line break is several patterns to ripgrep.)
        return None;
    }
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    fn has_newline(h: &regex_syntax::hir::Hir) -> bool {
        use regex_syntax::hir::HirKind;
        match h.kind() {
            HirKind::Literal(l) => l.0.contains(&b'\n'),
            HirKind::Repetition(r) => has_newline(&r.sub),
            HirKind::Capture(c) => has_newline(&c.sub),
            HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(has_newline),
            HirKind::Empty | HirKind::Class(_) | HirKind::Look(_) => false,
        }
    }
    has_newline(&hir).then(|| {
        "the literal \"\\n\" is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched.".to_string()
    })
}

/// Find files by glob pattern, oldest first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The glob pattern to match files against (`**/*.rs`; a pattern without `/` matches
    /// file names at any depth).
    pub pattern: String,
    /// The directory to search in (default: the current working directory).
    #[serde(default)]
    pub path: Option<String>,
}

const GLOB_FIELDS: &[Field] = &[req("pattern", Kind::Str), opt("path", Kind::Str)];

/// Splits an absolute pattern into the directory before its first wildcard and the rest.
fn split_absolute(pattern: &str) -> (String, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let wild = parts
        .iter()
        .position(|p| p.contains(['*', '?', '[', '{']))
        .unwrap_or(parts.len().saturating_sub(1));
    let base = parts[..wild].join("/");
    let base = if base.is_empty() {
        "/".to_string()
    } else {
        base
    };
    (base, parts[wild..].join("/"))
}

/// A ripgrep override glob as the matcher takes it relative to the search directory.
fn rg_glob(pattern: &str) -> String {
    let trimmed = pattern.trim_end_matches('/');
    if let Some(anchored) = trimmed.strip_prefix('/') {
        anchored.to_string()
    } else if trimmed.contains('/') {
        trimmed.to_string()
    } else {
        format!("**/{trimmed}")
    }
}

pub(super) fn glob(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GlobInput = match input("Glob", args, GLOB_FIELDS) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let cwd = c.cwd();
    let given = i.path.clone().filter(|p| !p.is_empty());
    let (mut base, mut pattern) = (given.clone().unwrap_or_else(|| cwd.clone()), i.pattern);
    if pattern.starts_with('/') {
        let (b, p) = split_absolute(&pattern);
        base = b;
        pattern = p;
    }
    let (rel, _) = match resolve(c, &base) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let r = c.op(super::super::proto::Glob {
        pattern: rg_glob(&pattern),
        path: rel,
        limit: GLOB_COLLECT_MAX,
        files_only: true,
    })?;
    let shown_path = given.unwrap_or(base);
    let v = match r {
        Ok(v) => v,
        Err(Failure::NotFound) => {
            return Ok(not_found("Directory does not exist", &shown_path, &cwd));
        }
        Err(Failure::NotADirectory) => {
            return Ok(ToolOutput::error(format!(
                "Path is not a directory: {shown_path}"
            )));
        }
        Err(Failure::InvalidPattern { message }) => {
            return Ok(refuse(format!("Invalid glob pattern: {message}")));
        }
        Err(f) => return Ok(refuse(format!("{shown_path}: {}", f.reason()))),
    };
    let mut found: Vec<(i128, String)> = v
        .matches
        .iter()
        .filter_map(|m| Some((m.mtime_ns.parse().ok()?, super::absolute(&m.path))))
        .collect();
    let total = v.total;
    // Oldest first (ripgrep's --sort=modified); ties by path.
    found.sort();
    if found.is_empty() {
        return Ok(ToolOutput::text("No files found"));
    }
    let mut lines: Vec<String> = found
        .iter()
        .take(GLOB_LIMIT)
        .map(|(_, p)| display(&cwd, p))
        .collect();
    if total > GLOB_LIMIT {
        let shown = lines.len();
        lines.push(if total >= GLOB_COLLECT_MAX {
            format!(
                "(Showing the first {shown} files; there are more than {total} matches. Narrow the pattern or path to see the rest.)"
            )
        } else {
            format!(
                "(Showing {shown} of {total} matching files; {} more are not listed. Narrow the pattern or path to see the rest.)",
                total - shown
            )
        });
    }
    Ok(ToolOutput::text(within(
        c,
        lines.join("\n"),
        GLOB_MAX_CHARS,
    )?))
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
    /// Only files matching this glob (e.g. `*.js`, `*.{ts,tsx}`; several separated by spaces
    /// or commas; `!` excludes).
    #[serde(default)]
    pub glob: Option<String>,
    /// `content` (matching lines), `files_with_matches` (paths, default) or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Lines of context before each match (content mode).
    #[serde(default, rename = "-B")]
    pub before: Option<f64>,
    /// Lines of context after each match (content mode).
    #[serde(default, rename = "-A")]
    pub after: Option<f64>,
    /// Alias of context.
    #[serde(default, rename = "-C")]
    pub around: Option<f64>,
    /// Lines of context around each match (content mode).
    #[serde(default)]
    pub context: Option<f64>,
    /// Show line numbers (content mode; default true).
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Case insensitive search.
    #[serde(default, rename = "-i")]
    pub ignore_case: Option<bool>,
    /// Print only the matched parts of lines (content mode).
    #[serde(default, rename = "-o")]
    pub only_matching: Option<bool>,
    /// Only files of this type (rg --type: js, py, rust, go, java, ...).
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// Keep the first N lines or entries of the output (default 250, 0 = all).
    #[serde(default)]
    pub head_limit: Option<f64>,
    /// Skip the first N lines or entries before head_limit.
    #[serde(default)]
    pub offset: Option<f64>,
    /// Let `.` match newlines and patterns span lines.
    #[serde(default)]
    pub multiline: Option<bool>,
}

const GREP_FIELDS: &[Field] = &[
    req("pattern", Kind::Str),
    opt("path", Kind::Str),
    opt("glob", Kind::Str),
    opt("output_mode", Kind::Str),
    opt("-B", Kind::Num),
    opt("-A", Kind::Num),
    opt("-C", Kind::Num),
    opt("context", Kind::Num),
    opt("-n", Kind::Bool),
    opt("-i", Kind::Bool),
    opt("-o", Kind::Bool),
    opt("type", Kind::Str),
    opt("head_limit", Kind::Num),
    opt("offset", Kind::Num),
    opt("multiline", Kind::Bool),
];

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

/// Claude Code's split of the `glob` parameter: by whitespace, then by commas outside
/// braces.
fn split_globs(glob: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in glob.split_whitespace() {
        if part.contains('{') && part.contains('}') {
            out.push(part.to_string());
        } else {
            out.extend(part.split(',').filter(|s| !s.is_empty()).map(String::from));
        }
    }
    out
}

/// The window of `items` Grep returns: `offset` skipped, then `head_limit` (250 by default,
/// 0 for all). The limit is reported only when it cut something.
fn paginate<T>(items: Vec<T>, head_limit: Option<usize>, offset: usize) -> (Vec<T>, Option<usize>) {
    let rest: Vec<T> = items.into_iter().skip(offset).collect();
    match head_limit {
        Some(0) => (rest, None),
        limit => {
            let limit = limit.unwrap_or(GREP_HEAD_LIMIT);
            let cut = rest.len() > limit;
            (rest.into_iter().take(limit).collect(), cut.then_some(limit))
        }
    }
}

fn pagination(limit: Option<usize>, offset: usize) -> String {
    let mut parts = Vec::new();
    if let Some(l) = limit {
        parts.push(format!("limit: {l}"));
    }
    if offset > 0 {
        parts.push(format!("offset: {offset}"));
    }
    parts.join(", ")
}

/// A whole, non-negative count from a JSON number (ripgrep takes the integer part).
fn count(v: Option<f64>) -> Option<usize> {
    v.filter(|n| *n >= 0.0).map(|n| n as usize)
}

pub(super) fn grep(c: &mut Call<'_>, args: &Value) -> Result<ToolOutput, RunError> {
    let i: GrepInput = match input("Grep", args, GREP_FIELDS) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let cwd = c.cwd();
    let given = i.path.clone().filter(|p| !p.is_empty());
    let (rel, abs) = match resolve(c, given.as_deref().unwrap_or(&cwd)) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let Some(st) = c.stat(&rel) else {
        let shown = given.as_deref().unwrap_or(&cwd);
        return Ok(not_found("Path does not exist", shown, &cwd));
    };
    let single_file = st.kind != burrow_store::Kind::Dir;
    let mut globs = Vec::new();
    if let Some(t) = &i.file_type {
        match type_glob(t) {
            Some(g) => globs.push(g.to_string()),
            None => return Ok(rg_rejected(&format!("unrecognized file type: {t}"))),
        }
    }
    let (mut any, mut not) = (Vec::new(), Vec::new());
    for g in split_globs(i.glob.as_deref().unwrap_or("")) {
        match g.strip_prefix('!') {
            Some(n) => not.push(n.to_string()),
            None => any.push(g),
        }
    }
    let mode = i.output_mode.unwrap_or_default();
    let (before, after) = if mode == OutputMode::Content {
        match count(i.context).or(count(i.around)) {
            Some(n) => (n, n),
            None => (count(i.before).unwrap_or(0), count(i.after).unwrap_or(0)),
        }
    } else {
        (0, 0)
    };
    if let Some(message) = rg_pattern_error(&i.pattern, i.multiline.unwrap_or(false)) {
        return Ok(rg_rejected(&message));
    }
    let r = c.op(super::super::proto::Grep {
        pattern: i.pattern.clone(),
        path: rel,
        globs,
        any_globs: any,
        not_globs: not,
        ignore_case: i.ignore_case.unwrap_or(false),
        multiline: i.multiline.unwrap_or(false),
        gitignore: true,
        skip_dirs: VCS_DIRS.iter().map(|d| d.to_string()).collect(),
        keep_cr: true,
        before,
        after,
        ..Default::default()
    })?;
    let v = match r {
        Ok(v) => v,
        Err(Failure::NotFound) => {
            return Ok(not_found("Path does not exist", &abs, &cwd));
        }
        Err(Failure::InvalidPattern { message }) => return Ok(rg_rejected(&message)),
        Err(f) => return Ok(refuse(format!("{abs}: {}", f.reason()))),
    };
    let files: Vec<&super::super::proto::GrepFile> = v.files.iter().collect();
    let head = count(i.head_limit);
    let skip = count(i.offset).unwrap_or(0);
    let path_of = |f: &super::super::proto::GrepFile| super::absolute(&f.path);
    let text = match mode {
        OutputMode::FilesWithMatches => {
            let mut found: Vec<(i128, String)> = files
                .iter()
                .map(|f| (f.mtime_ns.parse().unwrap_or(0), path_of(f)))
                .collect();
            // Newest first; ties in the order JavaScript's localeCompare gives.
            found.sort_by(|a, b| {
                b.0.cmp(&a.0).then_with(|| {
                    a.1.to_lowercase()
                        .cmp(&b.1.to_lowercase())
                        .then_with(|| a.1.cmp(&b.1))
                })
            });
            let all = found.len();
            let (shown, limit) = paginate(found, head, skip);
            if shown.is_empty() && skip > 0 && all > 0 {
                format!(
                    "No entries at this offset. [Showing results with pagination = {}]",
                    pagination(limit, skip)
                )
            } else if shown.is_empty() {
                "No files found".to_string()
            } else {
                let p = pagination(limit, skip);
                let n = shown.len();
                format!(
                    "Found {n} file{}{}\n{}",
                    if n == 1 { "" } else { "s" },
                    if p.is_empty() {
                        String::new()
                    } else {
                        format!(" {p}")
                    },
                    shown
                        .iter()
                        .map(|(_, f)| display(&cwd, f))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
        }
        OutputMode::Count => {
            // Every file counts towards the totals; the rows shown are a window of them in
            // path order.
            let mut rows: Vec<(String, usize)> = files
                .iter()
                .map(|f| (path_of(f), f.lines.iter().filter(|l| l.is_match).count()))
                .collect();
            rows.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            let total: usize = rows.iter().map(|(_, n)| n).sum();
            let nfiles = rows.len();
            let (rows, limit) = paginate(rows, head, skip);
            let p = pagination(limit, skip);
            let body = if !rows.is_empty() {
                rows.iter()
                    .map(|(p, n)| format!("{}:{n}", display(&cwd, p)))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else if total > 0 {
                "No entries at this offset".to_string()
            } else {
                "No matches found".to_string()
            };
            format!(
                "{body}\n\nFound {total} total {} across {nfiles} {}.{}",
                if total == 1 {
                    "occurrence"
                } else {
                    "occurrences"
                },
                if nfiles == 1 { "file" } else { "files" },
                if p.is_empty() {
                    String::new()
                } else {
                    format!(" with pagination = {p}")
                }
            )
        }
        OutputMode::Content => {
            let rows = content_lines(&i, &files, single_file, before > 0 || after > 0, &cwd);
            let total = rows.len();
            let (rows, limit) = paginate(rows, head, skip);
            let body = if !rows.is_empty() {
                rows.join("\n")
            } else if skip > 0 && total > 0 {
                "No entries at this offset".to_string()
            } else {
                "No matches found".to_string()
            };
            let p = pagination(limit, skip);
            if p.is_empty() {
                body
            } else {
                format!("{body}\n\n[Showing results with pagination = {p}]")
            }
        }
    };
    Ok(ToolOutput::text(within(c, text, GREP_MAX_CHARS)?))
}

/// `text`, or its saved-file preview when it is longer than `max` characters.
fn within(c: &mut Call<'_>, text: String, max: usize) -> Result<String, RunError> {
    let len = js_len(&text);
    if len > max {
        persist(c, &text, &text, len as u64)
    } else {
        Ok(text)
    }
}

/// ripgrep's content output with paths relative to `cwd` (none for a single file):
/// `path:N:text` for matches, `path-N-text` for context, `--` between groups; empty lines
/// dropped as Claude Code drops them.
fn content_lines(
    i: &GrepInput,
    files: &[&super::super::proto::GrepFile],
    single: bool,
    context: bool,
    cwd: &str,
) -> Vec<String> {
    let numbers = i.line_numbers.unwrap_or(true);
    let only = i.only_matching.unwrap_or(false);
    let rx = if only {
        regex::RegexBuilder::new(&i.pattern)
            .case_insensitive(i.ignore_case.unwrap_or(false))
            .multi_line(true)
            .dot_matches_new_line(i.multiline.unwrap_or(false))
            .build()
            .ok()
    } else {
        None
    };
    let mut rows: Vec<String> = Vec::new();
    for f in files {
        let path = display(cwd, &super::absolute(&f.path));
        let mut last: Option<u64> = None;
        for l in &f.lines {
            let n = l.line as u64;
            let text = l.text.as_str();
            let is_match = l.is_match;
            let gap = match last {
                Some(p) => n > p + 1,
                None => !rows.is_empty(),
            };
            if context && gap {
                rows.push("--".to_string());
            }
            last = Some(n);
            let sep = if is_match { ':' } else { '-' };
            let mut prefix = String::new();
            if !single {
                prefix.push_str(&path);
                prefix.push(sep);
            }
            if numbers {
                prefix.push_str(&format!("{n}{sep}"));
            }
            let shown = if text.len() > MAX_COLUMNS {
                if is_match {
                    "[Omitted long matching line]".to_string()
                } else {
                    "[Omitted long context line]".to_string()
                }
            } else {
                text.to_string()
            };
            match &rx {
                Some(rx) if is_match && text.len() <= MAX_COLUMNS => {
                    for m in rx.find_iter(text).filter(|m| !m.as_str().is_empty()) {
                        rows.push(format!("{prefix}{}", m.as_str()));
                    }
                }
                Some(_) if !is_match => {}
                _ => rows.push(format!("{prefix}{shown}")),
            }
        }
    }
    rows.retain(|r| !r.is_empty());
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_globs_follow_ripgrep() {
        assert_eq!(display("/workspace", "/workspace/a/b"), "a/b");
        assert_eq!(display("/workspace/src", "/workspace/a"), "/workspace/a");
        assert_eq!(rg_glob("*.md"), "**/*.md");
        assert_eq!(rg_glob("src/*"), "src/*");
        assert_eq!(rg_glob("/src/*"), "src/*");
        assert_eq!(
            split_absolute("/workspace/src/**/*.py"),
            ("/workspace/src".to_string(), "**/*.py".to_string())
        );
        assert_eq!(
            split_globs("*.ts,*.js *.{a,b}"),
            ["*.ts", "*.js", "*.{a,b}"]
        );
        assert_eq!(paginate(vec![1, 2, 3], Some(2), 0), (vec![1, 2], Some(2)));
        assert_eq!(paginate(vec![1, 2, 3], Some(0), 1), (vec![2, 3], None));
        assert_eq!(pagination(Some(3), 2), "limit: 3, offset: 2");
    }
}
