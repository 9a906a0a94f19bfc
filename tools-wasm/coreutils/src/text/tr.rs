//! `tr`: translates, deletes (-d) and squeezes (-s) characters, with GNU's sets: ranges,
//! classes `[:alpha:]`, escapes, `-c` complement.

use super::*;

pub(super) fn tr_set(s: &str) -> Vec<char> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '['
            && chars.get(i + 1) == Some(&':')
            && let Some(end) = s[i..].find(":]")
        {
            let name = &s[i + 2..i + end];
            let class: Vec<char> = match name {
                "upper" => ('A'..='Z').collect(),
                "lower" => ('a'..='z').collect(),
                "digit" => ('0'..='9').collect(),
                "alpha" => ('A'..='Z').chain('a'..='z').collect(),
                "alnum" => ('0'..='9').chain('A'..='Z').chain('a'..='z').collect(),
                "space" => vec![' ', '\t', '\n', '\r', '\x0b', '\x0c'],
                "blank" => vec![' ', '\t'],
                "punct" => "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars().collect(),
                _ => Vec::new(),
            };
            out.extend(class);
            i += end + 2;
            continue;
        }
        let c = if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
            match chars[i] {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'v' => '\x0b',
                '\\' => '\\',
                // \NNN: one to three octal digits (GNU tr).
                d @ '0'..='7' => {
                    let mut v = d.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.get(i + 1).and_then(|c| c.to_digit(8)) {
                            Some(n) if v * 8 + n <= 0o377 => {
                                v = v * 8 + n;
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    char::from_u32(v).unwrap_or('\0')
                }
                o => o,
            }
        } else {
            chars[i]
        };
        if chars.get(i + 1) == Some(&'-') && i + 2 < chars.len() {
            let e = chars[i + 2];
            for x in c..=e {
                out.push(x);
            }
            i += 3;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

pub fn tr(args: &[String], io: &Io) -> i32 {
    let (mut delete, mut squeeze, mut complement, mut truncate) = (false, false, false, false);
    let mut words: Vec<&String> = Vec::new();
    let mut only_operands = false;
    for a in args {
        if !only_operands && a == "--" {
            only_operands = true;
        } else if !only_operands && a.starts_with('-') && a.len() > 1 {
            // The gate hands each option on alone.
            match a.as_str() {
                "-d" => delete = true,
                "-s" => squeeze = true,
                "-c" | "-C" => complement = true,
                "-t" => truncate = true,
                _ => words.push(a),
            }
        } else {
            words.push(a);
        }
    }
    let fail = |msg: String| {
        io.eprint(&format!(
            "tr: {msg}\nTry 'tr --help' for more information.\n"
        ));
        1
    };
    // GNU's operand rules: two sets to translate, one to delete (two with -s), one or two
    // to squeeze.
    let max = if delete && !squeeze || squeeze && !delete && words.len() < 2 {
        1
    } else {
        2
    };
    match words.len() {
        0 => return fail("missing operand".into()),
        1 if !delete && !squeeze => {
            return fail(format!(
                "missing operand after '{}'\nTwo strings must be given when translating.",
                words[0]
            ));
        }
        1 if delete && squeeze => {
            return fail(format!(
                "missing operand after '{}'\nTwo strings must be given when both deleting and squeezing repeats.",
                words[0]
            ));
        }
        n if n > max => {
            let why = if delete && !squeeze {
                "\nOnly one string may be given when deleting without squeezing repeats."
            } else {
                ""
            };
            return fail(format!("extra operand '{}'{why}", words[max]));
        }
        _ => {}
    }
    let mut sets: Vec<Vec<char>> = words.iter().map(|w| tr_set(w)).collect();
    if truncate && sets.len() == 2 {
        let n = sets[1].len();
        sets[0].truncate(n);
    }
    let data = String::from_utf8_lossy(&read_all(&io.stdin)).into_owned();
    let s1 = &sets[0];
    let in1 = |c: char| s1.contains(&c) != complement;
    let mut out = String::new();
    let mut last: Option<char> = None;
    for c in data.chars() {
        let mapped = if delete {
            if in1(c) {
                continue;
            }
            Some(c)
        } else if let Some(s2) = sets.get(1) {
            if in1(c) {
                let pos = if complement {
                    s2.len().saturating_sub(1)
                } else {
                    s1.iter().position(|&x| x == c).unwrap_or(0)
                };
                Some(*s2.get(pos).or(s2.last()).unwrap_or(&c))
            } else {
                Some(c)
            }
        } else {
            Some(c)
        };
        let Some(m) = mapped else { continue };
        let sq_set = if delete || sets.len() < 2 {
            sets.last()
        } else {
            sets.get(1)
        };
        if squeeze && last == Some(m) && sq_set.is_some_and(|s| s.contains(&m)) {
            continue;
        }
        out.push(m);
        last = Some(m);
    }
    io.print(&out);
    0
}
