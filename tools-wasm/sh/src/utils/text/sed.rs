//! `sed`: the part of GNU sed's script language agents use: addresses (lines, `$`, regexes,
//! ranges, `!`), `{...}` blocks, `s///` with g/p/N/i flags, d p q = a i c y, and -n, -E/-r, -e,
//! -i[SUFFIX]. Other commands are GNU's "unknown command" error, not ignored.

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

pub(super) fn sed_parse(script: &str, extended: bool) -> Result<Vec<SedItem>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut items = Vec::new();
    // Indexes of the `{` items whose `}` has not come yet.
    let mut open: Vec<usize> = Vec::new();
    let compile = |p: &str, icase: bool| -> Result<regex::Regex, String> {
        let p = if extended { ere(p) } else { bre_to_ere(p) };
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

pub(super) fn sed_run(items: &[SedItem], text: &str, quiet: bool) -> String {
    let ls: Vec<&str> = lines(text).collect();
    let n = ls.len();
    let mut out = String::new();
    let mut active = vec![false; items.len()];
    'lines: for (idx, line) in ls.iter().enumerate() {
        let lineno = idx + 1;
        let mut pat = line.to_string();
        let mut append = Vec::new();
        let mut deleted = false;
        // Inside a block whose address did not select this line: skip to its `}`.
        let mut skip_until: Option<usize> = None;
        for (k, it) in items.iter().enumerate() {
            if let Some(end) = skip_until {
                if k <= end {
                    continue;
                }
                skip_until = None;
            }
            let hit = |a: &Addr, p: &str| match a {
                Addr::Line(l) => *l == lineno,
                Addr::Last => lineno == n,
                Addr::Re(r) => r.is_match(p),
            };
            let selected = match (&it.a1, &it.a2) {
                (None, _) => true,
                (Some(a), None) => hit(a, &pat),
                (Some(a), Some(b)) => {
                    if active[k] {
                        let end = match b {
                            Addr::Line(l) => lineno >= *l,
                            _ => hit(b, &pat),
                        };
                        if end {
                            active[k] = false;
                        }
                        true
                    } else if hit(a, &pat) {
                        let ends_now = matches!(b, Addr::Line(l) if *l <= lineno);
                        active[k] = !ends_now;
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
                        out.push_str(&pat);
                        out.push('\n');
                    }
                }
                SedCmd::Delete => {
                    deleted = true;
                    break;
                }
                SedCmd::Print => {
                    out.push_str(&pat);
                    out.push('\n');
                }
                SedCmd::Quit => {
                    if !quiet {
                        out.push_str(&pat);
                        out.push('\n');
                    }
                    break 'lines;
                }
                SedCmd::LineNo => out.push_str(&format!("{lineno}\n")),
                SedCmd::Append(t) => append.push(t.clone()),
                SedCmd::Insert(t) => {
                    out.push_str(t);
                    out.push('\n');
                }
                SedCmd::Change(t) => {
                    out.push_str(t);
                    out.push('\n');
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
        if !deleted && !quiet {
            out.push_str(&pat);
            out.push('\n');
        }
        for a in append {
            out.push_str(&a);
            out.push('\n');
        }
    }
    if !text.ends_with('\n') && out.ends_with('\n') && !text.is_empty() {
        out.pop();
    }
    out
}

pub fn sed(sh: &Shell, args: &[String], io: &Io) -> i32 {
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
        let data = read_all(&io.stdin);
        io.print(&sed_run(&items, &String::from_utf8_lossy(&data), quiet));
        return 0;
    }
    let mut all = String::new();
    for f in &files {
        match crate::sys::read(sh.path(f)) {
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
                    all.push_str(&t);
                    if !t.ends_with('\n') && !t.is_empty() {
                        all.push('\n');
                    }
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
