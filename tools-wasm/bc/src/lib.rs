//! sh-bc: bc for burrow's shell: GNU bc's language over num-bigint with bc's scale rules, and
//! the `-l` math library by fixed-point series with guard digits, truncated as bc does.

use std::collections::HashMap;

use num_bigint::{BigInt, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};

use sh_utility::Ctx;
use sh_utility::io::Io;

/// A number: `n / 10^scale`.
#[derive(Clone, Debug)]
struct Num {
    n: BigInt,
    scale: u32,
}

fn pow10(k: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), k as usize)
}

impl Num {
    fn int(v: i64) -> Num {
        Num {
            n: BigInt::from(v),
            scale: 0,
        }
    }

    fn rescale(&self, s: u32) -> Num {
        let n = if s >= self.scale {
            &self.n * pow10(s - self.scale)
        } else {
            &self.n / pow10(self.scale - s)
        };
        Num { n, scale: s }
    }

    fn is_zero(&self) -> bool {
        self.n.is_zero()
    }

    fn truthy(&self) -> bool {
        !self.is_zero()
    }

    fn cmp(&self, o: &Num) -> std::cmp::Ordering {
        let s = self.scale.max(o.scale);
        self.rescale(s).n.cmp(&o.rescale(s).n)
    }

    /// The integer part as i64, if it fits.
    fn to_i64(&self) -> Option<i64> {
        self.rescale(0).n.to_i64()
    }

    fn add(&self, o: &Num) -> Num {
        let s = self.scale.max(o.scale);
        Num {
            n: self.rescale(s).n + o.rescale(s).n,
            scale: s,
        }
    }

    fn neg(&self) -> Num {
        Num {
            n: -&self.n,
            scale: self.scale,
        }
    }

    fn mul(&self, o: &Num, scale: u32) -> Num {
        let full = Num {
            n: &self.n * &o.n,
            scale: self.scale + o.scale,
        };
        full.rescale(full.scale.min(scale.max(self.scale).max(o.scale)))
    }

    fn div(&self, o: &Num, scale: u32) -> Result<Num, String> {
        if o.is_zero() {
            return Err("Divide by zero".into());
        }
        let num = &self.n * pow10(scale + o.scale);
        let den = &o.n * pow10(self.scale);
        Ok(Num {
            n: num / den,
            scale,
        })
    }

    fn rem(&self, o: &Num, scale: u32) -> Result<Num, String> {
        let q = self.div(o, scale)?;
        let s = (scale + o.scale).max(self.scale);
        let prod = Num {
            n: &q.n * &o.n,
            scale: q.scale + o.scale,
        };
        Ok(self.rescale(s).add(&prod.neg()).rescale(s))
    }

    fn pow(&self, e: &Num, scale: u32, io: &Io) -> Result<Num, String> {
        if e.scale > 0 && !e.rescale(0).rescale(e.scale).n.eq(&e.n) {
            io.eprint("Runtime warning: non-zero scale in exponent\n");
        }
        let k = e.to_i64().ok_or("exponent too large")?;
        if k.unsigned_abs() > 1_000_000 {
            return Err("exponent too large".into());
        }
        let mut r = Num {
            n: num_traits::pow(self.n.clone(), k.unsigned_abs() as usize),
            scale: self.scale * k.unsigned_abs() as u32,
        };
        if k < 0 {
            return Num::int(1).div(&r, scale);
        }
        let want = r.scale.min(scale.max(self.scale));
        r = r.rescale(want);
        Ok(r)
    }

    fn sqrt(&self, scale: u32) -> Result<Num, String> {
        if self.n.is_negative() {
            return Err("Square root of a negative number".into());
        }
        let s = scale.max(self.scale);
        // isqrt(n * 10^(2s - scale)) has s fractional digits.
        let n = self.rescale(2 * s).n;
        Ok(Num {
            n: n.sqrt(),
            scale: s,
        })
    }

    fn length(&self) -> i64 {
        if self.is_zero() {
            return self.scale.max(1) as i64;
        }
        let digits = self.n.abs().to_string().len() as i64;
        digits.max(self.scale as i64)
    }

    /// bc's output form in base `obase`, lines of at most 69 characters (68 and a `\`).
    fn show(&self, obase: u32) -> Result<String, String> {
        let body = if self.is_zero() {
            "0".to_string()
        } else if obase == 10 {
            let digits = self.n.abs().to_string();
            let s = self.scale as usize;
            let (int, frac) = if digits.len() > s {
                digits.split_at(digits.len() - s)
            } else {
                ("", digits.as_str())
            };
            let mut out = String::new();
            if self.n.is_negative() {
                out.push('-');
            }
            out.push_str(int);
            if s > 0 {
                out.push('.');
                out.push_str(&"0".repeat(s - frac.len()));
                out.push_str(frac);
            }
            out
        } else {
            if self.scale > 0 && !self.rescale(0).rescale(self.scale).n.eq(&self.n) {
                return Err(
                    "obase other than 10 with a fractional part is not supported in burrow".into(),
                );
            }
            let int = self.rescale(0).n;
            let mut s = int.abs().to_str_radix(obase).to_uppercase();
            if int.is_negative() {
                s.insert(0, '-');
            }
            s
        };
        let chars: Vec<char> = body.chars().collect();
        let mut out = String::new();
        for (i, chunk) in chars.chunks(68).enumerate() {
            if i > 0 {
                out.push_str("\\\n");
            }
            out.extend(chunk);
        }
        Ok(out)
    }
}

// ---- syntax ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(String),
    Name(String),
    Str(String),
    Op(&'static str),
    Newline,
}

const OPS: [&str; 34] = [
    "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "==", "!=", "<=", ">=", "&&", "||", "+", "-",
    "*", "/", "%", "^", "=", "<", ">", "!", "(", ")", "{", "}", "[", "]", ",", ";", ".", "\n",
];

/// Tokens with the line each starts on.
fn lex(src: &str) -> Result<Vec<(Tok, usize)>, (usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i] as char;
        if c == '\\' && b.get(i + 1) == Some(&b'\n') {
            i += 2;
            line += 1;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\r' {
            i += 1;
            continue;
        }
        if c == '#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && b.get(i + 1) == Some(&b'*') {
            let end = src[i + 2..]
                .find("*/")
                .ok_or((line, "unterminated comment".to_string()))?;
            line += src[i..i + 2 + end].matches('\n').count();
            i += end + 4;
            continue;
        }
        if c == '\n' {
            // As GNU bc counts: an error found at a newline is on the next line.
            line += 1;
            out.push((Tok::Newline, line));
            i += 1;
            continue;
        }
        if c == '"' {
            let end = src[i + 1..]
                .find('"')
                .ok_or((line, "unterminated string".to_string()))?;
            let s = src[i + 1..i + 1 + end].to_string();
            out.push((Tok::Str(s.clone()), line));
            line += s.matches('\n').count();
            i += end + 2;
            continue;
        }
        if c.is_ascii_digit()
            || c.is_ascii_uppercase()
            || (c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_digit() || b[i].is_ascii_uppercase() || b[i] == b'.')
            {
                i += 1;
            }
            out.push((Tok::Num(src[start..i].to_string()), line));
            continue;
        }
        if c.is_ascii_lowercase() || c == '_' {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_lowercase() || b[i].is_ascii_digit() || b[i] == b'_')
            {
                i += 1;
            }
            out.push((Tok::Name(src[start..i].to_string()), line));
            continue;
        }
        match OPS.iter().find(|o| src[i..].starts_with(**o)) {
            Some(o) => {
                out.push((Tok::Op(o), line));
                i += o.len();
            }
            None => return Err((line, format!("illegal character: {c}"))),
        }
    }
    Ok(out)
}

#[derive(Clone, Debug)]
enum LValue {
    Var(String),
    Elem(String, Box<Expr>),
}

#[derive(Clone, Debug)]
enum Expr {
    Num(String),
    Get(LValue),
    Assign(LValue, Option<&'static str>, Box<Expr>),
    /// `++x` / `--x` (pre) or `x++` / `x--` (post).
    Step(LValue, i64, bool),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

#[derive(Clone, Debug)]
enum Stmt {
    Expr(Expr),
    Str(String),
    Print(Vec<Result<Expr, String>>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    For(Option<Expr>, Option<Expr>, Option<Expr>, Box<Stmt>),
    Block(Vec<Stmt>),
    Break,
    Continue,
    Return(Option<Expr>),
    Quit,
    Empty,
}

#[derive(Clone, Debug)]
struct Func {
    params: Vec<(String, bool)>,
    autos: Vec<(String, bool)>,
    body: Vec<Stmt>,
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

type PResult<T> = Result<T, usize>;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |(_, l)| *l)
    }

    fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(x)) if *x == o)
    }

    fn eat(&mut self, o: &str) -> bool {
        if self.is_op(o) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, o: &str) -> PResult<()> {
        if self.eat(o) {
            Ok(())
        } else {
            Err(self.line())
        }
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Some(Tok::Newline)) || self.is_op(";") {
            self.pos += 1;
        }
    }

    fn name(&mut self) -> PResult<String> {
        match self.peek() {
            Some(Tok::Name(n)) => {
                let n = n.clone();
                self.pos += 1;
                Ok(n)
            }
            _ => Err(self.line()),
        }
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let kw = match self.peek() {
            Some(Tok::Name(n)) => n.clone(),
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                return Ok(Stmt::Str(s));
            }
            Some(Tok::Op("{")) => {
                self.pos += 1;
                let mut body = Vec::new();
                loop {
                    self.skip_newlines();
                    if self.eat("}") {
                        return Ok(Stmt::Block(body));
                    }
                    if self.peek().is_none() {
                        return Err(self.line());
                    }
                    body.push(self.stmt()?);
                }
            }
            Some(Tok::Newline) | Some(Tok::Op(";")) => return Ok(Stmt::Empty),
            _ => return Ok(Stmt::Expr(self.expr()?)),
        };
        let simple = |s: Stmt, p: &mut Parser| {
            p.pos += 1;
            Ok(s)
        };
        match kw.as_str() {
            "quit" | "halt" => simple(Stmt::Quit, self),
            "break" => simple(Stmt::Break, self),
            "continue" => simple(Stmt::Continue, self),
            "return" => {
                self.pos += 1;
                if matches!(self.peek(), Some(Tok::Newline) | None)
                    || self.is_op(";")
                    || self.is_op("}")
                {
                    return Ok(Stmt::Return(None));
                }
                Ok(Stmt::Return(Some(self.expr()?)))
            }
            "print" => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    match self.peek() {
                        Some(Tok::Str(s)) => {
                            items.push(Err(s.clone()));
                            self.pos += 1;
                        }
                        _ => items.push(Ok(self.expr()?)),
                    }
                    if !self.eat(",") {
                        return Ok(Stmt::Print(items));
                    }
                }
            }
            "if" => {
                self.pos += 1;
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                self.skip_blank();
                let then = self.stmt()?;
                let save = self.pos;
                self.skip_newlines();
                if matches!(self.peek(), Some(Tok::Name(n)) if n == "else") {
                    self.pos += 1;
                    self.skip_blank();
                    let e = self.stmt()?;
                    return Ok(Stmt::If(c, Box::new(then), Some(Box::new(e))));
                }
                self.pos = save;
                Ok(Stmt::If(c, Box::new(then), None))
            }
            "while" => {
                self.pos += 1;
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                self.skip_blank();
                Ok(Stmt::While(c, Box::new(self.stmt()?)))
            }
            "for" => {
                self.pos += 1;
                self.expect("(")?;
                let a = if self.is_op(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect(";")?;
                let b = if self.is_op(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect(";")?;
                let c = if self.is_op(")") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect(")")?;
                self.skip_blank();
                Ok(Stmt::For(a, b, c, Box::new(self.stmt()?)))
            }
            _ => Ok(Stmt::Expr(self.expr()?)),
        }
    }

    fn skip_blank(&mut self) {
        while matches!(self.peek(), Some(Tok::Newline)) {
            self.pos += 1;
        }
    }

    fn define(&mut self) -> PResult<(String, Func)> {
        self.pos += 1; // define
        let name = self.name()?;
        self.expect("(")?;
        let params = self.names(")")?;
        self.expect(")")?;
        self.skip_blank();
        self.expect("{")?;
        self.skip_blank();
        let mut autos = Vec::new();
        if matches!(self.peek(), Some(Tok::Name(n)) if n == "auto") {
            self.pos += 1;
            autos = self.names(";")?;
        }
        let mut body = Vec::new();
        loop {
            self.skip_newlines();
            if self.eat("}") {
                return Ok((
                    name,
                    Func {
                        params,
                        autos,
                        body,
                    },
                ));
            }
            if self.peek().is_none() {
                return Err(self.line());
            }
            body.push(self.stmt()?);
        }
    }

    /// `a, b[], c` up to `end` (not consumed), or a newline.
    fn names(&mut self, end: &str) -> PResult<Vec<(String, bool)>> {
        let mut out = Vec::new();
        while !self.is_op(end) && !matches!(self.peek(), Some(Tok::Newline) | None) {
            let n = self.name()?;
            let arr = self.eat("[");
            if arr {
                self.expect("]")?;
            }
            out.push((n, arr));
            if !self.eat(",") {
                break;
            }
        }
        Ok(out)
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.assign()
    }

    fn lvalue(e: &Expr) -> Option<LValue> {
        match e {
            Expr::Get(l) => Some(l.clone()),
            _ => None,
        }
    }

    fn assign(&mut self) -> PResult<Expr> {
        let left = self.or()?;
        for (op, compound) in [
            ("=", None),
            ("+=", Some("+")),
            ("-=", Some("-")),
            ("*=", Some("*")),
            ("/=", Some("/")),
            ("%=", Some("%")),
            ("^=", Some("^")),
        ] {
            if self.is_op(op) {
                let l = Self::lvalue(&left).ok_or(self.line())?;
                self.pos += 1;
                let right = self.assign()?;
                return Ok(Expr::Assign(l, compound, Box::new(right)));
            }
        }
        Ok(left)
    }

    fn or(&mut self) -> PResult<Expr> {
        let mut l = self.and()?;
        while self.eat("||") {
            l = Expr::Bin("||", Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }

    fn and(&mut self) -> PResult<Expr> {
        let mut l = self.not()?;
        while self.eat("&&") {
            l = Expr::Bin("&&", Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    fn not(&mut self) -> PResult<Expr> {
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.rel()
    }

    fn rel(&mut self) -> PResult<Expr> {
        let l = self.sum()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                return Ok(Expr::Bin(op, Box::new(l), Box::new(self.sum()?)));
            }
        }
        Ok(l)
    }

    fn sum(&mut self) -> PResult<Expr> {
        let mut l = self.product()?;
        loop {
            let op = if self.is_op("+") {
                "+"
            } else if self.is_op("-") {
                "-"
            } else {
                return Ok(l);
            };
            self.pos += 1;
            l = Expr::Bin(op, Box::new(l), Box::new(self.product()?));
        }
    }

    fn product(&mut self) -> PResult<Expr> {
        let mut l = self.power()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o @ ("*" | "/" | "%"))) => *o,
                _ => return Ok(l),
            };
            self.pos += 1;
            l = Expr::Bin(op, Box::new(l), Box::new(self.power()?));
        }
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.unary()?;
        if self.eat("^") {
            // Right-associative.
            return Ok(Expr::Bin("^", Box::new(base), Box::new(self.power()?)));
        }
        Ok(base)
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        for (op, d) in [("++", 1), ("--", -1)] {
            if self.eat(op) {
                let e = self.postfix()?;
                let l = Self::lvalue(&e).ok_or(self.line())?;
                return Ok(Expr::Step(l, d, true));
            }
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let e = self.primary()?;
        for (op, d) in [("++", 1), ("--", -1)] {
            if self.is_op(op)
                && let Some(l) = Self::lvalue(&e)
            {
                self.pos += 1;
                return Ok(Expr::Step(l, d, false));
            }
        }
        Ok(e)
    }

    fn primary(&mut self) -> PResult<Expr> {
        match self.peek().cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Expr::Num(n))
            }
            Some(Tok::Op(".")) => {
                self.pos += 1;
                Ok(Expr::Get(LValue::Var("last".into())))
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                if self.eat("(") {
                    let mut args = Vec::new();
                    if !self.is_op(")") {
                        loop {
                            // An array argument `f(a[])`.
                            if let Some(Tok::Name(a)) = self.peek().cloned()
                                && matches!(self.toks.get(self.pos + 1), Some((Tok::Op("["), _)))
                                && matches!(self.toks.get(self.pos + 2), Some((Tok::Op("]"), _)))
                            {
                                self.pos += 3;
                                args.push(Expr::Get(LValue::Elem(
                                    a,
                                    Box::new(Expr::Num("-1".into())),
                                )));
                            } else {
                                args.push(self.expr()?);
                            }
                            if !self.eat(",") {
                                break;
                            }
                        }
                    }
                    self.expect(")")?;
                    return Ok(Expr::Call(n, args));
                }
                if self.eat("[") {
                    let i = self.expr()?;
                    self.expect("]")?;
                    return Ok(Expr::Get(LValue::Elem(n, Box::new(i))));
                }
                Ok(Expr::Get(LValue::Var(n)))
            }
            _ => Err(self.line()),
        }
    }
}

// ---- evaluation -----------------------------------------------------------------------

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Num),
    Quit,
}

struct Bc<'a> {
    io: &'a Io,
    scale: u32,
    ibase: u32,
    obase: u32,
    last: Num,
    /// Variables and arrays, each a stack (a function's parameters and `auto`s shadow).
    vars: HashMap<String, Vec<Num>>,
    arrays: HashMap<String, Vec<HashMap<i64, Num>>>,
    funcs: HashMap<String, Func>,
    math: bool,
    depth: usize,
}

type EResult<T> = Result<T, String>;

impl Bc<'_> {
    fn parse_num(&self, s: &str) -> Num {
        let base = if s.len() == 1 { 16 } else { self.ibase };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let digit = |c: char| c.to_digit(16).unwrap_or(0).min(base - 1);
        let mut n = BigInt::zero();
        for c in int.chars() {
            n = n * base + digit(c);
        }
        if base == 10 {
            for c in frac.chars() {
                n = n * 10 + digit(c);
            }
            return Num {
                n,
                scale: frac.len() as u32,
            };
        }
        // A fraction in another base: its value, to as many decimal digits as it has.
        let s = frac.len() as u32;
        let mut num = Num { n, scale: 0 }.rescale(s);
        let mut place = Num::int(1);
        for c in frac.chars() {
            place = place
                .div(&Num::int(base as i64), s + 2)
                .unwrap_or(Num::int(0));
            num = num.add(&place.mul(&Num::int(digit(c) as i64), s + 2));
        }
        num.rescale(s)
    }

    fn get(&mut self, l: &LValue) -> EResult<Num> {
        Ok(match l {
            LValue::Var(v) => match v.as_str() {
                "scale" => Num::int(self.scale as i64),
                "ibase" => Num::int(self.ibase as i64),
                "obase" => Num::int(self.obase as i64),
                "last" => self.last.clone(),
                _ => self
                    .vars
                    .get(v)
                    .and_then(|s| s.last())
                    .cloned()
                    .unwrap_or(Num::int(0)),
            },
            LValue::Elem(a, i) => {
                let i = self.index(i)?;
                self.arrays
                    .get(a)
                    .and_then(|s| s.last())
                    .and_then(|m| m.get(&i))
                    .cloned()
                    .unwrap_or(Num::int(0))
            }
        })
    }

    fn index(&mut self, i: &Expr) -> EResult<i64> {
        let i = self.eval(i)?.to_i64().unwrap_or(-1);
        if !(0..=16_777_215).contains(&i) {
            return Err("Array index out of bounds".into());
        }
        Ok(i)
    }

    fn set(&mut self, l: &LValue, v: Num) -> EResult<()> {
        match l {
            LValue::Var(name) => match name.as_str() {
                "scale" => {
                    let s = v.to_i64().unwrap_or(-1);
                    if !(0..=i64::from(i32::MAX)).contains(&s) {
                        return Err("negative scale, set to 0".into());
                    }
                    self.scale = s as u32;
                }
                "ibase" | "obase" => {
                    let b = v.to_i64().unwrap_or(0);
                    if !(2..=16).contains(&b) {
                        return Err(format!(
                            "{name} {b} is not supported in burrow (2 to 16 are)"
                        ));
                    }
                    if name == "ibase" {
                        self.ibase = b as u32;
                    } else {
                        self.obase = b as u32;
                    }
                }
                "last" => self.last = v,
                _ => {
                    let s = self.vars.entry(name.clone()).or_default();
                    match s.last_mut() {
                        Some(x) => *x = v,
                        None => s.push(v),
                    }
                }
            },
            LValue::Elem(a, i) => {
                let i = self.index(i)?;
                let s = self.arrays.entry(a.clone()).or_default();
                if s.is_empty() {
                    s.push(HashMap::new());
                }
                if let Some(m) = s.last_mut() {
                    m.insert(i, v);
                }
            }
        }
        Ok(())
    }

    fn binary(&mut self, op: &str, a: &Num, b: &Num) -> EResult<Num> {
        let bool_num = |x: bool| Num::int(i64::from(x));
        use std::cmp::Ordering::*;
        Ok(match op {
            "+" => a.add(b),
            "-" => a.add(&b.neg()),
            "*" => a.mul(b, self.scale),
            "/" => a.div(b, self.scale)?,
            "%" => a.rem(b, self.scale)?,
            "^" => a.pow(b, self.scale, self.io)?,
            "==" => bool_num(a.cmp(b) == Equal),
            "!=" => bool_num(a.cmp(b) != Equal),
            "<" => bool_num(a.cmp(b) == Less),
            "<=" => bool_num(a.cmp(b) != Greater),
            ">" => bool_num(a.cmp(b) == Greater),
            ">=" => bool_num(a.cmp(b) != Less),
            _ => return Err(format!("unknown operator {op}")),
        })
    }

    fn eval(&mut self, e: &Expr) -> EResult<Num> {
        match e {
            Expr::Num(s) => Ok(self.parse_num(s)),
            Expr::Get(l) => self.get(l),
            Expr::Neg(x) => Ok(self.eval(x)?.neg()),
            Expr::Not(x) => Ok(Num::int(i64::from(!self.eval(x)?.truthy()))),
            Expr::Bin("&&", a, b) => {
                let v = self.eval(a)?.truthy() && self.eval(b)?.truthy();
                Ok(Num::int(i64::from(v)))
            }
            Expr::Bin("||", a, b) => {
                let v = self.eval(a)?.truthy() || self.eval(b)?.truthy();
                Ok(Num::int(i64::from(v)))
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                self.binary(op, &a, &b)
            }
            Expr::Assign(l, op, r) => {
                let r = self.eval(r)?;
                let v = match op {
                    Some(op) => {
                        let cur = self.get(l)?;
                        self.binary(op, &cur, &r)?
                    }
                    None => r,
                };
                self.set(l, v.clone())?;
                self.get(l).or(Ok(v))
            }
            Expr::Step(l, d, pre) => {
                let cur = self.get(l)?;
                let new = cur.add(&Num::int(*d));
                self.set(l, new.clone())?;
                Ok(if *pre { new } else { cur })
            }
            Expr::Call(f, args) => self.call(f, args),
        }
    }

    fn call(&mut self, f: &str, args: &[Expr]) -> EResult<Num> {
        let one = |this: &mut Self| -> EResult<Num> {
            match args {
                [a] => this.eval(a),
                _ => Err(format!("Parameter number mismatch in {f}")),
            }
        };
        match f {
            "sqrt" => return one(self)?.sqrt(self.scale),
            "length" => return Ok(Num::int(one(self)?.length())),
            "scale" => return Ok(Num::int(one(self)?.scale as i64)),
            "read" => return Err("read() is not supported in burrow".into()),
            _ => {}
        }
        if let Some(func) = self.funcs.get(f).cloned() {
            return self.call_user(f, &func, args);
        }
        if self.math && matches!(f, "s" | "c" | "a" | "l" | "e") {
            let x = one(self)?;
            return mathlib(f, &x, self.scale);
        }
        if self.math && f == "j" {
            return Err("Function j (Bessel) is not supported in burrow".into());
        }
        Err(format!("Function {f} not defined."))
    }

    fn call_user(&mut self, name: &str, f: &Func, args: &[Expr]) -> EResult<Num> {
        if args.len() != f.params.len() {
            return Err(format!("Parameter number mismatch in {name}"));
        }
        if self.depth > 1000 {
            return Err("Function call nesting too deep".into());
        }
        let mut scalars = Vec::new();
        let mut arrays = Vec::new();
        for ((p, arr), a) in f.params.iter().zip(args) {
            if *arr {
                let src = match a {
                    Expr::Get(LValue::Elem(n, _)) => n.clone(),
                    _ => return Err(format!("Parameter type mismatch in {name}")),
                };
                let copy = self
                    .arrays
                    .get(&src)
                    .and_then(|s| s.last())
                    .cloned()
                    .unwrap_or_default();
                arrays.push((p.clone(), copy));
            } else {
                scalars.push((p.clone(), self.eval(a)?));
            }
        }
        for (p, v) in scalars {
            self.vars.entry(p).or_default().push(v);
        }
        for (p, v) in arrays {
            self.arrays.entry(p).or_default().push(v);
        }
        for (a, arr) in &f.autos {
            if *arr {
                self.arrays
                    .entry(a.clone())
                    .or_default()
                    .push(HashMap::new());
            } else {
                self.vars.entry(a.clone()).or_default().push(Num::int(0));
            }
        }
        self.depth += 1;
        let mut result = Ok(Num::int(0));
        for s in &f.body {
            match self.exec(s) {
                Ok(Flow::Return(v)) => {
                    result = Ok(v);
                    break;
                }
                Ok(Flow::Quit) => break,
                Ok(_) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.depth -= 1;
        for (p, arr) in f.params.iter().chain(&f.autos) {
            if *arr {
                self.arrays.get_mut(p).map(Vec::pop);
            } else {
                self.vars.get_mut(p).map(Vec::pop);
            }
        }
        result
    }

    fn print_num(&mut self, v: &Num) -> EResult<()> {
        let s = v.show(self.obase)?;
        self.io.print(&format!("{s}\n"));
        Ok(())
    }

    fn exec(&mut self, s: &Stmt) -> EResult<Flow> {
        match s {
            Stmt::Expr(e) => {
                let v = self.eval(e)?;
                if !matches!(e, Expr::Assign(..)) {
                    self.print_num(&v)?;
                    self.last = v;
                }
            }
            Stmt::Str(t) => self.io.print(t),
            Stmt::Print(items) => {
                for it in items {
                    match it {
                        Err(t) => self.io.print(&unescape(t)),
                        Ok(e) => {
                            let v = self.eval(e)?;
                            self.io.print(&v.show(self.obase)?);
                            self.last = v;
                        }
                    }
                }
            }
            Stmt::If(c, t, e) => {
                if self.eval(c)?.truthy() {
                    return self.exec(t);
                } else if let Some(e) = e {
                    return self.exec(e);
                }
            }
            Stmt::While(c, body) => {
                while self.eval(c)?.truthy() {
                    match self.exec(body)? {
                        Flow::Break => break,
                        f @ (Flow::Return(_) | Flow::Quit) => return Ok(f),
                        _ => {}
                    }
                }
            }
            Stmt::For(a, c, step, body) => {
                if let Some(a) = a {
                    self.eval(a)?;
                }
                while match c {
                    Some(c) => self.eval(c)?.truthy(),
                    None => true,
                } {
                    match self.exec(body)? {
                        Flow::Break => break,
                        f @ (Flow::Return(_) | Flow::Quit) => return Ok(f),
                        _ => {}
                    }
                    if let Some(s) = step {
                        self.eval(s)?;
                    }
                }
            }
            Stmt::Block(body) => {
                for s in body {
                    match self.exec(s)? {
                        Flow::Normal => {}
                        f => return Ok(f),
                    }
                }
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e)?,
                    None => Num::int(0),
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Quit => return Ok(Flow::Quit),
            Stmt::Empty => {}
        }
        Ok(Flow::Normal)
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('r') => out.push('\r'),
            Some('q') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

// ---- the math library (-l) --------------------------------------------------------------

/// Fixed-point arithmetic at `w` decimal digits: values are integers scaled by 10^w.
struct Fixed {
    one: BigInt,
}

impl Fixed {
    fn mul(&self, a: &BigInt, b: &BigInt) -> BigInt {
        a * b / &self.one
    }
    fn div(&self, a: &BigInt, b: &BigInt) -> BigInt {
        a * &self.one / b
    }
    fn exp(&self, x: &BigInt) -> BigInt {
        // Halve until |x| < 1/2, sum the series, square back.
        let mut k = 0;
        let mut x = x.clone();
        let half = &self.one / 2;
        while x.abs() >= half {
            x /= 2;
            k += 1;
        }
        let mut sum = self.one.clone();
        let mut term = self.one.clone();
        let mut i = 1u32;
        loop {
            term = self.mul(&term, &x) / i;
            if term.is_zero() {
                break;
            }
            sum += &term;
            i += 1;
        }
        for _ in 0..k {
            sum = self.mul(&sum, &sum);
        }
        sum
    }
    fn ln(&self, x: &BigInt) -> BigInt {
        // ln x = 2^k ln(x^(1/2^k)); then 2 atanh((y-1)/(y+1)).
        let mut k = 0u32;
        let mut y = x.clone();
        let lo = &self.one * 9 / 10;
        let hi = &self.one * 11 / 10;
        while y < lo || y > hi {
            y = (&y * &self.one).sqrt();
            k += 1;
        }
        let z = self.div(&(&y - &self.one), &(&y + &self.one));
        let z2 = self.mul(&z, &z);
        let mut sum = BigInt::zero();
        let mut pow = z.clone();
        let mut i = 1u32;
        while !pow.is_zero() {
            sum += &pow / i;
            pow = self.mul(&pow, &z2);
            i += 2;
        }
        sum * 2 * num_traits::pow(BigInt::from(2), k as usize)
    }
    fn atan(&self, x: &BigInt) -> BigInt {
        if x.abs() > self.one {
            let pi2: BigInt = self.atan(&self.one) * 2;
            let r = self.atan(&self.div(&self.one, x));
            return if x.is_negative() { -pi2 - r } else { pi2 - r };
        }
        // atan x = 2 atan(x / (1 + sqrt(1 + x^2))) until small.
        let mut k = 0u32;
        let mut x = x.clone();
        let small = &self.one / 5;
        while x.abs() > small {
            let root = ((&self.one + self.mul(&x, &x)) * &self.one).sqrt();
            x = self.div(&x, &(&self.one + root));
            k += 1;
        }
        let x2 = self.mul(&x, &x);
        let mut sum = BigInt::zero();
        let mut pow = x.clone();
        let mut i = 1u32;
        let mut sign = 1;
        while !pow.is_zero() {
            if sign > 0 {
                sum += &pow / i;
            } else {
                sum -= &pow / i;
            }
            pow = self.mul(&pow, &x2);
            i += 2;
            sign = -sign;
        }
        sum * num_traits::pow(BigInt::from(2), k as usize)
    }
    fn sin(&self, x: &BigInt) -> BigInt {
        let pi = self.atan(&self.one) * 4;
        let two_pi = &pi * 2;
        let mut x = x % &two_pi;
        if x > pi {
            x -= &two_pi;
        } else if x < -&pi {
            x += &two_pi;
        }
        let x2 = self.mul(&x, &x);
        let mut sum = BigInt::zero();
        let mut term = x.clone();
        let mut i = 1u32;
        while !term.is_zero() {
            sum += &term;
            term = -self.mul(&term, &x2) / ((i + 1) * (i + 2));
            i += 2;
        }
        sum
    }
}

/// bc -l's `s c a l e` at `scale` digits: computed with guard digits, then truncated.
fn mathlib(f: &str, x: &Num, scale: u32) -> EResult<Num> {
    let guard = 12 + (x.n.abs().to_string().len() as u32).saturating_sub(x.scale);
    let w = scale + guard;
    let fx = Fixed { one: pow10(w) };
    let xv = x.rescale(w).n;
    let r = match f {
        "e" => {
            // e^x for large negative x underflows to 0; large positive ones are refused.
            if x.to_i64().is_some_and(|v| v > 100_000) {
                return Err("e() argument too large".into());
            }
            if xv.is_negative() {
                fx.div(&fx.one, &fx.exp(&-xv))
            } else {
                fx.exp(&xv)
            }
        }
        "l" => {
            if xv.sign() != Sign::Plus {
                // What GNU bc's library answers for x <= 0.
                return Ok(Num {
                    n: -(pow10(scale) - BigInt::one()) * pow10(scale),
                    scale,
                });
            }
            fx.ln(&xv)
        }
        "a" => fx.atan(&xv),
        "s" => fx.sin(&xv),
        "c" => {
            let half_pi = fx.atan(&fx.one) * 2;
            fx.sin(&(xv + half_pi))
        }
        _ => return Err(format!("Function {f} not defined.")),
    };
    Ok(Num { n: r, scale: w }.rescale(scale))
}

// ---- the command ----------------------------------------------------------------------

pub fn bc(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut math = false;
    let mut files = Vec::new();
    for a in args {
        match a.as_str() {
            "-l" | "--mathlib" => math = true,
            "-q" | "--quiet" | "-s" | "--standard" | "-w" | "--warn" => {}
            "-i" | "--interactive" => {}
            "--" => {}
            s if s.starts_with('-') && s.len() > 1 => {
                let ok = s[1..].chars().all(|c| "lqswi".contains(c));
                if !ok {
                    let c = s[1..]
                        .chars()
                        .find(|c| !"lqswi".contains(*c))
                        .unwrap_or('?');
                    io.eprint(&format!(
                        "bc: invalid option -- '{c}'\nusage: bc [options] [file ...]\n"
                    ));
                    return 1;
                }
                math |= s.contains('l');
            }
            f => files.push(f.to_string()),
        }
    }
    let mut bc = Bc {
        io,
        scale: if math { 20 } else { 0 },
        ibase: 10,
        obase: 10,
        last: Num::int(0),
        vars: HashMap::new(),
        arrays: HashMap::new(),
        funcs: HashMap::new(),
        math,
        depth: 0,
    };
    for f in &files {
        match std::fs::read_to_string(sh.path(f)) {
            Ok(src) => {
                if run(&mut bc, &src, f) {
                    return 0;
                }
            }
            Err(_) => {
                io.eprint(&format!("File {f} is unavailable.\n"));
                return 1;
            }
        }
    }
    let input = sh_utility::io::read_all(&io.stdin);
    run(&mut bc, &String::from_utf8_lossy(&input), "(standard_in)");
    0
}

/// Runs a program text; true when it quit.
fn run(bc: &mut Bc, src: &str, name: &str) -> bool {
    let toks = match lex(src) {
        Ok(t) => t,
        Err((line, msg)) => {
            bc.io.eprint(&format!("{name} {line}: {msg}\n"));
            return false;
        }
    };
    let mut p = Parser { toks, pos: 0 };
    loop {
        p.skip_newlines();
        if p.peek().is_none() {
            return false;
        }
        let parsed = if matches!(p.peek(), Some(Tok::Name(n)) if n == "define") {
            p.define().map(|(n, f)| {
                bc.funcs.insert(n, f);
                None
            })
        } else {
            p.stmt().map(Some)
        };
        match parsed {
            Ok(stmt) => {
                // A statement ends at a newline or `;`.
                if !matches!(p.peek(), None | Some(Tok::Newline)) && !p.is_op(";") {
                    let line = p.line();
                    bc.io.eprint(&format!("{name} {line}: syntax error\n"));
                    skip_line(&mut p);
                    continue;
                }
                let Some(stmt) = stmt else { continue };
                if matches!(stmt, Stmt::Quit) {
                    return true;
                }
                match bc.exec(&stmt) {
                    Ok(Flow::Quit) => return true,
                    Ok(_) => {}
                    Err(e) => {
                        // As GNU bc: a runtime error abandons the rest of its line.
                        bc.io.eprint(&format!("Runtime error: {e}\n"));
                        skip_line(&mut p);
                    }
                }
            }
            Err(line) => {
                bc.io.eprint(&format!("{name} {line}: syntax error\n"));
                skip_line(&mut p);
            }
        }
    }
}

fn skip_line(p: &mut Parser) {
    while !matches!(p.peek(), None | Some(Tok::Newline)) {
        p.pos += 1;
    }
}

/// bc, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[&[sh_utility::Command {
    name: "bc",
    run: |sh, argv, io| Ok(bc(sh, &argv[1..], io)),
}]];

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Num {
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        Num {
            n: format!("{i}{f}").parse().unwrap(),
            scale: f.len() as u32,
        }
    }

    #[test]
    fn math_library_matches_gnu_bc() {
        let cases = [
            ("s", "1", ".84147098480789650665"),
            ("c", "1", ".54030230586813971740"),
            ("a", "1", ".78539816339744830961"),
            ("l", "2", ".69314718055994530941"),
            ("e", "1", "2.71828182845904523536"),
            ("e", "-1", ".36787944117144232159"),
            ("l", "0.5", "-.69314718055994530941"),
            ("s", "100", "-.50636564110975879365"),
            ("a", "-3", "-1.24904577239825442582"),
        ];
        for (f, x, want) in cases {
            let x = if let Some(p) = x.strip_prefix('-') {
                num(p).neg()
            } else {
                num(x)
            };
            assert_eq!(mathlib(f, &x, 20).unwrap().show(10).unwrap(), want, "{f}");
        }
    }
}
