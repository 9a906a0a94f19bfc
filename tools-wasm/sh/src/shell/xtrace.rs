//! `set -x` output as bash writes it: the expanded `$PS4` (none when it is unset), then the
//! words, each quoted only when it needs to be (`'1 2'`, `\'`, `$'a\003'`), and the
//! assignments a command makes (`x=1`).

use std::cell::RefCell;

use crate::shell::Shell;
use crate::shell::io::Io;

thread_local! {
    /// The trace text of the assignment just made (`x=1`, `a+=(2)`), while tracing.
    static ASSIGNED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Notes an assignment for the trace (`name=value` as it is to be shown).
pub fn note(text: String) {
    ASSIGNED.with(|a| a.borrow_mut().push(text));
}

/// The assignments noted since the last call.
pub fn take() -> Vec<String> {
    ASSIGNED.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

/// A word as bash's trace shows it.
pub fn quote(w: &str) -> String {
    if w.is_empty() {
        return "''".to_string();
    }
    if w.chars()
        .any(|c| (c.is_control() && c != '\t' && c != '\n') || c == '\u{7f}')
    {
        return ansi_c(w);
    }
    if !has_metas(w) {
        return w.to_string();
    }
    if w == "'" {
        return "\\'".to_string();
    }
    format!("'{}'", w.replace('\'', "'\\''"))
}

/// An assignment's value as the trace shows it after `name=`.
pub fn quote_value(v: &str) -> String {
    if v.is_empty() {
        return String::new();
    }
    quote(v)
}

/// Whether `w` has a character the shell would read specially.
fn has_metas(w: &str) -> bool {
    let mut prev = None;
    for (i, c) in w.chars().enumerate() {
        let special = match c {
            ' ' | '\t' | '\n' | '\'' | '"' | '\\' | '|' | '&' | ';' | '(' | ')' | '<' | '>'
            | '!' | '{' | '}' | '*' | '[' | '?' | ']' | '^' | '$' | '`' => true,
            '~' => i == 0 || matches!(prev, Some('=' | ':')),
            '#' => i == 0,
            _ => false,
        };
        if special {
            return true;
        }
        prev = Some(c);
    }
    false
}

fn ansi_c(w: &str) -> String {
    sh_utility::format::ansi_c_quote(w)
}

/// A value as bash writes it to be read again (`${x@Q}`, `declare -p`, `set`): `$'...'`
/// when it has a control character, else in single quotes (`plain` leaves a word with
/// nothing special bare, as `set` does).
pub fn reusable(v: &str, plain: bool) -> String {
    if v.chars().any(char::is_control) {
        return ansi_c(v);
    }
    if plain && !has_metas(v) {
        return v.to_string();
    }
    format!("'{}'", v.replace('\'', "'\\''"))
}

impl Shell {
    /// The trace line for `text` (already quoted): the expanded `$PS4` before it. An error
    /// in `$PS4` leaves it as written, as bash goes on with the command.
    pub fn trace_line(&mut self, text: &str) -> String {
        format!("{}{text}\n", self.trace_prefix())
    }

    /// The expanded `$PS4`.
    pub fn trace_prefix(&mut self) -> String {
        match self.get("PS4").map(str::to_string) {
            None => String::new(),
            Some(ps4) if !ps4.contains(['$', '`', '\\']) => ps4,
            Some(ps4) => {
                let status = self.last_status;
                let mut sub = self.clone();
                // Commands in $PS4 (`$(...)`) are not traced themselves.
                sub.options.xtrace = false;
                let quoted = format!("\"{}\"", ps4.replace('"', "\\\""));
                let r = crate::shell::expand::single(&mut sub, &quoted, &Io::discard());
                self.last_status = status;
                r.unwrap_or(ps4)
            }
        }
    }

    /// Traces a command's words (and the assignments noted before it).
    pub fn trace_words(&mut self, argv: &[String], io: &Io) {
        let mut parts = take();
        parts.extend(argv.iter().map(|w| quote(w)));
        let line = self.trace_line(&parts.join(" "));
        io.eprint(&line);
    }
}
