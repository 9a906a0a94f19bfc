//! File metadata utilities and the dates they take: `readlink`, `realpath` (symlinks
//! resolved), `stat -c/--format/--printf`, `touch -d/-t/-r`, `date -d/-r`, and the date parser
//! they share (`@EPOCH`, ISO dates and times, now/today/yesterday/tomorrow, `N units ago`).
//! Times are UTC: the sandbox has no time zone.

use std::fs;
use std::path::PathBuf;

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::Io;
pub use sh_utility::time::{civil_from_days, days_from_civil, now};

/// Parses what `date -d` and `touch -d` take; None when it is not understood.
pub fn parse_date(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(n) = s.strip_prefix('@') {
        return n.parse::<f64>().ok().map(|f| f.floor() as i64);
    }
    let lower = s.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut base = now();
    let mut date: Option<i64> = None;
    let mut time: Option<i64> = None;
    let (mut months, mut secs) = (0i64, 0i64);
    let mut weekday: Option<(i64, i64)> = None;
    // The last relative item, which a following `ago` turns around: (months, seconds).
    let mut last = (0i64, 0i64);
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        i += 1;
        let mut add = |m: i64, sec: i64, months: &mut i64, secs: &mut i64| {
            *months += m;
            *secs += sec;
            last = (m, sec);
        };
        match w {
            "now" | "today" => continue,
            "yesterday" => add(0, -86_400, &mut months, &mut secs),
            "tomorrow" => add(0, 86_400, &mut months, &mut secs),
            "utc" | "z" | "gmt" => continue,
            "ago" => {
                months -= 2 * last.0;
                secs -= 2 * last.1;
                last = (-last.0, -last.1);
            }
            "next" | "last" | "this" => {
                let n = match w {
                    "next" => 1,
                    "last" => -1,
                    _ => 0,
                };
                let what = words.get(i)?;
                i += 1;
                if let Some(wd) = weekday_of(what) {
                    weekday = Some((n, wd));
                } else {
                    let (m, sec) = unit_of(what)?;
                    add(n * m, n * sec, &mut months, &mut secs);
                }
            }
            _ => {
                if let Some(wd) = weekday_of(w) {
                    weekday = Some((0, wd));
                } else if let Ok(n) = w.parse::<i64>() {
                    // A number: with a unit after it (`2 days`, `+3 weeks`).
                    let (m, sec) = unit_of(words.get(i)?)?;
                    i += 1;
                    add(n * m, n * sec, &mut months, &mut secs);
                } else if let Some((num, (m, sec))) =
                    split_number_unit(w).and_then(|(n, u)| Some((n, unit_of(u)?)))
                {
                    add(num * m, num * sec, &mut months, &mut secs);
                } else if let Some(u) = unit_of(w) {
                    add(u.0, u.1, &mut months, &mut secs);
                } else if let Some((d, t)) = absolute(w) {
                    date = Some(d);
                    if t.is_some() {
                        time = t;
                    }
                } else if let Some(t) = clock(w) {
                    time = Some(t);
                } else {
                    return None;
                }
            }
        }
    }
    // An absolute date starts at its midnight; a time of day replaces the clock.
    if let Some(d) = date {
        base = d;
    }
    if date.is_some() || time.is_some() || weekday.is_some() {
        base = base.div_euclid(86_400) * 86_400 + time.unwrap_or(0);
    }
    // With a calendar date, GNU date ignores a day of the week.
    if let Some((n, wd)) = weekday.filter(|_| date.is_none()) {
        let today = (base.div_euclid(86_400) + 4).rem_euclid(7); // 1970-01-01 was a Thursday.
        let mut ahead = (wd - today).rem_euclid(7);
        match n {
            1 if ahead == 0 => ahead = 7,
            -1 => ahead = if ahead == 0 { -7 } else { ahead - 7 },
            _ => {}
        }
        base += ahead * 86_400;
    }
    if months != 0 {
        let day = base.div_euclid(86_400);
        let clock = base.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(day);
        let total = y * 12 + (m - 1) + months;
        let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
        // Day overflow carries into the next month, as mktime does (Jan 31 + 1 month = Mar 2/3).
        base = (days_from_civil(ny, nm, 1) + d - 1) * 86_400 + clock;
    }
    Some(base + secs)
}

/// `5days`, `+2weeks`, `-1month`: a number glued to its unit.
fn split_number_unit(w: &str) -> Option<(i64, &str)> {
    let end = w
        .char_indices()
        .find(|(k, c)| !(c.is_ascii_digit() || (*k == 0 && (*c == '+' || *c == '-'))))
        .map(|(k, _)| k)?;
    if end == 0 || end == w.len() {
        return None;
    }
    Some((w[..end].parse().ok()?, &w[end..]))
}

/// A unit as (months, seconds).
fn unit_of(w: &str) -> Option<(i64, i64)> {
    let w = w.strip_suffix('s').filter(|r| r.len() > 2).unwrap_or(w);
    Some(match w {
        "sec" | "second" => (0, 1),
        "min" | "minute" => (0, 60),
        "hour" => (0, 3600),
        "day" => (0, 86_400),
        "week" => (0, 7 * 86_400),
        "fortnight" => (0, 14 * 86_400),
        "month" => (1, 0),
        "year" => (12, 0),
        _ => return None,
    })
}

/// Day of the week, 0 = Sunday.
fn weekday_of(w: &str) -> Option<i64> {
    let w = w.trim_end_matches(',');
    let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let full = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    days.iter()
        .position(|d| *d == w)
        .or_else(|| full.iter().position(|d| *d == w))
        .or_else(|| (w == "tues").then_some(2))
        .or_else(|| (w == "wednes").then_some(3))
        .map(|p| p as i64)
}

/// `HH:MM[:SS]`, seconds after midnight.
fn clock(w: &str) -> Option<i64> {
    let mut tp = w.split(':');
    let h = tp.next()?.parse::<i64>().ok()?;
    let mi = tp.next()?.parse::<i64>().ok()?;
    let se = tp
        .next()
        .map_or(Some(0.0), |v| v.parse::<f64>().ok())?
        .floor() as i64;
    if tp.next().is_some() || !(0..24).contains(&h) || !(0..60).contains(&mi) {
        return None;
    }
    Some(h * 3600 + mi * 60 + se)
}

/// `YYYY-MM-DD[THH:MM[:SS]][Z]`: (midnight of the day, time of day if given).
fn absolute(w: &str) -> Option<(i64, Option<i64>)> {
    let w = w.trim_end_matches('z');
    let (date, time) = match w.split_once('t') {
        Some((d, t)) => (d, Some(clock(t)?)),
        None => (w, None),
    };
    let mut dp = date.split('-');
    let (y, m, d) = (
        dp.next()?.parse::<i64>().ok()?,
        dp.next()?.parse::<i64>().ok()?,
        dp.next()?.parse::<i64>().ok()?,
    );
    if dp.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some((days_from_civil(y, m, d) * 86_400, time))
}

/// `touch -t [[CC]YY]MMDDhhmm[.ss]`.
fn parse_touch_stamp(s: &str) -> Option<i64> {
    let (main, ss) = match s.split_once('.') {
        Some((m, ss)) => (m, ss.parse::<i64>().ok()?),
        None => (s, 0),
    };
    if !main.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| main[a..b].parse::<i64>().ok();
    let (y, rest) = match main.len() {
        12 => (n(0, 4)?, 4),
        10 => {
            let yy = n(0, 2)?;
            (if yy < 69 { 2000 + yy } else { 1900 + yy }, 2)
        }
        8 => (
            sh_utility::time::strftime(now(), "%Y")
                .parse()
                .unwrap_or(1970),
            0,
        ),
        _ => return None,
    };
    let (mo, d, h, mi) = (
        n(rest, rest + 2)?,
        n(rest + 2, rest + 4)?,
        n(rest + 4, rest + 6)?,
        n(rest + 6, rest + 8)?,
    );
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + ss)
}

fn mtime(m: &fs::Metadata) -> i64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `touch [-c] [-d DATE | -t STAMP | -r FILE] FILE...`.
pub fn touch(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut when: Option<i64> = None;
    let mut no_create = false;
    let (mut access_only, mut modification_only) = (false, false);
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        // The gate hands each option on alone, its value as the next argument.
        let mut value = || -> String {
            i += 1;
            args.get(i).cloned().unwrap_or_default()
        };
        if a == "-c" {
            no_create = true;
        } else if a == "-d" {
            let v = value();
            match parse_date(&v) {
                Some(t) => when = Some(t),
                None => {
                    io.eprint(&format!("touch: invalid date format '{v}'\n"));
                    return 1;
                }
            }
        } else if a == "-t" {
            let v = value();
            match parse_touch_stamp(&v) {
                Some(t) => when = Some(t),
                None => {
                    io.eprint(&format!("touch: invalid date format '{v}'\n"));
                    return 1;
                }
            }
        } else if a == "-r" {
            let v = value();
            match fs::metadata(sh.path(&v)) {
                Ok(m) => when = Some(mtime(&m)),
                Err(e) => {
                    io.eprint(&format!(
                        "touch: failed to get attributes of '{v}': {}\n",
                        io_msg(&e)
                    ));
                    return 1;
                }
            }
        } else if a == "--" {
            files.extend(args[i + 1..].iter().cloned());
            break;
        } else if a == "-a" {
            access_only = true;
        } else if a == "-m" {
            modification_only = true;
        } else if a.starts_with('-') && a.len() > 1 {
            // -f: ignored, as in GNU.
        } else {
            files.push(a.to_string());
        }
        i += 1;
    }
    if files.is_empty() {
        io.eprint("touch: missing file operand\nTry 'touch --help' for more information.\n");
        return 1;
    }
    let time = match when {
        Some(t) if t >= 0 => std::time::UNIX_EPOCH + std::time::Duration::from_secs(t as u64),
        Some(_) => std::time::UNIX_EPOCH,
        None => std::time::SystemTime::now(),
    };
    let mut status = 0;
    for f in &files {
        let p = sh.path(f);
        if no_create && !p.exists() {
            continue;
        }
        // -a sets the access time only, -m the modification time only; neither (or both)
        // sets both.
        let mut times = fs::FileTimes::new();
        if !modification_only || access_only {
            times = times.set_accessed(time);
        }
        if !access_only || modification_only {
            times = times.set_modified(time);
        }
        let r = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&p)
            .and_then(|f| f.set_times(times));
        if let Err(e) = r {
            io.eprint(&format!("touch: cannot touch '{f}': {}\n", io_msg(&e)));
            status = 1;
        }
    }
    status
}

/// `date [-u] [-d DATE | -r FILE] [-I | -R | +FORMAT]`.
pub fn date(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (mut t, mut nanos) = sh_utility::time::now_ns();
    let mut fmt = "%a %b %e %H:%M:%S UTC %Y".to_string();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if let Some(f) = a.strip_prefix('+') {
            fmt = f.to_string();
        } else if a == "-d" {
            // The gate hands each option on alone, its value as the next argument.
            i += 1;
            let v = args.get(i).cloned().unwrap_or_default();
            match parse_date(&v) {
                Some(x) => (t, nanos) = (x, 0),
                None => {
                    io.eprint(&format!("date: invalid date '{v}'\n"));
                    return 1;
                }
            }
        } else if a == "-r" {
            i += 1;
            let f = args.get(i).cloned().unwrap_or_default();
            match fs::metadata(sh.path(&f)) {
                Ok(m) => {
                    t = mtime(&m);
                    nanos = m
                        .modified()
                        .ok()
                        .and_then(|s| s.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.subsec_nanos());
                }
                Err(e) => {
                    io.eprint(&format!("date: {f}: {}\n", io_msg(&e)));
                    return 1;
                }
            }
        } else if let Some(spec) = a.strip_prefix("-I") {
            // The gate hands -I and --iso-8601 on as -I[FMT]; GNU takes any prefix of a name.
            let names = ["date", "hours", "minutes", "seconds", "ns"];
            let which = if spec.is_empty() {
                Some("date")
            } else {
                names.iter().copied().find(|n| n.starts_with(spec))
            };
            fmt = match which {
                Some("date") => "%F".into(),
                Some("hours") => "%FT%H+00:00".into(),
                Some("minutes") => "%FT%H:%M+00:00".into(),
                Some("seconds") => "%FT%T+00:00".into(),
                Some(_) => "%FT%T,%N+00:00".into(),
                None => {
                    io.eprint(&format!(
                        "date: invalid argument '{spec}' for '--iso-8601'\nValid arguments are:\n  - 'hours'\n  - 'minutes'\n  - 'date'\n  - 'seconds'\n  - 'ns'\nTry 'date --help' for more information.\n"
                    ));
                    return 1;
                }
            };
        } else if !a.starts_with('-') {
            // An operand that is not +FORMAT sets the clock, which a sandbox cannot.
            if a.len() >= 8 && a.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                io.eprint("date: cannot set date: Operation not permitted\n");
            } else {
                io.eprint(&format!("date: invalid date '{a}'\n"));
            }
            return 1;
        } else if a == "-u" {
            // The sandbox's clock is UTC already.
        } else if a == "-R" {
            fmt = "%a, %d %b %Y %H:%M:%S +0000".into();
        }
        i += 1;
    }
    io.print(&format!(
        "{}\n",
        sh_utility::time::strftime_ns(t, nanos, &fmt)
    ));
    0
}

/// `path` with symlinks resolved: every component must exist (`all`), all but the last
/// (`parents`), or none (neither). Symlink targets resolve inside the workspace.
fn canonical(sh: &dyn Ctx, path: &str, all: bool, parents: bool) -> Result<String, std::io::Error> {
    // Components in order, `..` included: it goes up from where the symlinks before it led
    // (physically), not lexically.
    let mut todo: Vec<String> = sh
        .path(path)
        .to_string_lossy()
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(str::to_string)
        .rev()
        .collect();
    let mut done = PathBuf::from("/");
    let mut hops = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&c);
        match fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > 40 {
                    return Err(std::io::Error::from_raw_os_error(32));
                }
                let target = fs::read_link(&next)?;
                let target = target.to_string_lossy();
                if target.starts_with('/') {
                    done = PathBuf::from("/");
                }
                for t in target
                    .split('/')
                    .filter(|t| !t.is_empty() && *t != ".")
                    .rev()
                {
                    todo.push(t.to_string());
                }
            }
            Ok(_) => done = next,
            Err(e) => {
                let last = todo.is_empty();
                if all || (parents && !last) {
                    return Err(e);
                }
                done = next;
            }
        }
    }
    Ok(done.to_string_lossy().into_owned())
}

/// `readlink [-f|-e|-m] [-n] FILE...` and `realpath [-e|-m] [-s] FILE...`.
pub fn resolve(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    // The gate hands each option on alone, the long ones with a short form as that form:
    // what is left long is realpath's --relative-to/--relative-base.
    let (mut relative_to, mut relative_base) = (None, None);
    for a in args {
        if let Some(v) = a.strip_prefix("--relative-to=") {
            relative_to = Some(v.to_string());
        } else if let Some(v) = a.strip_prefix("--relative-base=") {
            relative_base = Some(v.to_string());
        }
    }
    let has = |f: &str| args.iter().any(|a| a == f);
    let zero = has("-z");
    // The last of -q/-s and -v wins in GNU; here -v wins when both are given.
    let verbose = has("-v");
    let quiet = has("-q") && !verbose;
    let (mut mode, newline) = (if cmd == "realpath" { 'E' } else { ' ' }, !has("-n"));
    for a in args {
        match a.as_str() {
            "-f" => mode = 'E',
            "-e" => mode = 'e',
            "-m" => mode = 'm',
            _ => {}
        }
    }
    let strip_only = cmd == "realpath" && has("-s");
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    if files.is_empty() {
        io.eprint(&format!(
            "{cmd}: missing operand\nTry '{cmd} --help' for more information.\n"
        ));
        return 1;
    }
    let mut status = 0;
    let end = if zero {
        "\0"
    } else if newline {
        "\n"
    } else {
        ""
    };
    // The directories results are made relative to, resolved as realpath resolves them.
    let to = relative_to
        .as_deref()
        .map(|d| canonical(sh, d, false, false));
    let base = relative_base
        .as_deref()
        .map(|d| canonical(sh, d, false, false));
    for f in files {
        let out = if strip_only {
            Ok(sh_utility::path::normalize(&sh.path(f).to_string_lossy()))
        } else if mode == ' ' {
            // Plain readlink: the link's own target, or nothing (status 1) for a non-link.
            match fs::read_link(sh.path(f)) {
                Ok(t) => Ok(t.to_string_lossy().into_owned()),
                Err(e) => {
                    if verbose {
                        // A file that is not a symlink: EINVAL, as readlink(2) says.
                        let why = if e.kind() == std::io::ErrorKind::NotFound {
                            io_msg(&e)
                        } else {
                            "Invalid argument".to_string()
                        };
                        io.eprint(&format!("readlink: {f}: {why}\n"));
                    }
                    status = 1;
                    continue;
                }
            }
        } else {
            canonical(sh, f, mode == 'e', mode == 'E')
        };
        // --relative-base: only paths under it are made relative (to --relative-to when
        // given, else to it).
        let under =
            |p: &str, b: &str| p == b || p.starts_with(&format!("{}/", b.trim_end_matches('/')));
        let out = match (out, &to, &base) {
            (Ok(p), _, Some(Ok(b))) if !under(&p, b) => Ok(p),
            (Ok(p), Some(Ok(t)), _) => Ok(relative(&p, t)),
            (Ok(p), None, Some(Ok(b))) => Ok(relative(&p, b)),
            (out, _, _) => out,
        };
        match out {
            Ok(p) => io.print(&format!("{p}{end}")),
            Err(e) => {
                // realpath reports unless -q; readlink only with -v.
                if cmd == "realpath" && !quiet || cmd == "readlink" && verbose {
                    io.eprint(&format!("{cmd}: {f}: {}\n", io_msg(&e)));
                }
                status = 1;
            }
        }
    }
    status
}

/// `path` relative to the directory `from` (both absolute and normalised): `..` for each of
/// `from`'s components past their common prefix, then the rest of `path`.
fn relative(path: &str, from: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let f: Vec<&str> = from.split('/').filter(|c| !c.is_empty()).collect();
    let common = p.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; f.len() - common];
    parts.extend(&p[common..]);
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// `stat -c FORMAT` / `--format=FORMAT` / `--printf=FORMAT` for each file; None when no
/// format was given (the caller prints its default).
pub fn stat_format(sh: &dyn Ctx, args: &[String], io: &Io) -> Option<i32> {
    let mut fmt: Option<(String, bool)> = None;
    let mut deref = false;
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-c" {
            i += 1;
            fmt = Some((args.get(i).cloned().unwrap_or_default(), true));
        } else if let Some(f) = a.strip_prefix("--printf=") {
            fmt = Some((f.to_string(), false));
        } else if a == "-L" {
            deref = true;
        } else if !a.starts_with('-') {
            files.push(a.clone());
        }
        i += 1;
    }
    let (fmt, newline) = fmt?;
    let fmt = if newline {
        fmt
    } else {
        sh_utility::format::backslash_escapes(&fmt).0
    };
    let user = sh.get("USER").unwrap_or("agent").to_string();
    let mut status = 0;
    for f in &files {
        let p = sh.path(f);
        let m = if deref {
            fs::metadata(&p)
        } else {
            fs::symlink_metadata(&p)
        };
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                io.eprint(&format!("stat: cannot statx '{f}': {}\n", io_msg(&e)));
                status = 1;
                continue;
            }
        };
        let ft = m.file_type();
        let kind = if ft.is_dir() {
            "directory"
        } else if ft.is_symlink() {
            "symbolic link"
        } else if sh_utility::sys::is_char_device(&ft) {
            "character special file"
        } else if m.len() == 0 {
            "regular empty file"
        } else {
            "regular file"
        };
        let perms = if ft.is_dir() { 0o755 } else { 0o644 };
        let t = mtime(&m);
        let human = |t: i64| sh_utility::time::strftime(t, "%F %T.000000000 +0000");
        let mut out = sh_utility::time::percent_format(&fmt, |d, out| {
            match d {
                'n' => out.push_str(f),
                'N' => match fs::read_link(&p) {
                    Ok(t) if ft.is_symlink() => {
                        out.push_str(&format!("'{f}' -> '{}'", t.to_string_lossy()))
                    }
                    _ => out.push_str(&format!("'{f}'")),
                },
                's' => out.push_str(&m.len().to_string()),
                'F' => out.push_str(kind),
                'Y' | 'X' | 'Z' | 'W' => out.push_str(&t.to_string()),
                'y' | 'x' | 'z' | 'w' => out.push_str(&human(t)),
                'a' => out.push_str(&format!("{perms:o}")),
                'A' => out.push_str(if ft.is_dir() {
                    "drwxr-xr-x"
                } else if ft.is_symlink() {
                    "lrwxrwxrwx"
                } else {
                    "-rw-r--r--"
                }),
                'U' | 'G' => out.push_str(&user),
                'u' | 'g' => out.push_str("1000"),
                'h' => out.push('1'),
                'b' => out.push_str(&m.len().div_ceil(512).to_string()),
                'B' => out.push_str("512"),
                'o' => out.push_str("4096"),
                _ => return false,
            }
            true
        });
        if newline {
            out.push('\n');
        }
        io.print(&out);
    }
    Some(status)
}
