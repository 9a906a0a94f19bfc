//! `sed`: the part of GNU sed's script language agents use: addresses (lines, `$`, regexes,
//! ranges, `!`), `{...}` blocks, `s///` with g/p/N/i flags, d p q = a i c y, and -n, -E/-r, -e,
//! -i[SUFFIX]; a streamed stdin is edited a line at a time. Other commands are GNU's
//! "unknown command" error, not ignored.

use super::*;

#[derive(Debug)]
pub(super) enum Addr {
    Line(usize),
    Last,
    Re(regex::Regex),
}

#[derive(Debug)]
pub(super) enum SedCmd {
    Subst {
        re: regex::Regex,
        rep: String,
        global: bool,
        nth: usize,
        print: bool,
    },
    Delete,
    Print,
    Quit,
    LineNo,
    Append(String),
    Insert(String),
    Change(String),
    Translit(Vec<char>, Vec<char>),
    /// `ADDR{`: the commands up to the item at this index (its `}`) run only on lines the
    /// address selects.
    Block(usize),
    BlockEnd,
}

#[derive(Debug)]
pub(super) struct SedItem {
    pub(super) a1: Option<Addr>,
    pub(super) a2: Option<Addr>,
    pub(super) negate: bool,
    pub(super) cmd: SedCmd,
}

/// GNU sed's `\t` and `\n` in a regex, made the characters themselves so that they also
/// mean a tab and a newline inside a bracket expression (`[ \t]`), as GNU sed reads them.
fn tab_escapes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some(x) => {
                out.push('\\');
                out.push(x);
            }
            None => out.push('\\'),
        }
    }
    out
}

pub(super) fn sed_parse(script: &str, extended: bool) -> Result<Vec<SedItem>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut items = Vec::new();
    // Indexes of the `{` items whose `}` has not come yet.
    let mut open: Vec<usize> = Vec::new();
    let compile = |p: &str, icase: bool| -> Result<regex::Regex, String> {
        let p = tab_escapes(p);
        let p = if extended { ere(&p) } else { bre_to_ere(&p) };
        regex::RegexBuilder::new(&p)
            .case_insensitive(icase)
            .build()
            .map_err(|e| {
                format!(
                    "-e expression #1, char 0: {}",
                    e.to_string().lines().last().unwrap_or("")
                )
            })
    };
    let read_delim = |i: &mut usize, d: char| -> String {
        let mut s = String::new();
        while *i < chars.len() && chars[*i] != d {
            if chars[*i] == '\\' && *i + 1 < chars.len() {
                if chars[*i + 1] == d {
                    s.push(d);
                } else if chars[*i + 1] == 'n' {
                    s.push('\n');
                } else {
                    s.push('\\');
                    s.push(chars[*i + 1]);
                }
                *i += 2;
                continue;
            }
            s.push(chars[*i]);
            *i += 1;
        }
        *i += 1;
        s
    };
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let addr = |i: &mut usize| -> Result<Option<Addr>, String> {
            if *i < chars.len() && chars[*i].is_ascii_digit() {
                let n: String = chars[*i..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                *i += n.len();
                return Ok(Some(Addr::Line(n.parse().unwrap_or(0))));
            }
            if *i < chars.len() && chars[*i] == '$' {
                *i += 1;
                return Ok(Some(Addr::Last));
            }
            if *i < chars.len() && chars[*i] == '/' {
                *i += 1;
                let p = read_delim(i, '/');
                return Ok(Some(Addr::Re(compile(&p, false)?)));
            }
            Ok(None)
        };
        let a1 = addr(&mut i)?;
        let mut a2 = None;
        if a1.is_some() && i < chars.len() && chars[i] == ',' {
            i += 1;
            a2 = addr(&mut i)?;
        }
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        let mut negate = false;
        if i < chars.len() && chars[i] == '!' {
            negate = true;
            i += 1;
        }
        let Some(&c) = chars.get(i) else {
            return Err("-e expression #1, char 1: missing command".into());
        };
        i += 1;
        let text_arg = |i: &mut usize| -> String {
            while *i < chars.len() && (chars[*i] == ' ' || chars[*i] == '\\') {
                *i += 1;
                if *i < chars.len() && chars[*i - 1] == '\\' && chars[*i] == '\n' {
                    *i += 1;
                    break;
                }
            }
            let s: String = chars[*i..].iter().take_while(|&&c| c != '\n').collect();
            *i += s.len();
            s
        };
        let cmd = match c {
            's' => {
                let d = chars.get(i).copied().unwrap_or('/');
                i += 1;
                let pat = read_delim(&mut i, d);
                let rep = read_delim(&mut i, d);
                let mut global = false;
                let mut nth = 1;
                let mut print = false;
                let mut icase = false;
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | ' ') {
                    match chars[i] {
                        'g' => global = true,
                        'p' => print = true,
                        'i' | 'I' => icase = true,
                        d if d.is_ascii_digit() => nth = d.to_digit(10).unwrap_or(1) as usize,
                        _ => {}
                    }
                    i += 1;
                }
                let mut r = String::new();
                let rc: Vec<char> = rep.chars().collect();
                let mut k = 0;
                while k < rc.len() {
                    match rc[k] {
                        '&' => r.push_str("${0}"),
                        '\\' if k + 1 < rc.len() && rc[k + 1].is_ascii_digit() => {
                            r.push_str(&format!("${{{}}}", rc[k + 1]));
                            k += 1;
                        }
                        '\\' if k + 1 < rc.len() => {
                            match rc[k + 1] {
                                'n' => r.push('\n'),
                                't' => r.push('\t'),
                                '&' => r.push('&'),
                                o => r.push(o),
                            }
                            k += 1;
                        }
                        '$' => r.push_str("$$"),
                        o => r.push(o),
                    }
                    k += 1;
                }
                SedCmd::Subst {
                    re: compile(&pat, icase)?,
                    rep: r,
                    global,
                    nth,
                    print,
                }
            }
            'd' => SedCmd::Delete,
            'p' => SedCmd::Print,
            'q' => SedCmd::Quit,
            '=' => SedCmd::LineNo,
            'a' => SedCmd::Append(text_arg(&mut i)),
            'i' => SedCmd::Insert(text_arg(&mut i)),
            'c' => SedCmd::Change(text_arg(&mut i)),
            'y' => {
                let d = chars.get(i).copied().unwrap_or('/');
                i += 1;
                let a = read_delim(&mut i, d);
                let b = read_delim(&mut i, d);
                SedCmd::Translit(a.chars().collect(), b.chars().collect())
            }
            '{' => SedCmd::Block(usize::MAX),
            '}' => SedCmd::BlockEnd,
            other => {
                return Err(format!(
                    "-e expression #1, char {}: unknown command: `{other}'",
                    i
                ));
            }
        };
        items.push(SedItem {
            a1,
            a2,
            negate,
            cmd,
        });
        let k = items.len() - 1;
        match items[k].cmd {
            SedCmd::Block(_) => open.push(k),
            SedCmd::BlockEnd => match open.pop() {
                Some(start) => items[start].cmd = SedCmd::Block(k),
                None => return Err(format!("-e expression #1, char {i}: unexpected `}}'")),
            },
            _ => {}
        }
    }
    if !open.is_empty() {
        // GNU sed reports an unclosed block at char 0.
        return Err("-e expression #1, char 0: unmatched `{'".to_string());
    }
    Ok(items)
}

/// A script running over its input a line at a time, so a streamed stdin is edited as it
/// arrives (`yes | sed 1q` ends) and only the line at hand is in memory. `$` needs to know
/// whether a line is the last: the caller reads one line ahead.
struct Editor<'a> {
    items: &'a [SedItem],
    quiet: bool,
    /// Per item: inside its two-address range.
    active: Vec<bool>,
    lineno: usize,
    /// The last line had no newline and its pattern space was printed without one: GNU sed
    /// writes it before anything else that follows (`printf a | sed p` prints `a\na`).
    missing_newline: bool,
    out: String,
}

impl<'a> Editor<'a> {
    fn new(items: &'a [SedItem], quiet: bool) -> Self {
        Editor {
            items,
            quiet,
            active: vec![false; items.len()],
            lineno: 0,
            missing_newline: false,
            out: String::new(),
        }
    }

    /// Writes `text` and a newline, unless it is the last line's pattern space and the
    /// input did not end with one.
    fn emit(&mut self, text: &str, newline: bool) {
        if self.missing_newline {
            self.out.push('\n');
            self.missing_newline = false;
        }
        self.out.push_str(text);
        if newline {
            self.out.push('\n');
        } else {
            self.missing_newline = true;
        }
    }

    /// Runs the script on one line (without its newline; `terminated` says whether it had
    /// one). False once `q` ended the input.
    fn line(&mut self, line: &str, last: bool, terminated: bool) -> bool {
        self.lineno += 1;
        let lineno = self.lineno;
        let mut pat = line.to_string();
        let mut append = Vec::new();
        let mut deleted = false;
        let mut quit = false;
        // Inside a block whose address did not select this line: skip to its `}`.
        let mut skip_until: Option<usize> = None;
        for (k, it) in self.items.iter().enumerate() {
            if let Some(end) = skip_until {
                if k <= end {
                    continue;
                }
                skip_until = None;
            }
            let hit = |a: &Addr, p: &str| match a {
                Addr::Line(l) => *l == lineno,
                Addr::Last => last,
                Addr::Re(r) => r.is_match(p),
            };
            let selected = match (&it.a1, &it.a2) {
                (None, _) => true,
                (Some(a), None) => hit(a, &pat),
                (Some(a), Some(b)) => {
                    if self.active[k] {
                        let end = match b {
                            Addr::Line(l) => lineno >= *l,
                            _ => hit(b, &pat),
                        };
                        if end {
                            self.active[k] = false;
                        }
                        true
                    } else if hit(a, &pat) {
                        let ends_now = matches!(b, Addr::Line(l) if *l <= lineno);
                        self.active[k] = !ends_now;
                        true
                    } else {
                        false
                    }
                }
            };
            if let SedCmd::Block(end) = it.cmd {
                if selected == it.negate {
                    skip_until = Some(end);
                }
                continue;
            }
            if selected == it.negate {
                continue;
            }
            match &it.cmd {
                SedCmd::Subst {
                    re,
                    rep,
                    global,
                    nth,
                    print,
                } => {
                    let mut changed = false;
                    if *global {
                        let r = re.replace_all(&pat, rep.as_str()).into_owned();
                        changed = r != pat || re.is_match(&pat);
                        pat = r;
                    } else if let Some(m) = re.find_iter(&pat).nth(nth - 1) {
                        let caps = re.captures_at(&pat, m.start());
                        let mut rep_s = String::new();
                        if let Some(c) = caps {
                            c.expand(rep, &mut rep_s);
                        }
                        pat = format!("{}{}{}", &pat[..m.start()], rep_s, &pat[m.end()..]);
                        changed = true;
                    }
                    if changed && *print {
                        self.emit(&pat, terminated);
                    }
                }
                SedCmd::Delete => {
                    deleted = true;
                    break;
                }
                SedCmd::Print => self.emit(&pat, terminated),
                SedCmd::Quit => {
                    quit = true;
                    break;
                }
                SedCmd::LineNo => self.emit(&lineno.to_string(), true),
                SedCmd::Append(t) => append.push(t.clone()),
                SedCmd::Insert(t) => self.emit(t, true),
                SedCmd::Change(t) => {
                    self.emit(t, true);
                    deleted = true;
                    break;
                }
                SedCmd::Block(_) | SedCmd::BlockEnd => {}
                SedCmd::Translit(a, b) => {
                    pat = pat
                        .chars()
                        .map(|c| {
                            a.iter()
                                .position(|&x| x == c)
                                .and_then(|i| b.get(i).copied())
                                .unwrap_or(c)
                        })
                        .collect();
                }
            }
        }
        if !deleted && !self.quiet {
            self.emit(&pat, terminated);
        }
        for a in append {
            self.emit(&a, true);
        }
        !quit
    }
}

/// Runs the script over the whole of `text`.
pub(super) fn sed_run(items: &[SedItem], text: &str, quiet: bool) -> String {
    let mut ed = Editor::new(items, quiet);
    let mut rest = text;
    while !rest.is_empty() {
        let (line, terminated, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], true, &rest[i + 1..]),
            None => (rest, false, ""),
        };
        if !ed.line(line, next.is_empty(), terminated) {
            break;
        }
        rest = next;
    }
    ed.out
}

/// Runs the script over a stdin streamed from a pipe, a line at a time, writing its output
/// as it goes (in pieces of up to 32 KiB).
fn sed_stream(items: &[SedItem], quiet: bool, io: &Io) {
    let next_line = || {
        io.stdin.borrow_mut().line().map(|mut l| {
            let terminated = l.last() == Some(&b'\n');
            if terminated {
                l.pop();
            }
            (String::from_utf8_lossy(&l).into_owned(), terminated)
        })
    };
    let mut ed = Editor::new(items, quiet);
    let mut line = next_line();
    while let Some((text, terminated)) = line {
        let next = next_line();
        let more = ed.line(&text, next.is_none(), terminated);
        if ed.out.len() >= 32 << 10 || !more || next.is_none() {
            io.print(&std::mem::take(&mut ed.out));
            if io.out.broken() {
                return;
            }
        }
        if !more {
            return;
        }
        line = next;
    }
}

pub fn sed(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (mut quiet, mut inplace, mut extended) = (false, false, false);
    let mut backup: Option<String> = None;
    let mut scripts = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "-n" => quiet = true,
            "-E" | "-r" => extended = true,
            "-e" => {
                i += 1;
                scripts.extend(args.get(i).cloned());
            }
            // The gate hands each option on alone, --in-place=SUFFIX as -iSUFFIX (a backup;
            // `*` in SUFFIX is the file's name).
            s if s.starts_with("-i") => {
                inplace = true;
                if s.len() > 2 {
                    backup = Some(s[2..].to_string());
                }
            }
            s if s.starts_with('-') && s.len() > 1 => {
                io.eprint(&format!("sed: invalid option -- '{}'\nUsage: sed [OPTION]... {{script-only-if-no-other-script}} [input-file]...\n", &s[1..2]));
                return 1;
            }
            _ => {
                if scripts.is_empty() {
                    scripts.push(a.clone());
                } else {
                    files.push(a.clone());
                }
            }
        }
        i += 1;
    }
    let script = scripts.join("\n");
    let items = match sed_parse(&script, extended) {
        Ok(it) => it,
        Err(e) => {
            io.eprint(&format!("sed: {e}\n"));
            return 1;
        }
    };
    let mut status = 0;
    if files.is_empty() {
        if io.stdin.borrow().streaming() {
            sed_stream(&items, quiet, io);
        } else {
            let data = read_all(&io.stdin);
            io.print(&sed_run(&items, &String::from_utf8_lossy(&data), quiet));
        }
        return 0;
    }
    let mut all = String::new();
    for f in &files {
        match sh_utility::sys::read(sh.path(f)) {
            Ok(d) => {
                let t = String::from_utf8_lossy(&d).into_owned();
                if inplace {
                    if let Some(suf) = &backup {
                        let name = if suf.contains('*') {
                            let base = f.rsplit('/').next().unwrap_or(f);
                            let b = suf.replace('*', base);
                            match f.rsplit_once('/') {
                                Some((d, _)) if !b.contains('/') => format!("{d}/{b}"),
                                _ => b,
                            }
                        } else {
                            format!("{f}{suf}")
                        };
                        if let Err(e) = fs::write(sh.path(&name), &d) {
                            io.eprint(&format!("sed: couldn't open file {name}: {}\n", io_msg(&e)));
                            status = 4;
                            continue;
                        }
                    }
                    let out = sed_run(&items, &t, quiet);
                    if let Err(e) = fs::write(sh.path(f), out) {
                        io.eprint(&format!("sed: couldn't open {f}: {}\n", io_msg(&e)));
                        status = 4;
                    }
                } else {
                    // A file without a final newline still ends its last line when another
                    // file follows; the last file's lack of one shows in the output.
                    if !all.is_empty() && !all.ends_with('\n') {
                        all.push('\n');
                    }
                    all.push_str(&t);
                }
            }
            Err(e) => {
                io.eprint(&format!("sed: can't read {f}: {}\n", io_msg(&e)));
                status = 2;
            }
        }
    }
    if !inplace {
        io.print(&sed_run(&items, &all, quiet));
    }
    status
}
