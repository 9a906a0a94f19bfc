//! Shell builtins and the shell-level commands (`cd`, `export`, `read`, `set`, ...). The file
//! and text utilities live in `crate::utils`.

use std::io::Write as _;

use crate::shell::io::Io;
use crate::shell::{Flow, Shell, Status};

mod declare;
mod dirs;
mod kill;
mod kind;
mod printf;
mod read;
mod settings;
mod umask;

use declare::*;
pub use declare::{declaration, dq};
use kind::*;
use printf::*;
use read::*;
use settings::*;
pub use settings::{option_flags, refresh_option_vars, set_option};
pub use sh_utility::format::{ansi_c_escapes, backslash_escapes, io_msg};
pub use sh_utility::path::normalize;

/// Runs `argv` if it names a builtin; None otherwise.
pub fn run(sh: &mut Shell, argv: &[String], io: &Io) -> Option<Status> {
    let name = argv[0].as_str();
    let args = &argv[1..];
    Some(match name {
        ":" | "true" => Ok(0),
        "false" => Ok(1),
        "echo" => Ok(echo(args, sh.options.shopt("xpg_echo"), io)),
        "printf" => Ok(printf(sh, args, io)),
        "cd" => Ok(cd(sh, args, io)),
        "pwd" => {
            io.print(&format!("{}\n", sh.cwd));
            Ok(0)
        }
        "export" => Ok(export(sh, args, io)),
        "unset" => Ok(unset(sh, args, io)),
        "set" => Ok(set(sh, args, io)),
        "local" | "declare" | "typeset" | "readonly" => local(sh, name, args, io),
        "shift" if args.len() > 1 => {
            io.eprint("bash: shift: too many arguments\n");
            Ok(1)
        }
        "shift"
            if args
                .first()
                .is_some_and(|a| a.trim().parse::<i64>().is_err()) =>
        {
            io.eprint(&format!(
                "bash: shift: {}: numeric argument required\n",
                args[0]
            ));
            Ok(1)
        }
        "shift" => {
            let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1);
            if n > sh.positional.len() {
                return Some(Ok(1));
            }
            sh.positional.drain(..n);
            Ok(0)
        }
        "return" => Err(Flow::Return(
            args.first()
                .and_then(|a| a.parse::<i32>().ok())
                .map_or(sh.last_status, |c| c & 0xff),
        )),
        "exit" if args.len() > 1 => {
            io.eprint("bash: exit: too many arguments\n");
            Ok(1)
        }
        "exit"
            if args
                .first()
                .is_some_and(|a| a.trim().parse::<i64>().is_err()) =>
        {
            io.eprint(&format!(
                "bash: exit: {}: numeric argument required\n",
                args[0]
            ));
            Err(Flow::Exit(2))
        }
        "exit" => Err(Flow::Exit(
            args.first()
                .and_then(|a| a.parse::<i32>().ok())
                .map(|c| c & 0xff)
                .unwrap_or(sh.last_status),
        )),
        "break" | "continue" => loop_control(sh, name, args, io),
        "test" | "[" => Ok(test(sh, name, args, io)),
        "read" => read(sh, args, io),
        "mapfile" | "readarray" => Ok(mapfile(sh, name, args, io)),
        "source" | "." => source(sh, args, io),
        "eval" => {
            let args = match args.first().map(String::as_str) {
                Some("--") => &args[1..],
                Some(o) if o.len() > 1 && o.starts_with('-') => {
                    io.eprint(&format!(
                        "bash: eval: {}: invalid option\neval: usage: eval [arg ...]\n",
                        &o[..2]
                    ));
                    return Some(Ok(2));
                }
                _ => args,
            };
            sh.run_sourced(&args.join(" "), io)
        }
        "alias" => Ok(alias(sh, args, io)),
        "unalias" => Ok(unalias(sh, args, io)),
        "command" => command(sh, args, io),
        "builtin" => builtin(sh, args, io),
        "type" => Ok(type_builtin(sh, args, io)),
        "which" => Ok(which(sh, args, io)),
        "env" | "printenv" => {
            let u = crate::shell::utilities::registry::find(name)?;
            match crate::shell::utilities::options::gate(u, argv, io) {
                crate::shell::utilities::options::Gate::Run(a) => Ok(env(sh, name, &a[1..], io)),
                crate::shell::utilities::options::Gate::Done(code) => Ok(code),
            }
        }
        "exec" if args.first().is_some_and(|a| a == "--") && args.len() > 1 => {
            sh.dispatch(&args[1..], io)
        }
        "exec" if !args.is_empty() && args[0] != "--" => sh.dispatch(args, io),
        "exec" => Ok(0),
        // `let EXPR...`: arithmetic, status 1 when the last value is 0.
        "let" if args.is_empty() => {
            io.eprint("bash: let: expression expected\n");
            Ok(1)
        }
        "let" => (|| {
            let mut last = 0;
            for a in args {
                last = crate::shell::expand::arith_str(sh, a, io)?;
            }
            Ok(i32::from(last == 0))
        })(),
        "trap" => Ok(trap(sh, args, io)),
        "getopts" => Ok(getopts(sh, args, io)),
        "shopt" => Ok(shopt(sh, args, io)),
        // No background jobs in a sandboxed call: nothing to wait for or list.
        "wait" | "hash" | "ulimit" | "jobs" => Ok(0),
        "umask" => Ok(umask::umask(sh, args, io)),
        "kill" => Ok(kill::kill(args, io)),
        "pushd" => Ok(dirs::pushd(sh, args, io)),
        "popd" => Ok(dirs::popd(sh, args, io)),
        "dirs" => Ok(dirs::dirs(sh, args, io)),
        _ => return crate::shell::utilities::run(sh, argv, io),
    })
}

/// `break [N]` and `continue [N]`. Outside a loop they do nothing (status 0); a count that
/// is not a number ends the shell with 128, and one below 1 is refused and leaves every
/// enclosing loop, as in bash.
fn loop_control(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> Status {
    let n = match args.first() {
        None => 1,
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) if n >= 1 => n,
            Ok(_) => {
                io.eprint(&format!("bash: {name}: {a}: loop count out of range\n"));
                sh.last_status = 1;
                return match sh.loop_depth {
                    0 => Ok(1),
                    depth => Err(Flow::Break(depth)),
                };
            }
            Err(_) => {
                io.eprint(&format!("bash: {name}: {a}: numeric argument required\n"));
                return Err(Flow::Exit(128));
            }
        },
    };
    if sh.loop_depth == 0 {
        return Ok(0);
    }
    if args.len() > 1 {
        // bash then leaves the loop, whichever of the two it was.
        io.eprint(&format!("bash: {name}: too many arguments\n"));
        return Err(Flow::Break(1));
    }
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    Err(if name == "break" {
        Flow::Break(n)
    } else {
        Flow::Continue(n)
    })
}

/// A name `printf -v` and `read` may assign: an identifier, or one with a `[subscript]`.
pub fn is_assignable(name: &str) -> bool {
    let base = match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((base, index)) if !index.is_empty() => base,
        Some(_) => return false,
        None => name,
    };
    is_identifier(base)
}

/// A shell variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn cd(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let target = match args
        .iter()
        .find(|a| !a.starts_with('-') || a.as_str() == "-")
    {
        None => sh.get("HOME").unwrap_or("/home/agent").to_string(),
        Some(a) if a == "-" => match sh.get("OLDPWD") {
            Some(o) => {
                let o = o.to_string();
                io.print(&format!("{o}\n"));
                o
            }
            None => {
                io.eprint("bash: cd: OLDPWD not set\n");
                return 1;
            }
        },
        Some(a) => a.clone(),
    };
    // `shopt -s cdable_vars`: a name that is no directory but a variable is where it points.
    if sh.options.shopt("cdable_vars")
        && !target.contains('/')
        && !sh.path(&target).is_dir()
        && let Some(dir) = sh
            .get(&target)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
    {
        let status = enter(sh, &dir, "cd", io);
        if status == 0 {
            io.print(&format!("{}\n", sh.cwd));
        }
        return status;
    }
    enter(sh, &target, "cd", io)
}

/// Makes `target` the working directory (with `$PWD` and `$OLDPWD`); `who`'s error and
/// status 1 when it is not a directory.
fn enter(sh: &mut Shell, target: &str, who: &str, io: &Io) -> i32 {
    // `dir/..` needs dir to be a directory, as bash checks (the path is then made
    // canonical without following it).
    let full = sh.path(target);
    let mut prefix = std::path::PathBuf::new();
    for c in full.components() {
        if c == std::path::Component::ParentDir && !prefix.is_dir() {
            io.eprint(&format!(
                "bash: {who}: {target}: No such file or directory\n"
            ));
            return 1;
        }
        prefix.push(c);
    }
    let path = normalize(&full.to_string_lossy());
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            let old = std::mem::replace(&mut sh.cwd, path.clone());
            sh.set_exported("OLDPWD", old);
            sh.set_exported("PWD", path.clone());
            let _ = std::env::set_current_dir(&path);
            0
        }
        Ok(_) => {
            io.eprint(&format!("bash: {who}: {target}: Not a directory\n"));
            1
        }
        Err(e) => {
            io.eprint(&format!("bash: {who}: {target}: {}\n", io_msg(&e)));
            1
        }
    }
}

fn export(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let args: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if args.is_empty() {
        for (k, v) in &sh.vars {
            if v.exported {
                io.print(&format!(
                    "declare -x {k}=\"{}\"\n",
                    v.value.replace('"', "\\\"")
                ));
            }
        }
        return 0;
    }
    for a in args {
        match a.split_once('=') {
            Some((k, v)) => sh.set_exported(k, v),
            None => {
                let v = sh.get(a).unwrap_or("").to_string();
                sh.set_exported(a, v);
            }
        }
    }
    0
}

/// `unset [-f] [-v] NAME...`: a variable (or array element) by default, a function when
/// there is no variable of that name or with `-f`. A readonly variable stays.
fn unset(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (mut funcs, mut vars, mut names) = (false, false, false);
    let (options, i) = option_letters(args, false);
    for (_, c) in options {
        match c {
            'f' => funcs = true,
            'v' => vars = true,
            'n' => names = true,
            other => {
                io.eprint(&format!(
                    "bash: unset: -{other}: invalid option\nunset: usage: unset [-f] [-v] [-n] [name ...]\n"
                ));
                return 2;
            }
        }
    }
    let mut status = 0;
    for a in &args[i..] {
        if funcs && !vars {
            sh.functions.remove(a);
            continue;
        }
        // `unset ref` unsets what a nameref names; `unset -n ref` the nameref itself.
        let followed = if !names && sh.is_ref(a) {
            sh.resolve_ref(a)
        } else {
            a.clone()
        };
        let a = &followed;
        let base = a.split_once('[').map_or(a.as_str(), |(n, _)| n);
        if !is_identifier(base) {
            io.eprint(&format!("bash: unset: `{a}': not a valid identifier\n"));
            status = 1;
            continue;
        }
        if sh.has_attr(base, 'r') {
            io.eprint(&format!(
                "bash: unset: {base}: cannot unset: readonly variable\n"
            ));
            status = 1;
            continue;
        }
        if a == "PS4" {
            sh.options.ps4_unset = true;
        }
        let exists = sh.vars.contains_key(base) || sh.arrays.contains_key(base);
        sh.unset(a);
        if base == a.as_str() {
            sh.attrs.remove(a);
            if !exists && !vars {
                sh.functions.remove(a);
            }
        }
    }
    status
}

fn test(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> i32 {
    let mut args: Vec<String> = args.to_vec();
    if name == "[" {
        if args.last().map(String::as_str) != Some("]") {
            io.eprint("bash: [: missing `]'\n");
            return 2;
        }
        args.pop();
    }
    if args.is_empty() {
        return 1;
    }
    match brush_parser::test_command::parse(&args) {
        Ok(e) => match crate::shell::test::eval(sh, &e) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(m) => {
                io.eprint(&format!("bash: {name}: {m}\n"));
                2
            }
        },
        Err(_) => {
            io.eprint(&format!("bash: {name}: syntax error\n"));
            2
        }
    }
}

fn source(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let args = if args.first().is_some_and(|a| a == "--") {
        &args[1..]
    } else {
        args
    };
    let Some(file) = args.first() else {
        io.eprint("bash: source: filename argument required\nsource: usage: source filename [arguments]\n");
        return Ok(2);
    };
    // A name without `/` is looked for on PATH first, then in the working directory
    // (bash's `sourcepath`).
    let mut path = sh.path(file);
    if !file.contains('/') {
        let dirs = sh.get("PATH").unwrap_or_default().to_string();
        if let Some(found) = dirs
            .split(':')
            .map(|d| sh.path(if d.is_empty() { "." } else { d }).join(file))
            .find(|p| p.is_file())
        {
            path = found;
        }
    }
    match std::fs::read_to_string(path) {
        Ok(src) => {
            let saved = std::mem::replace(&mut sh.positional, args[1..].to_vec());
            let r = sh.run_sourced(&src, io);
            if args.len() > 1 {
                sh.positional = saved;
            }
            match r {
                Err(Flow::Return(s)) => Ok(s),
                other => other,
            }
        }
        Err(e) => {
            io.eprint(&format!("bash: {file}: {}\n", io_msg(&e)));
            Ok(1)
        }
    }
}

fn alias(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    if args.is_empty() {
        for (k, v) in &sh.aliases {
            io.print(&format!("alias {k}='{v}'\n"));
        }
        return 0;
    }
    let mut status = 0;
    for a in args {
        match a.split_once('=') {
            Some((k, v)) => {
                sh.aliases.insert(k.to_string(), v.to_string());
            }
            None => match sh.aliases.get(a) {
                Some(v) => io.print(&format!("alias {a}='{v}'\n")),
                None => {
                    io.eprint(&format!("bash: alias: {a}: not found\n"));
                    status = 1;
                }
            },
        }
    }
    status
}

/// `unalias [-a] NAME...`: status 1 when a name is no alias.
fn unalias(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (options, i) = option_letters(args, false);
    let mut all = false;
    for (_, c) in options {
        if c != 'a' {
            io.eprint(&format!(
                "bash: unalias: -{c}: invalid option\nunalias: usage: unalias [-a] name [name ...]\n"
            ));
            return 2;
        }
        all = true;
    }
    if all {
        sh.aliases.clear();
        return 0;
    }
    if args[i..].is_empty() {
        io.eprint("unalias: usage: unalias [-a] name [name ...]\n");
        return 2;
    }
    let mut status = 0;
    for a in &args[i..] {
        if sh.aliases.remove(a).is_none() {
            io.eprint(&format!("bash: unalias: {a}: not found\n"));
            status = 1;
        }
    }
    status
}

/// A builtin's leading flag words (`-ab -c`; `--` or the first word that is not one ends
/// them), each letter given to `flag`, which returns false for one `name` does not have:
/// then bash's "invalid option" message with `usage` (the usage line's arguments) and
/// `Err(2)`. Ok: where the operands start.
pub(super) fn flag_words(
    name: &str,
    usage: &str,
    args: &[String],
    io: &Io,
    mut flag: impl FnMut(char) -> bool,
) -> Result<usize, i32> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return Ok(i + 1);
        }
        if a.len() < 2 || !a.starts_with('-') {
            break;
        }
        if let Some(c) = a[1..].chars().find(|&c| !flag(c)) {
            io.eprint(&format!(
                "bash: {name}: -{c}: invalid option\n{name}: usage: {name} {usage}\n"
            ));
            return Err(2);
        }
        i += 1;
    }
    Ok(i)
}

/// `command [-pVv] NAME [ARG...]`: runs NAME as a builtin or program, never as a function;
/// `-v`/`-V` describe it instead. Only leading words are options (`command ls -l` keeps
/// `-l`), and break/continue/return/exit act as they would without `command`.
fn command(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let mut describe = None;
    let flag = |c| match c {
        'p' => true,
        'v' | 'V' => {
            describe = Some(c);
            true
        }
        _ => false,
    };
    let i = match flag_words("command", "[-pVv] command [arg ...]", args, io, flag) {
        Ok(i) => i,
        Err(status) => return Ok(status),
    };
    let rest = &args[i..];
    match describe {
        Some('V') => return Ok(type_builtin(sh, rest, io)),
        Some(_) => {
            // bash's `command -v`: an alias as its definition, a function, builtin or
            // keyword by its name, a program by its path; status 1 if any was not found.
            let mut status = 0;
            for a in rest {
                if let Some(v) = sh.aliases.get(a) {
                    io.print(&format!("alias {a}='{v}'\n"));
                } else if sh.functions.contains_key(a)
                    || SHELL_ONLY.contains(&a.as_str())
                    || KEYWORDS.contains(&a.as_str())
                {
                    io.print(&format!("{a}\n"));
                } else if let Some(p) = crate::shell::process::find(sh, a) {
                    io.print(&format!("{}\n", p.display()));
                } else if is_builtin(a) {
                    io.print(&format!("/usr/bin/{a}\n"));
                } else {
                    status = 1;
                }
            }
            return Ok(status);
        }
        None => {}
    }
    if rest.is_empty() {
        return Ok(0);
    }
    if !is_shell_builtin(&rest[0])
        && let Some(path) = crate::shell::process::find(sh, &rest[0])
    {
        return crate::shell::process::exec(sh, &path, rest, io);
    }
    match run(sh, rest, io) {
        Some(r) => r,
        None => {
            io.eprint(&format!("bash: {}: command not found\n", rest[0]));
            Ok(127)
        }
    }
}

/// bash's own builtins that burrow implements as built-in utilities (so `builtin kill` and
/// `builtin printf` run, while `builtin cat` is refused as in bash).
const BASH_BUILTIN_UTILITIES: &[&str] = &["kill"];

/// `builtin NAME [ARG...]`: runs the shell builtin NAME, skipping functions and PATH.
fn builtin(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let Some(name) = args.first() else {
        return Ok(0);
    };
    if !is_shell_builtin(name) && !BASH_BUILTIN_UTILITIES.contains(&name.as_str()) {
        io.eprint(&format!("bash: builtin: {name}: not a shell builtin\n"));
        return Ok(1);
    }
    match run(sh, args, io) {
        Some(r) => r,
        None => {
            io.eprint(&format!("bash: builtin: {name}: not a shell builtin\n"));
            Ok(1)
        }
    }
}

const SHELL_ONLY: &[&str] = &[
    ":",
    "true",
    "false",
    "echo",
    "printf",
    "cd",
    "pwd",
    "export",
    "unset",
    "set",
    "local",
    "declare",
    "typeset",
    "readonly",
    "shift",
    "return",
    "exit",
    "break",
    "continue",
    "test",
    "[",
    "read",
    "mapfile",
    "readarray",
    "source",
    ".",
    "eval",
    "alias",
    "unalias",
    "type",
    "command",
    "builtin",
    "exec",
    "let",
    "wait",
    "hash",
    "shopt",
    "trap",
    "getopts",
    "umask",
    "ulimit",
    "jobs",
    "pushd",
    "popd",
    "dirs",
    "kill",
];

/// Whether `name` is part of the shell itself (never looked up on PATH).
pub fn is_shell_builtin(name: &str) -> bool {
    SHELL_ONLY.contains(&name)
}

pub fn is_builtin(name: &str) -> bool {
    SHELL_ONLY.contains(&name)
        || crate::shell::utilities::is_utility(name)
        || matches!(name, "which" | "env" | "printenv")
}

fn env(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> i32 {
    if name == "printenv"
        && let Some(v) = args.first()
    {
        return match sh.vars.get(v).filter(|v| v.exported) {
            Some(v) => {
                io.print(&format!("{}\n", v.value));
                0
            }
            None => 1,
        };
    }
    // Options (-i, -u NAME), then NAME=VALUE assignments, then the command, in a copy of the
    // shell whose exported variables are the new environment.
    let mut sub = sh.clone();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let unset = if a == "-i" || a == "-" || a == "--ignore-environment" {
            sub.vars.retain(|_, v| !v.exported);
            None
        } else if a == "-u" {
            i += 1;
            args.get(i).cloned()
        } else if let Some(n) = a.strip_prefix("--unset=") {
            Some(n.to_string())
        } else if let Some(n) = a.strip_prefix("-u") {
            Some(n.to_string())
        } else if a == "--" {
            i += 1;
            break;
        } else {
            break;
        };
        if let Some(n) = unset {
            sub.vars.remove(&n);
        }
        i += 1;
    }
    let mut extra: Vec<(String, String)> = Vec::new();
    while i < args.len() && args[i].contains('=') {
        if let Some((k, v)) = args[i].split_once('=') {
            sub.set_exported(k, v);
            extra.push((k.to_string(), v.to_string()));
        }
        i += 1;
    }
    if i < args.len() {
        return match sub.dispatch(&args[i..], io) {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Abort(s)) => s,
            Err(_) => 0,
        };
    }
    // The environment as it was, then the new assignments in the order given.
    let mut out = Vec::new();
    for (k, v) in &sub.vars {
        if v.exported && !extra.iter().any(|(n, _)| n == k) {
            let _ = writeln!(out, "{k}={}", v.value);
        }
    }
    for (k, v) in &extra {
        let _ = writeln!(out, "{k}={v}");
    }
    io.out.write(&out);
    0
}

thread_local! {
    /// getopts' place inside a word of bundled options (`-abc`): (the OPTIND it belongs to,
    /// the index of the next letter). bash keeps it out of sight too; setting OPTIND to
    /// anything else starts over at the word's first letter.
    static GETOPTS_POS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// `getopts OPTSTRING NAME [ARG...]`, as POSIX and bash define it: one option per call from
/// the positional parameters (or ARGs) at `$OPTIND`, its argument in `$OPTARG`; status 1 at
/// the end of the options. A leading `:` in OPTSTRING (or `OPTERR=0`) silences the errors.
fn getopts(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (Some(spec), Some(name)) = (args.first(), args.get(1)) else {
        io.eprint("getopts: usage: getopts optstring name [arg ...]\n");
        return 2;
    };
    if !is_identifier(name) {
        io.eprint(&format!(
            "bash: getopts: `{name}': not a valid identifier\n"
        ));
        return 1;
    }
    let words: Vec<String> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        sh.positional.clone()
    };
    let silent = spec.starts_with(':');
    let report = !silent && sh.get("OPTERR") != Some("0");
    let mut optind: usize = sh
        .get("OPTIND")
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1);
    let (at, pos) = GETOPTS_POS.with(|p| p.get());
    let mut pos = if at == optind && pos > 1 { pos } else { 1 };
    let end = |sh: &mut Shell, optind: usize| {
        sh.set(name, "?");
        sh.set("OPTIND", optind.to_string());
        GETOPTS_POS.with(|p| p.set((0, 0)));
        1
    };
    let Some(word) = words.get(optind - 1) else {
        return end(sh, optind);
    };
    if pos == 1 {
        if word == "--" {
            return end(sh, optind + 1);
        }
        if !word.starts_with('-') || word == "-" {
            return end(sh, optind);
        }
    }
    let letters: Vec<char> = word.chars().collect();
    let Some(&c) = letters.get(pos) else {
        return end(sh, optind);
    };
    pos += 1;
    let rest: String = letters[pos.min(letters.len())..].iter().collect();
    let next_word = |optind: &mut usize, pos: &mut usize| {
        *optind += 1;
        *pos = 1;
    };
    let known = c != ':' && spec.contains(c);
    let takes_arg = known && spec[spec.find(c).unwrap_or(0) + c.len_utf8()..].starts_with(':');
    let arg0 = sh.arg0.clone();
    if !known {
        if pos >= letters.len() {
            next_word(&mut optind, &mut pos);
        }
        if report {
            io.eprint(&format!("{arg0}: illegal option -- {c}\n"));
        }
        sh.set(name, "?");
        if silent {
            sh.set("OPTARG", c.to_string());
        } else {
            sh.unset("OPTARG");
        }
    } else if takes_arg {
        if !rest.is_empty() {
            sh.set("OPTARG", rest);
            next_word(&mut optind, &mut pos);
            sh.set(name, c.to_string());
        } else if let Some(value) = words.get(optind) {
            sh.set("OPTARG", value.clone());
            optind += 2;
            pos = 1;
            sh.set(name, c.to_string());
        } else {
            next_word(&mut optind, &mut pos);
            if report {
                io.eprint(&format!("{arg0}: option requires an argument -- {c}\n"));
            }
            if silent {
                sh.set(name, ":");
                sh.set("OPTARG", c.to_string());
            } else {
                sh.set(name, "?");
                sh.unset("OPTARG");
            }
        }
    } else {
        if pos >= letters.len() {
            next_word(&mut optind, &mut pos);
        }
        sh.unset("OPTARG");
        sh.set(name, c.to_string());
    }
    sh.set("OPTIND", optind.to_string());
    GETOPTS_POS.with(|p| p.set((optind, pos)));
    0
}
