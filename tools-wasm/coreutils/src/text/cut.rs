//! `cut`: fields (-f with -d, -s, --output-delimiter, --complement), bytes (-b) and
//! characters (-c) by ranges.

use super::*;

pub(super) fn ranges(spec: &str) -> Option<Vec<(usize, usize)>> {
    let mut v = Vec::new();
    for part in spec.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                if a.is_empty() { 1 } else { a.parse().ok()? },
                if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                },
            ),
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
        if a == 0 {
            return None;
        }
        v.push((a, b));
    }
    Some(v)
}

pub fn cut(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut delim = '\t';
    let (mut fields, mut chars) = (None, None);
    let mut files = Vec::new();
    let mut suppress = false;
    let mut complement = false;
    let mut out_delim: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        // The gate hands the long options with a short form on as that form, and the others
        // as `--name` or `--name=value`.
        if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
            match long.split_once('=') {
                Some(("output-delimiter", v)) => out_delim = Some(v.to_string()),
                None if long == "complement" => complement = true,
                _ => {
                    io.eprint(&format!(
                        "cut: unrecognized option '{a}'\nTry 'cut --help' for more information.\n"
                    ));
                    return 1;
                }
            }
            i += 1;
            continue;
        }
        let mut take = |flag: &str| -> Option<String> {
            if a == flag {
                i += 1;
                args.get(i).cloned()
            } else {
                a.strip_prefix(flag).map(String::from)
            }
        };
        if a.starts_with("-d") {
            delim = take("-d").and_then(|d| d.chars().next()).unwrap_or('\t');
        } else if a.starts_with("-f") {
            fields = take("-f");
        } else if a.starts_with("-c") || a.starts_with("-b") {
            chars = take(if a.starts_with("-c") { "-c" } else { "-b" });
        } else if a == "-s" {
            suppress = true;
        } else if a.starts_with('-') && a.len() > 1 {
            io.eprint(&format!(
                "cut: invalid option -- '{}'\nTry 'cut --help' for more information.\n",
                &a[1..2]
            ));
            return 1;
        } else {
            files.push(a.clone());
        }
        i += 1;
    }
    let (spec, by_field) = match (fields, chars) {
        (Some(f), _) => (f, true),
        (None, Some(c)) => (c, false),
        _ => {
            io.eprint("cut: you must specify a list of bytes, characters, or fields\nTry 'cut --help' for more information.\n");
            return 1;
        }
    };
    let Some(rs) = ranges(&spec) else {
        io.eprint("cut: fields and positions are numbered from 1\nTry 'cut --help' for more information.\n");
        return 1;
    };
    let sel = |n: usize| rs.iter().any(|&(a, b)| n >= a && n <= b) != complement;
    let mut status = 0;
    let mut data = Vec::new();
    if files.is_empty() {
        data = read_all(&io.stdin);
    }
    for f in &files {
        match sh_utility::sys::read(sh.path(f)) {
            Ok(d) => data.extend(d),
            Err(e) => {
                io.eprint(&format!("cut: {f}: {}\n", io_msg(&e)));
                status = 1;
            }
        }
    }
    let text = String::from_utf8_lossy(&data).into_owned();
    let mut out = String::new();
    for l in lines(&text) {
        if by_field {
            if !l.contains(delim) {
                if !suppress {
                    out.push_str(l);
                    out.push('\n');
                }
                continue;
            }
            let parts: Vec<&str> = l
                .split(delim)
                .enumerate()
                .filter(|(k, _)| sel(k + 1))
                .map(|(_, p)| p)
                .collect();
            let joint = out_delim.clone().unwrap_or_else(|| delim.to_string());
            out.push_str(&parts.join(&joint));
        } else {
            // With --output-delimiter, it separates runs of selected characters.
            let mut last: Option<usize> = None;
            for (k, c) in l.chars().enumerate().filter(|(k, _)| sel(k + 1)) {
                if let (Some(d), Some(p)) = (&out_delim, last)
                    && k > p + 1
                {
                    out.push_str(d);
                }
                out.push(c);
                last = Some(k);
            }
        }
        out.push('\n');
    }
    io.print(&out);
    status
}
