//! awk's `printf`/`sprintf`: C's conversions over awk values.

use super::*;

pub(super) fn sprintf(fmt: &str, args: &[Val], convfmt: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    let mut next = 0;
    let arg = |next: &mut usize| {
        let v = args
            .get(*next)
            .cloned()
            .unwrap_or(Val::StrNum(String::new()));
        *next += 1;
        v
    };
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        if i >= chars.len() {
            out.push('%');
            break;
        }
        if chars[i] == '%' {
            out.push('%');
            i += 1;
            continue;
        }
        let mut flags = String::new();
        while i < chars.len() && "-+ #0".contains(chars[i]) {
            flags.push(chars[i]);
            i += 1;
        }
        let mut width = String::new();
        if i < chars.len() && chars[i] == '*' {
            width = (arg(&mut next).num() as i64).to_string();
            i += 1;
        }
        while i < chars.len() && chars[i].is_ascii_digit() {
            width.push(chars[i]);
            i += 1;
        }
        let mut prec: Option<usize> = None;
        if i < chars.len() && chars[i] == '.' {
            i += 1;
            let mut p = String::new();
            if i < chars.len() && chars[i] == '*' {
                p = (arg(&mut next).num().max(0.0) as i64).to_string();
                i += 1;
            }
            while i < chars.len() && chars[i].is_ascii_digit() {
                p.push(chars[i]);
                i += 1;
            }
            prec = Some(p.parse().unwrap_or(0));
        }
        // Length modifiers are accepted and ignored.
        while i < chars.len() && "hlLqjzt".contains(chars[i]) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            break;
        };
        i += 1;
        let left = flags.contains('-') || width.starts_with('-');
        let width: usize = width.trim_start_matches('-').parse().unwrap_or(0);
        let zero = flags.contains('0') && !left;
        let plus = flags.contains('+');
        let space = flags.contains(' ');
        let body = match conv {
            'd' | 'i' => {
                let n = arg(&mut next).num();
                let n = if n.is_finite() { n.trunc() as i64 } else { 0 };
                let mut digits = n.unsigned_abs().to_string();
                if let Some(p) = prec {
                    while digits.len() < p {
                        digits.insert(0, '0');
                    }
                }
                let sign = if n < 0 {
                    "-"
                } else if plus {
                    "+"
                } else if space {
                    " "
                } else {
                    ""
                };
                pad_num(sign, &digits, width, zero && prec.is_none(), left)
            }
            'o' | 'x' | 'X' | 'u' => {
                let n = arg(&mut next).num();
                let n = if n < 0.0 { (n as i64) as u64 } else { n as u64 };
                let digits = match conv {
                    'o' => format!("{n:o}"),
                    'x' => format!("{n:x}"),
                    'X' => format!("{n:X}"),
                    _ => n.to_string(),
                };
                pad_num("", &digits, width, zero, left)
            }
            'c' => {
                let v = arg(&mut next);
                let s = match v {
                    Val::Num(n) => char::from_u32(n as u32)
                        .map(String::from)
                        .unwrap_or_default(),
                    other => other
                        .str(convfmt)
                        .chars()
                        .next()
                        .map(String::from)
                        .unwrap_or_default(),
                };
                pad(&s, width, left)
            }
            's' => {
                let mut s = arg(&mut next).str(convfmt);
                if let Some(p) = prec {
                    s = s.chars().take(p).collect();
                }
                pad(&s, width, left)
            }
            'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
                let n = arg(&mut next).num();
                let p = prec.unwrap_or(6);
                let s = float(n, conv, p, flags.contains('#'));
                let (sign, digits) = match s.strip_prefix('-') {
                    Some(d) => ("-", d.to_string()),
                    None => (
                        if plus {
                            "+"
                        } else if space {
                            " "
                        } else {
                            ""
                        },
                        s,
                    ),
                };
                pad_num(sign, &digits, width, zero, left)
            }
            other => {
                let mut s = String::from('%');
                s.push(other);
                s
            }
        };
        out.push_str(&body);
    }
    out
}

pub(super) fn pad(s: &str, width: usize, left: bool) -> String {
    let n = s.chars().count();
    if n >= width {
        return s.to_string();
    }
    let fill = " ".repeat(width - n);
    if left {
        format!("{s}{fill}")
    } else {
        format!("{fill}{s}")
    }
}

pub(super) fn pad_num(sign: &str, digits: &str, width: usize, zero: bool, left: bool) -> String {
    let len = sign.len() + digits.len();
    if len >= width {
        return format!("{sign}{digits}");
    }
    if left {
        format!("{sign}{digits}{}", " ".repeat(width - len))
    } else if zero {
        format!("{sign}{}{digits}", "0".repeat(width - len))
    } else {
        format!("{}{sign}{digits}", " ".repeat(width - len))
    }
}

/// C's %e/%f/%g.
pub(super) fn float(n: f64, conv: char, p: usize, alt: bool) -> String {
    if n.is_nan() {
        return "nan".into();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let exp_form = |n: f64, p: usize, upper: bool| {
        let s = format!("{n:.p$e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        let out = format!("{m}e{sign}{:02}", e.abs());
        if upper { out.to_uppercase() } else { out }
    };
    match conv {
        'f' | 'F' => format!("{n:.p$}"),
        'e' | 'E' => exp_form(n, p, conv == 'E'),
        _ => {
            let p = if p == 0 { 1 } else { p };
            if n == 0.0 {
                return "0".into();
            }
            let x = n.abs().log10().floor() as i32;
            let s = if x < -4 || x >= p as i32 {
                exp_form(n, p - 1, conv == 'G')
            } else {
                let decimals = (p as i32 - 1 - x).max(0) as usize;
                format!("{n:.decimals$}")
            };
            if alt {
                return s;
            }
            // Strip trailing zeros of the fraction (not of the exponent).
            match s.find(['e', 'E']) {
                Some(ei) => {
                    let (m, e) = s.split_at(ei);
                    let m = if m.contains('.') {
                        m.trim_end_matches('0').trim_end_matches('.')
                    } else {
                        m
                    };
                    format!("{m}{e}")
                }
                None if s.contains('.') => {
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                }
                None => s,
            }
        }
    }
}
