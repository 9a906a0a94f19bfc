//! The shell as a utility sees it.

use std::path::PathBuf;

use crate::io::Io;

/// How a command ended other than with a status: the interpreter's control flow, which a
/// utility may only end a shell with (`exit`) or pass through (a command it ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Break(u32),
    Continue(u32),
    Return(i32),
    Exit(i32),
    /// An error that ends the complete command it is in (an assignment to a readonly
    /// variable): a shell goes on with its next command, a subshell ends with the status.
    Abort(i32),
}

/// A command's outcome: its exit status, or control flow.
pub type Status = Result<i32, Flow>;

/// The shell as a utility sees it: where it is, its variables, and running commands. This is
/// all a utility may use of the interpreter; everything else it does is through its
/// arguments, its [`Io`] and the filesystem.
pub trait Ctx {
    /// The working directory (absolute).
    fn cwd(&self) -> &str;

    /// `p` resolved against the working directory.
    fn path(&self, p: &str) -> PathBuf {
        if p.starts_with('/') {
            PathBuf::from(p)
        } else if p.is_empty() {
            PathBuf::from(self.cwd())
        } else {
            PathBuf::from(self.cwd()).join(p)
        }
    }

    /// A shell variable's value.
    fn get(&self, name: &str) -> Option<&str>;

    /// The exported variables: a program's environment.
    fn exported(&self) -> Vec<(String, String)>;

    /// An exported variable's value (what a program started from the shell sees).
    fn env(&self, name: &str) -> Option<&str>;

    /// Runs one simple command (a function, builtin, utility or program on PATH) as the shell
    /// would, with `io` (`xargs`, `find -exec`, `env CMD`, `timeout`).
    fn dispatch(&mut self, argv: &[String], io: &Io) -> Status;

    /// Runs `script` in a copy of the shell (awk's `system()` and `cmd | getline`): its status.
    fn run_in_copy(&self, script: &str, io: &Io) -> i32;

    /// A copy of this context in another working directory (`git -C`).
    fn in_dir(&self, cwd: &str) -> Box<dyn Ctx + '_>;

    /// Runs `program` (an installed `.wasm` under /opt/burrow, by path) with `argv` (argv[0]
    /// first), `env` added to the exported variables, and `io`: the toolchain launchers.
    fn spawn_installed(
        &self,
        program: &str,
        argv: &[String],
        env: &[(String, String)],
        io: &Io,
    ) -> i32;
}

/// Whether the locale is a byte locale (not UTF-8): `wc -m` and friends count bytes then.
pub fn byte_locale(cx: &dyn Ctx) -> bool {
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|n| cx.get(n).filter(|v| !v.is_empty()))
        .unwrap_or("C.UTF-8")
        .to_ascii_lowercase();
    !(locale.contains("utf-8") || locale.contains("utf8"))
}
