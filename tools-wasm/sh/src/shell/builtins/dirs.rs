//! The directory stack: `pushd`, `popd` and `dirs` as bash has them. The stack's top is
//! always the working directory (so `cd` replaces it); the entries below it are kept with
//! the shell's options.

use super::*;

/// The whole stack, top (the working directory) first.
fn stack(sh: &Shell) -> Vec<String> {
    let mut all = vec![sh.cwd.clone()];
    all.extend(sh.options.dirstack.iter().cloned());
    all
}

/// `dir` with `$HOME` at its start written `~`.
fn tilde(sh: &Shell, dir: &str) -> String {
    match sh.get("HOME").filter(|h| !h.is_empty() && *h != "/") {
        Some(home) => match dir.strip_prefix(home) {
            Some("") => "~".to_string(),
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => dir.to_string(),
        },
        None => dir.to_string(),
    }
}

/// A `+N` or `-N` argument: the index into the stack (top first) it names.
fn position(arg: &str, len: usize) -> Option<Result<usize, ()>> {
    let (from_top, digits) = match arg.as_bytes().first() {
        Some(b'+') => (true, &arg[1..]),
        Some(b'-') => (false, &arg[1..]),
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = match digits.parse() {
        Ok(n) => n,
        Err(_) => return Some(Err(())),
    };
    if n >= len {
        return Some(Err(()));
    }
    Some(Ok(if from_top { n } else { len - 1 - n }))
}

fn print_stack(sh: &Shell, io: &Io) {
    let shown: Vec<String> = stack(sh).iter().map(|d| tilde(sh, d)).collect();
    io.print(&format!("{}\n", shown.join(" ")));
}

/// Makes `all` (top first) the stack, entering its new top unless `no_cd`.
fn replace(sh: &mut Shell, all: Vec<String>, no_cd: bool, who: &str, io: &Io) -> i32 {
    let mut all = all.into_iter();
    let top = all.next().unwrap_or_else(|| sh.cwd.clone());
    let rest: Vec<String> = all.collect();
    if no_cd {
        sh.options.dirstack = rest;
        return 0;
    }
    let saved = std::mem::replace(&mut sh.options.dirstack, rest);
    let status = enter(sh, &top, who, io);
    if status != 0 {
        sh.options.dirstack = saved;
    }
    status
}

/// `pushd [-n] [+N | -N | DIR]`.
pub(super) fn pushd(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let usage = "pushd: usage: pushd [-n] [+N | -N | dir]\n";
    let (mut no_cd, mut operands, mut ended) = (false, Vec::new(), false);
    for a in args {
        if !ended && a == "--" {
            ended = true;
        } else if !ended && a == "-n" {
            no_cd = true;
        } else if !ended && a.len() > 1 && a.starts_with('-') && position(a, usize::MAX).is_none() {
            io.eprint(&format!(
                "bash: pushd: {}: invalid option\n{usage}",
                &a[..2]
            ));
            return 2;
        } else {
            operands.push(a.clone());
        }
    }
    if operands.len() > 1 {
        io.eprint(&format!("bash: pushd: too many arguments\n{usage}"));
        return 2;
    }
    let all = stack(sh);
    let new = match operands.first() {
        None => {
            if all.len() < 2 {
                io.eprint("bash: pushd: no other directory\n");
                return 1;
            }
            let mut new = all.clone();
            new.swap(0, 1);
            new
        }
        Some(a) => match position(a, all.len()) {
            Some(Ok(n)) => {
                let mut new = all[n..].to_vec();
                new.extend_from_slice(&all[..n]);
                new
            }
            Some(Err(())) => {
                io.eprint(&format!(
                    "bash: pushd: {a}: directory stack index out of range\n"
                ));
                return 1;
            }
            None if no_cd => {
                // The directory goes below the top; the working directory stays.
                let mut new = all.clone();
                new.insert(1, normalize(&sh.path(a).to_string_lossy()));
                new
            }
            None => {
                let saved = sh.options.dirstack.clone();
                let old = sh.cwd.clone();
                if enter(sh, a, "pushd", io) != 0 {
                    return 1;
                }
                sh.options.dirstack = saved;
                sh.options.dirstack.insert(0, old);
                print_stack(sh, io);
                return 0;
            }
        },
    };
    if replace(sh, new, no_cd, "pushd", io) != 0 {
        return 1;
    }
    print_stack(sh, io);
    0
}

/// `popd [-n] [+N | -N]`.
pub(super) fn popd(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let usage = "popd: usage: popd [-n] [+N | -N]\n";
    let (mut no_cd, mut which, mut ended) = (false, None, false);
    for a in args {
        if !ended && a == "--" {
            ended = true;
        } else if !ended && a == "-n" {
            no_cd = true;
        } else if let Some(p) = position(a, sh.options.dirstack.len() + 1) {
            match p {
                Ok(n) => which = Some(n),
                Err(()) => {
                    io.eprint(&format!(
                        "bash: popd: {a}: directory stack index out of range\n"
                    ));
                    return 1;
                }
            }
        } else if !ended && a.len() > 1 && a.starts_with('-') {
            io.eprint(&format!("bash: popd: {}: invalid option\n{usage}", &a[..2]));
            return 2;
        } else {
            io.eprint(&format!("bash: popd: {a}: invalid argument\n{usage}"));
            return 2;
        }
    }
    if sh.options.dirstack.is_empty() {
        io.eprint("bash: popd: directory stack empty\n");
        return 1;
    }
    let mut all = stack(sh);
    let n = which.unwrap_or(0);
    all.remove(n);
    // Removing an entry below the top changes no directory.
    if replace(sh, all, no_cd || n != 0, "popd", io) != 0 {
        return 1;
    }
    print_stack(sh, io);
    0
}

/// `dirs [-clpv] [+N | -N]`.
pub(super) fn dirs(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (mut long, mut lines, mut numbered, mut which) = (false, false, false, None);
    for a in args {
        if let Some(p) = position(a, sh.options.dirstack.len() + 1) {
            match p {
                Ok(n) => which = Some(n),
                Err(()) => {
                    io.eprint(&format!(
                        "bash: dirs: {a}: directory stack index out of range\n"
                    ));
                    return 1;
                }
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') && a != "--" {
            for c in a[1..].chars() {
                match c {
                    'c' => sh.options.dirstack.clear(),
                    'l' => long = true,
                    'p' => lines = true,
                    'v' => {
                        lines = true;
                        numbered = true;
                    }
                    _ => {
                        io.eprint(&format!(
                            "bash: dirs: -{c}: invalid option\ndirs: usage: dirs [-clpv] [+N] [-N]\n"
                        ));
                        return 2;
                    }
                }
            }
            continue;
        }
        if a == "--" {
            continue;
        }
        io.eprint(&format!(
            "bash: dirs: {a}: invalid argument\ndirs: usage: dirs [-clpv] [+N] [-N]\n"
        ));
        return 2;
    }
    let show = |d: &String| if long { d.clone() } else { tilde(sh, d) };
    let all = stack(sh);
    if let Some(n) = which {
        io.print(&format!("{}\n", show(&all[n])));
        return 0;
    }
    let mut out = String::new();
    for (i, d) in all.iter().enumerate() {
        match (lines, numbered) {
            (true, true) => out.push_str(&format!("{i:2}  {}\n", show(d))),
            (true, false) => out.push_str(&format!("{}\n", show(d))),
            _ => {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&show(d));
            }
        }
    }
    if !lines {
        out.push('\n');
    }
    io.print(&out);
    0
}
