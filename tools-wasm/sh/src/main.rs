//! sh: burrow's bash-compatible shell, one WASI component.
//!
//! `sh -c 'COMMAND'` runs COMMAND in the session's shell state (loaded from and saved to the
//! workspace, see `state.rs`), with stdout and stderr streamed and the exit status reported
//! through `wasi:cli/exit.exit-with-code`. `sh --restart` resets the state;
//! `--shell NAME` runs in the session's named shell NAME (its own cwd and variables). Without -c the
//! script is read from stdin; with -c, stdin is the command's. `--no-state` runs a whole
//! shell (`bash -c`: fresh in `$PWD`, its EXIT trap runs at the end, nothing saved);
//! `--whole-shell` is the same but saves the state it ends with (the Claude Code family
//! keeps the cwd that way). `sh --stage NAME ARGS...` runs one built-in utility as a stage
//! of a streaming pipeline (started by a shell through `burrow:sandbox/process.start`): its
//! stdin is read as the utility asks, its variables are the environment.

mod shell;
use sh_utility::sys;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--stage") && args.len() > 1 {
        sys::exit(stage(&args[1..]));
    }
    // The host's options come before `-c` (never read from the script after it).
    let mut restart = false;
    let mut stateless = false;
    let mut whole = false;
    let mut script = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            // One of the session's named shells (a subagent thread's own).
            "--shell" => {
                let name = args.get(i + 1).map(String::as_str).unwrap_or("");
                if !shell::state::select(name) {
                    eprintln!("sh: --shell: invalid shell name: {name}");
                    sys::exit(2);
                }
                i += 1;
            }
            "--restart" => restart = true,
            "--no-state" => stateless = true,
            "--whole-shell" => whole = true,
            "-c" => {
                script = Some(args.get(i + 1).cloned().unwrap_or_default());
                break;
            }
            _ => {}
        }
        i += 1;
    }
    if restart {
        shell::state::reset();
        return;
    }
    // With -c, the command's standard input is the shell's (as with `bash -c`: a worker's
    // custom tool gets its input JSON this way); without, stdin is the script.
    let mut input = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut input);
    let invocation = if script.is_some() { 'c' } else { 's' };
    let script = match script {
        Some(s) => s,
        None => String::from_utf8_lossy(&std::mem::take(&mut input)).into_owned(),
    };
    let whole = stateless || whole;
    let mut sh = if whole {
        shell::state::fresh()
    } else {
        shell::state::clear_exited();
        shell::state::load()
    };
    let _ = std::env::set_current_dir(&sh.cwd);
    sh.invocation = Some(invocation);
    let io = shell::io::Io::new(
        shell::io::input(input),
        shell::io::Sink::Stdout,
        shell::io::Sink::Stderr,
    );
    let status = match sh.run_top(&script, &io) {
        // Without saved state this is a whole shell (`bash -c`), which ends here.
        Ok(s) if whole => sh.finish(s, &io),
        Ok(s) => s,
        // `exit` ends the session's shell: its EXIT trap runs (the state is kept). A fatal
        // error (an unbound variable under `set -u`) ends it with bash's 127.
        Err(shell::Flow::Exit(s)) => {
            let fatal = sys::take_fatal();
            if !whole {
                // The shell is gone, as a real one would be after `exit` or a fatal error.
                shell::state::mark_exited();
            }
            let s = if fatal { 127 } else { s };
            sh.finish(s, &io)
        }
        Err(shell::Flow::Return(s)) => s,
        Err(_) => 0,
    };
    if !stateless {
        shell::state::save(&sh);
    }
    sys::exit(status)
}

/// Runs `argv` (a built-in utility) as a stage of a pipeline: a fresh shell of the
/// environment and `$PWD`, stdin streamed.
fn stage(argv: &[String]) -> i32 {
    let mut sh = shell::state::fresh();
    let _ = std::env::set_current_dir(&sh.cwd);
    let io = shell::io::Io::new(
        shell::io::streamed(Box::new(std::io::stdin())),
        shell::io::Sink::Stdout,
        shell::io::Sink::Stderr,
    );
    let status = match sh.dispatch(argv, &io) {
        Ok(s) => s,
        Err(shell::Flow::Exit(s)) | Err(shell::Flow::Return(s)) | Err(shell::Flow::Abort(s)) => s,
        Err(_) => 0,
    };
    io.out.flush();
    status
}
