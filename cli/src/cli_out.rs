//! The CLI's standard output, written as Unix tools write theirs: when the reader has gone
//! (`burrow session ls | grep -q x`, `burrow log S | head -1`) the process ends silently by
//! SIGPIPE, as `ls | head -1` does, instead of panicking ("failed printing to stdout: Broken
//! pipe") or printing an error. Rust ignores SIGPIPE so that servers survive a closed socket;
//! burrow restores its default action only at the moment standard output is found closed. Any
//! other failure to write (a full disk behind a redirection) is reported and exits 1.

use std::io::Write as _;

/// Writes `bytes` to standard output (see the module comment for failures).
pub fn write(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        fail(&e);
    }
}

fn fail(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        // SAFETY: restoring a signal's default action and raising it in this thread; nothing
        // in burrow installs a handler for SIGPIPE.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        // Not reached on Unix; the shell's status for a SIGPIPE death otherwise.
        std::process::exit(141);
    }
    let _ = writeln!(
        std::io::stderr(),
        "burrow: cannot write to standard output: {e}"
    );
    std::process::exit(1);
}

/// `println!` through [`write`].
macro_rules! outln {
    () => {
        $crate::cli_out::write(b"\n")
    };
    ($($arg:tt)*) => {
        $crate::cli_out::write(format!("{}\n", format_args!($($arg)*)).as_bytes())
    };
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli_out::write(format!($($arg)*).as_bytes())
    };
}
