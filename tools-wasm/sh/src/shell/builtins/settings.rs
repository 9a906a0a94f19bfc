//! The shell's settings: `set` (flags, `-o` names, positional parameters), `shopt`, and
//! `trap` with its signal names.

use super::*;
use sh_utility::format::SIGNALS;

pub(super) fn set(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    if args.is_empty() {
        for (k, v) in &sh.vars {
            io.print(&format!("{k}={}\n", shell_quote(&v.value)));
        }
        return 0;
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            sh.positional = args[i + 1..].to_vec();
            return 0;
        }
        let (on, flags) = match a.chars().next() {
            Some('-') => (true, &a[1..]),
            Some('+') => (false, &a[1..]),
            _ => {
                sh.positional = args[i..].to_vec();
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
                            // `set -o` alone lists the options.
                            for (n, v) in option_list(sh) {
                                io.print(&format!("{n:<15}\t{}\n", if v { "on" } else { "off" }));
                            }
                            return 0;
                        }
                    }
                }
                'e' => "errexit",
                'u' => "nounset",
                'x' => "xtrace",
                'f' => "noglob",
                'E' => "errtrace",
                'T' => "functrace",
                'C' => "noclobber",
                // Defaults of a non-interactive bash that change nothing here.
                'h' | 'B' | 'H' | 'm' => continue,
                other => {
                    io.eprint(&format!(
                        "bash: set: {}{other}: invalid option\nset: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]\n",
                        if on { '-' } else { '+' }
                    ));
                    return 2;
                }
            };
            match name {
                "errexit" => sh.options.errexit = on,
                "nounset" => sh.options.nounset = on,
                "pipefail" => sh.options.pipefail = on,
                "xtrace" => sh.options.xtrace = on,
                "noglob" => sh.options.noglob = on,
                "errtrace" => sh.options.errtrace = on,
                "functrace" => sh.options.functrace = on,
                "noclobber" => sh.options.noclobber = on,
                "braceexpand"
                | "hashall"
                | "histexpand"
                | "monitor"
                | "interactive-comments"
                | "emacs"
                | "vi"
                | "history"
                | "ignoreeof" => {}
                "allexport" | "noexec" | "notify" | "onecmd" | "physical" | "posix"
                | "privileged" | "verbose" | "keyword" | "nolog" => {
                    io.eprint(&format!("bash: set: {name}: not supported in burrow\n"));
                    return 1;
                }
                _ => {
                    io.eprint(&format!("bash: set: {name}: invalid option name\n"));
                    return 1;
                }
            }
        }
        i += 1;
    }
    0
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

/// The options `set -o` lists, with their state.
pub(super) fn option_list(sh: &Shell) -> Vec<(&'static str, bool)> {
    let o = &sh.options;
    vec![
        ("errexit", o.errexit),
        ("errtrace", o.errtrace),
        ("functrace", o.functrace),
        ("noclobber", o.noclobber),
        ("noglob", o.noglob),
        ("nounset", o.nounset),
        ("pipefail", o.pipefail),
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
];

/// `shopt [-s|-u] [-q] [NAME...]`: options of glob expansion; others bash has are refused.
pub(super) fn shopt(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let mut set = None;
    let mut quiet = false;
    let mut names = Vec::new();
    for a in args {
        match a.as_str() {
            "-s" => set = Some(true),
            "-u" => set = Some(false),
            "-q" => quiet = true,
            "-p" => {}
            o if o.starts_with('-') => {
                io.eprint(&format!(
                    "bash: shopt: {o}: invalid option\nshopt: usage: shopt [-pqsu] [-o] [optname ...]\n"
                ));
                return 2;
            }
            n => names.push(n.to_string()),
        }
    }
    let on = |sh: &Shell, n: &str| {
        if n == "expand_aliases" {
            return true;
        }
        sh.options.shopts.iter().any(|x| x == n)
    };
    if names.is_empty() {
        for n in SHOPTS {
            let v = on(sh, n);
            if set.is_none_or(|s| s == v) {
                io.print(&format!("{n:<15}\t{}\n", if v { "on" } else { "off" }));
            }
        }
        return 0;
    }
    let mut status = 0;
    for n in &names {
        if !SHOPTS.contains(&n.as_str()) {
            if KNOWN_SHOPTS.contains(&n.as_str()) {
                io.eprint(&format!("bash: shopt: {n}: not supported in burrow\n"));
            } else {
                io.eprint(&format!("bash: shopt: {n}: invalid shell option name\n"));
            }
            status = 1;
            continue;
        }
        match set {
            Some(true) => {
                if !on(sh, n) {
                    sh.options.shopts.push(n.clone());
                }
            }
            Some(false) => sh.options.shopts.retain(|x| x != n),
            None => {
                let v = on(sh, n);
                if !quiet {
                    io.print(&format!("{n:<15}\t{}\n", if v { "on" } else { "off" }));
                }
                if !v {
                    status = 1;
                }
            }
        }
    }
    status
}

/// bash's other `shopt` names (refused as not supported, rather than as unknown).
pub(super) const KNOWN_SHOPTS: &[&str] = &[
    "autocd",
    "assoc_expand_once",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "complete_fullquote",
    "direxpand",
    "dirspell",
    "execfail",
    "extdebug",
    "extquote",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "mailwarn",
    "no_empty_cmd_completion",
    "noexpand_translation",
    "patsub_replacement",
    "progcomp",
    "progcomp_alias",
    "promptvars",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
    "xpg_echo",
];
