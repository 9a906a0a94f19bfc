//! Small utilities agents reach for: `tree`, `paste`, `comm`, `column -t`, `cmp`, `expr`,
//! `timeout`, `mktemp`, and the identity answers of a sandbox (`uname`, `whoami`, `id`,
//! `hostname`, `nproc`, `ps`, `locale`).

use std::fs;

use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::Io;
use sh_utility::{Command, Flow, Status};

/// The commands this module runs, for the shell's registry.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "tree",
        run: |sh, argv, io| Ok(tree(sh, &argv[1..], io)),
    },
    Command {
        name: "paste",
        run: |sh, argv, io| Ok(paste(sh, &argv[1..], io)),
    },
    Command {
        name: "comm",
        run: |sh, argv, io| Ok(comm(sh, &argv[1..], io)),
    },
    Command {
        name: "column",
        run: |sh, argv, io| Ok(column(sh, &argv[1..], io)),
    },
    Command {
        name: "cmp",
        run: |sh, argv, io| Ok(cmp(sh, &argv[1..], io)),
    },
    Command {
        name: "expr",
        run: |_, argv, io| Ok(expr(&argv[1..], io)),
    },
    Command {
        name: "timeout",
        run: |sh, argv, io| timeout(sh, &argv[1..], io),
    },
    Command {
        name: "mktemp",
        run: |sh, argv, io| Ok(mktemp(sh, &argv[1..], io)),
    },
    Command {
        name: "uname",
        run: cmd_uname,
    },
    Command {
        name: "whoami",
        run: cmd_whoami,
    },
    Command {
        name: "id",
        run: cmd_id,
    },
    Command {
        name: "hostname",
        run: cmd_hostname,
    },
    Command {
        name: "nproc",
        run: cmd_nproc,
    },
    Command {
        name: "ps",
        run: |_, argv, io| Ok(ps(&argv[1..], io)),
    },
    Command {
        name: "locale",
        run: |sh, argv, io| Ok(locale(sh, &argv[1..], io)),
    },
];

fn cmd_uname(_sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let args = &argv[1..];
    Ok({
        let all = args.iter().any(|a| a == "-a");
        let mut parts = Vec::new();
        for (flag, value) in [
            ('s', "Linux"),
            ('n', "burrow"),
            ('r', "6.1.0-burrow"),
            ('v', "#1 SMP"),
            ('m', "wasm32"),
            ('o', "GNU/Linux"),
        ] {
            if all || args.iter().any(|a| a.starts_with('-') && a.contains(flag)) {
                parts.push(value);
            }
        }
        if parts.is_empty() {
            parts.push("Linux");
        }
        io.print(&format!("{}\n", parts.join(" ")));
        0
    })
}

fn cmd_whoami(sh: &mut dyn Ctx, _argv: &[String], io: &Io) -> Status {
    Ok({
        io.print(&format!("{}\n", sh.get("USER").unwrap_or("agent")));
        0
    })
}

fn cmd_id(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> Status {
    let args = &argv[1..];
    Ok({
        let u = sh.get("USER").unwrap_or("agent").to_string();
        // The gate has checked the letters: -u, -g, -G (one of them) and -n.
        let mut which = Vec::new();
        let mut names = false;
        let mut users = Vec::new();
        for a in args {
            match a
                .strip_prefix('-')
                .filter(|b| !b.is_empty() && !a.starts_with("--"))
            {
                Some(letters) => {
                    for c in letters.chars() {
                        match c {
                            'n' => names = true,
                            c if !which.contains(&c) => which.push(c),
                            _ => {}
                        }
                    }
                }
                None if a == "--" => {}
                None => users.push(a.clone()),
            }
        }
        if let Some(other) = users.iter().find(|n| **n != u && n.as_str() != "1000") {
            io.eprint(&format!("id: '{other}': no such user\n"));
            return Ok(1);
        }
        if which.len() > 1 {
            io.eprint("id: cannot print \"only\" of more than one choice\n");
            return Ok(1);
        }
        match which.first() {
            Some(_) if names => io.print(&format!("{u}\n")),
            Some(_) => io.print("1000\n"),
            None if names => {
                io.eprint("id: cannot print only names or real IDs in default format\n");
                return Ok(1);
            }
            None => io.print(&format!("uid=1000({u}) gid=1000({u}) groups=1000({u})\n")),
        }
        0
    })
}

fn cmd_hostname(_sh: &mut dyn Ctx, _argv: &[String], io: &Io) -> Status {
    Ok({
        io.print("burrow\n");
        0
    })
}

fn cmd_nproc(_sh: &mut dyn Ctx, _argv: &[String], io: &Io) -> Status {
    Ok({
        io.print("1\n");
        0
    })
}

fn read_input(sh: &dyn Ctx, cmd: &str, f: &str, io: &Io) -> Option<String> {
    let f = f.to_string();
    crate::extra::input(sh, cmd, Some(&f), io)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// `tree [-a] [-d] [-L N] [-I PATTERN] [DIR...]`, with tree's box drawing and summary.
fn tree(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut all = false;
    let mut dirs_only = false;
    let mut depth: Option<usize> = None;
    let mut ignore: Vec<String> = Vec::new();
    let mut roots = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-a" => all = true,
            "-d" => dirs_only = true,
            "-L" => {
                i += 1;
                depth = args.get(i).and_then(|v| v.parse().ok());
            }
            "-I" => {
                i += 1;
                if let Some(p) = args.get(i) {
                    ignore.extend(p.split('|').map(str::to_string));
                }
            }
            a if a.starts_with('-') => {}
            a => roots.push(a.to_string()),
        }
        i += 1;
    }
    if roots.is_empty() {
        roots.push(".".into());
    }
    let (mut ndirs, mut nfiles) = (0usize, 0usize);
    let mut out = String::new();
    for root in &roots {
        let p = sh.path(root);
        if !p.is_dir() {
            out.push_str(&format!("{root}  [error opening dir]\n"));
            continue;
        }
        out.push_str(&format!("{root}\n"));
        let opts = TreeOpts {
            all,
            dirs_only,
            depth,
            ignore: &ignore,
        };
        tree_dir(&p, "", 1, &opts, &mut out, &mut ndirs, &mut nfiles);
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if dirs_only {
        out.push_str(&format!(
            "\n{}\n",
            plural(ndirs, "directory", "directories")
        ));
    } else {
        out.push_str(&format!(
            "\n{}, {}\n",
            plural(ndirs, "directory", "directories"),
            plural(nfiles, "file", "files")
        ));
    }
    io.print(&out);
    0
}

struct TreeOpts<'a> {
    all: bool,
    dirs_only: bool,
    depth: Option<usize>,
    ignore: &'a [String],
}

fn tree_dir(
    dir: &std::path::Path,
    prefix: &str,
    level: usize,
    o: &TreeOpts,
    out: &mut String,
    ndirs: &mut usize,
    nfiles: &mut usize,
) {
    if o.depth.is_some_and(|d| level > d) {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<(String, bool, bool)> = rd
        .filter_map(Result::ok)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ft = e.file_type().ok();
            let link = ft.is_some_and(|t| t.is_symlink());
            let is_dir = ft.is_some_and(|t| t.is_dir());
            (name, is_dir, link)
        })
        .filter(|(n, _, _)| o.all || !n.starts_with('.'))
        .filter(|(n, _, _)| {
            !o.ignore
                .iter()
                .any(|g| sh_utility::pattern::pattern_matches(g, n))
        })
        .filter(|(_, d, _)| !o.dirs_only || *d)
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let n = entries.len();
    for (k, (name, is_dir, link)) in entries.into_iter().enumerate() {
        let last = k + 1 == n;
        let branch = if last { "└── " } else { "├── " };
        let path = dir.join(&name);
        if link {
            let target = fs::read_link(&path)
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push_str(&format!("{prefix}{branch}{name} -> {target}\n"));
            if path.is_dir() {
                *ndirs += 1;
            } else {
                *nfiles += 1;
            }
            continue;
        }
        out.push_str(&format!("{prefix}{branch}{name}\n"));
        if is_dir {
            *ndirs += 1;
            let next = format!("{prefix}{}", if last { "    " } else { "│   " });
            tree_dir(&path, &next, level + 1, o, out, ndirs, nfiles);
        } else {
            *nfiles += 1;
        }
    }
}

/// `paste [-s] [-d LIST] FILE...`.
fn paste(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut serial = false;
    let mut delims: Vec<char> = vec!['\t'];
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-s" {
            serial = true;
        } else if a == "-d" {
            i += 1;
            delims = args.get(i).map(|d| d.chars().collect()).unwrap_or_default();
        } else if let Some(d) = a.strip_prefix("-d") {
            delims = d.chars().collect();
        } else if a == "-sd" {
            serial = true;
            i += 1;
            delims = args.get(i).map(|d| d.chars().collect()).unwrap_or_default();
        } else if let Some(d) = a.strip_prefix("-sd") {
            serial = true;
            delims = d.chars().collect();
        } else {
            files.push(a.clone());
        }
        i += 1;
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut inputs = Vec::new();
    for f in &files {
        match read_input(sh, "paste", f, io) {
            Some(t) => inputs.push(
                crate::text::lines(&t)
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            ),
            None => return 1,
        }
    }
    let delim = |k: usize| delims.get(k % delims.len().max(1)).copied();
    let mut out = String::new();
    if serial {
        for lines in &inputs {
            for (k, l) in lines.iter().enumerate() {
                if k > 0
                    && let Some(d) = delim(k - 1)
                {
                    out.push(d);
                }
                out.push_str(l);
            }
            out.push('\n');
        }
    } else {
        let rows = inputs.iter().map(Vec::len).max().unwrap_or(0);
        for r in 0..rows {
            for (k, lines) in inputs.iter().enumerate() {
                if k > 0
                    && let Some(d) = delim(k - 1)
                {
                    out.push(d);
                }
                out.push_str(lines.get(r).map(String::as_str).unwrap_or(""));
            }
            out.push('\n');
        }
    }
    io.print(&out);
    0
}

/// `comm [-123] FILE1 FILE2` (both sorted).
fn comm(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut hide = [false; 3];
    let mut files = Vec::new();
    for a in args {
        if a.starts_with('-') && a.len() > 1 {
            for c in a[1..].chars() {
                if let Some(d) = c.to_digit(10).filter(|d| (1..=3).contains(d)) {
                    hide[d as usize - 1] = true;
                }
            }
        } else {
            files.push(a.clone());
        }
    }
    if files.len() != 2 {
        io.eprint("comm: missing operand\nTry 'comm --help' for more information.\n");
        return 1;
    }
    let (Some(a), Some(b)) = (
        read_input(sh, "comm", &files[0], io),
        read_input(sh, "comm", &files[1], io),
    ) else {
        return 1;
    };
    let (a, b): (Vec<&str>, Vec<&str>) = (
        crate::text::lines(&a).collect(),
        crate::text::lines(&b).collect(),
    );
    let indent = |col: usize| -> String { (0..col).filter(|c| !hide[*c]).map(|_| "\t").collect() };
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let col = if j >= b.len() || (i < a.len() && a[i] < b[j]) {
            i += 1;
            (0, a[i - 1])
        } else if i >= a.len() || b[j] < a[i] {
            j += 1;
            (1, b[j - 1])
        } else {
            i += 1;
            j += 1;
            (2, a[i - 1])
        };
        if !hide[col.0] {
            out.push_str(&format!("{}{}\n", indent(col.0), col.1));
        }
    }
    io.print(&out);
    0
}

/// `column -t [-s SEPS] [-o SEP]`: a table with columns padded to their widest cell.
fn column(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut seps: Option<String> = None;
    let mut out_sep = "  ".to_string();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "-t" => {}
            "-s" => {
                i += 1;
                seps = args.get(i).cloned();
            }
            "-o" => {
                i += 1;
                out_sep = args.get(i).cloned().unwrap_or_default();
            }
            s if s.starts_with("-s") && s.len() > 2 => seps = Some(s[2..].to_string()),
            s if s.starts_with('-') && s.len() > 1 => {}
            _ => files.push(a.clone()),
        }
        i += 1;
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut text = String::new();
    for f in &files {
        match read_input(sh, "column", f, io) {
            Some(t) => text.push_str(&t),
            None => return 1,
        }
    }
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match &seps {
            Some(s) => l.split(|c| s.contains(c)).map(str::to_string).collect(),
            None => l.split_whitespace().map(str::to_string).collect(),
        })
        .collect();
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(widths[c] - cell.chars().count()));
                line.push_str(&out_sep);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    io.print(&out);
    0
}

/// `cmp [-s] FILE1 FILE2`: the first differing byte and line.
fn cmp(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let silent = args.iter().any(|a| a == "-s");
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    if files.len() < 2 {
        io.eprint(
            "cmp: missing operand after 'cmp'\ncmp: Try 'cmp --help' for more information.\n",
        );
        return 2;
    }
    let read = |f: &String| crate::extra::input(sh, "cmp", Some(f), io).ok();
    let (Some(a), Some(b)) = (read(files[0]), read(files[1])) else {
        return 2;
    };
    let n = a.len().min(b.len());
    match (0..n).find(|&k| a[k] != b[k]) {
        Some(k) => {
            if !silent {
                let line = a[..k].iter().filter(|&&c| c == b'\n').count() + 1;
                io.print(&format!(
                    "{} {} differ: char {}, line {line}\n",
                    files[0],
                    files[1],
                    k + 1
                ));
            }
            1
        }
        None if a.len() == b.len() => 0,
        None => {
            if !silent {
                let (short, len) = if a.len() < b.len() {
                    (files[0], a.len())
                } else {
                    (files[1], b.len())
                };
                let lines = a[..n].iter().filter(|&&c| c == b'\n').count();
                if len == 0 {
                    io.eprint(&format!("cmp: EOF on {short} which is empty\n"));
                } else if a[n - 1] == b'\n' {
                    io.eprint(&format!(
                        "cmp: EOF on {short} after byte {len}, line {lines}\n"
                    ));
                } else {
                    io.eprint(&format!(
                        "cmp: EOF on {short} after byte {len}, in line {}\n",
                        lines + 1
                    ));
                }
            }
            1
        }
    }
}

/// `expr`: integer arithmetic, comparisons, `:` (anchored regex match), length, substr,
/// index, `|` and `&`. Status 1 when the result is 0 or empty, 2 on a syntax error.
fn expr(args: &[String], io: &Io) -> i32 {
    let mut p = Expr { toks: args, pos: 0 };
    match p.or() {
        Ok(v) if p.pos == args.len() => {
            io.print(&format!("{v}\n"));
            i32::from(v.is_empty() || v == "0")
        }
        Ok(_) => {
            io.eprint(&format!(
                "expr: syntax error: unexpected argument '{}'\n",
                args[p.pos]
            ));
            2
        }
        Err(e) => {
            io.eprint(&format!("expr: {e}\n"));
            2
        }
    }
}

struct Expr<'a> {
    toks: &'a [String],
    pos: usize,
}

impl Expr<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Result<String, String> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or_else(|| "syntax error: missing argument".to_string())?;
        self.pos += 1;
        Ok(t)
    }

    fn or(&mut self) -> Result<String, String> {
        let mut a = self.and()?;
        while self.peek() == Some("|") {
            self.pos += 1;
            let b = self.and()?;
            if a.is_empty() || a == "0" {
                a = if b.is_empty() { "0".into() } else { b };
            }
        }
        Ok(a)
    }

    fn and(&mut self) -> Result<String, String> {
        let mut a = self.cmp()?;
        while self.peek() == Some("&") {
            self.pos += 1;
            let b = self.cmp()?;
            if a.is_empty() || a == "0" || b.is_empty() || b == "0" {
                a = "0".into();
            }
        }
        Ok(a)
    }

    fn cmp(&mut self) -> Result<String, String> {
        let mut a = self.add()?;
        while let Some(op) = self
            .peek()
            .filter(|o| matches!(*o, "=" | "==" | "!=" | "<" | "<=" | ">" | ">="))
        {
            let op = op.to_string();
            self.pos += 1;
            let b = self.add()?;
            let ord = match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => a.cmp(&b),
            };
            let t = match op.as_str() {
                "=" | "==" => ord.is_eq(),
                "!=" => !ord.is_eq(),
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                _ => ord.is_ge(),
            };
            a = if t { "1".into() } else { "0".into() };
        }
        Ok(a)
    }

    fn num(s: &str) -> Result<i64, String> {
        s.parse().map_err(|_| "non-integer argument".to_string())
    }

    fn add(&mut self) -> Result<String, String> {
        let mut a = self.mul()?;
        while let Some(op) = self.peek().filter(|o| matches!(*o, "+" | "-")) {
            let plus = op == "+";
            self.pos += 1;
            let b = self.mul()?;
            let (x, y) = (Self::num(&a)?, Self::num(&b)?);
            a = if plus {
                x.checked_add(y)
            } else {
                x.checked_sub(y)
            }
            .ok_or("integer overflow")?
            .to_string();
        }
        Ok(a)
    }

    fn mul(&mut self) -> Result<String, String> {
        let mut a = self.matching()?;
        while let Some(op) = self.peek().filter(|o| matches!(*o, "*" | "/" | "%")) {
            let op = op.to_string();
            self.pos += 1;
            let b = self.matching()?;
            let (x, y) = (Self::num(&a)?, Self::num(&b)?);
            if op != "*" && y == 0 {
                return Err("division by zero".into());
            }
            a = match op.as_str() {
                "*" => x.checked_mul(y),
                "/" => x.checked_div(y),
                _ => x.checked_rem(y),
            }
            .ok_or("integer overflow")?
            .to_string();
        }
        Ok(a)
    }

    fn matching(&mut self) -> Result<String, String> {
        let mut a = self.primary()?;
        while self.peek() == Some(":") {
            self.pos += 1;
            let re = self.primary()?;
            a = regex_match(&a, &re)?;
        }
        Ok(a)
    }

    fn primary(&mut self) -> Result<String, String> {
        let t = self.next()?;
        match t.as_str() {
            "(" => {
                let v = self.or()?;
                if self.next()? != ")" {
                    return Err("syntax error: expecting ')'".into());
                }
                Ok(v)
            }
            "length" => Ok(self.primary()?.chars().count().to_string()),
            "match" => {
                let s = self.primary()?;
                let re = self.primary()?;
                regex_match(&s, &re)
            }
            "substr" => {
                let s = self.primary()?;
                let pos = Self::num(&self.primary()?)?;
                let len = Self::num(&self.primary()?)?;
                if pos < 1 || len < 1 {
                    return Ok(String::new());
                }
                Ok(s.chars()
                    .skip(pos as usize - 1)
                    .take(len as usize)
                    .collect())
            }
            "index" => {
                let s = self.primary()?;
                let set = self.primary()?;
                Ok(s.chars()
                    .position(|c| set.contains(c))
                    .map_or(0, |p| p + 1)
                    .to_string())
            }
            "+" => self.next(),
            _ => Ok(t),
        }
    }
}

/// `STRING : REGEX`: anchored at the start; the first group's text, else the match length.
fn regex_match(s: &str, re: &str) -> Result<String, String> {
    let pattern = sh_utility::pattern::bre_to_ere(re);
    let r = regex::Regex::new(&format!("^(?:{pattern})"))
        .map_err(|e| format!("invalid regular expression: {e}"))?;
    Ok(match r.captures(s) {
        Some(c) if c.len() > 1 => c.get(1).map_or(String::new(), |m| m.as_str().to_string()),
        Some(c) => c
            .get(0)
            .map_or(0, |m| m.as_str().chars().count())
            .to_string(),
        None if re.contains("\\(") => String::new(),
        None => "0".into(),
    })
}

/// `timeout DURATION COMMAND...`: runs the command. A call has its own wall-clock limit (the
/// host stops the whole call), and a builtin cannot be preempted, so DURATION is not enforced
/// separately; the options are accepted.
/// `timeout DURATION COMMAND...`: runs COMMAND and stops it at DURATION with status 124
/// (`--preserve-status`: 143, the status of a command killed by SIGTERM). The command is
/// stopped at its next command or inside `sleep`; a single built-in utility that is
/// still working when the time comes finishes first, then the status says it timed out.
fn timeout(sh: &mut dyn Ctx, args: &[String], io: &Io) -> Status {
    let mut i = 0;
    let mut preserve = false;
    let mut verbose = false;
    let mut signal = ("TERM".to_string(), 15);
    // The gate has checked the options (each alone, a value as the next argument).
    while i < args.len() && args[i].starts_with('-') && args[i] != "-" {
        match args[i].as_str() {
            "-s" => {
                i += 1;
                let v = args.get(i).cloned().unwrap_or_default();
                let Some(n) = sh_utility::format::signal_number(&v) else {
                    io.eprint(&format!(
                        "timeout: {v}: invalid signal\nTry 'timeout --help' for more information.\n"
                    ));
                    return Ok(125);
                };
                let name = v.strip_prefix("SIG").unwrap_or(&v).to_string();
                signal = (name, n);
            }
            // The command is stopped at the deadline whatever it does: no second signal.
            "-k" => i += 1,
            "--preserve-status" => preserve = true,
            "-v" => verbose = true,
            "--" => {
                i += 1;
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let Some(d) = args.get(i) else {
        io.eprint("timeout: missing operand\nTry 'timeout --help' for more information.\n");
        return Ok(125);
    };
    let Some(secs) = sh_utility::sys::parse_duration(d) else {
        io.eprint(&format!(
            "timeout: invalid time interval '{d}'\nTry 'timeout --help' for more information.\n"
        ));
        return Ok(125);
    };
    i += 1;
    if i >= args.len() {
        io.eprint("timeout: missing operand\nTry 'timeout --help' for more information.\n");
        return Ok(125);
    }
    if secs == 0.0 {
        return match sh.dispatch(&args[i..], io) {
            Ok(s) | Err(Flow::Exit(s)) => Ok(s),
            Err(f) => Err(f),
        };
    }
    let (r, expired) = sh_utility::sys::with_deadline(secs, || sh.dispatch(&args[i..], io));
    if expired {
        if verbose {
            let name = args[i].rsplit('/').next().unwrap_or(&args[i]);
            let shown = match signal.0.parse::<i32>() {
                Ok(_) => signal.1.to_string(),
                Err(_) => signal.0.clone(),
            };
            io.eprint(&format!(
                "timeout: sending signal {shown} to command '{name}'\n"
            ));
        }
        // GNU: 124, or the command's death by the signal with --preserve-status; KILL
        // cannot be caught, so timeout dies of it too.
        return Ok(if preserve || signal.1 == 9 {
            128 + signal.1
        } else {
            124
        });
    }
    match r {
        Ok(s) | Err(Flow::Exit(s)) => Ok(s),
        Err(f) => Err(f),
    }
}

/// `mktemp [-d] [-u] [-p DIR] [TEMPLATE]`: a new file or directory with a unique name, in
/// $TMPDIR (default /tmp).
fn mktemp(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let dir_mode = args.iter().any(|a| a == "-d");
    let dry_run = args.iter().any(|a| a == "-u");
    let mut base: Option<String> = None;
    let mut template: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-p" {
            i += 1;
            base = args.get(i).cloned();
        } else if !a.starts_with('-') {
            template = Some(a.clone());
        }
        i += 1;
    }
    let tmpdir = base
        .or_else(|| sh.get("TMPDIR").map(str::to_string))
        .unwrap_or_else(|| "/tmp".into());
    let template = template.unwrap_or_else(|| "tmp.XXXXXXXXXX".into());
    let path = if template.contains('/') {
        template.clone()
    } else {
        if !dry_run {
            let _ = fs::create_dir_all(sh.path(&tmpdir));
        }
        format!("{}/{template}", tmpdir.trim_end_matches('/'))
    };
    let xs = path.chars().rev().take_while(|&c| c == 'X').count();
    if xs < 3 {
        io.eprint(&format!("mktemp: too few X's in template '{template}'\n"));
        return 1;
    }
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9)
        | 1;
    for _ in 0..100 {
        let suffix: String = (0..xs)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ALPHABET[(seed % ALPHABET.len() as u64) as usize] as char
            })
            .collect();
        let candidate = format!("{}{suffix}", &path[..path.len() - xs]);
        let p = sh.path(&candidate);
        let made = if dry_run {
            if p.exists() {
                Err(std::io::ErrorKind::AlreadyExists.into())
            } else {
                Ok(())
            }
        } else if dir_mode {
            fs::create_dir(&p)
        } else {
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
                .map(|_| ())
        };
        match made {
            Ok(()) => {
                io.print(&format!("{candidate}\n"));
                return 0;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                io.eprint(&format!(
                    "mktemp: failed to create {} via template '{template}': {}\n",
                    if dir_mode { "directory" } else { "file" },
                    io_msg(&e)
                ));
                return 1;
            }
        }
    }
    1
}

/// `ps`: the sandbox runs one shell, and the command asking. The forms agents type (none,
/// `-e`/`-A`, `-ef`, `aux`) in procps's layouts; anything else is refused.
fn ps(args: &[String], io: &Io) -> i32 {
    let me = std::iter::once("ps")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let form: Vec<&str> = args.iter().map(String::as_str).collect();
    match form.as_slice() {
        [] | ["-e"] | ["-A"] => io.print(
            "    PID TTY          TIME CMD\n      1 ?        00:00:00 bash\n      2 ?        00:00:00 ps\n",
        ),
        ["-ef"] | ["-e", "-f"] | ["-f"] => io.print(&format!(
            "UID          PID    PPID  C STIME TTY          TIME CMD\n\
             agent          1       0  0 00:00 ?        00:00:00 bash\n\
             agent          2       1  0 00:00 ?        00:00:00 {me}\n"
        )),
        ["aux"] | ["-aux"] | ["ax"] => io.print(&format!(
            "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n\
             agent          1  0.0  0.0      0     0 ?        S    00:00   0:00 bash\n\
             agent          2  0.0  0.0      0     0 ?        R    00:00   0:00 {me}\n"
        )),
        _ => {
            io.eprint(&format!(
                "ps: '{}' is not supported in burrow (ps, ps -e, ps -ef and ps aux are)\n",
                form.join(" ")
            ));
            return 1;
        }
    }
    0
}

/// `locale` and `locale -a`: the sandbox's one locale, C.UTF-8 (from `$LANG`, `$LC_ALL`).
fn locale(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    match args.first().map(String::as_str) {
        None => {
            let lang = sh.get("LANG").unwrap_or("").to_string();
            let all = sh.get("LC_ALL").unwrap_or("").to_string();
            let each = if all.is_empty() { &lang } else { &all };
            let mut out = format!("LANG={lang}\nLANGUAGE=\n");
            for c in [
                "CTYPE",
                "NUMERIC",
                "TIME",
                "COLLATE",
                "MONETARY",
                "MESSAGES",
                "PAPER",
                "NAME",
                "ADDRESS",
                "TELEPHONE",
                "MEASUREMENT",
                "IDENTIFICATION",
            ] {
                match sh.get(&format!("LC_{c}")) {
                    Some(v) if all.is_empty() => out.push_str(&format!("LC_{c}={v}\n")),
                    _ => out.push_str(&format!("LC_{c}=\"{each}\"\n")),
                }
            }
            out.push_str(&format!("LC_ALL={all}\n"));
            io.print(&out);
            0
        }
        Some("-a") if args.len() == 1 => {
            io.print("C\nC.utf8\nPOSIX\n");
            0
        }
        Some(a) => {
            io.eprint(&format!(
                "locale: '{a}' is not supported in burrow (locale and locale -a are)\n"
            ));
            1
        }
    }
}
