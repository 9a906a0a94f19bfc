//! Shell builtins and the shell-level commands (`cd`, `export`, `read`, `set`, ...). The file
//! and text utilities live in `coreutils.rs`.

use std::io::Write as _;

use crate::io::{Io, read_line};
use crate::shell::{Flow, Shell, Status};

/// strerror-style wording of an I/O error, as GNU tools print it.
pub fn io_msg(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "No such file or directory".into(),
        K::PermissionDenied => "Permission denied".into(),
        K::AlreadyExists => "File exists".into(),
        K::NotADirectory => "Not a directory".into(),
        K::IsADirectory => "Is a directory".into(),
        K::DirectoryNotEmpty => "Directory not empty".into(),
        K::InvalidInput => "Invalid argument".into(),
        _ if e.raw_os_error() == Some(32) => "Too many levels of symbolic links".into(),
        _ if e.raw_os_error() == Some(48) => "Disk quota exceeded".into(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_string()
        }
    }
}

/// Runs `argv` if it names a builtin; None otherwise.
pub fn run(sh: &mut Shell, argv: &[String], io: &Io) -> Option<Status> {
    let name = argv[0].as_str();
    let args = &argv[1..];
    Some(match name {
        ":" | "true" => Ok(0),
        "false" => Ok(1),
        "echo" => Ok(echo(args, io)),
        "printf" => Ok(printf(args, io)),
        "cd" => Ok(cd(sh, args, io)),
        "pwd" => {
            io.print(&format!("{}\n", sh.cwd));
            Ok(0)
        }
        "export" => Ok(export(sh, args, io)),
        "unset" => {
            for a in args.iter().filter(|a| !a.starts_with('-')) {
                sh.unset(a);
                sh.functions.remove(a);
            }
            Ok(0)
        }
        "set" => Ok(set(sh, args, io)),
        "local" | "declare" | "typeset" | "readonly" => Ok(local(sh, name, args, io)),
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
                .and_then(|a| a.parse().ok())
                .unwrap_or(sh.last_status),
        )),
        "exit" => Err(Flow::Exit(
            args.first()
                .and_then(|a| a.parse::<i32>().ok())
                .map(|c| c & 0xff)
                .unwrap_or(sh.last_status),
        )),
        "break" => {
            if sh.loop_depth == 0 {
                return Some(Ok(0));
            }
            Err(Flow::Break(
                args.first().and_then(|a| a.parse().ok()).unwrap_or(1),
            ))
        }
        "continue" => {
            if sh.loop_depth == 0 {
                return Some(Ok(0));
            }
            Err(Flow::Continue(
                args.first().and_then(|a| a.parse().ok()).unwrap_or(1),
            ))
        }
        "test" | "[" => Ok(test(sh, name, args, io)),
        "read" => Ok(read(sh, args, io)),
        "source" | "." => source(sh, args, io),
        "eval" => sh.run_script(&args.join(" "), io),
        "alias" => Ok(alias(sh, args, io)),
        "unalias" => {
            for a in args {
                sh.aliases.remove(a);
            }
            Ok(0)
        }
        "type" | "which" | "command" => Ok(kind_of(sh, name, args, io)),
        "env" | "printenv" => match crate::coreutils::check_options(name, args, io) {
            Some(code) => Ok(code),
            None => Ok(env(sh, name, args, io)),
        },
        "exec" if !args.is_empty() => sh.dispatch(args, io),
        "exec" => Ok(0),
        "wait" | "hash" | "shopt" | "trap" | "umask" | "ulimit" | "jobs" => Ok(0),
        _ => return crate::coreutils::run(sh, argv, io),
    })
}

fn echo(args: &[String], io: &Io) -> i32 {
    let mut newline = true;
    let mut escapes = false;
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
    let mut out = args[i..].join(" ");
    if escapes {
        let (s, stop) = backslash_escapes(&out);
        out = s;
        if stop {
            io.print(&out);
            return 0;
        }
    }
    if newline {
        out.push('\n');
    }
    io.print(&out);
    0
}

/// Interprets echo -e / printf %b escapes; the bool is true at `\c` (stop output).
pub fn backslash_escapes(s: &str) -> (String, bool) {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('e') => out.push('\x1b'),
            Some('\\') => out.push('\\'),
            Some('c') => return (out, true),
            Some('0') => {
                let mut v = 0u32;
                for _ in 0..3 {
                    match chars.peek() {
                        Some(d) if d.is_digit(8) => {
                            v = v * 8 + d.to_digit(8).unwrap_or(0);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\0'));
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    (out, false)
}

fn printf(args: &[String], io: &Io) -> i32 {
    let Some(fmt) = args.first() else {
        io.eprint("printf: usage: printf format [arguments]\n");
        return 2;
    };
    let fmt = if fmt == "--" {
        args.get(1).cloned().unwrap_or_default()
    } else {
        fmt.clone()
    };
    let rest: Vec<&String> = if args.first().is_some_and(|f| f == "--") {
        args[2..].iter().collect()
    } else {
        args[1..].iter().collect()
    };
    let mut out = String::new();
    let mut idx = 0;
    let mut status = 0;
    loop {
        let consumed_before = idx;
        let chars: Vec<char> = fmt.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' {
                let mut j = i + 1;
                // printf's octal escapes are \NNN (one to three digits, no leading 0 needed).
                let digits: String = chars[j..]
                    .iter()
                    .take(3)
                    .take_while(|d| d.is_digit(8))
                    .collect();
                if !digits.is_empty() {
                    let v = u32::from_str_radix(&digits, 8).unwrap_or(0);
                    out.push(char::from_u32(v).unwrap_or('\0'));
                    i = j + digits.len();
                    continue;
                }
                let mut esc = String::from("\\");
                if j < chars.len() {
                    esc.push(chars[j]);
                    j += 1;
                }
                out.push_str(&backslash_escapes(&esc).0);
                i = j;
                continue;
            }
            if c != '%' {
                out.push(c);
                i += 1;
                continue;
            }
            if i + 1 < chars.len() && chars[i + 1] == '%' {
                out.push('%');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            let mut spec = String::new();
            while j < chars.len() && "-+ #0123456789.".contains(chars[j]) {
                spec.push(chars[j]);
                j += 1;
            }
            let Some(&conv) = chars.get(j) else {
                out.push_str(&spec);
                break;
            };
            let arg = rest.get(idx).map(|s| s.as_str());
            idx += 1;
            let (left, zero, width, prec) = parse_spec(&spec);
            let body = match conv {
                's' => {
                    let s = arg.unwrap_or("");
                    match prec {
                        Some(p) => s.chars().take(p).collect(),
                        None => s.to_string(),
                    }
                }
                'b' => backslash_escapes(arg.unwrap_or("")).0,
                'c' => arg
                    .and_then(|a| a.chars().next())
                    .map(String::from)
                    .unwrap_or_default(),
                'd' | 'i' => {
                    let a = arg.unwrap_or("0");
                    let n = parse_int(a).unwrap_or_else(|| {
                        io.eprint(&format!("printf: {a}: invalid number\n"));
                        status = 1;
                        0
                    });
                    if spec.contains('+') && n >= 0 {
                        format!("+{n}")
                    } else {
                        n.to_string()
                    }
                }
                'u' => parse_int(arg.unwrap_or("0")).unwrap_or(0).to_string(),
                'x' => format!("{:x}", parse_int(arg.unwrap_or("0")).unwrap_or(0)),
                'X' => format!("{:X}", parse_int(arg.unwrap_or("0")).unwrap_or(0)),
                'o' => format!("{:o}", parse_int(arg.unwrap_or("0")).unwrap_or(0)),
                'f' | 'F' | 'e' | 'g' => {
                    let v: f64 = arg.unwrap_or("0").trim().parse().unwrap_or(0.0);
                    match conv {
                        'e' => format!("{:.*e}", prec.unwrap_or(6), v),
                        'g' => format!("{v}"),
                        _ => format!("{:.*}", prec.unwrap_or(6), v),
                    }
                }
                'q' => shell_quote(arg.unwrap_or("")),
                other => {
                    out.push('%');
                    out.push_str(&spec);
                    out.push(other);
                    i = j + 1;
                    continue;
                }
            };
            let padded = if body.chars().count() >= width {
                body
            } else if left {
                format!("{body:<width$}")
            } else if zero && matches!(conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'f' | 'F') {
                let (sign, digits) = if let Some(d) = body.strip_prefix('-') {
                    ("-", d.to_string())
                } else {
                    ("", body.clone())
                };
                format!("{sign}{:0>w$}", digits, w = width - sign.len())
            } else {
                format!("{body:>width$}")
            };
            out.push_str(&padded);
            i = j + 1;
        }
        if idx >= rest.len() || idx == consumed_before {
            break;
        }
    }
    io.print(&out);
    status
}

fn parse_spec(spec: &str) -> (bool, bool, usize, Option<usize>) {
    let left = spec.contains('-');
    let digits: String = spec
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let zero = spec
        .trim_start_matches(['-', '+', ' ', '#'])
        .starts_with('0');
    let (w, p) = match digits.split_once('.') {
        Some((w, p)) => (w, Some(p.parse().unwrap_or(0))),
        None => (digits.as_str(), None),
    };
    (
        left,
        zero,
        w.trim_start_matches('0').parse().unwrap_or(0),
        p,
    )
}

fn parse_int(s: &str) -> Option<i64> {
    let t = s.trim();
    if let Some(c) = t.strip_prefix('\'').or_else(|| t.strip_prefix('"')) {
        return c.chars().next().map(|c| c as i64);
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c))
    {
        return s.to_string();
    }
    if s.is_empty() {
        return "''".into();
    }
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c) {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
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
    let path = normalize(&sh.path(&target).to_string_lossy());
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            let old = std::mem::replace(&mut sh.cwd, path.clone());
            sh.set_exported("OLDPWD", old);
            sh.set_exported("PWD", path.clone());
            let _ = std::env::set_current_dir(&path);
            0
        }
        Ok(_) => {
            io.eprint(&format!("bash: cd: {target}: Not a directory\n"));
            1
        }
        Err(e) => {
            io.eprint(&format!("bash: cd: {target}: {}\n", io_msg(&e)));
            1
        }
    }
}

/// Lexically normalises an absolute path (`.` and `..`).
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
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

fn set(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
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
        if flags == "o" {
            i += 1;
            let opt = args.get(i).map(String::as_str).unwrap_or("");
            match opt {
                "errexit" => sh.options.errexit = on,
                "nounset" => sh.options.nounset = on,
                "pipefail" => sh.options.pipefail = on,
                "xtrace" => sh.options.xtrace = on,
                "noglob" => sh.options.noglob = on,
                _ => {}
            }
        } else {
            for c in flags.chars() {
                match c {
                    'e' => sh.options.errexit = on,
                    'u' => sh.options.nounset = on,
                    'x' => sh.options.xtrace = on,
                    'f' => sh.options.noglob = on,
                    _ => {}
                }
            }
        }
        i += 1;
    }
    0
}

fn local(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> i32 {
    if name == "local" && sh.locals.is_empty() {
        io.eprint("bash: local: can only be used in a function\n");
        return 1;
    }
    let flag = |c: char| args.iter().any(|a| a.starts_with('-') && a.contains(c));
    let export = flag('x');
    let (assoc, indexed) = (flag('A'), flag('a'));
    // Inside a function, `local`/`declare` hide the caller's variable of that name until the
    // function returns (scalar and array alike).
    let scoped = name == "local" || (name != "readonly" && !sh.locals.is_empty());
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let hid = if scoped && !sh.locals.is_empty() {
            let saved = (
                k.clone(),
                sh.vars.get(&k).cloned(),
                sh.arrays.get(&k).cloned(),
            );
            if let Some(frame) = sh.locals.last_mut() {
                frame.push(saved);
            }
            true
        } else {
            false
        };
        // declare -a/-A NAME, and NAME=(items) given as one word.
        if assoc
            || indexed
            || v.as_deref()
                .is_some_and(|v| v.starts_with('(') && v.ends_with(')'))
        {
            let mut array = if assoc {
                crate::shell::Array::Assoc(Default::default())
            } else {
                crate::shell::Array::Indexed(Default::default())
            };
            if let Some(list) = v
                .as_deref()
                .and_then(|v| v.strip_prefix('('))
                .and_then(|v| v.strip_suffix(')'))
            {
                let mut next = 0;
                for item in list.split_whitespace() {
                    let (key, val) = match item.strip_prefix('[').and_then(|i| i.split_once("]=")) {
                        Some((key, val)) => (Some(key.to_string()), val.to_string()),
                        None => (None, item.to_string()),
                    };
                    match &mut array {
                        crate::shell::Array::Indexed(m) => {
                            let i = key.and_then(|k| k.parse().ok()).unwrap_or(next);
                            m.insert(i, val);
                            next = i + 1;
                        }
                        crate::shell::Array::Assoc(m) => {
                            m.insert(key.unwrap_or_default(), val);
                        }
                    }
                }
            } else if !hid && let Some(existing) = sh.arrays.get(&k) {
                array = existing.clone();
            }
            sh.vars.remove(&k);
            sh.arrays.insert(k, array);
            continue;
        }
        if hid {
            sh.arrays.remove(&k);
            if v.is_none() {
                sh.vars.remove(&k);
            }
        }
        match v {
            Some(v) => sh.set(&k, v),
            None => {
                if !sh.vars.contains_key(&k) {
                    sh.set(&k, "");
                }
            }
        }
        if export && let Some(var) = sh.vars.get_mut(&k) {
            var.exported = true;
        }
    }
    0
}

fn test(sh: &Shell, name: &str, args: &[String], io: &Io) -> i32 {
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
        Ok(e) => match crate::test::eval(sh, &e) {
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

fn read(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let mut raw = false;
    let mut names = Vec::new();
    let mut delim_all = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-r" => raw = true,
            "-d" => {
                i += 1;
                delim_all = args.get(i).is_some_and(|d| d.is_empty());
            }
            "-p" | "-t" | "-n" | "-u" => i += 1,
            "-a" | "-s" | "-e" => {}
            n => names.push(n.to_string()),
        }
        i += 1;
    }
    let line = if delim_all {
        let all = crate::io::read_all(&io.stdin);
        if all.is_empty() {
            None
        } else {
            Some(String::from_utf8_lossy(&all).into_owned())
        }
    } else {
        read_line(&io.stdin)
    };
    let Some(mut line) = line else {
        for n in &names {
            sh.set(n, "");
        }
        return 1;
    };
    if !raw {
        while line.ends_with('\\') {
            line.pop();
            match read_line(&io.stdin) {
                Some(next) => line.push_str(&next),
                None => break,
            }
        }
        line = line.replace("\\", "");
    }
    if names.is_empty() {
        sh.set("REPLY", line);
        return 0;
    }
    let ifs = sh.get("IFS").unwrap_or(" \t\n").to_string();
    let mut rest = line
        .trim_start_matches(|c| ifs.contains(c) && c != '\n')
        .to_string();
    for (k, n) in names.iter().enumerate() {
        if k + 1 == names.len() {
            let v = rest
                .trim_end_matches(|c: char| ifs.contains(c) && c.is_whitespace())
                .to_string();
            sh.set(n, v);
        } else {
            let end = rest.find(|c| ifs.contains(c)).unwrap_or(rest.len());
            let word = rest[..end].to_string();
            rest = rest[end..]
                .trim_start_matches(|c| ifs.contains(c))
                .to_string();
            sh.set(n, word);
        }
    }
    0
}

fn source(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let Some(file) = args.first() else {
        io.eprint("bash: source: filename argument required\n");
        return Ok(2);
    };
    match std::fs::read_to_string(sh.path(file)) {
        Ok(src) => {
            let saved = std::mem::replace(&mut sh.positional, args[1..].to_vec());
            let r = sh.run_script(&src, io);
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

fn kind_of(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> i32 {
    if name == "command" {
        let rest: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .cloned()
            .collect();
        if args.iter().any(|a| a == "-v" || a == "-V") {
            return kind_of(sh, "which", &rest, io);
        }
        if rest.is_empty() {
            return 0;
        }
        if !is_shell_builtin(&rest[0])
            && let Some(path) = crate::process::find(sh, &rest[0])
        {
            return crate::process::exec(sh, &path, &rest, io).unwrap_or(1);
        }
        return match crate::builtins::run(sh, &rest, io) {
            Some(Ok(s)) => s,
            Some(Err(_)) => 1,
            None => {
                io.eprint(&format!("bash: {}: command not found\n", rest[0]));
                127
            }
        };
    }
    let mut status = 0;
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        let builtin = is_builtin(a);
        let program = if SHELL_ONLY.contains(&a.as_str()) {
            None
        } else {
            crate::process::find(sh, a)
        };
        if name == "which" {
            if let Some(p) = &program {
                io.print(&format!("{}\n", p.display()));
            } else if builtin && !SHELL_ONLY.contains(&a.as_str()) {
                io.print(&format!("/usr/bin/{a}\n"));
            } else {
                status = 1;
            }
        } else if sh.aliases.contains_key(a) {
            io.print(&format!("{a} is aliased to `{}'\n", sh.aliases[a]));
        } else if sh.functions.contains_key(a) {
            io.print(&format!("{a} is a function\n"));
        } else if SHELL_ONLY.contains(&a.as_str()) {
            io.print(&format!("{a} is a shell builtin\n"));
        } else if let Some(p) = &program {
            io.print(&format!("{a} is {}\n", p.display()));
        } else if builtin {
            io.print(&format!("{a} is /usr/bin/{a}\n"));
        } else {
            io.eprint(&format!("bash: type: {a}: not found\n"));
            status = 1;
        }
    }
    status
}

const SHELL_ONLY: &[&str] = &[
    ":", "true", "false", "echo", "printf", "cd", "pwd", "export", "unset", "set", "local",
    "declare", "typeset", "readonly", "shift", "return", "exit", "break", "continue", "test", "[",
    "read", "source", ".", "eval", "alias", "unalias", "type", "command", "exec", "wait", "hash",
    "shopt", "trap", "umask", "ulimit", "jobs",
];

/// Whether `name` is part of the shell itself (never looked up on PATH).
pub fn is_shell_builtin(name: &str) -> bool {
    SHELL_ONLY.contains(&name)
}

pub fn is_builtin(name: &str) -> bool {
    SHELL_ONLY.contains(&name)
        || crate::coreutils::NAMES.contains(&name)
        || crate::extra::NAMES.contains(&name)
        || crate::misc::NAMES.contains(&name)
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
            Ok(s) | Err(Flow::Exit(s)) => s,
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
