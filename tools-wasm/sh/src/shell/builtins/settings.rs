//! The shell's settings: `set` (flags, `-o` names, positional parameters), `shopt`, and
//! `trap` with its signal names.

use super::*;
use sh_utility::format::SIGNALS;

pub(super) fn set(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    if args.is_empty() {
        // Every variable, arrays as `name=([0]="a" ...)`, in name order.
        let mut lines: Vec<(String, String)> = sh
            .vars
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    format!("{k}={}\n", crate::shell::xtrace::reusable(&v.value, true)),
                )
            })
            .collect();
        for n in sh.arrays.keys() {
            if let Some(d) = declaration(sh, n)
                && let Some((_, rest)) = d.split_once(' ').and_then(|(_, r)| r.split_once(' '))
            {
                lines.push((n.clone(), format!("{rest}\n")));
            }
        }
        lines.sort();
        let out: String = lines.into_iter().map(|(_, l)| l).collect();
        io.print(&out);
        return 0;
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            sh.positional = args[i + 1..].to_vec();
            refresh_option_vars(sh);
            return 0;
        }
        if a == "-" {
            // The end of the options; -x and -v go off. With nothing after it the
            // positional parameters stay.
            sh.options.xtrace = false;
            if i + 1 < args.len() {
                sh.positional = args[i + 1..].to_vec();
            }
            refresh_option_vars(sh);
            return 0;
        }
        let (on, flags) = match a.chars().next() {
            Some('-') => (true, &a[1..]),
            Some('+') => (false, &a[1..]),
            _ => {
                sh.positional = args[i..].to_vec();
                refresh_option_vars(sh);
                return 0;
            }
        };
        // Flags, in any combination; each `o` takes the next argument as an option name.
        for c in flags.chars() {
            let name = match c {
                'o' => {
                    i += 1;
                    match args.get(i) {
                        Some(n) => n.as_str(),
                        None => {
                            // `set -o` lists the options, `set +o` as commands.
                            let mut out = String::new();
                            for (n, v) in option_list(sh) {
                                out.push_str(&if on {
                                    format!("{n:<15}\t{}\n", if v { "on" } else { "off" })
                                } else {
                                    format!("set {}o {n}\n", if v { '-' } else { '+' })
                                });
                            }
                            io.print(&out);
                            return 0;
                        }
                    }
                }
                other => match SET_FLAGS.iter().find(|(f, _)| *f == other) {
                    Some((_, name)) => name,
                    None => {
                        io.eprint(&format!(
                            "bash: set: {}{other}: invalid option\nset: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]\n",
                            if on { '-' } else { '+' }
                        ));
                        return 2;
                    }
                },
            };
            if let Err(e) = set_option(sh, name, on) {
                io.eprint(&e);
                return 1;
            }
        }
        i += 1;
    }
    refresh_option_vars(sh);
    0
}

/// `set`'s one-letter flags and the options they are.
const SET_FLAGS: &[(char, &str)] = &[
    ('a', "allexport"),
    ('b', "notify"),
    ('e', "errexit"),
    ('f', "noglob"),
    ('h', "hashall"),
    ('k', "keyword"),
    ('m', "monitor"),
    ('n', "noexec"),
    ('p', "privileged"),
    ('t', "onecmd"),
    ('u', "nounset"),
    ('v', "verbose"),
    ('x', "xtrace"),
    ('B', "braceexpand"),
    ('C', "noclobber"),
    ('E', "errtrace"),
    ('H', "histexpand"),
    ('P', "physical"),
    ('T', "functrace"),
];

/// Options that only an interactive shell acts on: kept and shown, with their defaults.
const INTERACTIVE_OPTIONS: &[(&str, bool)] = &[
    ("emacs", false),
    ("hashall", true),
    ("histexpand", false),
    ("history", false),
    ("ignoreeof", false),
    ("interactive-comments", true),
    ("monitor", false),
    ("vi", false),
];

/// Turns `set -o` option `name` on or off; bash's message when it cannot.
pub fn set_option(sh: &mut Shell, name: &str, on: bool) -> Result<(), String> {
    let o = &mut sh.options;
    match name {
        "allexport" => o.allexport = on,
        "braceexpand" => o.no_braceexpand = !on,
        "errexit" => o.errexit = on,
        "errtrace" => o.errtrace = on,
        "functrace" => o.functrace = on,
        "noclobber" => o.noclobber = on,
        "noexec" => o.noexec = on,
        "noglob" => o.noglob = on,
        "nounset" => o.nounset = on,
        "pipefail" => o.pipefail = on,
        "xtrace" => o.xtrace = on,
        n if INTERACTIVE_OPTIONS.iter().any(|(x, _)| *x == n) => {
            let default = INTERACTIVE_OPTIONS.iter().any(|(x, d)| *x == n && *d);
            o.flipped.retain(|x| x != n);
            if on != default {
                o.flipped.push(n.to_string());
            }
            // One editing mode at a time.
            let other = match n {
                "emacs" => Some("vi"),
                "vi" => Some("emacs"),
                _ => None,
            };
            if on && let Some(other) = other {
                o.flipped.retain(|x| x != other);
            }
        }
        "keyword" | "notify" | "onecmd" | "physical" | "posix" | "privileged" | "verbose"
        | "nolog" => return Err(format!("bash: set: {name}: not supported in burrow\n")),
        _ => return Err(format!("bash: set: {name}: invalid option name\n")),
    }
    Ok(())
}

/// Whether an interactive-only option is on.
fn interactive_option(sh: &Shell, name: &str) -> bool {
    let default = INTERACTIVE_OPTIONS.iter().any(|(x, d)| *x == name && *d);
    default != sh.options.flipped.iter().any(|x| x == name)
}

/// `$-`: the flags that are on, in bash's order, then `c` (a `-c` command) or `s` (a
/// script on stdin).
pub fn option_flags(sh: &Shell) -> String {
    let on: Vec<(&str, bool)> = option_list(sh);
    let is_on = |n: &str| on.iter().any(|(x, v)| *x == n && *v);
    let mut f: String = SET_FLAGS
        .iter()
        .filter(|(_, n)| is_on(n))
        .map(|(c, _)| *c)
        .collect();
    if let Some(c) = sh.invocation {
        f.push(c);
    }
    f
}

/// Keeps `$SHELLOPTS` and `$BASHOPTS` (readonly, as in bash) in step with the options.
pub fn refresh_option_vars(sh: &mut Shell) {
    let set: Vec<&str> = option_list(sh)
        .into_iter()
        .filter(|(_, v)| *v)
        .map(|(n, _)| n)
        .collect();
    let mut shopts: Vec<String> = shopt_list(sh)
        .into_iter()
        .filter(|(_, v)| *v)
        .map(|(n, _)| n.to_string())
        .collect();
    shopts.sort();
    for (name, value) in [("SHELLOPTS", set.join(":")), ("BASHOPTS", shopts.join(":"))] {
        let exported = sh.vars.get(name).is_some_and(|v| v.exported);
        sh.vars
            .insert(name.to_string(), crate::shell::Var { value, exported });
        sh.set_attr(name, 'r', true);
    }
}

/// A builtin's leading option words (`-fv`, with `plus` also `+x`, up to `--` or the first
/// operand) as (sign, letter) pairs, and the index of the first operand.
pub(super) fn option_letters(args: &[String], plus: bool) -> (Vec<(char, char)>, usize) {
    let mut letters = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        let sign = match a.chars().next() {
            Some(c @ '-') if a.len() > 1 => c,
            Some(c @ '+') if plus && a.len() > 1 => c,
            _ => break,
        };
        letters.extend(a[1..].chars().map(|c| (sign, c)));
        i += 1;
    }
    (letters, i)
}

/// The options `set -o` lists, with their state, in bash's order.
pub(super) fn option_list(sh: &Shell) -> Vec<(&'static str, bool)> {
    let o = &sh.options;
    let i = |n| interactive_option(sh, n);
    vec![
        ("allexport", o.allexport),
        ("braceexpand", !o.no_braceexpand),
        ("emacs", i("emacs")),
        ("errexit", o.errexit),
        ("errtrace", o.errtrace),
        ("functrace", o.functrace),
        ("hashall", i("hashall")),
        ("histexpand", i("histexpand")),
        ("history", i("history")),
        ("ignoreeof", i("ignoreeof")),
        ("interactive-comments", i("interactive-comments")),
        ("keyword", false),
        ("monitor", i("monitor")),
        ("noclobber", o.noclobber),
        ("noexec", o.noexec),
        ("noglob", o.noglob),
        ("nolog", false),
        ("notify", false),
        ("nounset", o.nounset),
        ("onecmd", false),
        ("physical", false),
        ("pipefail", o.pipefail),
        ("posix", false),
        ("privileged", false),
        ("verbose", false),
        ("vi", i("vi")),
        ("xtrace", o.xtrace),
    ]
}

/// A condition as `trap` stores it: `EXIT`, `ERR`, or a signal name without `SIG`.
pub(super) fn trap_name(spec: &str) -> Option<String> {
    let up = spec.to_ascii_uppercase();
    let up = up.strip_prefix("SIG").unwrap_or(&up).to_string();
    if up == "0" || up == "EXIT" {
        return Some("EXIT".into());
    }
    if matches!(up.as_str(), "ERR" | "DEBUG" | "RETURN") {
        return Some(up);
    }
    if let Ok(n) = spec.parse::<usize>() {
        return SIGNALS.get(n.checked_sub(1)?).map(|s| s.to_string());
    }
    SIGNALS.contains(&up.as_str()).then_some(up)
}

/// `trap [-lp] [[ACTION] CONDITION...]`. EXIT runs when the shell ends (a subshell, `bash
/// -c`, a script, or the session's shell on `exit`); ERR where `set -e` would stop. Signals
/// are kept and listed but never arrive in a sandboxed call; DEBUG and RETURN are refused.
pub(super) fn trap(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let print = |sh: &Shell, names: Option<&[String]>| {
        let mut out = String::new();
        // bash's order: EXIT, the signals by number, then DEBUG, ERR, RETURN.
        let rank = |name: &str| match name {
            "EXIT" => 0,
            "DEBUG" => 100,
            "ERR" => 101,
            "RETURN" => 102,
            _ => 1 + SIGNALS.iter().position(|s| *s == name).unwrap_or(98),
        };
        let mut traps: Vec<(&String, &String)> = sh.options.traps.iter().collect();
        traps.sort_by_key(|(name, _)| rank(name));
        for (name, action) in traps {
            if names.is_some_and(|n| !n.iter().any(|x| trap_name(x).as_deref() == Some(name))) {
                continue;
            }
            let shown = if name == "EXIT" || name == "ERR" || name == "DEBUG" || name == "RETURN" {
                name.clone()
            } else {
                format!("SIG{name}")
            };
            // Always single-quoted, as bash prints them.
            let quoted = crate::shell::expand::single_quoted(action);
            out.push_str(&format!("trap -- {quoted} {shown}\n"));
        }
        out
    };
    let mut i = 0;
    if let Some(a) = args.first() {
        match a.as_str() {
            "-l" => {
                let list: Vec<String> = SIGNALS
                    .iter()
                    .enumerate()
                    .map(|(n, s)| format!("{:2}) SIG{s}", n + 1))
                    .collect();
                io.print(&format!("{}\n", list.join("\t")));
                return 0;
            }
            "-p" => {
                let names = &args[1..];
                io.print(&print(sh, (!names.is_empty()).then_some(names)));
                return 0;
            }
            "--" => i = 1,
            o if o.starts_with('-') && o.len() > 1 && o != "-" => {
                io.eprint(&format!(
                    "bash: trap: {o}: invalid option\ntrap: usage: trap [-lp] [[arg] signal_spec ...]\n"
                ));
                return 2;
            }
            _ => {}
        }
    }
    let rest = &args[i..];
    if rest.is_empty() {
        io.print(&print(sh, None));
        return 0;
    }
    // One operand, or a first one that is a signal number (`trap 0 2`), resets the
    // conditions named; otherwise the first is the action, as bash reads them.
    let numeric = |a: &str| !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit());
    if rest.len() == 1 && trap_name(&rest[0]).is_none() {
        // An action with no condition: bash 5.2 answers with its usage.
        io.eprint("trap: usage: trap [-lp] [[arg] signal_spec ...]\n");
        return 2;
    }
    let (action, conds) = if rest.len() == 1 || (numeric(&rest[0]) && trap_name(&rest[0]).is_some())
    {
        (None, rest)
    } else if rest[0] == "-" {
        (None, &rest[1..])
    } else {
        (Some(rest[0].clone()), &rest[1..])
    };
    let mut status = 0;
    for c in conds {
        match trap_name(c) {
            Some(n) if n == "DEBUG" || n == "RETURN" => {
                io.eprint(&format!("bash: trap: {n}: not supported in burrow\n"));
                status = 1;
            }
            Some(n) => match &action {
                Some(a) => {
                    sh.options.traps.insert(n, a.clone());
                }
                None => {
                    sh.options.traps.remove(&n);
                }
            },
            None => {
                io.eprint(&format!("bash: trap: {c}: invalid signal specification\n"));
                status = 1;
            }
        }
    }
    status
}

/// The `shopt` options burrow implements.
pub(super) const SHOPTS: &[&str] = &[
    "dotglob",
    "extglob",
    "globstar",
    "nocaseglob",
    "nullglob",
    "failglob",
    "inherit_errexit",
    "expand_aliases",
    "nocasematch",
    "xpg_echo",
    "cdable_vars",
];

/// `shopt` options only an interactive shell acts on (editing, history, completion, job
/// and mail notices): kept and shown, with bash's defaults.
const INTERACTIVE_SHOPTS: &[(&str, bool)] = &[
    ("autocd", false),
    ("cdspell", false),
    ("checkjobs", false),
    ("checkwinsize", true),
    ("cmdhist", true),
    ("complete_fullquote", true),
    ("direxpand", false),
    ("dirspell", false),
    ("force_fignore", true),
    ("histappend", false),
    ("histreedit", false),
    ("histverify", false),
    ("hostcomplete", true),
    ("huponexit", false),
    ("interactive_comments", true),
    ("lithist", false),
    ("mailwarn", false),
    ("no_empty_cmd_completion", false),
    ("progcomp", true),
    ("progcomp_alias", false),
    ("promptvars", true),
];

/// Every `shopt` option burrow has, with its state, in name order.
fn shopt_list(sh: &Shell) -> Vec<(&'static str, bool)> {
    let mut all: Vec<(&'static str, bool)> = SHOPTS
        .iter()
        .map(|n| (*n, *n == "expand_aliases" || sh.options.shopt(n)))
        .chain(
            INTERACTIVE_SHOPTS
                .iter()
                .map(|(n, d)| (*n, *d != sh.options.flipped.iter().any(|x| x == n))),
        )
        .collect();
    all.sort();
    all
}

/// `shopt [-pqsu] [-o] [NAME...]`: shows, queries, sets (`-s`) or unsets (`-u`) the shell
/// options; with `-o` the `set -o` ones. Options bash has that burrow does not are refused.
pub(super) fn shopt(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (mut set, mut quiet, mut print, mut set_o) = (None, false, false, false);
    let mut names = Vec::new();
    let mut options_done = false;
    for a in args {
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if !options_done && a.len() > 1 && a.starts_with('-') {
            for c in a[1..].chars() {
                match c {
                    's' => set = Some(true),
                    'u' => set = Some(false),
                    'q' => quiet = true,
                    'p' => print = true,
                    'o' => set_o = true,
                    _ => {
                        io.eprint(&format!(
                            "bash: shopt: -{c}: invalid option\nshopt: usage: shopt [-pqsu] [-o] [optname ...]\n"
                        ));
                        return 2;
                    }
                }
            }
            continue;
        }
        options_done = true;
        names.push(a.clone());
    }
    let show = |n: &str, v: bool| {
        if print && set_o {
            format!("set {}o {n}\n", if v { '-' } else { '+' })
        } else if print {
            format!("shopt {} {n}\n", if v { "-s" } else { "-u" })
        } else {
            format!("{n:<15}\t{}\n", if v { "on" } else { "off" })
        }
    };
    let list = |sh: &Shell| {
        if set_o {
            option_list(sh)
        } else {
            shopt_list(sh)
        }
    };
    if names.is_empty() {
        if quiet {
            return 0;
        }
        let mut out = String::new();
        for (n, v) in list(sh) {
            if set.is_none_or(|s| s == v) {
                out.push_str(&show(n, v));
            }
        }
        io.print(&out);
        return 0;
    }
    let mut status = 0;
    let mut out = String::new();
    for n in &names {
        let known = list(sh).iter().find(|(x, _)| x == n).map(|(_, v)| *v);
        let Some(v) = known else {
            let msg = if set_o {
                format!("bash: shopt: {n}: invalid option name\n")
            } else if KNOWN_SHOPTS.contains(&n.as_str()) {
                format!("bash: shopt: {n}: not supported in burrow\n")
            } else {
                format!("bash: shopt: {n}: invalid shell option name\n")
            };
            io.print(&std::mem::take(&mut out));
            io.eprint(&msg);
            status = 1;
            continue;
        };
        match set {
            Some(on) if set_o => {
                if let Err(e) = set_option(sh, n, on) {
                    io.eprint(&e);
                    status = 1;
                }
            }
            Some(on) if INTERACTIVE_SHOPTS.iter().any(|(x, _)| x == n) => {
                let default = INTERACTIVE_SHOPTS.iter().any(|(x, d)| x == n && *d);
                sh.options.flipped.retain(|x| x != n);
                if on != default {
                    sh.options.flipped.push(n.clone());
                }
            }
            Some(true) => {
                if !sh.options.shopt(n) {
                    sh.options.shopts.push(n.clone());
                }
            }
            Some(false) => sh.options.shopts.retain(|x| x != n),
            None => {
                if !quiet {
                    out.push_str(&show(n, v));
                }
                if !v {
                    status = 1;
                }
            }
        }
    }
    io.print(&out);
    refresh_option_vars(sh);
    status
}

/// bash's other `shopt` names (refused as not supported, rather than as unknown).
pub(super) const KNOWN_SHOPTS: &[&str] = &[
    "assoc_expand_once",
    "checkhash",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "execfail",
    "extdebug",
    "extquote",
    "globasciiranges",
    "globskipdots",
    "gnu_errfmt",
    "lastpipe",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "noexpand_translation",
    "patsub_replacement",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
];
