//! `find` as GNU find evaluates it: an expression of tests and actions with `!`/`-not`,
//! implicit and `-a`, `-o`, and parentheses, evaluated left to right with short-circuits on
//! each entry of a pre-order walk (names sorted, for stable output); `-prune` stops the descent,
//! and an expression without an action prints what it matches. Actions: `-print`, `-print0`,
//! `-printf`, `-exec CMD ;` (its status is the test's), `-exec CMD {} +` (batched, run at the
//! end), `-delete` (children before parents), `-quit`. Options `-maxdepth`, `-mindepth`.
//! An unknown predicate is refused with GNU's message.

use std::fs;
use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::Io;

enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// A test: predicate and its argument.
    Test(String, String),
    Print(bool),
    Printf(String),
    Exec(Vec<String>),
    ExecBatch(usize),
    Delete,
    Prune,
    Quit,
    True,
}

struct Parser<'a> {
    toks: &'a [String],
    pos: usize,
    /// Commands of `-exec ... {} +`, filled as entries match.
    batches: Vec<(Vec<String>, Vec<String>)>,
    has_action: bool,
    maxdepth: usize,
    mindepth: usize,
    delete: bool,
}

const TESTS: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-type",
    "-newer",
    "-size",
    "-empty",
    "-true",
    "-false",
    "-mtime",
    "-mmin",
    "-readable",
    "-writable",
    "-executable",
];

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.pos += 1;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.not()?;
        loop {
            match self.peek() {
                None | Some("-o" | "-or" | ")") => return Ok(left),
                Some("-a" | "-and") => self.pos += 1,
                _ => {}
            }
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
    }

    fn not(&mut self) -> Result<Expr, String> {
        if matches!(self.peek(), Some("!" | "-not")) {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.primary()
    }

    fn arg(&mut self, pred: &str) -> Result<String, String> {
        self.pos += 1;
        self.toks
            .get(self.pos - 1)
            .cloned()
            .ok_or_else(|| format!("missing argument to `{pred}'"))
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let Some(t) = self.peek().map(String::from) else {
            return Err("expected an expression".into());
        };
        self.pos += 1;
        Ok(match t.as_str() {
            "(" => {
                let e = self.or()?;
                if self.peek() != Some(")") {
                    return Err("invalid expression; you have too many '('".into());
                }
                self.pos += 1;
                e
            }
            ")" => return Err("invalid expression; you have too many ')'".into()),
            "-print" | "-print0" => {
                self.has_action = true;
                Expr::Print(t == "-print0")
            }
            "-printf" => {
                self.has_action = true;
                Expr::Printf(self.arg("-printf")?)
            }
            "-delete" => {
                self.has_action = true;
                self.delete = true;
                Expr::Delete
            }
            "-prune" => Expr::Prune,
            "-quit" => Expr::Quit,
            "-true" => Expr::True,
            "-false" => Expr::Not(Box::new(Expr::True)),
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                if t.starts_with("-ok") {
                    return Err(format!("{t}: not supported in burrow (no terminal to ask)"));
                }
                self.has_action = true;
                let mut cmd = Vec::new();
                loop {
                    match self.peek() {
                        None => return Err(format!("missing argument to `{t}'")),
                        Some(";") => {
                            self.pos += 1;
                            break;
                        }
                        Some("+") if cmd.last().is_some_and(|l: &String| l == "{}") => {
                            self.pos += 1;
                            cmd.pop();
                            self.batches.push((cmd, Vec::new()));
                            return Ok(Expr::ExecBatch(self.batches.len() - 1));
                        }
                        Some(w) => {
                            cmd.push(w.to_string());
                            self.pos += 1;
                        }
                    }
                }
                if cmd.is_empty() {
                    return Err(format!("missing argument to `{t}'"));
                }
                Expr::Exec(cmd)
            }
            "-maxdepth" | "-mindepth" => {
                let v = self.arg(&t)?;
                let n: usize = v.parse().map_err(|_| {
                    format!("Expected a positive decimal integer argument to {t}, but got `{v}'")
                })?;
                if t == "-maxdepth" {
                    self.maxdepth = n;
                } else {
                    self.mindepth = n;
                }
                Expr::True
            }
            "-empty" | "-readable" | "-writable" | "-executable" => Expr::Test(t, String::new()),
            p if TESTS.contains(&p) => {
                let v = self.arg(p)?;
                Expr::Test(t, v)
            }
            other => return Err(format!("unknown predicate `{other}'")),
        })
    }
}

/// One entry of the walk.
struct Entry<'a> {
    disp: &'a str,
    start: &'a str,
    full: &'a Path,
    depth: usize,
}

struct FindCx<'a> {
    io: &'a Io,
    prune: bool,
    quit: bool,
    to_delete: Vec<PathBuf>,
    status: i32,
    /// What -print and -printf wrote and [`FindCx::flush`] has not passed on: one write per
    /// 64 KiB instead of one per entry (each a host call), kept in order with errors and
    /// -exec's output by flushing before them.
    out: Vec<u8>,
}

impl FindCx<'_> {
    fn print(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
        if self.out.len() >= 64 << 10 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.out.is_empty() {
            self.io.out.write(&self.out);
            self.out.clear();
        }
    }

    fn error(&mut self, msg: &str) {
        self.flush();
        self.io.eprint(msg);
        self.status = 1;
    }
}

fn test(sh: &dyn Ctx, pred: &str, v: &str, e: &Entry) -> bool {
    let name = {
        let t = e.disp.trim_end_matches('/');
        if t.is_empty() {
            "/"
        } else {
            t.rsplit('/').next().unwrap_or(t)
        }
    };
    // Only the tests that look at the file's attributes stat it (`-name` and `-path` do not).
    let meta = std::cell::LazyCell::new(|| fs::symlink_metadata(e.full));
    let pat = |p: &str, s: &str, fold: bool| {
        if fold {
            sh_utility::pattern::pattern_matches(&p.to_lowercase(), &s.to_lowercase())
        } else {
            sh_utility::pattern::pattern_matches(p, s)
        }
    };
    let age = |unit: i64| -> Option<i64> {
        let m = meta.as_ref().ok()?.modified().ok()?;
        let secs = std::time::SystemTime::now()
            .duration_since(m)
            .ok()?
            .as_secs() as i64;
        Some(secs / unit)
    };
    let cmp_num = |v: &str, x: i64| {
        let (c, n) = match v.chars().next() {
            Some('+') => (1, &v[1..]),
            Some('-') => (-1, &v[1..]),
            _ => (0, v),
        };
        let n: i64 = n.parse().unwrap_or(0);
        match c {
            1 => x > n,
            -1 => x < n,
            _ => x == n,
        }
    };
    match pred {
        "-name" => pat(v, name, false),
        "-iname" => pat(v, name, true),
        "-path" | "-wholename" => pat(v, e.disp, false),
        "-ipath" | "-iwholename" => pat(v, e.disp, true),
        "-regex" | "-iregex" => {
            let flags = if pred == "-iregex" { "(?i)" } else { "" };
            full_match_regex(&format!("{flags}^(?:{v})$")).is_some_and(|r| r.is_match(e.disp))
        }
        "-type" => meta.as_ref().is_ok_and(|m| {
            v.split(',').any(|t| match t {
                "f" => m.is_file(),
                "d" => m.is_dir(),
                "l" => m.file_type().is_symlink(),
                _ => false,
            })
        }),
        "-empty" => meta.as_ref().is_ok_and(|m| {
            if m.is_dir() {
                fs::read_dir(e.full).is_ok_and(|mut r| r.next().is_none())
            } else {
                m.is_file() && m.len() == 0
            }
        }),
        "-readable" => meta.is_ok(),
        "-writable" => meta.as_ref().is_ok_and(|m| !m.permissions().readonly()),
        "-executable" => meta.as_ref().is_ok_and(|m| m.is_dir()),
        "-newer" => {
            let other = fs::metadata(sh.path(v)).and_then(|m| m.modified()).ok();
            let mine = meta.as_ref().ok().and_then(|m| m.modified().ok());
            matches!((mine, other), (Some(a), Some(b)) if a > b)
        }
        "-mtime" => age(86_400).is_some_and(|d| cmp_num(v, d)),
        "-mmin" => age(60).is_some_and(|d| cmp_num(v, d)),
        "-size" => {
            let size = meta.as_ref().map_or(0, |m| m.len());
            let (cmp, rest) = match v.chars().next() {
                Some('+') => (1, &v[1..]),
                Some('-') => (-1, &v[1..]),
                _ => (0, v),
            };
            let (num, unit) = rest.split_at(
                rest.find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len()),
            );
            let mult: u64 = match unit {
                "c" => 1,
                "w" => 2,
                "k" => 1024,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => 512,
            };
            let n: u64 = num.parse().unwrap_or(0);
            let units = size.div_ceil(mult);
            match cmp {
                1 => units > n,
                -1 => units < n,
                _ => units == n,
            }
        }
        _ => false,
    }
}

/// `source` compiled, once per run of find (each entry tests the same few expressions).
fn full_match_regex(source: &str) -> Option<regex::Regex> {
    thread_local! {
        static COMPILED: std::cell::RefCell<Vec<(String, Option<regex::Regex>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((_, r)) = c.iter().find(|(s, _)| s == source) {
            return r.clone();
        }
        // A find has a handful of -regex tests; a script running many finds, many more.
        if c.len() >= 16 {
            c.clear();
        }
        let r = regex::Regex::new(source).ok();
        c.push((source.to_string(), r.clone()));
        r
    })
}

fn eval(sh: &mut dyn Ctx, x: &Expr, e: &Entry, cx: &mut FindCx, p: &mut Parser) -> bool {
    if cx.quit {
        return false;
    }
    match x {
        Expr::And(a, b) => eval(sh, a, e, cx, p) && eval(sh, b, e, cx, p),
        Expr::Or(a, b) => eval(sh, a, e, cx, p) || eval(sh, b, e, cx, p),
        Expr::Not(a) => !eval(sh, a, e, cx, p),
        Expr::Test(pred, v) => test(sh, pred, v, e),
        Expr::True => true,
        Expr::Print(nul) => {
            cx.print(&format!("{}{}", e.disp, if *nul { '\0' } else { '\n' }));
            true
        }
        Expr::Printf(f) => {
            cx.print(&find_printf(f, e.disp, e.start, e.full, e.depth));
            true
        }
        Expr::Prune => {
            cx.prune = true;
            true
        }
        Expr::Quit => {
            cx.quit = true;
            true
        }
        Expr::Delete => {
            cx.to_delete.push(e.full.to_path_buf());
            true
        }
        Expr::Exec(cmd) => {
            let argv: Vec<String> = cmd.iter().map(|a| a.replace("{}", e.disp)).collect();
            cx.flush();
            matches!(sh.dispatch(&argv, cx.io), Ok(0))
        }
        Expr::ExecBatch(k) => {
            p.batches[*k].1.push(e.disp.to_string());
            true
        }
    }
}

pub fn find(sh: &mut dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut roots = Vec::new();
    let mut i = 0;
    // Leading -H -L -P choose how symlinks are followed; burrow's walk never follows them.
    while i < args.len() && matches!(args[i].as_str(), "-P" | "-H" | "-L") {
        if args[i] != "-P" {
            io.eprint(&format!("find: {}: not supported in burrow\n", args[i]));
            return 1;
        }
        i += 1;
    }
    while i < args.len() && !args[i].starts_with('-') && args[i] != "!" && args[i] != "(" {
        roots.push(args[i].clone());
        i += 1;
    }
    if roots.is_empty() {
        roots.push(".".into());
    }
    let toks = &args[i..];
    let mut p = Parser {
        toks,
        pos: 0,
        batches: Vec::new(),
        has_action: false,
        maxdepth: usize::MAX,
        mindepth: 0,
        delete: false,
    };
    let expr = if toks.is_empty() {
        Ok(Expr::True)
    } else {
        p.or().and_then(|e| match p.peek() {
            Some(")") => Err("invalid expression; you have too many ')'".into()),
            Some(t) => Err(format!("paths must precede expression: `{t}'")),
            None => Ok(e),
        })
    };
    let expr = match expr {
        Ok(e) if p.has_action => e,
        Ok(e) => Expr::And(Box::new(e), Box::new(Expr::Print(false))),
        Err(msg) => {
            io.eprint(&format!("find: {msg}\n"));
            return 1;
        }
    };
    let mut cx = FindCx {
        io,
        prune: false,
        quit: false,
        to_delete: Vec::new(),
        status: 0,
        out: Vec::new(),
    };
    for r in &roots {
        let full = sh.path(r);
        let Ok(meta) = fs::symlink_metadata(&full) else {
            cx.error(&format!("find: '{r}': No such file or directory\n"));
            continue;
        };
        // Each entry's type comes from its directory's listing, not a stat of its own.
        let mut stack = vec![(r.clone(), full, 0usize, meta.is_dir())];
        while let Some((disp, path, depth, is_dir)) = stack.pop() {
            if cx.quit {
                break;
            }
            cx.prune = false;
            if depth >= p.mindepth {
                let e = Entry {
                    disp: &disp,
                    start: r,
                    full: &path,
                    depth,
                };
                eval(sh, &expr, &e, &mut cx, &mut p);
            }
            // -delete walks children first (GNU's implied -depth), so it never prunes.
            if !is_dir || depth >= p.maxdepth || (cx.prune && !p.delete) {
                continue;
            }
            // (An `-exec` may have removed it since it was listed: GNU says so too.)
            let rd = match fs::read_dir(&path) {
                Ok(rd) => rd,
                Err(e) => {
                    cx.error(&format!("find: '{disp}': {}\n", io_msg(&e)));
                    continue;
                }
            };
            let mut kids: Vec<(String, bool)> = rd
                .filter_map(|e| e.ok())
                .map(|e| {
                    let dir = e.file_type().is_ok_and(|t| t.is_dir());
                    (e.file_name().to_string_lossy().into_owned(), dir)
                })
                .collect();
            kids.sort();
            for (n, dir) in kids.into_iter().rev() {
                let cd = if disp.ends_with('/') {
                    format!("{disp}{n}")
                } else {
                    format!("{disp}/{n}")
                };
                stack.push((cd, path.join(&n), depth + 1, dir));
            }
        }
    }
    cx.flush();
    for (cmd, paths) in std::mem::take(&mut p.batches) {
        if paths.is_empty() {
            continue;
        }
        let mut argv = cmd.clone();
        argv.extend(paths);
        if !matches!(sh.dispatch(&argv, io), Ok(0)) {
            cx.status = 1;
        }
    }
    for path in std::mem::take(&mut cx.to_delete).into_iter().rev() {
        let r = if path.is_dir() {
            fs::remove_dir(&path)
        } else {
            fs::remove_file(&path)
        };
        if let Err(e) = r {
            cx.error(&format!(
                "find: cannot delete '{}': {}\n",
                path.display(),
                io_msg(&e)
            ));
        }
    }
    cx.status
}

/// One `-printf` line: `%p %f %h %P %d %s %m %y %u %g %T@ %%` and the escapes `\n \t \0
/// \\`; a directive burrow does not know is printed as written (GNU warns and does the same).
fn find_printf(fmt: &str, disp: &str, start: &str, full: &std::path::Path, depth: usize) -> String {
    let meta = fs::symlink_metadata(full).ok();
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('0') => out.push('\0'),
                Some('\\') => out.push('\\'),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            },
            '%' => match chars.next() {
                Some('p') => out.push_str(disp),
                Some('f') => {
                    let t = disp.trim_end_matches('/');
                    out.push_str(if t.is_empty() {
                        "/"
                    } else {
                        t.rsplit('/').next().unwrap_or(t)
                    });
                }
                Some('h') => out.push_str(match disp.rsplit_once('/') {
                    Some(("", _)) => "/",
                    Some((h, _)) => h,
                    None => ".",
                }),
                Some('P') => out.push_str(
                    disp.strip_prefix(start)
                        .map(|r| r.trim_start_matches('/'))
                        .unwrap_or(""),
                ),
                Some('d') => out.push_str(&depth.to_string()),
                Some('s') => out.push_str(&meta.as_ref().map_or(0, |m| m.len()).to_string()),
                // The modes the sandbox reports (as `ls -l` and `stat` show them).
                Some('m') => out.push_str(match &meta {
                    Some(m) if m.is_dir() => "755",
                    Some(m) if m.file_type().is_symlink() => "777",
                    Some(m) if m.permissions().readonly() => "444",
                    _ => "644",
                }),
                Some('y') => out.push(match &meta {
                    Some(m) if m.is_dir() => 'd',
                    Some(m) if m.file_type().is_symlink() => 'l',
                    _ => 'f',
                }),
                Some('u') | Some('g') => out.push_str("agent"),
                Some('T') if chars.peek() == Some(&'@') => {
                    chars.next();
                    let t = meta
                        .as_ref()
                        .and_then(|m| m.modified().ok())
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "{}.{:010}",
                        t.as_secs(),
                        t.subsec_nanos() as u64 * 10
                    ));
                }
                Some('%') => out.push('%'),
                Some(o) => {
                    out.push('%');
                    out.push(o);
                }
                None => out.push('%'),
            },
            other => out.push(other),
        }
    }
    out
}
