//! Commands that are neither functions nor builtins: found on PATH (or named by a path) and
//! run. A WebAssembly program (`\0asm`) runs through the host's `burrow:sandbox/process`
//! (wit/sandbox/process.wit) in the same transaction, with the shell's exported variables, cwd
//! and the pipeline's input, alongside the shell: its input fed and its output passed on a
//! piece at a time (run to its end with its input whole when the call already runs as many
//! programs alongside it as the host allows). A text file runs as a script, by this shell or
//! by the interpreter its `#!` line names (looked up on PATH the same way). [`Stage`] is such
//! a program (or this shell's component again, for a built-in utility) as a streaming stage
//! of a pipeline.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::shell::builtins::io_msg;
use crate::shell::io::{Io, read_all};
use crate::shell::{Flow, Shell, Status};

/// Where `name` runs from: a path when it contains `/`, else the first `name` or `name.wasm`
/// that is a file in a PATH directory.
pub fn find(sh: &Shell, name: &str) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let p = sh_utility::path::lexical(&sh.path(name));
        return p.is_file().then_some(p);
    }
    let path = sh.get("PATH").unwrap_or_default();
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let base = sh.path(dir);
        let mut names = vec![name.to_string()];
        if !name.ends_with(".wasm") {
            names.push(format!("{name}.wasm"));
        }
        // The sandbox's /usr/bin and /bin list the built-in utilities themselves: those run
        // as builtins, not as (empty) programs.
        if matches!(dir, "/usr/bin" | "/bin") && crate::shell::builtins::is_builtin(name) {
            continue;
        }
        if let Some(listing) = fixed_dir(&base) {
            if let Some(n) = names.iter().find(|n| listing.contains(n.as_str())) {
                return Some(base.join(n));
            }
            continue;
        }
        for n in names {
            let p = base.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

thread_local! {
    /// PATH directories that cannot change during this call, listed once: the files in each
    /// (empty when it does not exist).
    static FIXED: std::cell::RefCell<std::collections::HashMap<PathBuf, Rc<std::collections::HashSet<String>>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The files of `dir` if it is outside the sandbox's writable mounts (the composed root and
/// the read-only tool layer are fixed for a call), read once per call: a command looked up
/// on PATH then costs no filesystem request per directory. None for a writable directory,
/// which a command of this call may fill.
fn fixed_dir(dir: &Path) -> Option<Rc<std::collections::HashSet<String>>> {
    let s = dir.to_str()?;
    let writable = ["/workspace", "/tmp", "/home", "/run"]
        .iter()
        .any(|w| s == *w || s.starts_with(&format!("{w}/")));
    if writable || !s.starts_with('/') || s.contains("/..") {
        return None;
    }
    FIXED.with(|f| {
        let mut f = f.borrow_mut();
        Some(
            f.entry(dir.to_path_buf())
                .or_insert_with(|| {
                    let names = std::fs::read_dir(dir)
                        .map(|rd| {
                            rd.filter_map(|e| e.ok())
                                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                                .filter_map(|e| e.file_name().into_string().ok())
                                .collect()
                        })
                        .unwrap_or_default();
                    Rc::new(names)
                })
                .clone(),
        )
    })
}

/// The WebAssembly program `name` runs as when it is one on PATH (not a script, not a
/// built-in utility).
pub fn program_at(sh: &Shell, name: &str) -> Option<Program> {
    let path = find(sh, name)?;
    if let Some(guest) = installed(&path) {
        return Some(Program::Installed(guest));
    }
    let bytes = std::fs::read(&path).ok()?;
    bytes.starts_with(b"\0asm").then_some(Program::Bytes(bytes))
}

/// Runs the program or script at `path` as `argv`; bash's errors (126, 127) when it cannot.
pub fn exec(sh: &mut Shell, path: &Path, argv: &[String], io: &Io) -> Status {
    let shown = &argv[0];
    if let Some(guest) = installed(path) {
        return Ok(spawn(sh, Program::Installed(guest), argv, &[], io));
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            io.eprint(&format!("bash: {shown}: {}\n", io_msg(&e)));
            return Ok(126);
        }
    };
    if bytes.starts_with(b"\0asm") {
        return Ok(spawn(sh, Program::Bytes(bytes), argv, &[], io));
    }
    if let Some(line) = bytes.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let interp = words.next().unwrap_or_default();
        let mut rest: Vec<String> = words.map(str::to_string).collect();
        let mut name = interp.rsplit('/').next().unwrap_or_default().to_string();
        if name == "env" && !rest.is_empty() {
            name = rest.remove(0);
        }
        if !matches!(name.as_str(), "bash" | "sh" | "") {
            let found = find(sh, &name);
            // An interpreter burrow launches itself (`#!/usr/bin/env python3`).
            if found.is_none() && crate::shell::utilities::is_python(name.as_str()) {
                let mut args = vec![name];
                args.extend(rest);
                args.push(path.to_string_lossy().into_owned());
                args.extend(argv[1..].iter().cloned());
                return sh_pip::toolchain::run(sh, &args, io);
            }
            let Some(found) = found else {
                io.eprint(&format!(
                    "bash: {shown}: {interp}: bad interpreter: No such file or directory\n"
                ));
                return Ok(126);
            };
            let mut args = vec![name];
            args.extend(rest);
            args.push(path.to_string_lossy().into_owned());
            args.extend(argv[1..].iter().cloned());
            return exec(sh, &found, &args, io);
        }
    } else if bytes.contains(&0) {
        io.eprint(&format!(
            "bash: {shown}: cannot execute binary file: Exec format error\n"
        ));
        return Ok(126);
    }
    // A script: a new shell that sees the exported variables only, as a child bash would.
    let mut sub = Shell::new(&sh.cwd);
    for (k, v) in &sh.vars {
        if v.exported {
            sub.set_exported(k, v.value.clone());
        }
    }
    sub.arg0 = shown.clone();
    sub.positional = argv[1..].to_vec();
    let src = String::from_utf8_lossy(&bytes);
    match sub.run_top(&src, io) {
        Ok(s) | Err(Flow::Exit(s)) => Ok(s),
        Err(_) => Ok(0),
    }
}

/// Where a program comes from (see `program` in wit/sandbox/process.wit).
#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
pub enum Program {
    /// Read by the shell.
    Bytes(Vec<u8>),
    /// In a read-only program directory (`/opt/burrow/...`): the host maps it itself.
    Installed(String),
}

/// The guest path of `path` when it is a WebAssembly program in the sandbox's read-only
/// program directories, which the host loads by path (a 26 MB interpreter is then neither
/// read nor copied by the shell). Only its first four bytes are read here.
fn installed(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let s = path.to_str()?;
    if !s.starts_with("/opt/burrow/") || s.contains("/.") {
        return None;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut magic)
        .ok()?;
    (&magic == b"\0asm").then(|| s.to_string())
}

/// A program's whole environment: the exported variables of `sh`, with `extra` added to
/// them (or replacing them).
fn environment(sh: &Shell, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = sh
        .vars
        .iter()
        .filter(|(_, v)| v.exported)
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == *k))
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    env.extend(extra.iter().cloned());
    env
}

/// Runs a WebAssembly program through the host and copies its output to the shell's streams;
/// `extra_env` is added to (or replaces in) the exported variables.
pub fn spawn(
    sh: &Shell,
    program: Program,
    argv: &[String],
    extra_env: &[(String, String)],
    io: &Io,
) -> i32 {
    let launched = host::launch(
        program,
        argv.to_vec(),
        environment(sh, extra_env),
        sh.cwd.clone(),
        || read_all(&io.stdin),
    );
    match launched {
        // It runs alongside the shell: its stdin fed a piece at a time, its output passed on
        // as it comes (`prog | head` ends it by SIGPIPE; a large output is never held whole).
        host::Launch::Streaming(run) => {
            let stage = Stage::new(run, io.out.clone(), io.err.clone());
            while !stage.closed() {
                let piece = io.stdin.borrow_mut().chunk(FEED_BYTES);
                if piece.is_empty() {
                    break;
                }
                stage.write(&piece);
            }
            stage.finish()
        }
        host::Launch::Whole(Ok(done)) => {
            // Interleaved as written, so a merged view reads as a terminal would.
            let (mut o, mut e) = (0usize, 0usize);
            for (fd, n) in &done.order {
                let n = *n as usize;
                if *fd == 2 {
                    let end = (e + n).min(done.stderr.len());
                    io.err.write(&done.stderr[e..end]);
                    e = end;
                } else {
                    let end = (o + n).min(done.stdout.len());
                    io.out.write(&done.stdout[o..end]);
                    o = end;
                }
            }
            io.out.write(&done.stdout[o..]);
            io.err.write(&done.stderr[e..]);
            done.exit_code & 0xff
        }
        host::Launch::Whole(Err(why)) => {
            io.eprint(&format!("bash: {}: {why}\n", argv[0]));
            126
        }
    }
}

/// What the host answered.
struct Done {
    exit_code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Runs of (1 stdout / 2 stderr, bytes) in write order.
    order: Vec<(u8, u32)>,
}

#[cfg(target_os = "wasi")]
mod host {
    wit_bindgen::generate!({
        path: "../../wit/sandbox",
        world: "burrow:sandbox/shell",
    });

    use burrow::sandbox::process::{Command, Program, SpawnError, run as host_run, start};

    /// A stage started through `start`: this shell again, running one utility.
    pub(super) struct Running(burrow::sandbox::process::Running);

    impl Running {
        pub(super) fn start(
            program: Option<super::Program>,
            argv: Vec<String>,
            env: Vec<(String, String)>,
            cwd: String,
        ) -> Option<Running> {
            let cmd = Command {
                program: match program {
                    Some(super::Program::Bytes(b)) => Program::Bytes(b),
                    Some(super::Program::Installed(p)) => Program::Installed(p),
                    None => Program::Caller,
                },
                argv,
                env,
                cwd,
                stdin: Vec::new(),
            };
            start(&cmd).ok().map(Running)
        }
        pub(super) fn feed(&self, data: &[u8]) -> (usize, bool, super::Output) {
            let fed = self.0.feed(data);
            (fed.taken as usize, fed.closed, fed.output)
        }
        pub(super) fn close_output(&self) {
            self.0.close_output()
        }
        pub(super) fn close_stdin(&self) {
            self.0.close_stdin()
        }
        pub(super) fn drain(&self) -> Option<super::Output> {
            self.0.drain()
        }
        pub(super) fn wait(&self) -> i32 {
            self.0.wait()
        }
    }

    /// How a program was started.
    pub(super) enum Launch {
        /// Alongside the shell, its stdin and output pipes.
        Streaming(Running),
        /// To its end, with `stdin` whole (the host runs no more programs alongside this
        /// call), or why it could not run.
        Whole(Result<super::Done, String>),
    }

    pub(super) fn launch(
        program: super::Program,
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: String,
        stdin: impl FnOnce() -> Vec<u8>,
    ) -> Launch {
        let program = match program {
            super::Program::Bytes(b) => Program::Bytes(b),
            super::Program::Installed(p) => Program::Installed(p),
        };
        let mut cmd = Command {
            program,
            argv,
            env,
            cwd,
            stdin: Vec::new(),
        };
        match start(&cmd) {
            Ok(r) => Launch::Streaming(Running(r)),
            Err(SpawnError::Busy(_)) => {
                cmd.stdin = stdin();
                Launch::Whole(match host_run(&cmd) {
                    Ok(e) => Ok(super::Done {
                        exit_code: e.exit_code,
                        stdout: e.stdout,
                        stderr: e.stderr,
                        order: e.order,
                    }),
                    Err(e) => Err(message(e)),
                })
            }
            Err(e) => Launch::Whole(Err(message(e))),
        }
    }

    fn message(e: SpawnError) -> String {
        match e {
            SpawnError::NotExecutable(why) => format!("cannot execute binary file: {why}"),
            SpawnError::TooDeep(n) => {
                format!("cannot run: programs started from programs nest deeper than {n}")
            }
            SpawnError::Busy(n) => {
                format!("cannot run: {n} programs already run alongside the shell")
            }
        }
    }
}

/// Outside a sandbox (the shell built natively for its unit tests) there is no host to ask.
#[cfg(not(target_os = "wasi"))]
mod host {
    pub(super) struct Running;

    impl Running {
        pub(super) fn start(
            _program: Option<super::Program>,
            _argv: Vec<String>,
            _env: Vec<(String, String)>,
            _cwd: String,
        ) -> Option<Running> {
            None
        }
        pub(super) fn feed(&self, _data: &[u8]) -> (usize, bool, super::Output) {
            (0, true, Vec::new())
        }
        pub(super) fn close_output(&self) {}
        pub(super) fn close_stdin(&self) {}
        pub(super) fn drain(&self) -> Option<super::Output> {
            None
        }
        pub(super) fn wait(&self) -> i32 {
            0
        }
    }

    pub(super) enum Launch {
        #[allow(dead_code)] // the sandbox's variant
        Streaming(Running),
        Whole(Result<super::Done, String>),
    }

    pub(super) fn launch(
        _program: super::Program,
        _argv: Vec<String>,
        _env: Vec<(String, String)>,
        _cwd: String,
        _stdin: impl FnOnce() -> Vec<u8>,
    ) -> Launch {
        Launch::Whole(Err(
            "cannot execute binary file: no burrow host to run WebAssembly".into(),
        ))
    }
}

/// Output of a stage: runs of (1 stdout / 2 stderr, bytes).
type Output = Vec<(u8, Vec<u8>)>;

/// A utility running as its own program alongside the shell (this shell's component again,
/// `sh --stage NAME ARGS...`), as the reading stage of a streaming pipeline: what the writer
/// writes is fed to it through a bounded pipe, and what it prints comes back on each feed and
/// goes on to `out` and `err`.
pub struct Stage {
    run: host::Running,
    out: crate::shell::io::Sink,
    err: crate::shell::io::Sink,
    /// It stopped reading (it exited): the writer meets SIGPIPE.
    closed: std::cell::Cell<bool>,
    /// Written, not yet fed.
    pending: std::cell::RefCell<Vec<u8>>,
}

/// How much a [`Stage`] gathers before feeding it (and the most one feed hands over).
const FEED_BYTES: usize = 256 << 10;

impl Stage {
    /// Starts `argv` with the exported variables and cwd of `sh`: `program`, or without one
    /// a built-in utility (this shell's component again).
    pub fn start(
        sh: &Shell,
        argv: &[String],
        program: Option<Program>,
        out: crate::shell::io::Sink,
        err: crate::shell::io::Sink,
    ) -> Option<Stage> {
        let env = environment(sh, &[]);
        let run = match program {
            Some(p) => host::Running::start(Some(p), argv.to_vec(), env, sh.cwd.clone())?,
            None => {
                let mut full = vec!["sh".to_string(), "--stage".to_string()];
                full.extend(argv.iter().cloned());
                host::Running::start(None, full, env, sh.cwd.clone())?
            }
        };
        Some(Stage::new(run, out, err))
    }

    fn new(run: host::Running, out: crate::shell::io::Sink, err: crate::shell::io::Sink) -> Stage {
        Stage {
            run,
            out,
            err,
            closed: std::cell::Cell::new(false),
            pending: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Whether it has stopped reading.
    pub fn closed(&self) -> bool {
        self.closed.get()
    }

    fn deliver(&self, output: Output) {
        for (fd, bytes) in output {
            if fd == 2 {
                self.err.write(&bytes);
            } else if !self.out.broken() {
                self.out.write(&bytes);
                // Its reader has gone: its next write kills it, as SIGPIPE would.
                if self.out.broken() {
                    self.run.close_output();
                }
            }
        }
    }

    /// Writes `data` to its stdin: gathered into pieces of [`FEED_BYTES`] (as a C program's
    /// stdio buffers its writes), each fed whole, passing on what it prints meanwhile.
    pub fn write(&self, data: &[u8]) {
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() && data.len() >= FEED_BYTES {
            drop(pending);
            self.feed(data);
            return;
        }
        pending.extend_from_slice(data);
        if pending.len() >= FEED_BYTES {
            let all = std::mem::take(&mut *pending);
            drop(pending);
            self.feed(&all);
        }
    }

    fn feed(&self, mut data: &[u8]) {
        while !data.is_empty() && !self.closed.get() {
            // At most a pipe's worth per call: the pipe takes no more, and the rest would be
            // copied to the host for nothing.
            let (taken, closed, output) = self.run.feed(&data[..data.len().min(FEED_BYTES)]);
            self.deliver(output);
            self.closed.set(closed);
            data = &data[taken.min(data.len())..];
        }
    }

    /// Ends its input, passes on the rest of its output and returns its exit status.
    pub fn finish(&self) -> i32 {
        sh_utility::io::Stage::finish(self)
    }
}

impl sh_utility::io::Stage for Stage {
    fn write(&self, data: &[u8]) {
        Stage::write(self, data)
    }

    fn closed(&self) -> bool {
        Stage::closed(self)
    }

    fn finish(&self) -> i32 {
        let rest = std::mem::take(&mut *self.pending.borrow_mut());
        self.feed(&rest);
        self.run.close_stdin();
        while let Some(output) = self.run.drain() {
            self.deliver(output);
        }
        self.run.wait() & 0xff
    }
}
