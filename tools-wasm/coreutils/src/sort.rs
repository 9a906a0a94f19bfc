//! `sort` as GNU sort does it in the C locale: keys (`-k F[.C][OPTS][,F[.C][OPTS]]`, any
//! number, each with its own ordering options or the global ones), field separators (`-t`;
//! without it a field is its leading blanks plus the word), the orderings `-n -g -h -V -M -f
//! -d -i -b -r`, `-u` on keys, `-s`, `-c`/`-C`, `-o FILE`, `-z`, and the last-resort comparison
//! of whole lines. An option it does not implement (`-R`, `--parallel`...) is refused.

use std::cmp::Ordering;

use sh_utility::Ctx;
use sh_utility::io::{Io, read_all};

/// Ordering options, global or of one key.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Order {
    blanks: bool,
    dictionary: bool,
    fold: bool,
    general: bool,
    human: bool,
    nonprinting: bool,
    month: bool,
    numeric: bool,
    reverse: bool,
    version: bool,
}

impl Order {
    /// Sets the option letter `c`; false if it is not one.
    fn set(&mut self, c: char) -> bool {
        match c {
            'b' => self.blanks = true,
            'd' => self.dictionary = true,
            'f' => self.fold = true,
            'g' => self.general = true,
            'h' => self.human = true,
            'i' => self.nonprinting = true,
            'M' => self.month = true,
            'n' => self.numeric = true,
            'r' => self.reverse = true,
            'V' => self.version = true,
            _ => return false,
        }
        true
    }
}

/// One `-k`: start field and character, end field and character (0: end of field).
#[derive(Clone, Copy)]
struct Key {
    start: (usize, usize),
    end: Option<(usize, usize)>,
    order: Order,
    /// `b` given on the start / end position.
    blank_start: bool,
    blank_end: bool,
}

fn invalid(io: &Io, msg: &str) -> i32 {
    io.eprint(&format!(
        "sort: {msg}\nTry 'sort --help' for more information.\n"
    ));
    2
}

/// Parses `F[.C][OPTS]`: (field, char, opts given, `b` given).
fn position(s: &str, end: bool) -> Option<((usize, usize), Order, bool, bool)> {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let field: usize = s[..digits].parse().ok()?;
    let mut rest = &s[digits..];
    let mut ch = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let d = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        ch = r[..d].parse().ok()?;
        rest = &r[d..];
    } else if !end {
        ch = 1;
    }
    if field == 0 || (!end && ch == 0) {
        return None;
    }
    let mut order = Order::default();
    let mut any = false;
    let mut blank = false;
    for c in rest.chars() {
        if !order.set(c) {
            return None;
        }
        any = true;
        blank |= c == 'b';
    }
    Some(((field, ch), order, any, blank))
}

fn parse_key(spec: &str) -> Result<Key, String> {
    let (a, b) = match spec.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (spec, None),
    };
    let (start, mut order, mut any, blank_start) = position(a, false)
        .ok_or_else(|| format!("invalid number at field start: invalid count at start of '{a}'"))?;
    let mut end = None;
    let mut blank_end = false;
    if let Some(b) = b {
        let (pos, ob, any_b, be) = position(b, true)
            .ok_or_else(|| format!("invalid number after ',': invalid count at start of '{b}'"))?;
        // Ordering options after the end position apply to the whole key; `b` to the end
        // position only.
        for c in "dfghiMnrV".chars() {
            if has(&ob, c) {
                order.set(c);
            }
        }
        any |= any_b;
        blank_end = be;
        end = Some(pos);
    }
    if !any {
        return Ok(Key {
            start,
            end,
            order: INHERIT,
            blank_start: false,
            blank_end: false,
        });
    }
    Ok(Key {
        start,
        end,
        order,
        blank_start,
        blank_end,
    })
}

/// Marks a key that takes the global options.
const INHERIT: Order = Order {
    blanks: true,
    dictionary: true,
    fold: true,
    general: true,
    human: true,
    nonprinting: true,
    month: true,
    numeric: true,
    reverse: true,
    version: true,
};

fn has(o: &Order, c: char) -> bool {
    match c {
        'b' => o.blanks,
        'd' => o.dictionary,
        'f' => o.fold,
        'g' => o.general,
        'h' => o.human,
        'i' => o.nonprinting,
        'M' => o.month,
        'n' => o.numeric,
        'r' => o.reverse,
        'V' => o.version,
        _ => false,
    }
}

/// The (start, end) byte offsets of each field of `line`.
fn fields(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match sep {
        Some(t) => {
            let mut s = 0;
            for (i, b) in line.iter().enumerate() {
                if *b == t {
                    out.push((s, i));
                    s = i + 1;
                }
            }
            out.push((s, line.len()));
        }
        None => {
            // A field is its leading blanks and the non-blanks after them.
            let mut i = 0;
            while i < line.len() {
                let s = i;
                while i < line.len() && is_blank(line[i]) {
                    i += 1;
                }
                while i < line.len() && !is_blank(line[i]) {
                    i += 1;
                }
                out.push((s, i));
            }
        }
    }
    out
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The bytes of `line` that `key` selects.
fn key_bytes<'a>(line: &'a [u8], key: &Key, sep: Option<u8>) -> &'a [u8] {
    let f = fields(line, sep);
    let skip_blanks = |mut p: usize, limit: usize| {
        while p < limit && is_blank(line[p]) {
            p += 1;
        }
        p
    };
    let (sf, sc) = key.start;
    let begin = match f.get(sf - 1) {
        None => line.len(),
        Some(&(s, e)) => {
            let s = if key.blank_start {
                skip_blanks(s, e)
            } else {
                s
            };
            (s + sc - 1).min(e)
        }
    };
    let finish = match key.end {
        None => line.len(),
        Some((ef, ec)) => match f.get(ef - 1) {
            None => line.len(),
            Some(&(s, e)) => {
                if ec == 0 {
                    e
                } else {
                    let s = if key.blank_end { skip_blanks(s, e) } else { s };
                    (s + ec).min(e)
                }
            }
        },
    };
    if finish <= begin {
        &line[begin..begin]
    } else {
        &line[begin..finish]
    }
}

/// The leading number of `s` (`-n`): blanks, a sign, digits, a decimal point; 0 if none.
fn numeric_value(s: &[u8]) -> f64 {
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start_matches([' ', '\t']);
    let mut end = 0;
    let b = t.as_bytes();
    if end < b.len() && b[end] == b'-' {
        end += 1;
    }
    let digits_from = end;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end < b.len() && b[end] == b'.' {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_from {
        return 0.0;
    }
    t[..end].parse().unwrap_or(0.0)
}

/// strtod's hexadecimal prefix: `[+-]0x` hex digits, an optional fraction and a binary
/// exponent (`p[+-]N`).
fn hex_float(t: &str) -> Option<f64> {
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let body = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    let mut v = 0f64;
    let mut digits = 0;
    let mut chars = body.chars().peekable();
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) {
        v = v * 16.0 + f64::from(d);
        digits += 1;
        chars.next();
    }
    if chars.peek() == Some(&'.') {
        chars.next();
        let mut scale = 1.0 / 16.0;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) {
            v += f64::from(d) * scale;
            scale /= 16.0;
            digits += 1;
            chars.next();
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(chars.peek(), Some('p' | 'P')) {
        let exp: String = chars.skip(1).collect();
        let n: String = exp
            .char_indices()
            .take_while(|(i, c)| c.is_ascii_digit() || *i == 0 && matches!(c, '+' | '-'))
            .map(|(_, c)| c)
            .collect();
        if let Ok(e) = n.parse::<i32>() {
            v *= 2f64.powi(e);
        }
    }
    Some(if neg { -v } else { v })
}

/// `-g`: a float prefix (strtod); lines without one sort first.
fn general_value(s: &[u8]) -> f64 {
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start();
    if let Some(v) = hex_float(t) {
        return v;
    }
    let mut best = f64::NEG_INFINITY;
    for end in (1..=t.len()).rev() {
        if !t.is_char_boundary(end) {
            continue;
        }
        if let Ok(v) = t[..end].parse::<f64>() {
            best = v;
            break;
        }
    }
    best
}

/// `-h`: a number with an SI suffix (K M G T P E Z Y), by suffix then value.
fn human_value(s: &[u8]) -> (i32, f64) {
    let v = numeric_value(s);
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start();
    let num_len = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(t.len());
    let unit = t[num_len..]
        .chars()
        .next()
        .and_then(|c| "KMGTPEZY".find(c.to_ascii_uppercase()));
    let rank = unit.map_or(0, |u| u as i32 + 1);
    let sign = if v < 0.0 { -1 } else { 1 };
    (sign * rank, v)
}

fn month_value(s: &[u8]) -> usize {
    const MONTHS: [&str; 12] = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ];
    let t = String::from_utf8_lossy(s).trim_start().to_ascii_uppercase();
    MONTHS
        .iter()
        .position(|m| t.starts_with(m))
        .map_or(0, |i| i + 1)
}

/// `-V`: runs of digits compare as numbers, the rest byte by byte (GNU's filevercmp, less
/// its suffix rules). git's `version:` sort keys are the same order (`git for-each-ref`).
pub fn version_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let na = std::str::from_utf8(&a[si..i])
                .unwrap_or("0")
                .trim_start_matches('0');
            let nb = std::str::from_utf8(&b[sj..j])
                .unwrap_or("0")
                .trim_start_matches('0');
            let o = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            if o != Ordering::Equal {
                return o;
            }
        } else {
            let o = a[i].cmp(&b[j]);
            if o != Ordering::Equal {
                return o;
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

/// Compares two keys under `o` (without its reverse flag).
fn compare(a: &[u8], b: &[u8], o: &Order) -> Ordering {
    let (a, b) = if o.blanks {
        let skip = |s: &[u8]| -> usize { s.iter().take_while(|c| is_blank(**c)).count() };
        (&a[skip(a)..], &b[skip(b)..])
    } else {
        (a, b)
    };
    if o.numeric {
        return numeric_value(a)
            .partial_cmp(&numeric_value(b))
            .unwrap_or(Ordering::Equal);
    }
    if o.general {
        return general_value(a)
            .partial_cmp(&general_value(b))
            .unwrap_or(Ordering::Equal);
    }
    if o.human {
        let (ra, va) = human_value(a);
        let (rb, vb) = human_value(b);
        return ra
            .cmp(&rb)
            .then_with(|| va.partial_cmp(&vb).unwrap_or(Ordering::Equal));
    }
    if o.month {
        return month_value(a).cmp(&month_value(b));
    }
    if o.version {
        return version_cmp(a, b);
    }
    if o.dictionary || o.nonprinting || o.fold {
        let filt = |s: &[u8]| -> Vec<u8> {
            s.iter()
                .copied()
                .filter(|c| !o.dictionary || c.is_ascii_alphanumeric() || is_blank(*c))
                .filter(|c| !o.nonprinting || (0x20..0x7f).contains(c))
                .map(|c| if o.fold { c.to_ascii_uppercase() } else { c })
                .collect()
        };
        return filt(a).cmp(&filt(b));
    }
    a.cmp(b)
}

pub fn sort(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut global = Order::default();
    let mut keys: Vec<Key> = Vec::new();
    let mut sep: Option<u8> = None;
    let (mut unique, mut stable, mut check, mut quiet_check, mut zero) =
        (false, false, false, false, false);
    let mut output: Option<String> = None;
    let mut files = Vec::new();
    let mut i = 0;
    let mut only_files = false;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if only_files || a == "-" || !a.starts_with('-') {
            files.push(a);
            continue;
        }
        if a == "--" {
            only_files = true;
            continue;
        }
        // The gate hands every long option with a short form on as that form; --parallel
        // (threads change how GNU sort works, not what it prints) is the one left.
        if let Some(long) = a.strip_prefix("--") {
            if long.starts_with("parallel=") {
                continue;
            }
            return invalid(io, &format!("unrecognized option '{a}'"));
        }
        let body: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < body.len() {
            let c = body[j];
            j += 1;
            if global.set(c) {
                continue;
            }
            match c {
                'u' => unique = true,
                's' => stable = true,
                'z' => zero = true,
                'm' => {}
                'c' => check = true,
                'C' => {
                    check = true;
                    quiet_check = true;
                }
                'k' | 't' | 'o' | 'T' | 'S' => {
                    let rest: String = body[j..].iter().collect();
                    let v = if rest.is_empty() {
                        i += 1;
                        match args.get(i - 1) {
                            Some(v) => v.clone(),
                            None => {
                                return invalid(
                                    io,
                                    &format!("option requires an argument -- '{c}'"),
                                );
                            }
                        }
                    } else {
                        rest
                    };
                    match c {
                        'k' => match parse_key(&v) {
                            Ok(k) => keys.push(k),
                            Err(e) => return invalid(io, &e),
                        },
                        't' => {
                            if v.len() != 1 {
                                if v == "\\0" {
                                    sep = Some(0);
                                } else {
                                    io.eprint(&format!("sort: multi-character tab '{v}'\n"));
                                    return 2;
                                }
                            } else {
                                sep = v.bytes().next();
                            }
                        }
                        'o' => output = Some(v),
                        // Temporary directory and buffer size change nothing here.
                        _ => {}
                    }
                    break;
                }
                other => {
                    return invalid(io, &format!("invalid option -- '{other}'"));
                }
            }
        }
    }
    let mut status = 0;
    let mut data = Vec::new();
    if files.is_empty() {
        files.push("-".into());
    }
    let term = if zero { 0u8 } else { b'\n' };
    for f in &files {
        let d = if f == "-" {
            read_all(&io.stdin)
        } else {
            match sh_utility::sys::read(sh.path(f)) {
                Ok(d) => d,
                Err(e) => {
                    io.eprint(&format!(
                        "sort: cannot read: {f}: {}\n",
                        sh_utility::format::io_msg(&e)
                    ));
                    status = 2;
                    continue;
                }
            }
        };
        data.extend(&d);
        if !d.is_empty() && !d.ends_with(&[term]) {
            data.push(term);
        }
    }
    if status != 0 {
        return status;
    }
    let mut lines: Vec<&[u8]> = data.split(|b| *b == term).collect();
    if data.ends_with(&[term]) || data.is_empty() {
        lines.pop();
    }
    // Keys without options of their own take the global ones.
    for k in &mut keys {
        if k.order == INHERIT {
            k.order = global;
            k.blank_start = global.blanks;
            k.blank_end = global.blanks;
        }
    }
    let by_keys = |a: &[u8], b: &[u8]| -> Ordering {
        if keys.is_empty() {
            let o = compare(a, b, &global);
            return if global.reverse { o.reverse() } else { o };
        }
        for k in &keys {
            let o = compare(key_bytes(a, k, sep), key_bytes(b, k, sep), &k.order);
            let o = if k.order.reverse { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    let full = |a: &[u8], b: &[u8]| -> Ordering {
        let o = by_keys(a, b);
        if o != Ordering::Equal || stable || unique {
            return o;
        }
        // The last resort: whole lines, byte by byte (reversed by a global -r).
        let last = a.cmp(b);
        if global.reverse { last.reverse() } else { last }
    };
    if check {
        for w in 1..lines.len() {
            let bad = if unique {
                full(lines[w - 1], lines[w]) != Ordering::Less
            } else {
                full(lines[w - 1], lines[w]) == Ordering::Greater
            };
            if bad {
                if !quiet_check {
                    let name = files.first().map_or("-", String::as_str);
                    io.eprint(&format!(
                        "sort: {name}:{}: disorder: {}\n",
                        w + 1,
                        String::from_utf8_lossy(lines[w])
                    ));
                }
                return 1;
            }
        }
        return 0;
    }
    lines.sort_by(|a, b| full(a, b));
    if unique {
        lines.dedup_by(|a, b| by_keys(a, b) == Ordering::Equal);
    }
    let mut out = Vec::with_capacity(data.len());
    for l in &lines {
        out.extend_from_slice(l);
        out.push(term);
    }
    match output {
        Some(f) if f != "-" => {
            if let Err(e) = std::fs::write(sh.path(&f), &out) {
                io.eprint(&format!(
                    "sort: open failed: {f}: {}\n",
                    sh_utility::format::io_msg(&e)
                ));
                return 2;
            }
        }
        _ => io.out.write(&out),
    }
    0
}
