//! sh-awk: awk for burrow's shell, a POSIX awk interpreter written here (`parse`, `interp`,
//! `records`, `format`), streaming its input a record at a time.

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;

use sh_utility::Ctx;
use sh_utility::Status;
use sh_utility::format::io_msg;
use sh_utility::io::Io;

mod format;
mod interp;
mod parse;
mod records;

use format::*;
use interp::*;
use parse::*;

// ----- values -----

#[derive(Clone, Debug)]
enum Val {
    Num(f64),
    Str(String),
    /// Input data (fields, `-v`, uninitialised): a number if it looks like one.
    StrNum(String),
}

fn looks_numeric(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    if lower.contains("inf") || lower.contains("nan") || lower.starts_with("0x") {
        return None;
    }
    t.parse::<f64>().ok()
}

/// awk's string-to-number: the longest numeric prefix, else 0.
fn str_num(s: &str) -> f64 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i == digits_start || (i == digits_start + 1 && b[digits_start] == b'.') {
        return 0.0;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    t[..i].parse().unwrap_or(0.0)
}

fn fmt_num(n: f64, convfmt: &str) -> String {
    if n.fract() == 0.0 && n.abs() < 1e16 {
        format!("{}", n as i64)
    } else {
        sprintf(convfmt, &[Val::Num(n)], convfmt)
    }
}

impl Val {
    fn num(&self) -> f64 {
        match self {
            Val::Num(n) => *n,
            Val::Str(s) | Val::StrNum(s) => str_num(s),
        }
    }

    fn str(&self, convfmt: &str) -> String {
        match self {
            Val::Num(n) => fmt_num(*n, convfmt),
            Val::Str(s) | Val::StrNum(s) => s.clone(),
        }
    }

    fn truthy(&self) -> bool {
        match self {
            Val::Num(n) => *n != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::StrNum(s) => match looks_numeric(s) {
                Some(n) => n != 0.0,
                None => !s.is_empty(),
            },
        }
    }

    /// Numeric for comparisons: numbers and numeric-looking input.
    fn as_cmp_num(&self) -> Option<f64> {
        match self {
            Val::Num(n) => Some(*n),
            Val::StrNum(s) if s.is_empty() => Some(0.0),
            Val::StrNum(s) => looks_numeric(s),
            Val::Str(_) => None,
        }
    }
}

// ----- syntax -----

#[derive(Clone, Debug)]
enum Expr {
    Num(f64),
    Str(String),
    Regex(String),
    Var(String),
    Field(Box<Expr>),
    Index(String, Vec<Expr>),
    In(Vec<Expr>, String),
    Assign(Box<Expr>, Option<char>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Pos(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Cmp(&'static str, Box<Expr>, Box<Expr>),
    Match(bool, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    Incr(bool, i8, Box<Expr>),
    Call(String, Vec<Expr>),
    Group(Box<Expr>),
    /// `getline [var]`, `getline [var] < file`, `cmd | getline [var]`.
    Getline(GetSrc, Option<Box<Expr>>),
}

#[derive(Clone, Debug)]
enum GetSrc {
    Main,
    File(Box<Expr>),
    Cmd(Box<Expr>),
}

#[derive(Clone, Debug)]
enum Redirect {
    None,
    Write(Expr),
    Append(Expr),
    /// `print | "cmd"`: the command runs on everything printed to it, at close() or the end.
    Pipe(Expr),
}

#[derive(Clone, Debug)]
enum Stmt {
    Expr(Expr),
    Print(Vec<Expr>, Redirect),
    Printf(Vec<Expr>, Redirect),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    Do(Box<Stmt>, Expr),
    For(Option<Expr>, Option<Expr>, Option<Expr>, Box<Stmt>),
    ForIn(String, String, Box<Stmt>),
    Block(Vec<Stmt>),
    Next,
    Exit(Option<Expr>),
    Return(Option<Expr>),
    Break,
    Continue,
    Delete(String, Option<Vec<Expr>>),
}

#[derive(Clone, Debug)]
enum Pattern {
    Begin,
    End,
    All,
    Expr(Expr),
    Range(Expr, Expr),
}

/// The program's pattern-action items, in source order.
type Items = Vec<(Pattern, Option<Vec<Stmt>>)>;

struct Func {
    params: Vec<String>,
    body: Vec<Stmt>,
}

fn arith(op: char, x: f64, y: f64) -> f64 {
    match op {
        '+' => x + y,
        '-' => x - y,
        '*' => x * y,
        '/' => x / y,
        '%' => x % y,
        _ => x.powf(y),
    }
}

fn usage(io: &Io) -> i32 {
    io.eprint("usage: awk [-F fs][-v var=value][prog | -f progfile][file ...]\n");
    2
}

/// Processes `var=value` assignment escapes like awk (\n, \t, \\).
fn unescape(v: &str) -> String {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('\\') => out.push('\\'),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub fn run(sh: &dyn Ctx, args: &[String], io: &Io) -> Status {
    let mut fs_: Option<String> = None;
    let mut assigns: Vec<(String, String)> = Vec::new();
    let mut prog: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(v) = a.strip_prefix("-F") {
            let v = if v.is_empty() {
                i += 1;
                match args.get(i) {
                    Some(v) => v.clone(),
                    None => return Ok(usage(io)),
                }
            } else {
                v.to_string()
            };
            fs_ = Some(if v == "t" { "\t".into() } else { unescape(&v) });
        } else if let Some(v) = a.strip_prefix("-v") {
            let v = if v.is_empty() {
                i += 1;
                match args.get(i) {
                    Some(v) => v.clone(),
                    None => return Ok(usage(io)),
                }
            } else {
                v.to_string()
            };
            match v.split_once('=') {
                Some((k, val)) => assigns.push((k.to_string(), unescape(val))),
                None => return Ok(usage(io)),
            }
        } else if a == "-f" {
            i += 1;
            let Some(f) = args.get(i) else {
                return Ok(usage(io));
            };
            match fs::read_to_string(sh.path(f)) {
                Ok(src) => prog = Some(prog.map(|p| p + "\n" + &src).unwrap_or(src)),
                Err(e) => {
                    io.eprint(&format!("awk: can't open file {f}: {}\n", io_msg(&e)));
                    return Ok(2);
                }
            }
        } else if a.starts_with('-') && a.len() > 1 && prog.is_none() {
            io.eprint(&format!("awk: invalid option -- '{}'\n", &a[1..2]));
            return Ok(usage(io));
        } else {
            break;
        }
        i += 1;
    }
    let prog = match prog {
        Some(p) => p,
        None => match args.get(i) {
            Some(p) => {
                i += 1;
                p.clone()
            }
            None => return Ok(usage(io)),
        },
    };
    let operands = &args[i.min(args.len())..];
    let parsed = lex(&prog).and_then(|toks| {
        Parser {
            toks,
            pos: 0,
            no_gt: false,
            no_in: false,
        }
        .program()
    });
    let (items, funcs) = match parsed {
        Ok(p) => p,
        Err(e) => {
            io.eprint(&format!(
                "awk: syntax error: {e}\n awk: {}\n",
                prog.lines().next().unwrap_or("")
            ));
            return Ok(2);
        }
    };
    let mut it = Interp {
        sh,
        io,
        globals: HashMap::new(),
        frames: Vec::new(),
        funcs,
        fields: Vec::new(),
        record: String::new(),
        nf: 0,
        split_due: false,
        regex_cache: HashMap::new(),
        files: HashMap::new(),
        main: records::Records::empty(),
        readers: HashMap::new(),
        pipes: Vec::new(),
        range_on: vec![false; items.len()],
        rand_state: 0x2545_f491_4f6c_dd1d,
        depth: 0,
        ended: false,
    };
    for (k, v) in [
        ("FS", " "),
        ("OFS", " "),
        ("ORS", "\n"),
        ("RS", "\n"),
        ("SUBSEP", "\x1c"),
        ("CONVFMT", "%.6g"),
        ("OFMT", "%.6g"),
    ] {
        it.globals
            .insert(k.into(), Cell::Scalar(Val::Str(v.into())));
    }
    for k in ["NR", "FNR", "NF", "RSTART", "RLENGTH"] {
        it.globals.insert(k.into(), Cell::Scalar(Val::Num(0.0)));
    }
    if let Some(f) = fs_ {
        it.globals.insert("FS".into(), Cell::Scalar(Val::Str(f)));
    }
    let mut env = HashMap::new();
    for (k, v) in sh.exported() {
        env.insert(k, Val::StrNum(v));
    }
    it.globals.insert("ENVIRON".into(), Cell::Array(env));
    for (k, v) in assigns {
        it.set_var(&k, Val::StrNum(v));
    }

    let status = (|| -> i32 {
        for (pattern, action) in &items {
            if matches!(pattern, Pattern::Begin) {
                match it.exec_all(action.as_deref().unwrap_or(&[])) {
                    Ok(()) | Err(Flow::Next) => {}
                    Err(Flow::Exit(c)) => return run_end(&mut it, &items, c),
                    Err(_) => {}
                }
            }
        }
        let has_main = items
            .iter()
            .any(|(p, _)| !matches!(p, Pattern::Begin | Pattern::End));
        let has_end = items.iter().any(|(p, _)| matches!(p, Pattern::End));
        if !has_main && !has_end {
            return 0;
        }
        // Inputs: files and var=value assignments in order; stdin when there are no files.
        let mut inputs: Vec<Option<String>> = Vec::new();
        let mut any_file = false;
        for op in operands {
            if let Some((k, _)) = op.split_once('=')
                && !k.is_empty()
                && k.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
            {
                inputs.push(Some(op.clone()));
            } else {
                any_file = true;
                inputs.push(Some(format!("\0{op}")));
            }
        }
        if !any_file {
            inputs.push(None);
        }
        let mut status = 0;
        for input in inputs {
            let (name, records) = match input {
                Some(op) if !op.starts_with('\0') => {
                    if let Some((k, v)) = op.split_once('=') {
                        it.set_var(k, Val::StrNum(unescape(v)));
                    }
                    continue;
                }
                Some(op) => {
                    let f = &op[1..];
                    if f == "-" {
                        ("-".to_string(), records::Records::stdin())
                    } else {
                        match open_input(sh, f) {
                            Ok(r) => (f.to_string(), r),
                            Err(e) => {
                                io.eprint(&format!("awk: can't open file {f}: {}\n", io_msg(&e)));
                                status = 2;
                                continue;
                            }
                        }
                    }
                }
                None => (String::new(), records::Records::stdin()),
            };
            it.set_var("FILENAME", Val::Str(name));
            it.main = records;
            it.set_var("FNR", Val::Num(0.0));
            while let Some(rec) = it.next_main_record() {
                it.counter("NR", 1.0);
                it.counter("FNR", 1.0);
                it.set_record(rec);
                for (idx, (pattern, action)) in items.iter().enumerate() {
                    let fire = match pattern {
                        Pattern::Begin | Pattern::End => continue,
                        Pattern::All => Ok(true),
                        Pattern::Expr(e) => it.eval(e).map(|v| v.truthy()),
                        Pattern::Range(a, b) => {
                            if it.range_on[idx] {
                                match it.eval(b) {
                                    Ok(v) => {
                                        if v.truthy() {
                                            it.range_on[idx] = false;
                                        }
                                        Ok(true)
                                    }
                                    Err(f) => Err(f),
                                }
                            } else {
                                match it.eval(a) {
                                    Ok(v) if v.truthy() => {
                                        match it.eval(b) {
                                            Ok(e) => it.range_on[idx] = !e.truthy(),
                                            Err(f) => return flow_status(&mut it, &items, f),
                                        }
                                        Ok(true)
                                    }
                                    Ok(_) => Ok(false),
                                    Err(f) => Err(f),
                                }
                            }
                        }
                    };
                    let r = match fire {
                        Ok(true) => match action {
                            Some(a) => it.exec_all(a),
                            None => it.exec(&Stmt::Print(Vec::new(), Redirect::None)),
                        },
                        Ok(false) => Ok(()),
                        Err(f) => Err(f),
                    };
                    match r {
                        Ok(()) => {}
                        Err(Flow::Next) => break,
                        Err(f) => return flow_status(&mut it, &items, f),
                    }
                }
            }
        }
        run_end(&mut it, &items, status)
    })();
    for (cmd, input) in std::mem::take(&mut it.pipes) {
        it.shell(&cmd, input.into_bytes(), None);
    }
    for (_, f) in it.files.iter_mut() {
        let _ = f.flush();
    }
    Ok(status)
}

/// A file operand's records: a regular file read a piece at a time, anything else (a device,
/// `/dev/fd/N`) as the shell reads it.
fn open_input(sh: &dyn Ctx, name: &str) -> std::io::Result<records::Records> {
    let path = sh.path(name);
    if !path.starts_with("/dev") {
        let f = std::fs::File::open(&path)?;
        if f.metadata()?.is_file() {
            return Ok(records::Records::file(f));
        }
    }
    sh_utility::sys::read(path).map(records::Records::bytes)
}

fn flow_status(it: &mut Interp<'_>, items: &Items, f: Flow) -> i32 {
    match f {
        Flow::Exit(c) => run_end(it, items, c),
        _ => run_end(it, items, 0),
    }
}

/// Runs the END actions (an `exit` inside them ends them) and returns the exit status.
fn run_end(it: &mut Interp<'_>, items: &Items, status: i32) -> i32 {
    if it.ended {
        return status;
    }
    it.ended = true;
    for (pattern, action) in items {
        if matches!(pattern, Pattern::End)
            && let Err(Flow::Exit(c)) = it.exec_all(action.as_deref().unwrap_or(&[]))
        {
            return c;
        }
    }
    status
}

/// awk, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[&[sh_utility::Command {
    name: "awk",
    run: |sh, argv, io| run(sh, &argv[1..], io),
}]];
