//! awk's lexer and recursive-descent parser: source text to patterns, actions and functions.

use super::*;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
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

pub(super) const KEYWORDS: &[&str] = &[
    "BEGIN", "END", "function", "func", "if", "else", "while", "for", "do", "break", "continue",
    "next", "exit", "return", "delete", "in", "print", "printf", "getline",
];
pub(super) const BUILTINS: &[&str] = &[
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "tolower", "toupper",
    "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand", "system", "close",
    "fflush",
];
pub(super) const OPS: &[&str] = &[
    "+=", "-=", "*=", "/=", "%=", "^=", "==", "<=", ">=", "!=", "++", "--", "&&", "||", ">>", "!~",
    "**", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!", ">", "<", "|",
    "?", ":", "~", "$", "=",
];

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, String> {
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

pub(super) struct Parser {
    pub(super) toks: Vec<Tok>,
    pub(super) pos: usize,
    /// Inside print's arguments, an unparenthesised `>` is a redirection.
    pub(super) no_gt: bool,
    /// Inside `for (x in a)` head detection, `in` is not an operator.
    pub(super) no_in: bool,
}

pub(super) type PResult<T> = Result<T, String>;

impl Parser {
    pub(super) fn peek(&self) -> &Tok {
        &self.toks[self.pos]
    }

    pub(super) fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    pub(super) fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    pub(super) fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }

    pub(super) fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.next();
            true
        } else {
            false
        }
    }

    pub(super) fn expect_op(&mut self, op: &str) -> PResult<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(format!("expected '{op}' near {:?}", self.peek()))
        }
    }

    pub(super) fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.next();
        }
    }

    pub(super) fn skip_terminators(&mut self) {
        while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
            self.next();
        }
    }

    pub(super) fn program(&mut self) -> PResult<(Items, HashMap<String, Func>)> {
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

    pub(super) fn block(&mut self) -> PResult<Vec<Stmt>> {
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

    pub(super) fn simple_or_block(&mut self) -> PResult<Stmt> {
        self.skip_newlines();
        if self.is_op(";") {
            self.next();
            return Ok(Stmt::Block(Vec::new()));
        }
        self.stmt()
    }

    pub(super) fn end_simple(&mut self) -> PResult<()> {
        if self.is_op(";") || matches!(self.peek(), Tok::Newline) {
            self.next();
            Ok(())
        } else if self.is_op("}") || matches!(self.peek(), Tok::Eof) {
            Ok(())
        } else {
            Err(format!("unexpected {:?}", self.peek()))
        }
    }

    pub(super) fn stmt(&mut self) -> PResult<Stmt> {
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

    pub(super) fn simple_stmt(&mut self) -> PResult<Stmt> {
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

    pub(super) fn subscripts(&mut self) -> PResult<Vec<Expr>> {
        let mut subs = vec![self.expr()?];
        while self.eat_op(",") {
            subs.push(self.expr()?);
        }
        self.expect_op("]")?;
        Ok(subs)
    }

    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.ternary()
    }

    pub(super) fn ternary(&mut self) -> PResult<Expr> {
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

    pub(super) fn or(&mut self) -> PResult<Expr> {
        let mut a = self.and()?;
        while self.eat_op("||") {
            self.skip_newlines();
            a = Expr::Or(Box::new(a), Box::new(self.and()?));
        }
        Ok(a)
    }

    pub(super) fn and(&mut self) -> PResult<Expr> {
        let mut a = self.in_expr()?;
        while self.eat_op("&&") {
            self.skip_newlines();
            a = Expr::And(Box::new(a), Box::new(self.in_expr()?));
        }
        Ok(a)
    }

    pub(super) fn in_expr(&mut self) -> PResult<Expr> {
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

    pub(super) fn matching(&mut self) -> PResult<Expr> {
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

    pub(super) fn comparison(&mut self) -> PResult<Expr> {
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
    pub(super) fn concat_level(&mut self) -> PResult<Expr> {
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

    pub(super) fn additive(&mut self) -> PResult<Expr> {
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

    pub(super) fn multiplicative(&mut self) -> PResult<Expr> {
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

    pub(super) fn unary(&mut self) -> PResult<Expr> {
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

    pub(super) fn power(&mut self) -> PResult<Expr> {
        let a = self.postfix()?;
        if self.eat_op("^") {
            // Right-associative, binds tighter than unary minus on its left.
            let b = self.unary_for_power()?;
            return Ok(Expr::Bin('^', Box::new(a), Box::new(b)));
        }
        Ok(a)
    }

    pub(super) fn unary_for_power(&mut self) -> PResult<Expr> {
        if self.eat_op("-") {
            return Ok(Expr::Neg(Box::new(self.unary_for_power()?)));
        }
        if self.eat_op("+") {
            return self.unary_for_power();
        }
        self.power()
    }

    pub(super) fn postfix(&mut self) -> PResult<Expr> {
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
    pub(super) fn getline_target(&mut self) -> PResult<Option<Box<Expr>>> {
        if matches!(self.peek(), Tok::Name(_)) || self.is_op("$") {
            return Ok(Some(Box::new(self.primary()?)));
        }
        Ok(None)
    }

    pub(super) fn primary(&mut self) -> PResult<Expr> {
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

    pub(super) fn call_args(&mut self) -> PResult<Vec<Expr>> {
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
