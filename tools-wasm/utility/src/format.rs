//! Output formats shared by the shell and its utilities: printf's format engine (the builtin,
//! `seq -f`, `find -printf`), `echo -e` escapes, strerror-style wording of I/O errors, and
//! signal names.

/// Bytes as UTF-8 text when they are, else one character per byte.
pub fn lossless_text(b: Vec<u8>) -> String {
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
pub fn escape_bytes_b(s: &str) -> (Vec<u8>, bool) {
    escapes(s, Escapes::PrintfB)
}

/// `$'...'`: octal without the leading 0 as in `%b`, and `\cX` is control-X (not the end).
pub fn ansi_c_escapes(s: &str) -> String {
    lossless_text(escapes(s, Escapes::AnsiC).0)
}

/// Which reader of backslash escapes: they differ in octal forms and in `\c`.
#[derive(Clone, Copy, PartialEq)]
pub enum Escapes {
    Echo,
    PrintfB,
    AnsiC,
}

pub fn escapes(s: &str, mode: Escapes) -> (Vec<u8>, bool) {
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
pub fn c_exp(v: f64, prec: usize, upper: bool, alt: bool) -> String {
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

pub fn c_special(v: f64, upper: bool) -> String {
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
pub fn c_general(v: f64, prec: Option<usize>, upper: bool, alt: bool) -> String {
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
                let mut t = crate::time::strftime(secs, &tfmt);
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

/// Signal names `trap` knows (without `SIG`), in signal-number order, as `trap -l` lists.
pub const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
    "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
];

/// The number of a signal named as `timeout -s` and `kill` take it (`TERM`, `SIGTERM`, `15`).
pub fn signal_number(spec: &str) -> Option<i32> {
    if let Ok(n) = spec.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let name = spec.strip_prefix("SIG").unwrap_or(spec);
    SIGNALS
        .iter()
        .position(|s| *s == name)
        .map(|i| i as i32 + 1)
}

pub fn parse_spec(spec: &str) -> (bool, bool, usize, Option<usize>) {
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
pub fn parse_int_arg(s: &str) -> (i64, bool) {
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

pub fn parse_int(s: &str) -> Option<i64> {
    let t = s.trim();
    if let Some(c) = t.strip_prefix('\'').or_else(|| t.strip_prefix('"')) {
        return c.chars().next().map(|c| c as i64);
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

/// `printf %q`: as bash quotes a word to be read again: `$'...'` when it has a control
/// character, else a backslash before each character the shell reads specially.
pub fn shell_quote(s: &str) -> String {
    if s.chars().any(char::is_control) {
        return ansi_c_quote(s);
    }
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
        if c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c) || !c.is_ascii() {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

/// `$'...'` with bash's escapes (`\n`, `\t`, `\E`, ...), other control characters in
/// octal.
pub fn ansi_c_quote(w: &str) -> String {
    let mut out = String::from("$'");
    for c in w.chars() {
        match c {
            '\x1b' => out.push_str("\\E"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
