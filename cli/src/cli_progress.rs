//! The CLI's progress bars (indicatif) for the long copies: `session new --from DIR|TAR` and
//! `export`. Drawn on standard error only when it is a terminal, so scripts, pipes and logs
//! see only the final summary line; warnings printed meanwhile go above the bar.

use std::io::IsTerminal;
use std::path::Path;

use burrow_store::ImportStats;
use indicatif::{ProgressBar, ProgressStyle};

const BAR: &str = "{prefix} [{wide_bar}] {bytes}/{total_bytes} {binary_bytes_per_sec} {msg}";
const SPINNER: &str = "{prefix} {spinner} {bytes} ({binary_bytes_per_sec}) {msg}";

/// A progress bar over bytes copied, or nothing when standard error is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for `verb` ("importing", "exporting") over `total` bytes; a spinner with the
    /// running count and rate when the total is unknown.
    pub fn new(verb: &str, total: Option<u64>) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let (bar, template) = match total {
            Some(t) => (ProgressBar::new(t), BAR),
            None => (ProgressBar::new_spinner(), SPINNER),
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(verb.to_string());
        Progress { bar: Some(bar) }
    }

    /// The running totals after a file.
    pub fn update(&self, s: &ImportStats) {
        if let Some(bar) = &self.bar {
            // A tar's members can hold more than the file's size says (a sparse member);
            // the bar then grows rather than overflowing.
            if bar.length().is_some_and(|len| s.bytes > len) {
                bar.set_length(s.bytes);
            }
            bar.set_position(s.bytes);
            bar.set_message(format!("{} files", s.files));
        }
    }

    /// Prints a line on standard error above the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar (the caller prints the summary).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bytes an import of `source` copies, for the bar's length: the regular files' sizes
/// below a directory (symlinks not followed), or a tar file's size. Only worked out on a
/// terminal, where the bar is drawn.
pub fn import_size(source: &Path) -> Option<u64> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let meta = std::fs::symlink_metadata(source).ok()?;
    if !meta.is_dir() {
        return Some(meta.len());
    }
    let mut total = 0u64;
    let mut todo = vec![source.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    Some(total)
}
