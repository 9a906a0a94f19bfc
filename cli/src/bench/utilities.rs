//! Rows `search.grep_rn`, `search.rg_n`, `search.find_name`, `search.cat` and `search.wc_l`:
//! the shell's reading utilities over a source-like tree (100 MB, 10,000 files in a full
//! run), each against the host's own program (GNU grep, ripgrep, GNU find, cat and wc) on the
//! same tree on disk, in the same run. The baseline runs the same command line under
//! `bash -c`, so globs and redirections mean the same on both sides (bash execs a lone
//! command, so it adds only its start, about a millisecond).

use std::path::Path;
use std::process::Command;

use super::{BenchError, Ctx, Measure, R, time_it};
use burrow_host::session::Sandbox;

/// (row, command line, the host program the baseline needs, what that program is).
const ROWS: &[(&str, &str, &str, &str)] = &[
    ("search.grep_rn", "grep -rn TODO .", "grep", "GNU grep"),
    ("search.rg_n", "rg -n TODO", "rg", "ripgrep"),
    (
        "search.find_name",
        "find . -name '*.rs'",
        "find",
        "GNU find",
    ),
    (
        "search.cat",
        "cat src/*/*/*.rs >/dev/null",
        "cat",
        "GNU cat",
    ),
    ("search.wc_l", "wc -l src/*/*/*.rs", "wc", "GNU wc"),
];

/// Whether `cx` wants any of these rows.
pub(super) fn wanted(cx: &Ctx) -> bool {
    ROWS.iter().any(|r| cx.wants(r.0))
}

/// Measures each row `cx` wants in session `id` of `sb`, which holds a copy of `tree`.
pub(super) fn rows(
    cx: &mut Ctx,
    n: usize,
    sb: &Sandbox,
    id: &str,
    tree: &Path,
    report: &mut dyn FnMut(&Measure),
) -> R<()> {
    for &(name, command, program, what) in ROWS {
        if !cx.wants(name) {
            continue;
        }
        // Output is expected except where the command sends it to /dev/null.
        let quiet = command.contains("/dev/null");
        let native = Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        let baseline = if native {
            Some(
                time_it(n, 1e3, || {
                    let out = Command::new("bash")
                        .args(["-c", command])
                        .current_dir(tree)
                        .output()?;
                    if !out.status.success() || (out.stdout.is_empty() && !quiet) {
                        return Err(BenchError::Other(format!(
                            "{name}: `bash -c {command:?}` failed: {}",
                            String::from_utf8_lossy(&out.stderr)
                        )));
                    }
                    Ok(())
                })?
                .0,
            )
        } else {
            None
        };
        let r = time_it(n, 1e3, || {
            let res = sb.sh(id, command)?;
            let out = &res.report;
            if out.exit_code != 0 || (out.stdout.is_empty() && !quiet) {
                return Err(BenchError::Other(format!(
                    "{name}: burrow's `{command}` exited {}: {}",
                    out.exit_code,
                    String::from_utf8_lossy(&out.stderr)
                )));
            }
            Ok(())
        })?;
        let note = if native {
            format!("`{command}`; baseline: the same under bash with {what} on the tree on disk")
        } else {
            format!("`{command}`; {what} (`{program}`) not installed: no baseline")
        };
        cx.record(name, "ms", r, baseline, &note, report);
    }
    Ok(())
}
