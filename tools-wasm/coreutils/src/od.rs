//! `od`, GNU's octal dump: addresses (`-A d|o|x|n`), types (`-t a c dN oN uN xN` and the
//! short forms `-a -b -c -d -i -l -o -s -x`), `-j` skip, `-N` count, `-w` width, `-v`, the
//! `*` that stands for repeated lines, and the columns aligned across several types.
//! Floating-point types are refused, not approximated.

use sh_utility::Ctx;
use sh_utility::io::{Io, read_all};

#[derive(Clone, Copy)]
enum Fmt {
    /// Named characters (`-t a`).
    Named,
    /// Characters with C escapes (`-t c`).
    Char,
    Signed(usize),
    Unsigned(usize),
    Octal(usize),
    Hex(usize),
}

impl Fmt {
    fn size(self) -> usize {
        match self {
            Fmt::Named | Fmt::Char => 1,
            Fmt::Signed(s) | Fmt::Unsigned(s) | Fmt::Octal(s) | Fmt::Hex(s) => s,
        }
    }

    /// Characters of one item, without its separating space.
    fn width(self) -> usize {
        match self {
            Fmt::Named | Fmt::Char => 3,
            Fmt::Octal(s) => [3, 6, 11, 22][s.trailing_zeros() as usize],
            Fmt::Hex(s) => s * 2,
            Fmt::Unsigned(s) => [3, 5, 10, 20][s.trailing_zeros() as usize],
            Fmt::Signed(s) => [4, 6, 11, 20][s.trailing_zeros() as usize],
        }
    }

    fn item(self, b: &[u8]) -> String {
        let mut v: u64 = 0;
        for (k, byte) in b.iter().enumerate() {
            v |= (*byte as u64) << (8 * k);
        }
        let w = self.width();
        match self {
            Fmt::Char => match b[0] {
                0 => "\\0".into(),
                7 => "\\a".into(),
                8 => "\\b".into(),
                12 => "\\f".into(),
                b'\n' => "\\n".into(),
                b'\r' => "\\r".into(),
                b'\t' => "\\t".into(),
                11 => "\\v".into(),
                c if (0x20..0x7f).contains(&c) => (c as char).to_string(),
                c => format!("{c:03o}"),
            },
            Fmt::Named => {
                const NAMES: [&str; 33] = [
                    "nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt",
                    "ff", "cr", "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb",
                    "can", "em", "sub", "esc", "fs", "gs", "rs", "us", "sp",
                ];
                let c = b[0] & 0x7f;
                match c {
                    0..=32 => NAMES[c as usize].to_string(),
                    127 => "del".into(),
                    c => (c as char).to_string(),
                }
            }
            Fmt::Octal(_) => format!("{v:0w$o}"),
            Fmt::Hex(_) => format!("{v:0w$x}"),
            Fmt::Unsigned(_) => v.to_string(),
            Fmt::Signed(s) => {
                let bits = 8 * s as u32;
                let signed = if bits < 64 && v >> (bits - 1) & 1 == 1 {
                    v as i64 - (1i64 << bits)
                } else {
                    v as i64
                };
                signed.to_string()
            }
        }
    }
}

fn usage(io: &Io, msg: &str) -> i32 {
    io.eprint(&format!(
        "od: {msg}\nTry 'od --help' for more information.\n"
    ));
    1
}

/// Parses a `-t` type string (`x1`, `d4`, `c`, `xz`...), possibly several (`x1c`).
fn parse_types(spec: &str, out: &mut Vec<Fmt>) -> Result<(), String> {
    let b = spec.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let kind = b[i];
        i += 1;
        if matches!(kind, b'a' | b'c') {
            out.push(if kind == b'a' { Fmt::Named } else { Fmt::Char });
            continue;
        }
        if !matches!(kind, b'd' | b'o' | b'u' | b'x') {
            if kind == b'f' {
                return Err("floating-point types (-t f) are not supported in burrow".into());
            }
            return Err(format!(
                "invalid character '{}' in type string '{spec}'",
                kind as char
            ));
        }
        let mut size = match kind {
            b'd' | b'u' | b'o' | b'x' => 4,
            _ => 1,
        };
        if i < b.len() {
            match b[i] {
                b'C' => {
                    size = 1;
                    i += 1;
                }
                b'S' => {
                    size = 2;
                    i += 1;
                }
                b'I' => {
                    size = 4;
                    i += 1;
                }
                b'L' => {
                    size = 8;
                    i += 1;
                }
                c if c.is_ascii_digit() => {
                    let start = i;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    size = spec[start..i].parse().unwrap_or(0);
                    if ![1, 2, 4, 8].contains(&size) {
                        return Err(format!(
                            "invalid type string '{spec}';\nthis system doesn't provide a {size}-byte integral type"
                        ));
                    }
                }
                _ => {}
            }
        }
        if i < b.len() && b[i] == b'z' {
            return Err("the 'z' suffix of -t is not supported in burrow".into());
        }
        out.push(match kind {
            b'd' => Fmt::Signed(size),
            b'u' => Fmt::Unsigned(size),
            b'o' => Fmt::Octal(size),
            _ => Fmt::Hex(size),
        });
    }
    Ok(())
}

/// A count as od takes it: decimal, `0x` hex, `0` octal, with `b` `k` `m` multipliers.
fn count(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'b' if !s.starts_with("0x") => (&s[..s.len() - 1], 512),
        'k' | 'K' => (&s[..s.len() - 1], 1024),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    let v = if let Some(h) = num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if num.len() > 1 && num.starts_with('0') {
        u64::from_str_radix(&num[1..], 8).ok()?
    } else {
        num.parse().ok()?
    };
    v.checked_mul(mult)
}

pub fn od(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut types: Vec<Fmt> = Vec::new();
    let mut radix = 'o';
    let (mut skip, mut limit, mut width, mut all) = (0u64, None::<u64>, 16usize, false);
    let mut files: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if a == "-" || !a.starts_with('-') {
            files.push(a);
            continue;
        }
        if a == "--" {
            files.extend(args[i..].iter().cloned());
            break;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            j += 1;
            let short = match c {
                'a' => Some("a"),
                'b' => Some("o1"),
                'c' => Some("c"),
                'd' => Some("u2"),
                'i' => Some("dI"),
                'l' => Some("dL"),
                'o' => Some("o2"),
                's' => Some("d2"),
                'x' => Some("x2"),
                _ => None,
            };
            if let Some(t) = short {
                let _ = parse_types(t, &mut types);
                continue;
            }
            if c == 'v' {
                all = true;
                continue;
            }
            if !"AtjNw".contains(c) {
                return usage(io, &format!("invalid option -- '{c}'"));
            }
            let rest: String = chars[j..].iter().collect();
            let value = if !rest.is_empty() {
                rest
            } else if c == 'w' {
                // -w alone means 32.
                "32".into()
            } else if let Some(v) = args.get(i) {
                i += 1;
                v.clone()
            } else {
                return usage(io, &format!("option requires an argument -- '{c}'"));
            };
            match c {
                'A' => match value.as_str() {
                    "d" | "o" | "x" | "n" => radix = value.chars().next().unwrap_or('o'),
                    _ => {
                        return usage(
                            io,
                            &format!(
                                "invalid output address radix '{value}'; it must be one character from [doxn]"
                            ),
                        );
                    }
                },
                't' => {
                    if let Err(e) = parse_types(&value, &mut types) {
                        return usage(io, &e);
                    }
                }
                'j' | 'N' | 'w' => {
                    let Some(n) = count(&value) else {
                        return usage(io, &format!("invalid argument '{value}'"));
                    };
                    match c {
                        'j' => skip = n,
                        'N' => limit = Some(n),
                        _ => width = n.max(1) as usize,
                    }
                }
                _ => {}
            }
            break;
        }
    }
    if types.is_empty() {
        types.push(Fmt::Octal(2));
    }
    let mut data = Vec::new();
    let mut status = 0;
    if files.is_empty() {
        files.push("-".into());
    }
    for f in &files {
        if f == "-" {
            data.extend(read_all(&io.stdin));
        } else {
            match sh_utility::sys::read(sh.path(f)) {
                Ok(d) => data.extend(d),
                Err(e) => {
                    io.eprint(&format!("od: {f}: {}\n", sh_utility::format::io_msg(&e)));
                    status = 1;
                }
            }
        }
    }
    let start = (skip as usize).min(data.len());
    let end = limit.map_or(data.len(), |n| (start + n as usize).min(data.len()));
    let bytes = &data[start..end];
    // Each type's items padded so the columns of all types line up (GNU's layout).
    let ratio = types
        .iter()
        .map(|t| (t.width() + 1) as f64 / t.size() as f64)
        .fold(0.0, f64::max);
    let addr = |n: u64| match radix {
        'd' => format!("{n:07}"),
        'x' => format!("{n:06x}"),
        'n' => String::new(),
        _ => format!("{n:07o}"),
    };
    let indent = addr(0).len();
    let mut out = String::new();
    let mut prev: Option<&[u8]> = None;
    let mut starred = false;
    for (k, line) in bytes.chunks(width).enumerate() {
        let off = skip + (k * width) as u64;
        if !all && line.len() == width && prev == Some(line) {
            if !starred {
                out.push_str("*\n");
                starred = true;
            }
            continue;
        }
        starred = false;
        prev = Some(line);
        for (n, t) in types.iter().enumerate() {
            if n == 0 {
                out.push_str(&addr(off));
            } else {
                out.push_str(&" ".repeat(indent));
            }
            let field = if types.len() > 1 {
                (ratio * t.size() as f64).ceil() as usize
            } else {
                t.width() + 1
            };
            for chunk in line.chunks(t.size()) {
                let mut item = chunk.to_vec();
                item.resize(t.size(), 0);
                out.push_str(&format!("{:>field$}", t.item(&item)));
            }
            out.push('\n');
        }
    }
    if radix != 'n' {
        out.push_str(&addr(skip + bytes.len() as u64));
        out.push('\n');
    }
    io.print(&out);
    status
}
