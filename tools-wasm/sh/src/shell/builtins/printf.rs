//! The `printf` builtin; the format engine is `sh_utility::format`.

use super::*;
use sh_utility::format::{escape_bytes, printf_bytes};

/// `echo [-neE] ARG...`; with `shopt -s xpg_echo` (`xpg`) escapes are read by default.
pub(super) fn echo(args: &[String], xpg: bool, io: &Io) -> i32 {
    let mut newline = true;
    let mut escapes = xpg;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)) {
            for c in a[1..].chars() {
                match c {
                    'n' => newline = false,
                    'e' => escapes = true,
                    _ => escapes = false,
                }
            }
            i += 1;
        } else {
            break;
        }
    }
    let text = args[i..].join(" ");
    let mut out = text.into_bytes();
    if escapes {
        let (b, stop) = escape_bytes(&String::from_utf8_lossy(&out));
        out = b;
        if stop {
            io.out.write(&out);
            return 0;
        }
    }
    if newline {
        out.push(b'\n');
    }
    io.out.write(&out);
    0
}

/// `printf [-v VAR] FORMAT [ARGUMENTS]`: with -v the output goes to VAR (an array element
/// too), as bash's builtin does.
pub(super) fn printf(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "printf: usage: printf [-v var] format [arguments]\n";
    let mut rest = args;
    let mut var: Option<String> = None;
    while let Some(a) = rest.first() {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        if a == "-v" {
            let Some(name) = rest.get(1) else {
                io.eprint(&format!(
                    "bash: printf: -v: option requires an argument\n{USAGE}"
                ));
                return 2;
            };
            var = Some(name.clone());
            rest = &rest[2..];
        } else if let Some(name) = a.strip_prefix("-v") {
            var = Some(name.to_string());
            rest = &rest[1..];
        } else if a.len() > 1 && a.starts_with('-') {
            let opt: String = a.chars().take(2).collect();
            io.eprint(&format!("bash: printf: {opt}: invalid option\n{USAGE}"));
            return 2;
        } else {
            break;
        }
    }
    let Some(fmt) = rest.first() else {
        io.eprint(USAGE);
        return 2;
    };
    if let Some(name) = &var
        && !is_assignable(name)
    {
        io.eprint(&format!("bash: printf: `{name}': not a valid identifier\n"));
        return 2;
    }
    let args: Vec<&str> = rest[1..].iter().map(String::as_str).collect();
    let (out, status) = printf_bytes(fmt, &args, &mut |e| io.eprint(&e));
    match var {
        Some(name) => {
            let value = String::from_utf8_lossy(&out).into_owned();
            match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
                Some((n, index)) => sh.array_set(n, index, value, false),
                None => sh.set(&name, value),
            }
        }
        None => io.out.write(&out),
    }
    status
}
