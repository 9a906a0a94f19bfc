//! Shell builtins and the shell-level commands (`cd`, `export`, `read`, `set`, ...). The file
//! and text utilities live in `coreutils.rs`.

use std::io::Write as _;

use crate::io::Io;
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
        "eval" => sh.run_script(&args.join(" "), io),
        "alias" => Ok(alias(sh, args, io)),
        "unalias" => {
            for a in args {
                sh.aliases.remove(a);
            }
            Ok(0)
        }
        "command" => command(sh, args, io),
        "builtin" => builtin(sh, args, io),
        "type" | "which" => Ok(kind_of(sh, name, args, io)),
        "env" | "printenv" => match crate::coreutils::check_options(name, args, io) {
            Some(code) => Ok(code),
            None => Ok(env(sh, name, args, io)),
        },
        "exec" if !args.is_empty() => sh.dispatch(args, io),
        "exec" => Ok(0),
        // `let EXPR...`: arithmetic, status 1 when the last value is 0.
        "let" if args.is_empty() => {
            io.eprint("bash: let: expression expected\n");
            Ok(1)
        }
        "let" => (|| {
            let mut last = 0;
            for a in args {
                last = crate::expand::arith_str(sh, a, io)?;
            }
            Ok(i32::from(last == 0))
        })(),
        "trap" => Ok(trap(sh, args, io)),
        "getopts" => Ok(getopts(sh, args, io)),
        "shopt" => Ok(shopt(sh, args, io)),
        // No background jobs in a sandboxed call: nothing to wait for or list.
        "wait" | "hash" | "umask" | "ulimit" | "jobs" => Ok(0),
        _ => return crate::coreutils::run(sh, argv, io),
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

/// Bytes as UTF-8 text when they are, else one character per byte.
fn lossless_text(b: Vec<u8>) -> String {
    match String::from_utf8(b) {
        Ok(t) => t,
        Err(e) => e.into_bytes().into_iter().map(char::from).collect(),
    }
}

/// Interprets echo -e / printf %b escapes as text (for `$'...'` and format strings): the
/// bytes of [`escape_bytes`], as UTF-8 when they are, else one character per byte.
pub fn backslash_escapes(s: &str) -> (String, bool) {
    let (b, stop) = escape_bytes(s);
    let text = lossless_text(b);
    (text, stop)
}

/// Interprets echo -e / printf %b escapes into bytes (`\0NNN` and `\xHH` are single bytes,
/// `\uHHHH` a character); the bool is true at `\c` (stop output).
pub fn escape_bytes(s: &str) -> (Vec<u8>, bool) {
    escapes(s, Escapes::Echo)
}

/// printf's `%b`: echo -e's escapes, and also `\NNN` octal without the leading 0.
fn escape_bytes_b(s: &str) -> (Vec<u8>, bool) {
    escapes(s, Escapes::PrintfB)
}

/// `$'...'`: octal without the leading 0 as in `%b`, and `\cX` is control-X (not the end).
pub fn ansi_c_escapes(s: &str) -> String {
    lossless_text(escapes(s, Escapes::AnsiC).0)
}

/// Which reader of backslash escapes: they differ in octal forms and in `\c`.
#[derive(Clone, Copy, PartialEq)]
enum Escapes {
    Echo,
    PrintfB,
    AnsiC,
}

fn escapes(s: &str, mode: Escapes) -> (Vec<u8>, bool) {
    let bare_octal = mode != Escapes::Echo;
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    let mut buf = [0u8; 4];
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let digits = |radix: u32, max: usize, chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut v = 0u32;
            let mut n = 0;
            while n < max {
                match chars.peek().and_then(|d| d.to_digit(radix)) {
                    Some(d) => {
                        v = v * radix + d;
                        chars.next();
                        n += 1;
                    }
                    None => break,
                }
            }
            (v, n)
        };
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('r') => out.push(b'\r'),
            Some('a') => out.push(0x07),
            Some('b') => out.push(0x08),
            Some('f') => out.push(0x0c),
            Some('v') => out.push(0x0b),
            Some('e' | 'E') => out.push(0x1b),
            Some('\\') => out.push(b'\\'),
            Some('c') if mode == Escapes::AnsiC => match chars.next() {
                Some(x) if x.is_ascii() => out.push((x as u8) & 0x1f),
                Some(x) => out.extend_from_slice(x.encode_utf8(&mut buf).as_bytes()),
                None => out.extend_from_slice(b"\\c"),
            },
            Some('c') => return (out, true),
            // `\0NNN` in echo -e and `%b`; in `$'...'` the 0 is the first of three digits.
            Some('0') => {
                let max = if mode == Escapes::AnsiC { 2 } else { 3 };
                let (v, _) = digits(8, max, &mut chars);
                out.push(v as u8);
            }
            Some(d @ '1'..='7') if bare_octal => {
                let (v, n) = digits(8, 2, &mut chars);
                let lead = d.to_digit(8).unwrap_or(0);
                out.push((lead * 8u32.pow(n as u32) + v) as u8);
            }
            Some('x') => match digits(16, 2, &mut chars) {
                (_, 0) => out.extend_from_slice(b"\\x"),
                (v, _) => out.push(v as u8),
            },
            Some(u @ ('u' | 'U')) => {
                let max = if u == 'u' { 4 } else { 8 };
                match digits(16, max, &mut chars) {
                    (_, 0) => {
                        out.push(b'\\');
                        out.push(u as u8);
                    }
                    (v, _) => {
                        let c = char::from_u32(v).unwrap_or('\u{fffd}');
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            Some(o) => {
                out.push(b'\\');
                out.extend_from_slice(o.encode_utf8(&mut buf).as_bytes());
            }
            None => out.push(b'\\'),
        }
    }
    (out, false)
}

/// C's `%e`: `d.dddddde+XX` (at least two exponent digits).
fn c_exp(v: f64, prec: usize, upper: bool, alt: bool) -> String {
    if !v.is_finite() {
        return c_special(v, upper);
    }
    let s = format!("{v:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut mant = mant.to_string();
    if alt && prec == 0 {
        mant.push('.');
    }
    let sign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mant}{e}{sign}{:02}", exp.abs())
}

fn c_special(v: f64, upper: bool) -> String {
    let s = if v.is_nan() {
        "nan"
    } else if v < 0.0 {
        "-inf"
    } else {
        "inf"
    };
    if upper {
        s.to_uppercase()
    } else {
        s.to_string()
    }
}

/// C's `%g`: the shorter of `%e` and `%f` at precision P (significant digits), trailing
/// zeros removed unless `#`.
fn c_general(v: f64, prec: Option<usize>, upper: bool, alt: bool) -> String {
    if !v.is_finite() {
        return c_special(v, upper);
    }
    let p = match prec {
        Some(0) => 1,
        Some(p) => p,
        None => 6,
    };
    let exp = if v == 0.0 {
        0
    } else {
        // The exponent %e would print at this precision (rounding may carry).
        let s = format!("{:.*e}", p - 1, v);
        s.split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let strip = |s: String| -> String {
        if alt || !s.contains('.') {
            return s;
        }
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if exp < -4 || exp >= p as i32 {
        let s = c_exp(v, p - 1, upper, alt);
        let (m, e) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
        format!("{}{e}", strip(m.to_string()))
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip(format!("{v:.decimals$}"))
    }
}

/// One printf run: the bytes it writes and its status; errors go to `err`.
pub fn printf_bytes(fmt: &str, rest: &[&str], err: &mut dyn FnMut(String)) -> (Vec<u8>, i32) {
    let mut out: Vec<u8> = Vec::new();
    let mut idx = 0;
    let mut status = 0;
    let chars: Vec<char> = fmt.chars().collect();
    let mut buf = [0u8; 4];
    loop {
        let consumed_before = idx;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' {
                let j = i + 1;
                // printf's octal escapes are \NNN (one to three digits, no leading 0 needed).
                let digits: String = chars[j..]
                    .iter()
                    .take(3)
                    .take_while(|d| d.is_digit(8))
                    .collect();
                if !digits.is_empty() {
                    let v = u32::from_str_radix(&digits, 8).unwrap_or(0);
                    out.push(v as u8);
                    i = j + digits.len();
                    continue;
                }
                // One escape: a backslash, its letter and any digits it takes.
                let mut end = (j + 1).min(chars.len());
                match chars.get(j) {
                    Some('x') => {
                        while end < chars.len() && end < j + 3 && chars[end].is_ascii_hexdigit() {
                            end += 1;
                        }
                    }
                    Some('u') | Some('U') => {
                        let max = if chars[j] == 'u' { 5 } else { 9 };
                        while end < chars.len() && end < j + max && chars[end].is_ascii_hexdigit() {
                            end += 1;
                        }
                    }
                    _ => {}
                }
                let esc: String = chars[i..end].iter().collect();
                let (b, stop) = escape_bytes(&esc);
                out.extend_from_slice(&b);
                if stop {
                    return (out, status);
                }
                i = end;
                continue;
            }
            if c != '%' {
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += 1;
                continue;
            }
            if i + 1 < chars.len() && chars[i + 1] == '%' {
                out.push(b'%');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            let mut spec = String::new();
            while j < chars.len() && "-+ #0123456789.*".contains(chars[j]) {
                if chars[j] == '*' {
                    // A width or precision taken from the arguments.
                    let a = rest.get(idx).copied().unwrap_or("");
                    idx += 1;
                    let (n, whole) = parse_int_arg(a);
                    if !whole {
                        err(format!("bash: printf: {a}: invalid number\n"));
                        status = 1;
                    }
                    if n < 0 && !spec.ends_with('.') {
                        spec.push('-');
                    }
                    if !(n < 0 && spec.ends_with('.')) {
                        spec.push_str(&n.unsigned_abs().to_string());
                    } else {
                        // A negative precision is as if none was given.
                        spec.pop();
                    }
                } else {
                    spec.push(chars[j]);
                }
                j += 1;
            }
            // `%(FORMAT)T`: a time (seconds since the epoch; -1 or none for now) through
            // strftime, as bash's printf does.
            if chars.get(j) == Some(&'(')
                && let Some(close) = (j + 1..chars.len().saturating_sub(1))
                    .find(|&k| chars[k] == ')' && chars[k + 1] == 'T')
            {
                let tfmt: String = chars[j + 1..close].iter().collect();
                let arg = rest.get(idx).copied();
                idx += 1;
                let now = || {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs() as i64)
                        .unwrap_or(0)
                };
                let secs = match arg.map(str::trim) {
                    None | Some("" | "-1" | "-2") => now(),
                    Some(a) => parse_int(a).unwrap_or_else(|| {
                        err(format!("printf: {a}: invalid number\n"));
                        status = 1;
                        0
                    }),
                };
                let (left, _, width, prec) = parse_spec(&spec);
                let mut t = crate::text::strftime(secs, &tfmt);
                if let Some(p) = prec {
                    t = t.chars().take(p).collect();
                }
                let pad = " ".repeat(width.saturating_sub(t.chars().count()));
                let t = if left { t + &pad } else { pad + &t };
                out.extend_from_slice(t.as_bytes());
                i = close + 2;
                continue;
            }
            // C's length modifiers (`%ld`, `%zu`, `%lld`) change nothing in bash's printf.
            while chars.get(j).is_some_and(|c| "hjlLtz".contains(*c)) {
                j += 1;
            }
            let Some(&conv) = chars.get(j) else {
                err(format!(
                    "bash: printf: `{}': missing format character\n",
                    chars[i..].iter().collect::<String>()
                ));
                return (out, 1);
            };
            let arg = rest.get(idx).copied();
            idx += 1;
            let (left, zero, width, prec) = parse_spec(&spec);
            let alt = spec.contains('#');
            let mut int = |a: Option<&str>| -> i64 {
                let a = a.unwrap_or("");
                let (n, whole) = parse_int_arg(a);
                if !whole {
                    err(format!("bash: printf: {a}: invalid number\n"));
                    status = 1;
                }
                n
            };
            let body: Vec<u8> = match conv {
                's' => {
                    let s = arg.unwrap_or("");
                    match prec {
                        Some(p) => s.chars().take(p).collect::<String>().into_bytes(),
                        None => s.as_bytes().to_vec(),
                    }
                }
                'b' => {
                    let (b, stop) = escape_bytes_b(arg.unwrap_or(""));
                    if stop {
                        out.extend_from_slice(&b);
                        return (out, status);
                    }
                    b
                }
                // The first byte, not the first character, as bash's printf does.
                'c' => arg
                    .and_then(|a| a.as_bytes().first())
                    .map(|b| vec![*b])
                    .unwrap_or_default(),
                'd' | 'i' => {
                    let n = int(arg);
                    let sign = if n >= 0 && spec.contains('+') {
                        "+"
                    } else if n >= 0 && spec.contains(' ') {
                        " "
                    } else {
                        ""
                    };
                    let digits = n.unsigned_abs().to_string();
                    let digits = match prec {
                        Some(p) if digits.len() < p => format!("{digits:0>p$}"),
                        _ => digits,
                    };
                    format!("{}{sign}{digits}", if n < 0 { "-" } else { "" }).into_bytes()
                }
                'u' => (int(arg) as u64).to_string().into_bytes(),
                'x' | 'X' | 'o' => {
                    let n = int(arg) as u64;
                    let s = match conv {
                        'x' => format!("{n:x}"),
                        'X' => format!("{n:X}"),
                        _ => format!("{n:o}"),
                    };
                    let s = match prec {
                        Some(p) if s.len() < p => format!("{s:0>p$}"),
                        _ => s,
                    };
                    let prefix = match (alt && n != 0, conv) {
                        (true, 'x') => "0x",
                        (true, 'X') => "0X",
                        (true, _) if !s.starts_with('0') => "0",
                        _ => "",
                    };
                    format!("{prefix}{s}").into_bytes()
                }
                'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A' => {
                    let a = arg.unwrap_or("0").trim();
                    let v: f64 = match a.parse() {
                        Ok(v) => v,
                        Err(_) => {
                            err(format!("printf: {a}: invalid number\n"));
                            status = 1;
                            0.0
                        }
                    };
                    let body = match conv {
                        'e' | 'E' => c_exp(v, prec.unwrap_or(6), conv == 'E', alt),
                        'g' | 'G' => c_general(v, prec, conv == 'G', alt),
                        _ if !v.is_finite() => c_special(v, conv == 'F'),
                        // `%#.0f` keeps the decimal point.
                        _ if alt && prec == Some(0) => format!("{v:.0}."),
                        _ => format!("{:.*}", prec.unwrap_or(6), v),
                    };
                    let sign = if !body.starts_with('-') && spec.contains('+') {
                        "+"
                    } else if !body.starts_with('-') && spec.contains(' ') {
                        " "
                    } else {
                        ""
                    };
                    format!("{sign}{body}").into_bytes()
                }
                'q' => shell_quote(arg.unwrap_or("")).into_bytes(),
                other => {
                    err(format!(
                        "bash: printf: `{other}': invalid format character\n"
                    ));
                    return (out, 1);
                }
            };
            let len = String::from_utf8_lossy(&body).chars().count();
            let numeric = matches!(
                conv,
                'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G'
            );
            if len >= width {
                out.extend_from_slice(&body);
            } else if left {
                out.extend_from_slice(&body);
                out.extend(std::iter::repeat_n(b' ', width - len));
            } else if zero
                && numeric
                && !(prec.is_some() && matches!(conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o'))
            {
                // Zeros go after the sign (and a 0x prefix).
                let text = String::from_utf8_lossy(&body).into_owned();
                let cut = text
                    .find(|c: char| c.is_ascii_alphanumeric() && !(c == 'x' || c == 'X'))
                    .unwrap_or(0);
                let cut = if text[cut..].starts_with("0x") || text[cut..].starts_with("0X") {
                    cut + 2
                } else {
                    cut
                };
                out.extend_from_slice(&text.as_bytes()[..cut]);
                out.extend(std::iter::repeat_n(b'0', width - len));
                out.extend_from_slice(&text.as_bytes()[cut..]);
            } else {
                out.extend(std::iter::repeat_n(b' ', width - len));
                out.extend_from_slice(&body);
            }
            i = j + 1;
        }
        if idx >= rest.len() || idx == consumed_before {
            break;
        }
    }
    (out, status)
}

/// [`printf_bytes`] as text, for utilities that take a printf format (`seq -f`).
pub fn printf_format(fmt: &str, args: &[String]) -> String {
    let rest: Vec<&str> = args.iter().map(String::as_str).collect();
    String::from_utf8_lossy(&printf_bytes(fmt, &rest, &mut |_| {}).0).into_owned()
}

/// `printf [-v VAR] FORMAT [ARGUMENTS]`: with -v the output goes to VAR (an array element
/// too), as bash's builtin does.
fn printf(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
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

/// A name `printf -v` and `read` may assign: an identifier, or one with a `[subscript]`.
fn is_assignable(name: &str) -> bool {
    let base = match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((base, index)) if !index.is_empty() => base,
        Some(_) => return false,
        None => name,
    };
    is_identifier(base)
}

/// A shell variable name: a letter or `_`, then letters, digits and `_`.
fn is_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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

/// A printf integer argument as C's `strtoimax` with base 0 reads it, as bash does: leading
/// blanks, a sign, `0x` (hex) and `0` (octal) prefixes; `'c` or `"c` is the character's
/// code. The value of the longest numeric prefix, and whether the whole argument was one.
fn parse_int_arg(s: &str) -> (i64, bool) {
    if let Some(c) = s.strip_prefix('\'').or_else(|| s.strip_prefix('"')) {
        return (c.chars().next().map_or(0, |c| c as i64), true);
    }
    let t = s.trim_start_matches([' ', '\t', '\n']);
    if t.is_empty() {
        return (0, s.is_empty());
    }
    let (neg, t) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (16, h),
        None if t.len() > 1 && t.starts_with('0') => (8, &t[1..]),
        None => (10, t),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let whole = end == digits.len() && (end > 0 || radix == 8);
    let n = match i128::from_str_radix(&digits[..end], radix) {
        Ok(n) => n,
        Err(_) if end == 0 => 0,
        Err(_) => i128::MAX,
    };
    let n = if neg { -n } else { n };
    match i64::try_from(n) {
        Ok(n) => (n, whole),
        // Out of range: clamped, as strtoimax does, and reported.
        Err(_) => (if neg { i64::MIN } else { i64::MAX }, false),
    }
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
fn option_letters(args: &[String], plus: bool) -> (Vec<(char, char)>, usize) {
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

/// `unset [-f] [-v] NAME...`: a variable (or array element) by default, a function when
/// there is no variable of that name or with `-f`. A readonly variable stays.
fn unset(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (mut funcs, mut vars) = (false, false);
    let (options, i) = option_letters(args, false);
    for (_, c) in options {
        match c {
            'f' => funcs = true,
            'v' => vars = true,
            'n' => {
                io.eprint("bash: unset: -n: not supported in burrow (no namerefs)\n");
                return 2;
            }
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
        let base = a.split_once('[').map_or(a.as_str(), |(n, _)| n);
        if sh.has_attr(base, 'r') {
            io.eprint(&format!(
                "bash: unset: {base}: cannot unset: readonly variable\n"
            ));
            status = 1;
            continue;
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

/// `declare`, `typeset`, `local` and `readonly`: attributes `-a -A -i -l -u -r -x` (`+` takes
/// one away, except `r`), `-g`, `-p`, `-f`/`-F`.
fn local(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> Status {
    if name == "local" && sh.locals.is_empty() {
        io.eprint("bash: local: can only be used in a function\n");
        return Ok(1);
    }
    let (mut on, mut off) = (String::new(), String::new());
    let (options, i) = option_letters(args, true);
    for (sign, c) in options {
        match c {
            'a' | 'A' | 'x' | 'g' | 'r' | 'p' | 'f' | 'F' | 'i' | 'l' | 'u' => {
                if sign == '-' {
                    on.push(c);
                } else {
                    off.push(c);
                }
            }
            'n' | 't' | 'I' | 'c' => {
                io.eprint(&format!("bash: {name}: -{c}: not supported in burrow\n"));
                return Ok(2);
            }
            other => {
                io.eprint(&format!(
                    "bash: {name}: {sign}{other}: invalid option\n{name}: usage: {name} [-aAfFgiIlnrtux] [name[=value] ...] or {name} -p [-aAfFilnrtux] [name ...]\n"
                ));
                return Ok(2);
            }
        }
    }
    if name == "readonly" {
        on.push('r');
    }
    let names: Vec<&String> = args[i..].iter().collect();
    let flag = |c: char| on.contains(c);
    if flag('f') || flag('F') {
        return Ok(declare_functions(sh, &names, flag('F'), io));
    }
    if off.contains('r') {
        for n in &names {
            io.eprint(&format!("bash: {name}: {n}: readonly variable\n"));
        }
        return Ok(1);
    }
    if flag('p') || names.is_empty() {
        // A bare `local` lists the function's local variables, in the order declared.
        if names.is_empty() && name == "local" && !flag('p') {
            let mut seen: Vec<String> = Vec::new();
            for (n, ..) in sh.locals.last().into_iter().flatten() {
                if !seen.contains(n) {
                    seen.push(n.clone());
                }
            }
            let mut out = String::new();
            for n in &seen {
                if let Some(d) = declaration(sh, n) {
                    out.push_str(&d);
                    out.push('\n');
                }
            }
            io.print(&out);
            return Ok(0);
        }
        // `readonly` / `declare -r` with no names lists the readonly variables.
        let filter = on.replace(['p', 'g'], "");
        return Ok(declare_print(sh, &names, &filter, io));
    }
    let (assoc, indexed) = (flag('A'), flag('a'));
    // Inside a function, `local`/`declare` hide the caller's variable of that name until the
    // function returns (scalar, array and attributes alike); `-g` and `readonly` do not.
    let scoped = name == "local" || (name != "readonly" && !flag('g') && !sh.locals.is_empty());
    let mut status = 0;
    for a in names {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k.trim_end_matches('+').to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let append = a.split_once('=').is_some_and(|(k, _)| k.ends_with('+'));
        if !is_identifier(&k) {
            io.eprint(&format!("bash: {name}: `{a}': not a valid identifier\n"));
            status = 1;
            continue;
        }
        let hid = if scoped && !sh.locals.is_empty() {
            let saved = (
                k.clone(),
                sh.vars.get(&k).cloned(),
                sh.arrays.get(&k).cloned(),
                sh.attrs.get(&k).cloned(),
            );
            if let Some(frame) = sh.locals.last_mut() {
                frame.push(saved);
            }
            true
        } else {
            false
        };
        // Changing a readonly variable's value or attributes is refused; naming it again
        // (`readonly x`) is not.
        if sh.has_attr(&k, 'r') && !hid && (v.is_some() || on.chars().any(|c| c != 'r')) {
            io.eprint(&format!("bash: {name}: {k}: readonly variable\n"));
            status = 1;
            continue;
        }
        if hid {
            sh.attrs.remove(&k);
        }
        for c in on.chars().filter(|c| matches!(c, 'i' | 'l' | 'u')) {
            sh.set_attr(&k, c, true);
        }
        for c in off.chars().filter(|c| matches!(c, 'i' | 'l' | 'u')) {
            sh.set_attr(&k, c, false);
        }
        // declare -a/-A NAME, and NAME=(items) given as one word.
        if assoc
            || indexed
            || v.as_deref()
                .is_some_and(|v| v.starts_with('(') && v.ends_with(')'))
            || (!hid && v.is_none() && sh.arrays.contains_key(&k))
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
                if append
                    && !hid
                    && let Some(existing) = sh.arrays.get(&k)
                {
                    array = existing.clone();
                }
                let mut next = array.next_index();
                for item in list.split_whitespace() {
                    let (key, val) = match item.strip_prefix('[').and_then(|i| i.split_once("]=")) {
                        Some((key, val)) => (Some(key.to_string()), val.to_string()),
                        None => (None, item.to_string()),
                    };
                    let val = sh.attr_value(&k, val, None);
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
                if assoc != matches!(existing, crate::shell::Array::Assoc(_)) && (assoc || indexed)
                {
                    let kind = if assoc { "associative" } else { "indexed" };
                    let other = if assoc { "indexed" } else { "associative" };
                    io.eprint(&format!(
                        "bash: {name}: {k}: cannot convert {other} to {kind} array\n"
                    ));
                    status = 1;
                    continue;
                }
                array = existing.clone();
            } else if let Some(v) = v.clone().or_else(|| {
                (!hid)
                    .then(|| sh.vars.get(&k).map(|x| x.value.clone()))
                    .flatten()
            }) {
                // `declare -a x=v` and `declare -a x` of a scalar: the value as element 0.
                let v = sh.attr_value(&k, v, None);
                if let crate::shell::Array::Indexed(m) = &mut array {
                    m.insert(0, v);
                }
            }
            sh.vars.remove(&k);
            sh.arrays.insert(k.clone(), array);
        } else {
            if hid {
                sh.arrays.remove(&k);
                if v.is_none() {
                    sh.vars.remove(&k);
                }
            }
            match v {
                Some(v) => {
                    let old = append.then(|| sh.get(&k).unwrap_or("").to_string());
                    let value = sh.shaped(&k, v, old.as_deref(), &format!("{name}: "), io)?;
                    sh.set_shaped(&k, value);
                }
                None => {
                    if !sh.vars.contains_key(&k) {
                        sh.set(&k, "");
                    } else if on.chars().any(|c| matches!(c, 'i' | 'l' | 'u')) {
                        // `declare -u x` of a set x shapes the value it has.
                        let old = sh.get(&k).unwrap_or("").to_string();
                        let value = sh.shaped(&k, old, None, &format!("{name}: "), io)?;
                        sh.set_shaped(&k, value);
                    }
                }
            }
        }
        if let Some(var) = sh.vars.get_mut(&k) {
            if flag('x') {
                var.exported = true;
            } else if off.contains('x') {
                var.exported = false;
            }
        }
        if flag('r') {
            sh.set_attr(&k, 'r', true);
        }
    }
    Ok(status)
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

/// `read [-ers] [-a ARRAY] [-d DELIM] [-n N] [-N N] [-p PROMPT] [-t T] [-u FD] [NAME...]`.
/// Status 1 at end of input (what was read is still assigned), as bash.
fn read(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let mut raw = false;
    let mut names = Vec::new();
    let mut array: Option<String> = None;
    let mut delim = Some(b'\n');
    let mut max: Option<usize> = None;
    let mut exact = false;
    let mut source = io.stdin.clone();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') || a == "-" || !names.is_empty() {
            names.push(a.clone());
            continue;
        }
        if a == "--" {
            names.extend(args[i..].iter().cloned());
            break;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            match c {
                'r' => raw = true,
                // Not interactive: no line editing, no echo to suppress.
                's' | 'e' => {}
                'a' | 'd' | 'n' | 'N' | 'p' | 't' | 'u' | 'i' => {
                    let rest: String = flags[j..].iter().collect();
                    let v = if !rest.is_empty() {
                        rest
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        io.eprint(&format!(
                            "bash: read: -{c}: option requires an argument\nread: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n"
                        ));
                        return Ok(2);
                    };
                    match c {
                        'a' => array = Some(v),
                        'd' => delim = Some(v.bytes().next().unwrap_or(0)),
                        'n' | 'N' => match v.parse::<usize>() {
                            Ok(n) => {
                                max = Some(n);
                                exact = c == 'N';
                            }
                            Err(_) => {
                                io.eprint(&format!("bash: read: {v}: invalid number\n"));
                                return Ok(1);
                            }
                        },
                        'u' => match v.trim().parse::<i32>().ok().and_then(|n| io.input_fd(n)) {
                            Some(from) => source = from,
                            None => {
                                io.eprint(&format!(
                                    "bash: read: {v}: invalid file descriptor: Bad file descriptor\n"
                                ));
                                return Ok(1);
                            }
                        },
                        // The prompt shows only on a terminal; input here is all there is.
                        _ => {}
                    }
                    break;
                }
                other => {
                    io.eprint(&format!(
                        "bash: read: -{other}: invalid option\nread: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n"
                    ));
                    return Ok(2);
                }
            }
        }
    }
    let (text, found, any) = read_input(&source, delim, max, exact, raw);
    let status = if any && found { 0 } else { 1 };
    let ifs = sh.get("IFS").unwrap_or(" \t\n").to_string();
    let fields = Fields {
        ifs: &ifs,
        text: &text,
    };
    if let Some(name) = array {
        let words = fields.all();
        sh.vars.remove(&name);
        sh.arrays.insert(
            name,
            crate::shell::Array::Indexed(
                words
                    .into_iter()
                    .enumerate()
                    .map(|(k, w)| (k as i64, w))
                    .collect(),
            ),
        );
        return Ok(status);
    }
    if names.is_empty() {
        sh.set("REPLY", fields.plain(0, text.len()));
        return Ok(status);
    }
    // `read -N`: the characters read go to the first name whole, unsplit.
    let values = if exact {
        let mut v = vec![fields.plain(0, text.len())];
        v.resize(names.len(), String::new());
        v
    } else {
        fields.assign(names.len())
    };
    for (n, v) in names.iter().zip(values) {
        let v = sh.shaped(n, v, None, "read: ", io)?;
        sh.set_shaped(n, v);
    }
    Ok(status)
}

/// What `read` takes from its input: characters up to the delimiter (`-d`, newline by
/// default; none with `-N`) or `-n`/`-N` characters, each marked when a backslash quoted it
/// (without `-r`: the backslash is removed, and a backslash-newline pair is removed whole and
/// the line goes on). Also whether the read ended as asked (delimiter seen or count reached)
/// rather than at the end of the input, and whether there was any input at all.
fn read_input(
    input: &crate::io::Input,
    delim: Option<u8>,
    max: Option<usize>,
    exact: bool,
    raw: bool,
) -> (Vec<(u8, bool)>, bool, bool) {
    let mut cur = input.borrow_mut();
    let pos = cur.position() as usize;
    let data = cur.get_ref();
    let rest = data.get(pos..).unwrap_or_default();
    let any = !rest.is_empty();
    let mut out: Vec<(u8, bool)> = Vec::new();
    let mut chars = 0;
    let mut i = 0;
    let mut found = false;
    // A character starts at any byte that is not a UTF-8 continuation byte.
    let starts = |b: u8| b & 0xc0 != 0x80;
    while i < rest.len() {
        let b = rest[i];
        if max.is_some_and(|m| chars >= m) && starts(b) {
            found = true;
            break;
        }
        i += 1;
        if !raw && b == b'\\' {
            let Some(&next) = rest.get(i) else {
                break;
            };
            i += 1;
            if next == b'\n' {
                continue;
            }
            out.push((next, true));
            chars += usize::from(starts(next));
            continue;
        }
        if !exact && Some(b) == delim {
            found = true;
            break;
        }
        out.push((b, false));
        chars += usize::from(starts(b));
    }
    if !found && max.is_some_and(|m| chars >= m) {
        found = true;
    }
    cur.set_position((pos + i) as u64);
    (out, found, any)
}

/// The words of what `read` read, split by IFS as bash's `read` splits them: quoted
/// characters never separate, IFS whitespace around a field is trimmed, and one other IFS
/// character (with the whitespace around it) ends one field.
struct Fields<'a> {
    ifs: &'a str,
    text: &'a [(u8, bool)],
}

impl Fields<'_> {
    fn is_ifs(&self, i: usize) -> bool {
        let (b, quoted) = self.text[i];
        !quoted && b.is_ascii() && self.ifs.contains(b as char)
    }

    fn is_ifs_ws(&self, i: usize) -> bool {
        self.is_ifs(i) && matches!(self.text[i].0, b' ' | b'\t' | b'\n')
    }

    /// The text of `start..end` as a string.
    fn plain(&self, start: usize, end: usize) -> String {
        let bytes: Vec<u8> = self.text[start..end].iter().map(|(b, _)| *b).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn skip_ws(&self, mut i: usize) -> usize {
        while i < self.text.len() && self.is_ifs_ws(i) {
            i += 1;
        }
        i
    }

    /// The word at `i` (which starts after IFS whitespace) and where the next one starts:
    /// past IFS whitespace, at most one other IFS character, and IFS whitespace again.
    fn word(&self, i: usize) -> (usize, usize) {
        let mut end = i;
        while end < self.text.len() && !self.is_ifs(end) {
            end += 1;
        }
        let mut next = self.skip_ws(end);
        if next < self.text.len() && self.is_ifs(next) && !self.is_ifs_ws(next) {
            next = self.skip_ws(next + 1);
        }
        (end, next)
    }

    /// Every word (`read -a`).
    fn all(&self) -> Vec<String> {
        let mut words = Vec::new();
        let mut i = self.skip_ws(0);
        while i < self.text.len() {
            let (end, next) = self.word(i);
            words.push(self.plain(i, end));
            i = next;
        }
        words
    }

    /// Values for `n` names: one word each, and the rest of the line for the last (without
    /// its trailing IFS whitespace, or just its one word when nothing follows that).
    fn assign(&self, n: usize) -> Vec<String> {
        let mut values = Vec::with_capacity(n);
        let mut i = self.skip_ws(0);
        for k in 0..n {
            if i >= self.text.len() {
                values.push(String::new());
                continue;
            }
            let (end, next) = self.word(i);
            if k + 1 < n || next >= self.text.len() {
                values.push(self.plain(i, end));
                i = next;
            } else {
                let mut last = self.text.len();
                while last > i && self.is_ifs_ws(last - 1) {
                    last -= 1;
                }
                values.push(self.plain(i, last));
                i = self.text.len();
            }
        }
        values
    }
}

/// `mapfile`/`readarray [-t] [-d DELIM] [-n COUNT] [-O ORIGIN] [-s COUNT] [ARRAY]`: the
/// lines of standard input into ARRAY (default MAPFILE).
fn mapfile(sh: &mut Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let mut strip = false;
    let mut delim = b'\n';
    let (mut count, mut origin, mut skip) = (0usize, 0i64, 0usize);
    let mut name = "MAPFILE".to_string();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') {
            name = a.clone();
            continue;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            if c == 't' {
                strip = true;
                continue;
            }
            if !"dnOs".contains(c) {
                io.eprint(&format!(
                    "bash: {cmd}: -{c}: invalid option\n{cmd}: usage: {cmd} [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]\n"
                ));
                return 2;
            }
            let rest: String = flags[j..].iter().collect();
            let v = if !rest.is_empty() {
                rest
            } else if let Some(v) = args.get(i) {
                i += 1;
                v.clone()
            } else {
                io.eprint(&format!("bash: {cmd}: -{c}: option requires an argument\n"));
                return 2;
            };
            let n = v.parse::<i64>();
            match (c, n) {
                ('d', _) => delim = v.bytes().next().unwrap_or(0),
                ('n', Ok(n)) if n >= 0 => count = n as usize,
                ('O', Ok(n)) if n >= 0 => origin = n,
                ('s', Ok(n)) if n >= 0 => skip = n as usize,
                _ => {
                    io.eprint(&format!("bash: {cmd}: {v}: invalid number\n"));
                    return 1;
                }
            }
            break;
        }
    }
    let data = crate::io::read_all(&io.stdin);
    let mut items: Vec<String> = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let end = data[start..]
            .iter()
            .position(|&b| b == delim)
            .map_or(data.len(), |p| start + p + 1);
        let mut piece = &data[start..end];
        if strip && piece.last() == Some(&delim) {
            piece = &piece[..piece.len() - 1];
        }
        items.push(String::from_utf8_lossy(piece).into_owned());
        start = end;
    }
    let items = items.into_iter().skip(skip);
    let items: Vec<String> = if count > 0 {
        items.take(count).collect()
    } else {
        items.collect()
    };
    sh.vars.remove(&name);
    let mut map = match sh.arrays.remove(&name) {
        Some(crate::shell::Array::Indexed(m)) if origin > 0 => m,
        _ => Default::default(),
    };
    for (k, v) in items.into_iter().enumerate() {
        map.insert(origin + k as i64, v);
    }
    sh.arrays.insert(name, crate::shell::Array::Indexed(map));
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

/// `command [-pVv] NAME [ARG...]`: runs NAME as a builtin or program, never as a function;
/// `-v`/`-V` describe it instead. Only leading words are options (`command ls -l` keeps
/// `-l`), and break/continue/return/exit act as they would without `command`.
fn command(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let mut describe = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if a.len() < 2 || !a.starts_with('-') {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'p' => {}
                'v' | 'V' => describe = Some(c),
                _ => {
                    io.eprint(&format!(
                        "bash: command: -{c}: invalid option\ncommand: usage: command [-pVv] command [arg ...]\n"
                    ));
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let rest = &args[i..];
    match describe {
        Some('V') => return Ok(kind_of(sh, "type", rest, io)),
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
                } else if let Some(p) = crate::process::find(sh, a) {
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
        && let Some(path) = crate::process::find(sh, &rest[0])
    {
        return crate::process::exec(sh, &path, rest, io);
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

fn kind_of(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> i32 {
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

/// bash's reserved words (`command -v if` names them).
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

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
        || crate::toolchain::NAMES.contains(&name)
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

/// The options `set -o` lists, with their state.
fn option_list(sh: &Shell) -> Vec<(&'static str, bool)> {
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

/// Signal names `trap` knows (without `SIG`), in signal-number order, as `trap -l` lists.
const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
    "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
];

/// A condition as `trap` stores it: `EXIT`, `ERR`, or a signal name without `SIG`.
fn trap_name(spec: &str) -> Option<String> {
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
fn trap(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
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
            let quoted = crate::expand::single_quoted(action);
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
const SHOPTS: &[&str] = &[
    "dotglob",
    "extglob",
    "globstar",
    "nocaseglob",
    "nullglob",
    "failglob",
    "inherit_errexit",
    "expand_aliases",
];

/// `shopt [-s|-u] [-q] [NAME...]`: options of glob expansion; others bash has are refused.
fn shopt(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
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
const KNOWN_SHOPTS: &[&str] = &[
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
    "nocasematch",
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

/// A value as `declare -p` shows it: in double quotes, with `"`, `\\`, `$` and backquotes
/// escaped.
pub fn dq(v: &str) -> String {
    let mut out = String::from("\"");
    for c in v.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `declare -p [NAME...]`: each variable as the `declare` command that recreates it.
/// `declare -p [NAME...]`: each variable as a `declare` command that makes it again, with
/// its attributes. With no names, every variable that has all attributes in `filter`.
fn declare_print(sh: &Shell, names: &[&String], filter: &str, io: &Io) -> i32 {
    let all: Vec<String>;
    let names: Vec<&str> = if names.is_empty() {
        let mut v: Vec<String> = sh
            .vars
            .keys()
            .chain(sh.arrays.keys())
            .filter(|n| {
                let f = sh.attr_flags(n);
                filter.chars().all(|c| f.contains(c))
            })
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        all = v;
        all.iter().map(String::as_str).collect()
    } else {
        names.iter().map(|s| s.as_str()).collect()
    };
    let mut status = 0;
    let mut out = String::new();
    for n in names {
        match declaration(sh, n) {
            Some(d) => {
                out.push_str(&d);
                out.push('\n');
            }
            None => {
                io.eprint(&format!("bash: declare: {n}: not found\n"));
                status = 1;
            }
        }
    }
    io.print(&out);
    status
}

/// The `declare` command that makes variable `n` again (`declare -p`, `${a[@]@A}`).
pub fn declaration(sh: &Shell, n: &str) -> Option<String> {
    let flags = sh.attr_flags(n);
    let flags = if flags.is_empty() {
        "-".to_string()
    } else {
        flags
    };
    if let Some(a) = sh.arrays.get(n) {
        Some(match a {
            crate::shell::Array::Indexed(m) => {
                let items: Vec<String> =
                    m.iter().map(|(k, v)| format!("[{k}]={}", dq(v))).collect();
                format!("declare -{flags} {n}=({})", items.join(" "))
            }
            crate::shell::Array::Assoc(m) => {
                let items: String = m.iter().map(|(k, v)| format!("[{k}]={} ", dq(v))).collect();
                format!("declare -{flags} {n}=({items})")
            }
        })
    } else {
        sh.vars
            .get(n)
            .map(|v| format!("declare -{flags} {n}={}", dq(&v.value)))
    }
}

/// `declare -f [NAME...]` (definitions) and `declare -F [NAME...]` (names).
fn declare_functions(sh: &Shell, names: &[&String], only_names: bool, io: &Io) -> i32 {
    let mut status = 0;
    let wanted: Vec<String> = if names.is_empty() {
        sh.functions.keys().cloned().collect()
    } else {
        names.iter().map(|s| s.to_string()).collect()
    };
    for n in wanted {
        match sh.functions.get(&n) {
            Some((src, _)) => {
                if only_names {
                    io.print(&format!("declare -f {n}\n"));
                } else {
                    io.print(&format!("{src}\n"));
                }
            }
            None => status = 1,
        }
    }
    status
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
