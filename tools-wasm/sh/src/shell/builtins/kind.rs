//! What a command name is: `type [-afptP] NAME...` as bash describes it (alias, keyword,
//! function, builtin, then every file on PATH with `-a`), and `which`.

use super::*;

/// bash's reserved words (`type` and `command -v` name them).
pub(super) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// The files `name` is on PATH, as bash shows them (the PATH entry joined with the name,
/// so a relative entry stays relative; `NAME.wasm` where only that is there): the first, or
/// with `all` every one. A name with a `/` is itself when it is a file.
pub(super) fn path_matches(sh: &Shell, name: &str, all: bool) -> Vec<String> {
    if name.is_empty() {
        return Vec::new();
    }
    let is_file = |p: &str| std::fs::metadata(sh.path(p)).is_ok_and(|m| m.is_file());
    if name.contains('/') {
        return if is_file(name) {
            vec![name.to_string()]
        } else {
            Vec::new()
        };
    }
    let mut out = Vec::new();
    let path = sh.get("PATH").unwrap_or_default().to_string();
    for dir in path.split(':') {
        let shown = match dir {
            "" => name.to_string(),
            d if d.ends_with('/') => format!("{d}{name}"),
            d => format!("{d}/{name}"),
        };
        // burrow runs `NAME.wasm` on PATH as `NAME` (`process::find`): type shows that file.
        let wasm = (!name.ends_with(".wasm")).then(|| format!("{shown}.wasm"));
        let Some(found) = std::iter::once(shown).chain(wasm).find(|p| is_file(p)) else {
            continue;
        };
        if !out.contains(&found) {
            out.push(found);
            if !all {
                break;
            }
        }
    }
    out
}

/// `type [-afptP] NAME...`: `-t` prints the kind's word, `-p` the file only when the name
/// is one, `-P` searches PATH even for builtins and functions, `-a` every meaning, `-f`
/// skips functions. Status 1 when a name is none of them.
pub(super) fn type_builtin(sh: &Shell, args: &[String], io: &Io) -> i32 {
    #[derive(PartialEq, Clone, Copy)]
    enum Show {
        Describe,
        Kind,
        PathOnly,
    }
    let (mut show, mut all, mut no_funcs, mut force_path) = (Show::Describe, false, false, false);
    let flag = |c| {
        match c {
            'a' => all = true,
            'f' => no_funcs = true,
            't' => show = Show::Kind,
            'p' => show = Show::PathOnly,
            'P' => {
                show = Show::PathOnly;
                force_path = true;
            }
            _ => return false,
        }
        true
    };
    let i = match super::flag_words("type", "[-afptP] name [name ...]", args, io, flag) {
        Ok(i) => i,
        Err(status) => return status,
    };
    let mut out = String::new();
    let mut status = 0;
    for name in &args[i..] {
        let mut found = false;
        // Each meaning in bash's order; `done` says whether to stop at it.
        let mut meaning = |out: &mut String, kind: &str, described: String| {
            found = true;
            match show {
                Show::Kind => out.push_str(&format!("{kind}\n")),
                Show::Describe => out.push_str(&described),
                Show::PathOnly => {}
            }
            !all
        };
        if !force_path
            && let Some(v) = sh.aliases.get(name)
            && meaning(&mut out, "alias", format!("{name} is aliased to `{v}'\n"))
        {
            continue;
        }
        if !force_path
            && KEYWORDS.contains(&name.as_str())
            && meaning(&mut out, "keyword", format!("{name} is a shell keyword\n"))
        {
            continue;
        }
        if !force_path
            && !no_funcs
            && let Some((src, _)) = sh.functions.get(name)
            && meaning(
                &mut out,
                "function",
                format!("{name} is a function\n{src}\n"),
            )
        {
            continue;
        }
        if !force_path
            && is_shell_builtin(name)
            && meaning(&mut out, "builtin", format!("{name} is a shell builtin\n"))
        {
            continue;
        }
        let mut files = path_matches(sh, name, all);
        // A built-in utility runs whatever PATH says: where the sandbox lists it.
        if files.is_empty() && crate::shell::utilities::is_utility(name) {
            files.push(format!("/usr/bin/{name}"));
        }
        for p in files {
            found = true;
            out.push_str(&match show {
                Show::Kind => "file\n".to_string(),
                Show::Describe => format!("{name} is {p}\n"),
                Show::PathOnly => format!("{p}\n"),
            });
        }
        if !found {
            if show == Show::Describe {
                io.print(&std::mem::take(&mut out));
                io.eprint(&format!("bash: type: {name}: not found\n"));
            }
            status = 1;
        }
    }
    io.print(&out);
    status
}

/// `which NAME...`: the file each runs from; a built-in utility is where the sandbox lists
/// it (`/usr/bin`).
pub(super) fn which(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let mut status = 0;
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        let program = if is_shell_builtin(a) {
            None
        } else {
            crate::shell::process::find(sh, a)
        };
        if let Some(p) = &program {
            io.print(&format!("{}\n", p.display()));
        } else if is_builtin(a) && !is_shell_builtin(a) {
            io.print(&format!("/usr/bin/{a}\n"));
        } else {
            status = 1;
        }
    }
    status
}
