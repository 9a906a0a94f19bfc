//! Bash, as Claude Code runs it: every command is a whole fresh shell (`bash -c`: variables,
//! functions, aliases and traps do not carry over; an EXIT trap runs when the command ends)
//! in the working directory the previous one left; a directory
//! outside the workspace is reset, with Claude Code's note. Output is stdout and stderr as
//! written; a failing command answers `Exit code N` first; output over 30,000 characters is
//! saved to a file in the sandbox and previewed.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    BASH_DEFAULT_TIMEOUT_MS, BASH_MAX_CHARS, BASH_MAX_TIMEOUT_MS, Call, Field, Kind, Outcome,
    ToolOutput, input, js_len, opt, persist, refuse, req,
};
use crate::{Limits, RunError};

/// Error output longer than this is cut in the middle.
const ERROR_MAX_CHARS: usize = 10_000;

/// Run a shell command. Output is stdout and stderr merged; the working directory persists
/// between calls, variables do not.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to execute.
    pub command: String,
    /// Optional timeout in milliseconds (max 600000).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Clear, concise description of what this command does in 5-10 words.
    #[serde(default)]
    pub description: Option<String>,
    /// Not supported by burrow (every call runs to completion); must be false or absent.
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// burrow always runs commands in its sandbox; must be false or absent.
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: Option<bool>,
}

const FIELDS: &[Field] = &[
    req("command", Kind::Str),
    opt("timeout", Kind::Num),
    opt("description", Kind::Str),
    opt("run_in_background", Kind::Bool),
    opt("dangerouslyDisableSandbox", Kind::Bool),
];

pub(super) fn bash(mut c: Call<'_>, args: &Value) -> Result<Outcome, RunError> {
    let i: BashInput = match input("Bash", args, FIELDS) {
        Ok(i) => i,
        Err(e) => return Ok(c.finish(e)),
    };
    if i.run_in_background == Some(true) {
        return Ok(c.finish(refuse(
            "run_in_background is not supported: every burrow tool call runs to completion as one transaction",
        )));
    }
    if i.dangerously_disable_sandbox == Some(true) {
        return Ok(c.finish(refuse(
            "dangerouslyDisableSandbox is not supported: burrow runs every command in its sandbox",
        )));
    }
    let timeout_ms = i
        .timeout
        .filter(|t| *t >= 1.0)
        .map_or(BASH_DEFAULT_TIMEOUT_MS, |t| t as u64)
        .min(BASH_MAX_TIMEOUT_MS);
    let limits = Limits {
        timeout: std::time::Duration::from_millis(timeout_ms),
        ..c.limits.clone()
    };
    // A fresh shell in the directory the last command left.
    let report = match c.shell_whole(&i.command, &limits) {
        Ok(report) => report,
        Err(RunError::Timeout(_)) => {
            return Ok(c.abort(ToolOutput::error(format!(
                "Exit code 143\nCommand timed out after {}",
                duration(timeout_ms)
            ))));
        }
        Err(e) => return Err(e),
    };
    let mut output = String::from_utf8_lossy(&report.merged).into_owned();
    if report.merged_dropped > 0 {
        // The run kept only the tail of a larger output: say so rather than pass it off as
        // the whole.
        output.insert_str(
            0,
            &format!(
                "[burrow kept the last {} bytes of this command's output; the first {} were dropped]\n",
                report.merged.len(),
                report.merged_dropped
            ),
        );
    }
    if is_error(&i.command, report.exit_code) {
        let text = format!("Exit code {}\n{output}", report.exit_code);
        return Ok(c.finish(ToolOutput::error(cut_middle(text.trim()))));
    }
    let reset = c
        .shell_cwd()
        .is_some_and(|d| super::super::workspace_path("/", &d).is_none());
    let mut parts = Vec::new();
    let stdout = strip_blank_head(&output).trim_end().to_string();
    if js_len(&output) > BASH_MAX_CHARS {
        parts.push(persist(&mut c, &output, &stdout, output.len() as u64)?);
    } else if !stdout.is_empty() {
        parts.push(stdout);
    }
    if reset {
        parts.push(format!(
            "Shell cwd was reset to {}",
            super::super::WORKSPACE
        ));
    }
    Ok(c.finish(ToolOutput::text(parts.join("\n"))))
}

/// Whether an exit status is a failure, as Claude Code interprets it: for grep, rg, egrep,
/// fgrep, find, diff, test, `[` (and `git diff`, `git grep`) status 1 is an answer ("no
/// matches", "files differ", "false"), not an error. The command is the last one of a
/// pipeline or list.
fn is_error(command: &str, code: i32) -> bool {
    if code == 0 {
        return false;
    }
    let last = last_command(command);
    let mut words = last.split_whitespace();
    let first = words.next().unwrap_or("");
    let lenient = match first {
        "grep" | "rg" | "egrep" | "fgrep" | "find" | "diff" | "test" | "[" => true,
        "git" => {
            let mut sub = None;
            let mut skip = false;
            for w in words {
                if skip {
                    skip = false;
                } else if w == "-C" || w == "-c" {
                    skip = true;
                } else if !w.starts_with('-') {
                    sub = Some(w);
                    break;
                }
            }
            matches!(sub, Some("diff" | "grep"))
        }
        _ => false,
    };
    !(lenient && code == 1)
}

/// The last simple command of `command` (after the last `|`, `;`, `&&`, `||`, `&` or
/// newline outside quotes).
fn last_command(command: &str) -> &str {
    let bytes = command.as_bytes();
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut start = 0;
    for (at, &b) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match b {
            b'\\' if !single => escaped = true,
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            // `&` of a redirection (`2>&1`, `&>`) does not end a command.
            b'&' if at > 0 && matches!(bytes[at - 1], b'>' | b'<') => {}
            b'&' if bytes.get(at + 1) == Some(&b'>') => {}
            b'|' | b';' | b'&' | b'\n' if !single && !double => start = at + 1,
            _ => {}
        }
    }
    let tail = command[start..].trim();
    if tail.is_empty() && start > 0 {
        last_command(command[..start - 1].trim_end_matches(['|', '&', ';', '\n', ' ']))
    } else {
        tail
    }
}

/// Leading blank lines removed (Claude Code's `/^(\s*\n)+/`).
fn strip_blank_head(text: &str) -> &str {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if line.ends_with('\n') && line.trim().is_empty() {
            start += line.len();
        } else {
            break;
        }
    }
    &text[start..]
}

/// Error output over 10,000 characters: the first and last 5,000 around a count of what was
/// cut.
fn cut_middle(text: &str) -> String {
    let n = text.chars().count();
    if n <= ERROR_MAX_CHARS {
        return text.to_string();
    }
    let half = ERROR_MAX_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!(
        "{head}\n\n... [{} characters truncated] ...\n\n{tail}",
        n - ERROR_MAX_CHARS
    )
}

/// Claude Code's durations: `45s`, `2m 0s`, `1h 0m 0s`.
fn duration(ms: u64) -> String {
    if ms < 60_000 {
        return format!("{}s", ms / 1000);
    }
    let (mut h, mut m, mut s) = (ms / 3_600_000, (ms % 3_600_000) / 60_000, 0u64);
    s += ((ms % 60_000) as f64 / 1000.0).round() as u64;
    if s == 60 {
        s = 0;
        m += 1;
    }
    if m == 60 {
        m = 0;
        h += 1;
    }
    if h > 0 {
        format!("{h}h {m}m {s}s")
    } else {
        format!("{m}m {s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_texts_follow_claude_code() {
        assert!(!is_error("grep x f", 1));
        assert!(is_error("grep x f", 2));
        assert!(!is_error("cat f | grep x", 1));
        assert!(is_error("grep x f && false", 1));
        assert!(!is_error("git -C d diff --quiet", 1));
        assert!(is_error("git status", 1));
        assert!(is_error("echo '|grep'", 1));
        assert!(!is_error("grep x f 2>&1", 1));
        assert!(!is_error("grep x f &>/dev/null", 1));
        assert_eq!(last_command("a | b 'c|d'"), "b 'c|d'");
        assert_eq!(strip_blank_head("\n  \nx\n"), "x\n");
        assert_eq!(duration(1000), "1s");
        assert_eq!(duration(120_000), "2m 0s");
        let long = "a".repeat(20_012);
        let cut = cut_middle(&long);
        assert!(cut.contains("\n\n... [10012 characters truncated] ...\n\n"));
        assert_eq!(
            cut.len(),
            10_000 + "\n\n... [10012 characters truncated] ...\n\n".len()
        );
    }
}
