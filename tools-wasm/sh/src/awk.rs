//! awk: the POSIX subset agents use. Patterns (expressions, regexes, ranges, BEGIN/END),
//! fields and NF/NR/FNR/FS/OFS/ORS/RS, `-F`, `-v`, `-f`, print/printf (with `>`/`>>` file
//! redirection), if/while/do/for/for-in, next/exit/break/continue, associative arrays with
//! `in` and `delete`, user functions, and the string and math builtins (length, substr,
//! index, split, sub, gsub, match, sprintf, tolower, toupper, int, sqrt, exp, log, sin, cos,
//! atan2, rand, srand), getline in all its forms (`getline [var]`, `getline [var] < file`,
//! `cmd | getline [var]`), `print | "cmd"`, `system()` and `close()`; commands run in a copy
//! of the shell, so pipes between them are buffers.

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;

use crate::builtins::io_msg;
use crate::io::{Io, read_all};
use crate::shell::{Shell, Status};

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

// ----- lexer -----

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Regex(String),
    Name(String),
    FuncName(String),
    Builtin(String),
    Kw(&'static str),
    Op(&'static str),
    Newline,
    Eof,
}

const KEYWORDS: &[&str] = &[
    "BEGIN", "END", "function", "func", "if", "else", "while", "for", "do", "break", "continue",
    "next", "exit", "return", "delete", "in", "print", "printf", "getline",
];
const BUILTINS: &[&str] = &[
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "tolower", "toupper",
    "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand", "system", "close",
    "fflush",
];
const OPS: &[&str] = &[
    "+=", "-=", "*=", "/=", "%=", "^=", "==", "<=", ">=", "!=", "++", "--", "&&", "||", ">>", "!~",
    "**", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!", ">", "<", "|",
    "?", ":", "~", "$", "=",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    // A `/` starts a regex where an operand is expected.
    let operand_expected = |out: &Vec<Tok>| match out.last() {
        None => true,
        Some(Tok::Num(_) | Tok::Str(_) | Tok::Name(_) | Tok::Regex(_)) => false,
        Some(Tok::Builtin(_)) => false,
        Some(Tok::Op(o)) => !matches!(*o, ")" | "]" | "++" | "--" | "$"),
        Some(Tok::Kw(k)) => *k != "getline",
        _ => true,
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                loop {
                    let Some(&ch) = chars.get(i) else {
                        return Err("non-terminated string".into());
                    };
                    i += 1;
                    match ch {
                        '"' => break,
                        '\\' => {
                            let e = chars.get(i).copied().unwrap_or('\\');
                            i += 1;
                            match e {
                                'n' => s.push('\n'),
                                't' => s.push('\t'),
                                'r' => s.push('\r'),
                                '\\' => s.push('\\'),
                                '"' => s.push('"'),
                                '/' => s.push('/'),
                                'a' => s.push('\x07'),
                                'b' => s.push('\x08'),
                                'f' => s.push('\x0c'),
                                'v' => s.push('\x0b'),
                                '0'..='7' => {
                                    let mut v = e.to_digit(8).unwrap_or(0);
                                    for _ in 0..2 {
                                        match chars.get(i).and_then(|d| d.to_digit(8)) {
                                            Some(d) => {
                                                v = v * 8 + d;
                                                i += 1;
                                            }
                                            None => break,
                                        }
                                    }
                                    s.push(char::from_u32(v).unwrap_or('?'));
                                }
                                other => {
                                    s.push('\\');
                                    s.push(other);
                                }
                            }
                        }
                        ch => s.push(ch),
                    }
                }
                out.push(Tok::Str(s));
            }
            '/' if operand_expected(&out) => {
                let mut s = String::new();
                i += 1;
                loop {
                    let Some(&ch) = chars.get(i) else {
                        return Err("non-terminated regular expression".into());
                    };
                    i += 1;
                    match ch {
                        '/' => break,
                        '\\' if chars.get(i) == Some(&'/') => {
                            s.push('/');
                            i += 1;
                        }
                        '\\' => {
                            s.push('\\');
                            if let Some(&n) = chars.get(i) {
                                s.push(n);
                                i += 1;
                            }
                        }
                        '\n' => return Err("newline in regular expression".into()),
                        ch => s.push(ch),
                    }
                }
                out.push(Tok::Regex(s));
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                    let mut j = i + 1;
                    if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j].is_ascii_digit() {
                        i = j;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let text: String = chars[start..i].iter().collect();
                out.push(Tok::Num(
                    text.parse().map_err(|_| format!("bad number {text}"))?,
                ));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if let Some(k) = KEYWORDS.iter().find(|k| **k == word) {
                    out.push(Tok::Kw(if *k == "func" { "function" } else { k }));
                } else if BUILTINS.contains(&word.as_str()) {
                    out.push(Tok::Builtin(word));
                } else if chars.get(i) == Some(&'(') {
                    out.push(Tok::FuncName(word));
                } else {
                    out.push(Tok::Name(word));
                }
            }
            _ => {
                let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
                let Some(op) = OPS.iter().find(|o| rest.starts_with(**o)) else {
                    return Err(format!("unexpected character '{c}'"));
                };
                i += op.chars().count();
                out.push(Tok::Op(if *op == "**" { "^" } else { op }));
            }
        }
    }
    out.push(Tok::Eof);
    Ok(out)
}

// ----- parser -----

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Inside print's arguments, an unparenthesised `>` is a redirection.
    no_gt: bool,
    /// Inside `for (x in a)` head detection, `in` is not an operator.
    no_in: bool,
}

type PResult<T> = Result<T, String>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos]
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> PResult<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(format!("expected '{op}' near {:?}", self.peek()))
        }
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.next();
        }
    }

    fn skip_terminators(&mut self) {
        while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
            self.next();
        }
    }

    fn program(&mut self) -> PResult<(Items, HashMap<String, Func>)> {
        let mut items = Vec::new();
        let mut funcs = HashMap::new();
        self.skip_terminators();
        while !matches!(self.peek(), Tok::Eof) {
            if self.is_kw("function") {
                self.next();
                let name = match self.next() {
                    Tok::Name(n) | Tok::FuncName(n) => n,
                    t => return Err(format!("bad function name {t:?}")),
                };
                self.expect_op("(")?;
                let mut params = Vec::new();
                while !self.is_op(")") {
                    match self.next() {
                        Tok::Name(n) => params.push(n),
                        t => return Err(format!("bad parameter {t:?}")),
                    }
                    self.skip_newlines();
                    if !self.eat_op(",") {
                        break;
                    }
                    self.skip_newlines();
                }
                self.expect_op(")")?;
                self.skip_newlines();
                let body = self.block()?;
                funcs.insert(name, Func { params, body });
            } else {
                let pattern = if self.is_kw("BEGIN") {
                    self.next();
                    Pattern::Begin
                } else if self.is_kw("END") {
                    self.next();
                    Pattern::End
                } else if self.is_op("{") {
                    Pattern::All
                } else {
                    let a = self.expr()?;
                    if self.eat_op(",") {
                        self.skip_newlines();
                        Pattern::Range(a, self.expr()?)
                    } else {
                        Pattern::Expr(a)
                    }
                };
                let action = if self.is_op("{") {
                    Some(self.block()?)
                } else {
                    None
                };
                if action.is_none() && matches!(pattern, Pattern::Begin | Pattern::End) {
                    return Err("BEGIN and END need an action".into());
                }
                items.push((pattern, action));
            }
            self.skip_terminators();
        }
        Ok((items, funcs))
    }

    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect_op("{")?;
        let mut out = Vec::new();
        self.skip_terminators();
        while !self.is_op("}") {
            if matches!(self.peek(), Tok::Eof) {
                return Err("missing '}'".into());
            }
            out.push(self.stmt()?);
            self.skip_terminators();
        }
        self.next();
        Ok(out)
    }

    fn simple_or_block(&mut self) -> PResult<Stmt> {
        self.skip_newlines();
        if self.is_op(";") {
            self.next();
            return Ok(Stmt::Block(Vec::new()));
        }
        self.stmt()
    }

    fn end_simple(&mut self) -> PResult<()> {
        if self.is_op(";") || matches!(self.peek(), Tok::Newline) {
            self.next();
            Ok(())
        } else if self.is_op("}") || matches!(self.peek(), Tok::Eof) {
            Ok(())
        } else {
            Err(format!("unexpected {:?}", self.peek()))
        }
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        if self.is_op("{") {
            return Ok(Stmt::Block(self.block()?));
        }
        if let Tok::Kw(k) = self.peek().clone() {
            match k {
                "if" => {
                    self.next();
                    self.expect_op("(")?;
                    let c = self.expr()?;
                    self.expect_op(")")?;
                    let then = self.simple_or_block()?;
                    // `else` may follow after newlines or a `;`.
                    let save = self.pos;
                    self.skip_terminators();
                    if self.is_kw("else") {
                        self.next();
                        let els = self.simple_or_block()?;
                        return Ok(Stmt::If(c, Box::new(then), Some(Box::new(els))));
                    }
                    self.pos = save;
                    return Ok(Stmt::If(c, Box::new(then), None));
                }
                "while" => {
                    self.next();
                    self.expect_op("(")?;
                    let c = self.expr()?;
                    self.expect_op(")")?;
                    if self.is_op(";") {
                        self.next();
                        return Ok(Stmt::While(c, Box::new(Stmt::Block(Vec::new()))));
                    }
                    return Ok(Stmt::While(c, Box::new(self.simple_or_block()?)));
                }
                "do" => {
                    self.next();
                    let body = self.simple_or_block()?;
                    self.skip_terminators();
                    if !self.is_kw("while") {
                        return Err("expected 'while' after 'do'".into());
                    }
                    self.next();
                    self.expect_op("(")?;
                    let c = self.expr()?;
                    self.expect_op(")")?;
                    self.end_simple()?;
                    return Ok(Stmt::Do(Box::new(body), c));
                }
                "for" => {
                    self.next();
                    self.expect_op("(")?;
                    // for (k in arr)
                    if let (Tok::Name(k), Tok::Kw("in"), Tok::Name(a), Tok::Op(")")) = (
                        self.toks[self.pos].clone(),
                        self.toks[self.pos + 1].clone(),
                        self.toks.get(self.pos + 2).cloned().unwrap_or(Tok::Eof),
                        self.toks.get(self.pos + 3).cloned().unwrap_or(Tok::Eof),
                    ) {
                        self.pos += 4;
                        return Ok(Stmt::ForIn(k, a, Box::new(self.simple_or_block()?)));
                    }
                    let init = if self.is_op(";") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect_op(";")?;
                    self.skip_newlines();
                    let cond = if self.is_op(";") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect_op(";")?;
                    self.skip_newlines();
                    let step = if self.is_op(")") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect_op(")")?;
                    if self.is_op(";") {
                        self.next();
                        return Ok(Stmt::For(
                            init,
                            cond,
                            step,
                            Box::new(Stmt::Block(Vec::new())),
                        ));
                    }
                    return Ok(Stmt::For(
                        init,
                        cond,
                        step,
                        Box::new(self.simple_or_block()?),
                    ));
                }
                _ => {}
            }
        }
        let s = self.simple_stmt()?;
        self.end_simple()?;
        Ok(s)
    }

    fn simple_stmt(&mut self) -> PResult<Stmt> {
        if let Tok::Kw(k) = self.peek().clone() {
            match k {
                "print" | "printf" => {
                    self.next();
                    let mut args = Vec::new();
                    let ends = |p: &Parser| {
                        p.is_op(";")
                            || p.is_op("}")
                            || p.is_op(">")
                            || p.is_op(">>")
                            || p.is_op("|")
                            || matches!(p.peek(), Tok::Newline | Tok::Eof)
                    };
                    if !ends(self) {
                        // `print (a, b)` is a parenthesised list.
                        let save = self.pos;
                        let mut parenthesised = false;
                        if self.is_op("(") {
                            self.next();
                            let mut list = vec![self.expr()?];
                            while self.eat_op(",") {
                                self.skip_newlines();
                                list.push(self.expr()?);
                            }
                            if self.eat_op(")") && ends(self) {
                                args = list;
                                parenthesised = true;
                            } else {
                                self.pos = save;
                            }
                        }
                        if !parenthesised {
                            self.no_gt = true;
                            let r = (|| -> PResult<Vec<Expr>> {
                                let mut list = vec![self.expr()?];
                                while self.eat_op(",") {
                                    self.skip_newlines();
                                    list.push(self.expr()?);
                                }
                                Ok(list)
                            })();
                            self.no_gt = false;
                            args = r?;
                        }
                    }
                    let redirect = if self.eat_op(">") {
                        Redirect::Write(self.concat_level()?)
                    } else if self.eat_op(">>") {
                        Redirect::Append(self.concat_level()?)
                    } else if self.eat_op("|") {
                        Redirect::Pipe(self.concat_level()?)
                    } else {
                        Redirect::None
                    };
                    return Ok(if k == "print" {
                        Stmt::Print(args, redirect)
                    } else {
                        if args.is_empty() {
                            return Err("printf: no format".into());
                        }
                        Stmt::Printf(args, redirect)
                    });
                }
                "next" => {
                    self.next();
                    return Ok(Stmt::Next);
                }
                "break" => {
                    self.next();
                    return Ok(Stmt::Break);
                }
                "continue" => {
                    self.next();
                    return Ok(Stmt::Continue);
                }
                "exit" | "return" => {
                    self.next();
                    let e = if self.is_op(";")
                        || self.is_op("}")
                        || matches!(self.peek(), Tok::Newline | Tok::Eof)
                    {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    return Ok(if k == "exit" {
                        Stmt::Exit(e)
                    } else {
                        Stmt::Return(e)
                    });
                }
                "delete" => {
                    self.next();
                    let Tok::Name(name) = self.next() else {
                        return Err("delete needs an array".into());
                    };
                    if self.eat_op("[") {
                        let subs = self.subscripts()?;
                        return Ok(Stmt::Delete(name, Some(subs)));
                    }
                    return Ok(Stmt::Delete(name, None));
                }
                _ => {}
            }
        }
        Ok(Stmt::Expr(self.expr()?))
    }

    fn subscripts(&mut self) -> PResult<Vec<Expr>> {
        let mut subs = vec![self.expr()?];
        while self.eat_op(",") {
            subs.push(self.expr()?);
        }
        self.expect_op("]")?;
        Ok(subs)
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.ternary()
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let c = self.or()?;
        if self.eat_op("?") {
            self.skip_newlines();
            let a = self.ternary()?;
            self.skip_newlines();
            self.expect_op(":")?;
            self.skip_newlines();
            let b = self.ternary()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        // Assignment (right-associative) to an lvalue.
        if matches!(c, Expr::Var(_) | Expr::Field(_) | Expr::Index(..)) {
            for (op, kind) in [
                ("=", None),
                ("+=", Some('+')),
                ("-=", Some('-')),
                ("*=", Some('*')),
                ("/=", Some('/')),
                ("%=", Some('%')),
                ("^=", Some('^')),
            ] {
                if self.is_op(op) {
                    self.next();
                    self.skip_newlines();
                    let v = self.ternary()?;
                    return Ok(Expr::Assign(Box::new(c), kind, Box::new(v)));
                }
            }
        }
        Ok(c)
    }

    fn or(&mut self) -> PResult<Expr> {
        let mut a = self.and()?;
        while self.eat_op("||") {
            self.skip_newlines();
            a = Expr::Or(Box::new(a), Box::new(self.and()?));
        }
        Ok(a)
    }

    fn and(&mut self) -> PResult<Expr> {
        let mut a = self.in_expr()?;
        while self.eat_op("&&") {
            self.skip_newlines();
            a = Expr::And(Box::new(a), Box::new(self.in_expr()?));
        }
        Ok(a)
    }

    fn in_expr(&mut self) -> PResult<Expr> {
        let mut a = self.matching()?;
        while !self.no_in && self.is_kw("in") {
            self.next();
            let Tok::Name(arr) = self.next() else {
                return Err("'in' needs an array".into());
            };
            let subs = match a {
                Expr::Group(inner) => vec![*inner],
                other => vec![other],
            };
            a = Expr::In(subs, arr);
        }
        Ok(a)
    }

    fn matching(&mut self) -> PResult<Expr> {
        let mut a = self.comparison()?;
        loop {
            if self.eat_op("~") {
                a = Expr::Match(false, Box::new(a), Box::new(self.comparison()?));
            } else if self.eat_op("!~") {
                a = Expr::Match(true, Box::new(a), Box::new(self.comparison()?));
            } else {
                return Ok(a);
            }
        }
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let a = self.concat_level()?;
        for op in ["<=", ">=", "==", "!=", "<", ">"] {
            if op == ">" && self.no_gt {
                continue;
            }
            if self.is_op(op) {
                self.next();
                let b = self.concat_level()?;
                return Ok(Expr::Cmp(op, Box::new(a), Box::new(b)));
            }
        }
        Ok(a)
    }

    /// Concatenation: juxtaposed additive expressions.
    fn concat_level(&mut self) -> PResult<Expr> {
        let mut a = self.additive()?;
        loop {
            if self.is_op("|") && matches!(self.toks.get(self.pos + 1), Some(Tok::Kw("getline"))) {
                self.next();
                self.next();
                let var = self.getline_target()?;
                a = Expr::Getline(GetSrc::Cmd(Box::new(a)), var);
                continue;
            }
            let starts_operand = match self.peek() {
                Tok::Num(_)
                | Tok::Str(_)
                | Tok::Regex(_)
                | Tok::Name(_)
                | Tok::FuncName(_)
                | Tok::Builtin(_) => true,
                Tok::Op(o) => matches!(*o, "$" | "!" | "(" | "-" | "+" | "++" | "--"),
                _ => false,
            };
            // `a -1` is subtraction (handled by additive); a leading +/- here would be
            // ambiguous, so only unambiguous operand starts concatenate.
            if !starts_operand || self.is_op("-") || self.is_op("+") || (self.is_kw("in")) {
                return Ok(a);
            }
            if self.is_op("!") {
                return Ok(a);
            }
            let b = self.additive()?;
            a = Expr::Concat(Box::new(a), Box::new(b));
        }
    }

    fn additive(&mut self) -> PResult<Expr> {
        let mut a = self.multiplicative()?;
        loop {
            if self.eat_op("+") {
                a = Expr::Bin('+', Box::new(a), Box::new(self.multiplicative()?));
            } else if self.eat_op("-") {
                a = Expr::Bin('-', Box::new(a), Box::new(self.multiplicative()?));
            } else {
                return Ok(a);
            }
        }
    }

    fn multiplicative(&mut self) -> PResult<Expr> {
        let mut a = self.unary()?;
        loop {
            let op = if self.is_op("*") {
                '*'
            } else if self.is_op("/") {
                '/'
            } else if self.is_op("%") {
                '%'
            } else {
                return Ok(a);
            };
            self.next();
            a = Expr::Bin(op, Box::new(a), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.eat_op("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat_op("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat_op("+") {
            return Ok(Expr::Pos(Box::new(self.unary()?)));
        }
        self.power()
    }

    fn power(&mut self) -> PResult<Expr> {
        let a = self.postfix()?;
        if self.eat_op("^") {
            // Right-associative, binds tighter than unary minus on its left.
            let b = self.unary_for_power()?;
            return Ok(Expr::Bin('^', Box::new(a), Box::new(b)));
        }
        Ok(a)
    }

    fn unary_for_power(&mut self) -> PResult<Expr> {
        if self.eat_op("-") {
            return Ok(Expr::Neg(Box::new(self.unary_for_power()?)));
        }
        if self.eat_op("+") {
            return self.unary_for_power();
        }
        self.power()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        if self.eat_op("++") {
            return Ok(Expr::Incr(true, 1, Box::new(self.postfix()?)));
        }
        if self.eat_op("--") {
            return Ok(Expr::Incr(true, -1, Box::new(self.postfix()?)));
        }
        let p = self.primary()?;
        if matches!(p, Expr::Var(_) | Expr::Field(_) | Expr::Index(..)) {
            if self.eat_op("++") {
                return Ok(Expr::Incr(false, 1, Box::new(p)));
            }
            if self.eat_op("--") {
                return Ok(Expr::Incr(false, -1, Box::new(p)));
            }
        }
        Ok(p)
    }

    /// The optional variable after `getline`.
    fn getline_target(&mut self) -> PResult<Option<Box<Expr>>> {
        if matches!(self.peek(), Tok::Name(_)) || self.is_op("$") {
            return Ok(Some(Box::new(self.primary()?)));
        }
        Ok(None)
    }

    fn primary(&mut self) -> PResult<Expr> {
        match self.next() {
            Tok::Kw("getline") => {
                let var = self.getline_target()?;
                if self.eat_op("<") {
                    let file = self.primary()?;
                    return Ok(Expr::Getline(GetSrc::File(Box::new(file)), var));
                }
                Ok(Expr::Getline(GetSrc::Main, var))
            }
            Tok::Num(n) => Ok(Expr::Num(n)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Regex(r) => Ok(Expr::Regex(r)),
            Tok::Op("$") => {
                let e = if self.eat_op("++") {
                    Expr::Incr(true, 1, Box::new(self.primary()?))
                } else if self.eat_op("--") {
                    Expr::Incr(true, -1, Box::new(self.primary()?))
                } else if self.eat_op("-") {
                    Expr::Neg(Box::new(self.primary()?))
                } else {
                    self.primary()?
                };
                Ok(Expr::Field(Box::new(e)))
            }
            Tok::Op("(") => {
                let (gt, inn) = (self.no_gt, self.no_in);
                self.no_gt = false;
                self.no_in = false;
                let e = self.expr()?;
                // (a, b) in arr
                if self.is_op(",") {
                    let mut subs = vec![e];
                    while self.eat_op(",") {
                        subs.push(self.expr()?);
                    }
                    self.expect_op(")")?;
                    self.no_gt = gt;
                    self.no_in = inn;
                    if !self.is_kw("in") {
                        return Err("expected 'in' after a parenthesised list".into());
                    }
                    self.next();
                    let Tok::Name(arr) = self.next() else {
                        return Err("'in' needs an array".into());
                    };
                    return Ok(Expr::In(subs, arr));
                }
                self.expect_op(")")?;
                self.no_gt = gt;
                self.no_in = inn;
                Ok(Expr::Group(Box::new(e)))
            }
            Tok::Name(n) => {
                if self.eat_op("[") {
                    let subs = self.subscripts()?;
                    return Ok(Expr::Index(n, subs));
                }
                Ok(Expr::Var(n))
            }
            Tok::FuncName(n) => {
                self.expect_op("(")?;
                let args = self.call_args()?;
                Ok(Expr::Call(n, args))
            }
            Tok::Builtin(b) => {
                let args = if self.eat_op("(") {
                    self.call_args()?
                } else if b == "length" {
                    Vec::new()
                } else {
                    return Err(format!("{b} needs arguments"));
                };
                Ok(Expr::Call(b, args))
            }
            t => Err(format!("unexpected {t:?}")),
        }
    }

    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        let (gt, inn) = (self.no_gt, self.no_in);
        self.no_gt = false;
        self.no_in = false;
        let mut args = Vec::new();
        self.skip_newlines();
        if !self.is_op(")") {
            args.push(self.expr()?);
            while self.eat_op(",") {
                self.skip_newlines();
                args.push(self.expr()?);
            }
        }
        self.skip_newlines();
        self.expect_op(")")?;
        self.no_gt = gt;
        self.no_in = inn;
        Ok(args)
    }
}

// ----- printf -----

fn sprintf(fmt: &str, args: &[Val], convfmt: &str) -> String {
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

fn pad(s: &str, width: usize, left: bool) -> String {
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

fn pad_num(sign: &str, digits: &str, width: usize, zero: bool, left: bool) -> String {
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
fn float(n: f64, conv: char, p: usize, alt: bool) -> String {
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

// ----- interpreter -----

enum Flow {
    Next,
    Exit(i32),
    Return(Val),
    Break,
    Continue,
}

#[derive(Clone)]
enum Cell {
    Scalar(Val),
    Array(HashMap<String, Val>),
}

struct Interp<'a> {
    sh: &'a Shell,
    io: &'a Io,
    globals: HashMap<String, Cell>,
    /// Function frames: parameter name -> value (arrays passed by reference are copied back).
    frames: Vec<HashMap<String, Cell>>,
    funcs: HashMap<String, Func>,
    fields: Vec<String>,
    record: String,
    nf: usize,
    regex_cache: HashMap<String, regex::Regex>,
    files: HashMap<String, fs::File>,
    /// Records of the current input file not yet read (plain `getline` takes from here too).
    pending: std::collections::VecDeque<String>,
    /// Files and commands `getline` reads from: their records and how many were read.
    readers: HashMap<String, (Vec<String>, usize)>,
    /// Commands printed to with `|`, in first-use order, with what they were sent.
    pipes: Vec<(String, String)>,
    range_on: Vec<bool>,
    rand_state: u64,
    depth: usize,
    /// END has run (it runs once, even after `exit` in a main action).
    ended: bool,
}

type IResult<T> = Result<T, Flow>;

/// An awk ERE as a Rust regex.
fn translate_regex(re: &str) -> String {
    // Brackets like [[:alpha:]] and most ERE syntax carry over; `\.` etc. too.
    re.replace("\\/", "/")
}

impl<'a> Interp<'a> {
    fn special(&self, name: &str) -> Option<String> {
        match self.globals.get(name) {
            Some(Cell::Scalar(v)) => Some(v.str("%.6g")),
            _ => None,
        }
    }

    fn convfmt(&self) -> String {
        self.special("CONVFMT").unwrap_or_else(|| "%.6g".into())
    }

    fn regex(&mut self, re: &str) -> Result<regex::Regex, String> {
        if let Some(r) = self.regex_cache.get(re) {
            return Ok(r.clone());
        }
        let r = regex::Regex::new(&translate_regex(re))
            .map_err(|e| format!("invalid regex /{re}/: {e}"))?;
        self.regex_cache.insert(re.to_string(), r.clone());
        Ok(r)
    }

    fn set_record(&mut self, rec: String) {
        self.record = rec;
        self.split_record();
    }

    fn split_fields(&mut self, s: &str, fs_: &str) -> Vec<String> {
        if s.is_empty() {
            return Vec::new();
        }
        if fs_ == " " {
            return s.split_whitespace().map(str::to_string).collect();
        }
        if fs_.chars().count() == 1 && fs_ != "\\" {
            return s.split(fs_).map(str::to_string).collect();
        }
        match self.regex(fs_) {
            Ok(r) => r.split(s).map(str::to_string).collect(),
            Err(_) => vec![s.to_string()],
        }
    }

    fn split_record(&mut self) {
        let fs_ = self.special("FS").unwrap_or_else(|| " ".into());
        let rec = self.record.clone();
        self.fields = self.split_fields(&rec, &fs_);
        self.nf = self.fields.len();
        self.globals
            .insert("NF".into(), Cell::Scalar(Val::Num(self.nf as f64)));
    }

    fn rebuild_record(&mut self) {
        let ofs = self.special("OFS").unwrap_or_else(|| " ".into());
        self.fields.resize(self.nf, String::new());
        self.record = self.fields.join(&ofs);
    }

    fn get_field(&self, i: usize) -> Val {
        if i == 0 {
            Val::StrNum(self.record.clone())
        } else {
            Val::StrNum(self.fields.get(i - 1).cloned().unwrap_or_default())
        }
    }

    fn set_field(&mut self, i: usize, v: String) {
        if i == 0 {
            self.set_record(v);
            return;
        }
        if i > self.nf {
            self.nf = i;
            self.fields.resize(i, String::new());
            self.globals
                .insert("NF".into(), Cell::Scalar(Val::Num(i as f64)));
        }
        self.fields[i - 1] = v;
        self.rebuild_record();
    }

    fn lookup(&mut self, name: &str) -> &mut Cell {
        if let Some(frame) = self.frames.last_mut()
            && frame.contains_key(name)
        {
            return frame.get_mut(name).expect("checked");
        }
        self.globals
            .entry(name.to_string())
            .or_insert_with(|| Cell::Scalar(Val::StrNum(String::new())))
    }

    fn get_var(&mut self, name: &str) -> Val {
        match self.lookup(name) {
            Cell::Scalar(v) => v.clone(),
            Cell::Array(_) => Val::Str(String::new()),
        }
    }

    fn set_var(&mut self, name: &str, v: Val) {
        if name == "NF" {
            let n = v.num().max(0.0) as usize;
            self.nf = n;
            self.rebuild_record();
        }
        *self.lookup(name) = Cell::Scalar(v);
    }

    fn array(&mut self, name: &str) -> &mut HashMap<String, Val> {
        let cell = self.lookup(name);
        if !matches!(cell, Cell::Array(_)) {
            *cell = Cell::Array(HashMap::new());
        }
        match cell {
            Cell::Array(a) => a,
            Cell::Scalar(_) => unreachable!("just made an array"),
        }
    }

    fn subscript(&mut self, subs: &[Expr]) -> IResult<String> {
        let sep = self.special("SUBSEP").unwrap_or_else(|| "\x1c".into());
        let conv = self.convfmt();
        let mut parts = Vec::new();
        for s in subs {
            parts.push(self.eval(s)?.str(&conv));
        }
        Ok(parts.join(&sep))
    }

    fn assign(&mut self, target: &Expr, v: Val) -> IResult<Val> {
        match target {
            Expr::Var(n) => self.set_var(n, v.clone()),
            Expr::Field(e) => {
                let i = self.eval(e)?.num().max(0.0) as usize;
                let conv = self.convfmt();
                self.set_field(i, v.str(&conv));
            }
            Expr::Index(n, subs) => {
                let k = self.subscript(subs)?;
                self.array(n).insert(k, v.clone());
            }
            Expr::Group(e) => return self.assign(e, v),
            _ => {}
        }
        Ok(v)
    }

    fn eval(&mut self, e: &Expr) -> IResult<Val> {
        Ok(match e {
            Expr::Num(n) => Val::Num(*n),
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Regex(r) => {
                let rec = self.record.clone();
                Val::Num(self.re_match(r, &rec)? as i32 as f64)
            }
            Expr::Var(n) => self.get_var(n),
            Expr::Getline(src, var) => Val::Num(self.getline(src, var.as_deref())?),
            Expr::Group(e) => self.eval(e)?,
            Expr::Field(i) => {
                let i = self.eval(i)?.num();
                self.get_field(i.max(0.0) as usize)
            }
            Expr::Index(n, subs) => {
                let k = self.subscript(subs)?;
                self.array(n)
                    .entry(k)
                    .or_insert_with(|| Val::StrNum(String::new()))
                    .clone()
            }
            Expr::In(subs, arr) => {
                let k = self.subscript(subs)?;
                Val::Num(self.array(arr).contains_key(&k) as i32 as f64)
            }
            Expr::Assign(t, op, v) => {
                let v = self.eval(v)?;
                let v = match op {
                    None => match v {
                        Val::Str(s) => Val::Str(s),
                        Val::Num(n) => Val::Num(n),
                        Val::StrNum(s) => Val::StrNum(s),
                    },
                    Some(op) => {
                        let cur = self.eval(t)?.num();
                        Val::Num(arith(*op, cur, v.num()))
                    }
                };
                self.assign(t, v)?
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::And(a, b) => {
                Val::Num((self.eval(a)?.truthy() && self.eval(b)?.truthy()) as i32 as f64)
            }
            Expr::Or(a, b) => {
                Val::Num((self.eval(a)?.truthy() || self.eval(b)?.truthy()) as i32 as f64)
            }
            Expr::Not(a) => Val::Num(!self.eval(a)?.truthy() as i32 as f64),
            Expr::Neg(a) => Val::Num(-self.eval(a)?.num()),
            Expr::Pos(a) => Val::Num(self.eval(a)?.num()),
            Expr::Bin(op, a, b) => {
                let (x, y) = (self.eval(a)?.num(), self.eval(b)?.num());
                if (*op == '/' || *op == '%') && y == 0.0 {
                    self.io.eprint("awk: division by zero\n");
                    return Err(Flow::Exit(2));
                }
                Val::Num(arith(*op, x, y))
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                let ord = match (x.as_cmp_num(), y.as_cmp_num()) {
                    (Some(p), Some(q)) => p.partial_cmp(&q).unwrap_or(std::cmp::Ordering::Equal),
                    _ => {
                        let conv = self.convfmt();
                        x.str(&conv).cmp(&y.str(&conv))
                    }
                };
                use std::cmp::Ordering::*;
                let r = match *op {
                    "<" => ord == Less,
                    "<=" => ord != Greater,
                    ">" => ord == Greater,
                    ">=" => ord != Less,
                    "==" => ord == Equal,
                    _ => ord != Equal,
                };
                Val::Num(r as i32 as f64)
            }
            Expr::Match(neg, s, re) => {
                let conv = self.convfmt();
                let text = self.eval(s)?.str(&conv);
                let pat = match &**re {
                    Expr::Regex(r) => r.clone(),
                    other => self.eval(other)?.str(&conv),
                };
                let m = self.re_match(&pat, &text)?;
                Val::Num((m != *neg) as i32 as f64)
            }
            Expr::Concat(a, b) => {
                let conv = self.convfmt();
                let x = self.eval(a)?.str(&conv);
                let y = self.eval(b)?.str(&conv);
                Val::Str(x + &y)
            }
            Expr::Incr(pre, d, t) => {
                let old = self.eval(t)?.num();
                let new = old + *d as f64;
                self.assign(t, Val::Num(new))?;
                Val::Num(if *pre { new } else { old })
            }
            Expr::Call(name, args) => self.call(name, args)?,
        })
    }

    fn re_match(&mut self, re: &str, text: &str) -> IResult<bool> {
        match self.regex(re) {
            Ok(r) => Ok(r.is_match(text)),
            Err(e) => {
                self.io.eprint(&format!("awk: {e}\n"));
                Err(Flow::Exit(2))
            }
        }
    }

    fn regex_arg(&mut self, e: &Expr) -> IResult<regex::Regex> {
        let conv = self.convfmt();
        let pat = match e {
            Expr::Regex(r) => r.clone(),
            other => self.eval(other)?.str(&conv),
        };
        self.regex(&pat).map_err(|e| {
            self.io.eprint(&format!("awk: {e}\n"));
            Flow::Exit(2)
        })
    }

    fn call(&mut self, name: &str, args: &[Expr]) -> IResult<Val> {
        let conv = self.convfmt();
        let s = |me: &mut Self, i: usize| -> IResult<String> {
            match args.get(i) {
                Some(e) => Ok(me.eval(e)?.str(&conv)),
                None => Ok(String::new()),
            }
        };
        Ok(match name {
            "length" => match args.first() {
                None => Val::Num(self.record.chars().count() as f64),
                Some(Expr::Var(n)) if matches!(self.lookup(n), Cell::Array(_)) => {
                    Val::Num(self.array(n).len() as f64)
                }
                Some(_) => Val::Num(s(self, 0)?.chars().count() as f64),
            },
            "substr" => {
                let text: Vec<char> = s(self, 0)?.chars().collect();
                let m = self.eval(args.get(1).unwrap_or(&Expr::Num(1.0)))?.num();
                let m = m.round();
                let n = match args.get(2) {
                    Some(e) => self.eval(e)?.num().round(),
                    None => f64::INFINITY,
                };
                // POSIX: characters from m to m+n-1, clipped to 1..=len.
                let start = m.max(1.0);
                let end = (m + n).min(text.len() as f64 + 1.0);
                if end <= start {
                    Val::Str(String::new())
                } else {
                    Val::Str(
                        text[(start as usize - 1)..(end as usize - 1)]
                            .iter()
                            .collect(),
                    )
                }
            }
            "index" => {
                let (h, n) = (s(self, 0)?, s(self, 1)?);
                Val::Num(match h.find(&n) {
                    Some(b) => h[..b].chars().count() as f64 + 1.0,
                    None => 0.0,
                })
            }
            "split" => {
                let text = s(self, 0)?;
                let Some(Expr::Var(arr)) = args.get(1) else {
                    self.io
                        .eprint("awk: split: second argument must be an array\n");
                    return Err(Flow::Exit(2));
                };
                let parts = match args.get(2) {
                    Some(Expr::Regex(r)) => match self.regex(r) {
                        Ok(r) => {
                            if text.is_empty() {
                                Vec::new()
                            } else {
                                r.split(&text).map(str::to_string).collect()
                            }
                        }
                        Err(e) => {
                            self.io.eprint(&format!("awk: {e}\n"));
                            return Err(Flow::Exit(2));
                        }
                    },
                    Some(e) => {
                        let f = self.eval(e)?.str(&conv);
                        self.split_fields(&text, &f)
                    }
                    None => {
                        let f = self.special("FS").unwrap_or_else(|| " ".into());
                        self.split_fields(&text, &f)
                    }
                };
                let a = self.array(arr);
                a.clear();
                for (i, p) in parts.iter().enumerate() {
                    a.insert((i + 1).to_string(), Val::StrNum(p.clone()));
                }
                Val::Num(parts.len() as f64)
            }
            "sub" | "gsub" => {
                let re = self.regex_arg(args.first().unwrap_or(&Expr::Str(String::new())))?;
                let repl = s(self, 1)?;
                let target = args
                    .get(2)
                    .cloned()
                    .unwrap_or(Expr::Field(Box::new(Expr::Num(0.0))));
                let text = self.eval(&target)?.str(&conv);
                let mut count = 0;
                let mut out = String::new();
                let mut last = 0;
                for m in re.find_iter(&text) {
                    if name == "sub" && count == 1 {
                        break;
                    }
                    out.push_str(&text[last..m.start()]);
                    // & is the match, \& a literal &.
                    let mut chars = repl.chars().peekable();
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' if chars.peek() == Some(&'&') => {
                                out.push('&');
                                chars.next();
                            }
                            '\\' if chars.peek() == Some(&'\\') => {
                                out.push('\\');
                                chars.next();
                            }
                            '&' => out.push_str(m.as_str()),
                            c => out.push(c),
                        }
                    }
                    last = m.end();
                    count += 1;
                }
                if count > 0 {
                    out.push_str(&text[last..]);
                    self.assign(&target, Val::Str(out))?;
                }
                Val::Num(count as f64)
            }
            "match" => {
                let text = s(self, 0)?;
                let re = self.regex_arg(args.get(1).unwrap_or(&Expr::Str(String::new())))?;
                let (start, len) = match re.find(&text) {
                    Some(m) => (
                        text[..m.start()].chars().count() as f64 + 1.0,
                        m.as_str().chars().count() as f64,
                    ),
                    None => (0.0, -1.0),
                };
                self.set_var("RSTART", Val::Num(start));
                self.set_var("RLENGTH", Val::Num(len));
                Val::Num(start)
            }
            "sprintf" => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = vals.first().map(|v| v.str(&conv)).unwrap_or_default();
                Val::Str(sprintf(&fmt, vals.get(1..).unwrap_or(&[]), &conv))
            }
            "tolower" => Val::Str(s(self, 0)?.to_lowercase()),
            "toupper" => Val::Str(s(self, 0)?.to_uppercase()),
            "int" | "sqrt" | "exp" | "log" | "sin" | "cos" => {
                let x = match args.first() {
                    Some(e) => self.eval(e)?.num(),
                    None => 0.0,
                };
                Val::Num(match name {
                    "int" => x.trunc(),
                    "sqrt" => x.sqrt(),
                    "exp" => x.exp(),
                    "log" => x.ln(),
                    "sin" => x.sin(),
                    _ => x.cos(),
                })
            }
            "atan2" => {
                let y = self.eval(args.first().unwrap_or(&Expr::Num(0.0)))?.num();
                let x = self.eval(args.get(1).unwrap_or(&Expr::Num(0.0)))?.num();
                Val::Num(y.atan2(x))
            }
            "rand" => {
                self.rand_state ^= self.rand_state << 13;
                self.rand_state ^= self.rand_state >> 7;
                self.rand_state ^= self.rand_state << 17;
                Val::Num((self.rand_state >> 11) as f64 / (1u64 << 53) as f64)
            }
            "srand" => {
                let seed = match args.first() {
                    Some(e) => self.eval(e)?.num() as u64,
                    None => 0,
                };
                let old = self.rand_state;
                self.rand_state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                Val::Num(old as f64)
            }
            "close" | "fflush" => {
                let mut status = 0;
                if name == "close" {
                    let f = s(self, 0)?;
                    self.files.remove(&f);
                    self.readers.remove(&f);
                    if let Some(i) = self.pipes.iter().position(|(c, _)| *c == f) {
                        let (cmd, input) = self.pipes.remove(i);
                        status = self.shell(&cmd, input.into_bytes(), None);
                    }
                }
                Val::Num(status as f64)
            }
            "system" => {
                let cmd = s(self, 0)?;
                let status = self.shell(&cmd, Vec::new(), None);
                Val::Num(status as f64)
            }
            user => {
                let Some(f) = self.funcs.get(user) else {
                    self.io
                        .eprint(&format!("awk: calling undefined function {user}\n"));
                    return Err(Flow::Exit(2));
                };
                let params = f.params.clone();
                let body = f.body.clone();
                if self.depth > 200 {
                    self.io.eprint("awk: function call nesting too deep\n");
                    return Err(Flow::Exit(2));
                }
                let mut frame = HashMap::new();
                let mut by_ref = Vec::new();
                for (i, p) in params.iter().enumerate() {
                    let cell = match args.get(i) {
                        // Arrays are passed by reference: copied in, copied back.
                        Some(Expr::Var(n)) if matches!(self.lookup(n), Cell::Array(_)) => {
                            by_ref.push((p.clone(), n.clone()));
                            self.lookup(n).clone()
                        }
                        Some(e) => Cell::Scalar(self.eval(e)?),
                        None => Cell::Scalar(Val::StrNum(String::new())),
                    };
                    frame.insert(p.clone(), cell);
                }
                self.frames.push(frame);
                self.depth += 1;
                let r = self.exec_all(&body);
                self.depth -= 1;
                let frame = self.frames.pop().unwrap_or_default();
                for (p, n) in by_ref {
                    if let Some(c) = frame.get(&p) {
                        *self.lookup(&n) = c.clone();
                    }
                }
                match r {
                    Ok(()) => Val::StrNum(String::new()),
                    Err(Flow::Return(v)) => v,
                    Err(other) => return Err(other),
                }
            }
        })
    }

    /// Runs `cmd` in a copy of the shell with `input` on stdin; its stdout goes to `capture`
    /// when given, else to awk's own. Returns its exit status.
    fn shell(&mut self, cmd: &str, input: Vec<u8>, capture: Option<&mut Vec<u8>>) -> i32 {
        let mut sub = self.sh.clone();
        let (out, buf) = match capture {
            Some(_) => {
                let (sink, buf) = crate::io::Sink::buffer();
                (sink, Some(buf))
            }
            None => (self.io.out.clone(), None),
        };
        let io = Io {
            stdin: crate::io::input(input),
            out,
            err: self.io.err.clone(),
            fds: self.io.fds.clone(),
        };
        let status = match sub.run_script(cmd, &io) {
            Ok(s) | Err(crate::shell::Flow::Exit(s)) => s,
            Err(_) => 0,
        };
        if let (Some(dst), Some(buf)) = (capture, buf) {
            dst.extend_from_slice(&buf.borrow());
        }
        status
    }

    fn counter(&mut self, name: &str, by: f64) {
        let n = self.get_var(name).num() + by;
        self.set_var(name, Val::Num(n));
    }

    /// `getline`: 1 with a record read, 0 at the end, -1 when the source cannot be read.
    fn getline(&mut self, src: &GetSrc, var: Option<&Expr>) -> IResult<f64> {
        let conv = self.convfmt();
        let (rec, main_like) = match src {
            GetSrc::Main => match self.pending.pop_front() {
                Some(r) => {
                    self.counter("FNR", 1.0);
                    (r, true)
                }
                None => return Ok(0.0),
            },
            GetSrc::File(e) | GetSrc::Cmd(e) => {
                let key = self.eval(e)?.str(&conv);
                if !self.readers.contains_key(&key) {
                    let data = if let GetSrc::Cmd(_) = src {
                        let mut out = Vec::new();
                        self.shell(&key, Vec::new(), Some(&mut out));
                        out
                    } else if key == "-" || key == "/dev/stdin" {
                        read_all(&self.io.stdin)
                    } else {
                        match crate::sys::read(self.sh.path(&key)) {
                            Ok(d) => d,
                            Err(_) => return Ok(-1.0),
                        }
                    };
                    let rs = self.special("RS").unwrap_or_else(|| "\n".into());
                    let recs = split_records(&String::from_utf8_lossy(&data), &rs);
                    self.readers.insert(key.clone(), (recs, 0));
                }
                let Some((recs, at)) = self.readers.get_mut(&key) else {
                    return Ok(-1.0);
                };
                let Some(r) = recs.get(*at).cloned() else {
                    return Ok(0.0);
                };
                *at += 1;
                (r, matches!(src, GetSrc::Cmd(_)))
            }
        };
        // NR counts records from the main input and from commands, not from files.
        if main_like {
            self.counter("NR", 1.0);
        }
        match var {
            Some(target) => {
                self.assign(target, Val::StrNum(rec))?;
            }
            None => self.set_record(rec),
        }
        Ok(1.0)
    }

    fn output(&mut self, text: &str, redirect: &Redirect) -> IResult<()> {
        let (target, append) = match redirect {
            Redirect::None => {
                self.io.print(text);
                return Ok(());
            }
            Redirect::Write(e) => (e, false),
            Redirect::Append(e) => (e, true),
            Redirect::Pipe(e) => {
                let conv = self.convfmt();
                let cmd = self.eval(e)?.str(&conv);
                match self.pipes.iter_mut().find(|(c, _)| *c == cmd) {
                    Some((_, buf)) => buf.push_str(text),
                    None => self.pipes.push((cmd, text.to_string())),
                }
                return Ok(());
            }
        };
        let conv = self.convfmt();
        let name = self.eval(target)?.str(&conv);
        if name == "/dev/stdout" || name == "-" {
            self.io.print(text);
            return Ok(());
        }
        if name == "/dev/stderr" {
            self.io.eprint(text);
            return Ok(());
        }
        if !self.files.contains_key(&name) {
            let path = self.sh.path(&name);
            let f = if append {
                fs::OpenOptions::new().create(true).append(true).open(&path)
            } else {
                fs::File::create(&path)
            };
            match f {
                Ok(f) => {
                    self.files.insert(name.clone(), f);
                }
                Err(e) => {
                    self.io
                        .eprint(&format!("awk: can't redirect to {name}: {}\n", io_msg(&e)));
                    return Err(Flow::Exit(2));
                }
            }
        }
        if let Some(f) = self.files.get_mut(&name) {
            let _ = f.write_all(text.as_bytes());
        }
        Ok(())
    }

    /// Runs a loop body: true when it hit `break` (`continue` just ends this iteration).
    fn loop_body(&mut self, body: &Stmt) -> IResult<bool> {
        match self.exec(body) {
            Err(Flow::Break) => Ok(true),
            Err(Flow::Continue) | Ok(()) => Ok(false),
            Err(f) => Err(f),
        }
    }

    fn exec_all(&mut self, stmts: &[Stmt]) -> IResult<()> {
        for s in stmts {
            self.exec(s)?;
        }
        Ok(())
    }

    fn exec(&mut self, s: &Stmt) -> IResult<()> {
        match s {
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Print(args, r) => {
                let conv = self.convfmt();
                let ofmt = self.special("OFMT").unwrap_or_else(|| "%.6g".into());
                let text = if args.is_empty() {
                    self.record.clone()
                } else {
                    let ofs = self.special("OFS").unwrap_or_else(|| " ".into());
                    let mut parts = Vec::new();
                    for a in args {
                        let v = self.eval(a)?;
                        parts.push(match v {
                            Val::Num(n) => fmt_num(n, &ofmt),
                            other => other.str(&conv),
                        });
                    }
                    parts.join(&ofs)
                };
                let ors = self.special("ORS").unwrap_or_else(|| "\n".into());
                self.output(&(text + &ors), r)?;
            }
            Stmt::Printf(args, r) => {
                let conv = self.convfmt();
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = vals[0].str(&conv);
                let text = sprintf(&fmt, &vals[1..], &conv);
                self.output(&text, r)?;
            }
            Stmt::If(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.exec(a)?;
                } else if let Some(b) = b {
                    self.exec(b)?;
                }
            }
            Stmt::While(c, body) => {
                while self.eval(c)?.truthy() {
                    if self.loop_body(body)? {
                        break;
                    }
                }
            }
            Stmt::Do(body, c) => loop {
                if self.loop_body(body)? {
                    break;
                }
                if !self.eval(c)?.truthy() {
                    break;
                }
            },
            Stmt::For(init, cond, step, body) => {
                if let Some(i) = init {
                    self.eval(i)?;
                }
                loop {
                    if let Some(c) = cond
                        && !self.eval(c)?.truthy()
                    {
                        break;
                    }
                    if self.loop_body(body)? {
                        break;
                    }
                    if let Some(s) = step {
                        self.eval(s)?;
                    }
                }
            }
            Stmt::ForIn(k, arr, body) => {
                let mut keys: Vec<String> = self.array(arr).keys().cloned().collect();
                // awk's order is unspecified; numeric keys in numeric order, then strings.
                keys.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                    (Ok(_), Err(_)) => std::cmp::Ordering::Less,
                    (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
                    _ => a.cmp(b),
                });
                for key in keys {
                    self.set_var(k, Val::StrNum(key));
                    if self.loop_body(body)? {
                        break;
                    }
                }
            }
            Stmt::Block(b) => self.exec_all(b)?,
            Stmt::Next => return Err(Flow::Next),
            Stmt::Break => return Err(Flow::Break),
            Stmt::Continue => return Err(Flow::Continue),
            Stmt::Exit(e) => {
                let code = match e {
                    Some(e) => self.eval(e)?.num() as i32,
                    None => 0,
                };
                return Err(Flow::Exit(code));
            }
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e)?,
                    None => Val::StrNum(String::new()),
                };
                return Err(Flow::Return(v));
            }
            Stmt::Delete(arr, subs) => match subs {
                Some(subs) => {
                    let k = self.subscript(subs)?;
                    self.array(arr).remove(&k);
                }
                None => self.array(arr).clear(),
            },
        }
        Ok(())
    }
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

pub fn run(sh: &Shell, args: &[String], io: &Io) -> Status {
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
        regex_cache: HashMap::new(),
        files: HashMap::new(),
        pending: Default::default(),
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
    for (k, v) in sh.vars.iter().filter(|(_, v)| v.exported) {
        env.insert(k.clone(), Val::StrNum(v.value.clone()));
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
            let (name, data) = match input {
                Some(op) if !op.starts_with('\0') => {
                    if let Some((k, v)) = op.split_once('=') {
                        it.set_var(k, Val::StrNum(unescape(v)));
                    }
                    continue;
                }
                Some(op) => {
                    let f = &op[1..];
                    if f == "-" {
                        ("-".to_string(), read_all(&io.stdin))
                    } else {
                        match crate::sys::read(sh.path(f)) {
                            Ok(d) => (f.to_string(), d),
                            Err(e) => {
                                io.eprint(&format!("awk: can't open file {f}: {}\n", io_msg(&e)));
                                status = 2;
                                continue;
                            }
                        }
                    }
                }
                None => (String::new(), read_all(&io.stdin)),
            };
            it.set_var("FILENAME", Val::Str(name));
            let text = String::from_utf8_lossy(&data).into_owned();
            let rs = it.special("RS").unwrap_or_else(|| "\n".into());
            it.pending = split_records(&text, &rs).into();
            it.set_var("FNR", Val::Num(0.0));
            while let Some(rec) = it.pending.pop_front() {
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

/// Splits input into records by RS: a string separator, or blank lines when RS is empty.
fn split_records(text: &str, rs: &str) -> Vec<String> {
    if rs.is_empty() {
        return text
            .split("\n\n")
            .map(|r| r.trim_matches('\n').to_string())
            .filter(|r| !r.is_empty())
            .collect();
    }
    let mut v: Vec<String> = text.split(rs).map(str::to_string).collect();
    if v.last().is_some_and(String::is_empty) {
        v.pop();
    }
    v
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
