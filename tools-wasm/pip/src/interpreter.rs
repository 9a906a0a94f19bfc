//! Running CPython for WASI as burrow starts it: its program (mapped by the host, known by
//! path), its library path, and argv as the interpreter needs it. Used by the `python3`
//! launchers and by pip's builds of source distributions.

use std::path::Path;

use sh_utility::Ctx;
use sh_utility::io::Io;

/// Its program, and the directory of burrow's `sitecustomize` (start in the shell's working
/// directory; the session's site-packages).
pub const PYTHON_PROGRAM: &str = "/opt/burrow/toolchains/python/python.wasm";
const PYTHON_LIB: &str = "/opt/burrow/toolchains/python/lib";
const PYTHON_STDLIB: &str = "/opt/burrow/toolchains/python/stdlib";

/// Runs CPython with `argv` (argv[0] is the name it was called by).
///
/// wasi-libc starts every wasip1 program in `/`, and CPython makes a relative script path
/// absolute before anything of ours runs; so a relative script is passed by its absolute path
/// (in the shell's working directory) and burrow's `sitecustomize` puts the name as typed
/// back into `sys.argv[0]` (from `BURROW_PYTHON_ARGV0`, which it then removes), moves to the
/// working directory (`PWD`) and adds the session's site-packages.
pub fn python(sh: &dyn Ctx, argv: &[String], io: &Io) -> i32 {
    // burrow's sitecustomize comes last on the path, after the user's PYTHONPATH.
    // CPython makes PYTHONPATH's entries absolute against the directory it starts in (`/`
    // under wasi-libc), so relative ones are made absolute here, against the shell's.
    let mut entries: Vec<String> = match sh.env("PYTHONPATH") {
        Some(p) if !p.is_empty() => p
            .split(':')
            .map(|e| {
                if e.starts_with('/') {
                    e.to_string()
                } else {
                    sh.path(if e.is_empty() { "." } else { e })
                        .to_string_lossy()
                        .into_owned()
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    // The standard library unpacked at install (see host/src/toolchain.rs): imported from
    // files rather than the zip packed in the module, which CPython indexes at every start.
    if Path::new(PYTHON_STDLIB).is_dir() {
        entries.push(PYTHON_STDLIB.to_string());
    }
    entries.push(PYTHON_LIB.to_string());
    let path = entries.join(":");
    let mut env = vec![("PYTHONPATH".to_string(), path)];
    let mut argv = argv.to_vec();
    if let Some(i) = script_index(&argv)
        && !argv[i].starts_with('/')
        && argv[i] != "-"
    {
        env.push(("BURROW_PYTHON_ARGV0".to_string(), argv[i].clone()));
        argv[i] = sh.path(&argv[i]).to_string_lossy().into_owned();
    }
    sh.spawn_installed(PYTHON_PROGRAM, &argv, &env, io)
}

/// The index in `argv` of the script CPython would run, if any: the first operand after
/// the interpreter's own options (`-c` and `-m` end the options and name no file).
fn script_index(argv: &[String]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" {
            return (i + 1 < argv.len()).then_some(i + 1);
        }
        if a == "--check-hash-based-pycs" {
            i += 2;
            continue;
        }
        if a.starts_with("--") {
            // --help, --version: nothing runs.
            return None;
        }
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            for (k, c) in flags.char_indices() {
                match c {
                    'c' | 'm' => return None,
                    'W' | 'X' => {
                        // The value is the rest of this word, or the next word.
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
            i += 1;
            continue;
        }
        return Some(i);
    }
    None
}
