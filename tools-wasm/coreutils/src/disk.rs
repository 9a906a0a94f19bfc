//! `du`: disk usage in the units GNU du prints on Linux. burrow's store keeps bytes, not
//! blocks, so usage is what ext4 would allocate: a directory takes one 4 KiB block, a file
//! its size rounded up to 4 KiB, a (short) symlink none. `--apparent-size` and `-b` count
//! bytes instead. Options burrow does not implement are refused, never ignored.

use std::fs;
use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::Io;

const BLOCK: u64 = 4096;

struct Opts {
    all: bool,
    apparent: bool,
    /// Output unit in bytes, and whether to print it as a suffix (`-BM` -> "1M").
    unit: u64,
    suffix: Option<String>,
    /// `-h` (1024) or `--si` (1000).
    human: Option<u64>,
    total: bool,
    max_depth: Option<usize>,
    separate: bool,
    deref: bool,
    deref_args: bool,
    nul: bool,
    threshold: Option<i64>,
}

/// Sets an option (a statement, so the option table can stay one match).
fn set<T>(slot: &mut T, v: T) -> Result<(), i32> {
    *slot = v;
    Ok(())
}

fn usage(status: i32, msg: &str, io: &Io) -> i32 {
    io.eprint(&format!(
        "du: {msg}\nTry 'du --help' for more information.\n"
    ));
    status
}

/// Parses a size such as `4K`, `1M`, `M`, `512`: (bytes, suffix to print when it has no
/// leading number).
fn parse_size(s: &str) -> Option<(u64, Option<String>)> {
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    let rest = &s[digits.len()..];
    let n: u64 = if digits.is_empty() {
        1
    } else {
        digits.parse().ok()?
    };
    let (base, letter) = match rest {
        "" => return (n > 0).then_some((n, None)),
        r if r.ends_with("iB") && r.len() == 3 => (1024u64, &r[..1]),
        r if r.ends_with('B') && r.len() == 2 => (1000u64, &r[..1]),
        r if r.len() == 1 => (1024u64, r),
        _ => return None,
    };
    let power = "KMGTPE".find(letter.to_ascii_uppercase().as_str())? as u32 + 1;
    let unit = n.checked_mul(base.checked_pow(power)?)?;
    let suffix = digits.is_empty().then(|| rest.to_string());
    Some((unit, suffix))
}

/// GNU's human-readable form: ceiling, one decimal below 10, powers of `base`.
pub fn human(bytes: u64, base: u64) -> String {
    if bytes < base {
        return bytes.to_string();
    }
    let letters = if base == 1024 { "KMGTPE" } else { "kMGTPE" };
    let mut p = 1u32;
    while p < 6 && bytes >= base.pow(p + 1) {
        p += 1;
    }
    loop {
        let div = base.pow(p) as u128;
        let b = bytes as u128;
        let letter = &letters[p as usize - 1..p as usize];
        let tenths = (b * 10).div_ceil(div);
        if tenths < 100 {
            return format!("{}.{}{letter}", tenths / 10, tenths % 10);
        }
        let whole = b.div_ceil(div);
        if whole < base as u128 || p == 6 {
            return format!("{whole}{letter}");
        }
        p += 1;
    }
}

impl Opts {
    fn show(&self, bytes: u64) -> String {
        if let Some(base) = self.human {
            return human(bytes, base);
        }
        let n = bytes.div_ceil(self.unit);
        match &self.suffix {
            Some(s) => format!("{n}{s}"),
            None => n.to_string(),
        }
    }

    fn size(&self, m: &fs::Metadata) -> u64 {
        let ft = m.file_type();
        if self.apparent {
            return m.len();
        }
        if ft.is_dir() {
            BLOCK
        } else if ft.is_file() {
            m.len().div_ceil(BLOCK) * BLOCK
        } else {
            0
        }
    }
}

pub fn du(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts {
        all: false,
        apparent: false,
        unit: 1024,
        suffix: None,
        human: None,
        total: false,
        max_depth: None,
        separate: false,
        deref: false,
        deref_args: false,
        nul: false,
        threshold: None,
    };
    let mut summarize = false;
    let mut ops: Vec<String> = Vec::new();
    let mut i = 0;
    let mut only_ops = false;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if only_ops || a == "-" || !a.starts_with('-') {
            ops.push(a);
            continue;
        }
        if a == "--" {
            only_ops = true;
            continue;
        }
        // An option's value: attached, or the next argument.
        let mut value = |attached: &str, name: &str| -> Result<String, i32> {
            if !attached.is_empty() {
                return Ok(attached.to_string());
            }
            if i < args.len() {
                i += 1;
                return Ok(args[i - 1].clone());
            }
            Err(usage(
                1,
                &format!("option requires an argument -- '{name}'"),
                io,
            ))
        };
        let set_block = |s: &str, o: &mut Opts| -> Result<(), i32> {
            match parse_size(s) {
                Some((unit, suffix)) => {
                    o.unit = unit;
                    o.suffix = suffix;
                    o.human = None;
                    Ok(())
                }
                None => Err(usage(1, &format!("invalid -B argument '{s}'"), io)),
            }
        };
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            // The gate hands the long options with a short form on as that form.
            let r = match (name, val) {
                ("apparent-size", None) => set(&mut o.apparent, true),
                ("si", None) => set(&mut o.human, Some(1000)),
                _ => {
                    io.eprint(&format!(
                        "du: unrecognized option '{a}' (not supported in burrow)\nTry 'du --help' for more information.\n"
                    ));
                    Err(1)
                }
            };
            if let Err(s) = r {
                return s;
            }
            continue;
        }
        let flags = &a[1..];
        for (j, c) in flags.char_indices() {
            let rest = &flags[j + c.len_utf8()..];
            let r = match c {
                '0' => set(&mut o.nul, true),
                'a' => set(&mut o.all, true),
                'b' => {
                    o.apparent = true;
                    set_block("1", &mut o)
                }
                'c' => set(&mut o.total, true),
                'D' | 'H' => set(&mut o.deref_args, true),
                'L' => set(&mut o.deref, true),
                'P' => set(&mut o.deref, false),
                'h' => set(&mut o.human, Some(1024)),
                'k' => set_block("1K", &mut o),
                'm' => set_block("1M", &mut o),
                'l' | 'x' => Ok(()),
                's' => set(&mut summarize, true),
                'S' => set(&mut o.separate, true),
                'B' | 'd' | 't' => {
                    let v = match value(rest, &c.to_string()) {
                        Ok(v) => v,
                        Err(s) => return s,
                    };
                    let r = match c {
                        'B' => set_block(&v, &mut o),
                        'd' => match v.parse() {
                            Ok(n) => set(&mut o.max_depth, Some(n)),
                            Err(_) => Err(usage(1, &format!("invalid maximum depth '{v}'"), io)),
                        },
                        _ => threshold(&v, &mut o, io),
                    };
                    if let Err(s) = r {
                        return s;
                    }
                    break;
                }
                'X' => {
                    return usage(1, "option -X (exclude-from) is not supported in burrow", io);
                }
                _ => return usage(1, &format!("invalid option -- '{c}'"), io),
            };
            if let Err(s) = r {
                return s;
            }
        }
    }
    if summarize {
        if let Some(d) = o.max_depth.filter(|d| *d > 0) {
            return usage(
                1,
                &format!("warning: summarizing conflicts with --max-depth={d}"),
                io,
            );
        }
        if o.all {
            return usage(1, "cannot both summarize and show all entries", io);
        }
        o.max_depth = Some(0);
    }
    if ops.is_empty() {
        ops.push(".".into());
    }
    let mut status = 0;
    let mut grand = 0u64;
    // As GNU du: what an earlier operand already counted is not counted (or shown) again.
    let mut seen: Vec<PathBuf> = Vec::new();
    for op in &ops {
        let p = lexical(&sh.path(op));
        let m = if o.deref || o.deref_args {
            fs::metadata(&p)
        } else {
            fs::symlink_metadata(&p)
        };
        match m {
            Ok(_) if seen.iter().any(|s| p.starts_with(s)) => {}
            Ok(m) => {
                grand += walk(&o, &p, op, &m, 0, io, &mut status, &seen);
                seen.push(p);
            }
            Err(e) => {
                io.eprint(&format!("du: cannot access '{op}': {}\n", io_msg(&e)));
                status = 1;
            }
        }
    }
    if o.total {
        line(&o, grand, "total", io);
    }
    status
}

/// `path` with `.` and `..` folded (as the shell's own paths are, without following links).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn threshold(v: &str, o: &mut Opts, io: &Io) -> Result<(), i32> {
    let (neg, num) = match v.strip_prefix('-') {
        Some(n) => (true, n),
        None => (false, v),
    };
    match parse_size(num).or_else(|| (num == "0").then_some((0, None))) {
        Some((n, _)) if !(neg && n == 0) => {
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            o.threshold = Some(if neg { -n } else { n });
            Ok(())
        }
        _ => Err(usage(1, &format!("invalid --threshold argument '{v}'"), io)),
    }
}

fn line(o: &Opts, bytes: u64, name: &str, io: &Io) {
    if let Some(t) = o.threshold {
        let b = i64::try_from(bytes).unwrap_or(i64::MAX);
        if (t >= 0 && b < t) || (t < 0 && b > -t) {
            return;
        }
    }
    io.print(&format!(
        "{}\t{name}{}",
        o.show(bytes),
        if o.nul { '\0' } else { '\n' }
    ));
}

/// Adds up `path` (shown as `name`), printing what the options ask for; returns its size
/// for its parent (a directory's own entries only, with `-S`).
#[allow(clippy::too_many_arguments)]
fn walk(
    o: &Opts,
    path: &Path,
    name: &str,
    m: &fs::Metadata,
    depth: usize,
    io: &Io,
    status: &mut i32,
    seen: &[PathBuf],
) -> u64 {
    if depth > 0 && seen.iter().any(|s| s == path) {
        return 0;
    }
    let own = o.size(m);
    if !m.is_dir() {
        if depth == 0 || (o.all && o.max_depth.is_none_or(|d| depth <= d)) {
            line(o, own, name, io);
        }
        return own;
    }
    let mut total = own;
    let mut shown_total = own;
    match fs::read_dir(path) {
        Ok(rd) => {
            let names = sh_utility::path::sorted_names(rd);
            for n in names {
                let child = path.join(&n);
                let shown = if name.ends_with('/') {
                    format!("{name}{n}")
                } else {
                    format!("{name}/{n}")
                };
                let cm = if o.deref {
                    fs::metadata(&child)
                } else {
                    fs::symlink_metadata(&child)
                };
                match cm {
                    Ok(cm) => {
                        let s = walk(o, &child, &shown, &cm, depth + 1, io, status, seen);
                        total += s;
                        if !(o.separate && cm.is_dir()) {
                            shown_total += s;
                        }
                    }
                    Err(e) => {
                        io.eprint(&format!("du: cannot access '{shown}': {}\n", io_msg(&e)));
                        *status = 1;
                    }
                }
            }
        }
        Err(e) => {
            io.eprint(&format!(
                "du: cannot read directory '{name}': {}\n",
                io_msg(&e)
            ));
            *status = 1;
        }
    }
    if o.max_depth.is_none_or(|d| depth <= d) {
        line(o, shown_total, name, io);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_as_gnu() {
        assert_eq!(human(0, 1024), "0");
        assert_eq!(human(1023, 1024), "1023");
        assert_eq!(human(4096, 1024), "4.0K");
        assert_eq!(human(8192, 1024), "8.0K");
        assert_eq!(human(10 * 1024, 1024), "10K");
        assert_eq!(human(10 * 1024 + 1, 1024), "11K");
        assert_eq!(human(9 * 1024 + 1, 1024), "9.1K");
        assert_eq!(human(1024 * 1024 - 1, 1024), "1.0M");
        assert_eq!(human(1536 * 1024, 1024), "1.5M");
    }

    #[test]
    fn block_sizes() {
        assert_eq!(parse_size("1K"), Some((1024, None)));
        assert_eq!(parse_size("M"), Some((1 << 20, Some("M".into()))));
        assert_eq!(parse_size("KB"), Some((1000, Some("KB".into()))));
        assert_eq!(parse_size("x"), None);
    }
}
