//! awk's interpreter: records and fields, statements and expressions, getline, pipes and
//! output files.

use super::*;

pub(super) enum Flow {
    Next,
    Exit(i32),
    Return(Val),
    Break,
    Continue,
}

#[derive(Clone)]
pub(super) enum Cell {
    Scalar(Val),
    Array(HashMap<String, Val>),
}

pub(super) struct Interp<'a> {
    pub(super) sh: &'a dyn Ctx,
    pub(super) io: &'a Io,
    pub(super) globals: HashMap<String, Cell>,
    /// Function frames: parameter name -> value (arrays passed by reference are copied back).
    pub(super) frames: Vec<HashMap<String, Cell>>,
    pub(super) funcs: HashMap<String, Func>,
    /// `$1`... and NF, valid once `split_due` is false: a record is split into fields
    /// only when the program asks for one of them (`END { print NR }` or `/re/ { n++ }`
    /// never does).
    pub(super) fields: Vec<String>,
    pub(super) record: String,
    pub(super) nf: usize,
    pub(super) split_due: bool,
    pub(super) regex_cache: HashMap<String, regex::Regex>,
    pub(super) files: HashMap<String, fs::File>,
    /// The current input's records not yet read (plain `getline` takes from here too).
    pub(super) main: super::records::Records,
    /// Files and commands `getline` reads from, and their records not yet read.
    pub(super) readers: HashMap<String, super::records::Records>,
    /// Commands printed to with `|`, in first-use order, with what they were sent.
    pub(super) pipes: Vec<(String, String)>,
    pub(super) range_on: Vec<bool>,
    pub(super) rand_state: u64,
    pub(super) depth: usize,
    /// END has run (it runs once, even after `exit` in a main action).
    pub(super) ended: bool,
}

pub(super) type IResult<T> = Result<T, Flow>;

/// An awk ERE as a Rust regex.
pub(super) fn translate_regex(re: &str) -> String {
    // Brackets like [[:alpha:]] and most ERE syntax carry over; `\.` etc. too.
    re.replace("\\/", "/")
}

impl<'a> Interp<'a> {
    pub(super) fn special(&self, name: &str) -> Option<String> {
        match self.globals.get(name) {
            Some(Cell::Scalar(v)) => Some(v.str("%.6g")),
            _ => None,
        }
    }

    pub(super) fn convfmt(&self) -> String {
        self.special("CONVFMT").unwrap_or_else(|| "%.6g".into())
    }

    pub(super) fn regex(&mut self, re: &str) -> Result<regex::Regex, String> {
        if let Some(r) = self.regex_cache.get(re) {
            return Ok(r.clone());
        }
        let r = regex::Regex::new(&translate_regex(re))
            .map_err(|e| format!("invalid regex /{re}/: {e}"))?;
        self.regex_cache.insert(re.to_string(), r.clone());
        Ok(r)
    }

    pub(super) fn set_record(&mut self, rec: String) {
        self.record = rec;
        self.split_due = true;
    }

    /// Splits the record now if that is still due (by the FS it was read with: a change
    /// of FS splits the current record first).
    pub(super) fn ensure_split(&mut self) {
        if self.split_due {
            self.split_due = false;
            self.split_record();
        }
    }

    pub(super) fn split_fields(&mut self, s: &str, fs_: &str) -> Vec<String> {
        let mut v = Vec::new();
        self.split_into(&mut v, s, fs_);
        v
    }

    /// Splits `s` by the field separator `fs_` into `out`, reusing its strings (a record's
    /// fields are split into the last record's, with no allocation once they are as long).
    pub(super) fn split_into(&mut self, out: &mut Vec<String>, s: &str, fs_: &str) {
        let mut n = 0;
        let mut put = |part: &str| {
            match out.get_mut(n) {
                Some(f) => {
                    f.clear();
                    f.push_str(part);
                }
                None => out.push(part.to_string()),
            }
            n += 1;
        };
        if s.is_empty() {
            // An empty record has no fields, whatever the separator.
        } else if fs_ == " " {
            s.split_whitespace().for_each(&mut put);
        } else if fs_.chars().count() == 1 && fs_ != "\\" {
            s.split(fs_).for_each(&mut put);
        } else {
            match self.regex(fs_) {
                Ok(r) => r.split(s).for_each(&mut put),
                Err(_) => put(s),
            }
        }
        out.truncate(n);
    }

    pub(super) fn split_record(&mut self) {
        let fs_ = self.special("FS").unwrap_or_else(|| " ".into());
        let rec = std::mem::take(&mut self.record);
        let mut fields = std::mem::take(&mut self.fields);
        self.split_into(&mut fields, &rec, &fs_);
        self.fields = fields;
        self.record = rec;
        self.nf = self.fields.len();
        self.set_global_num("NF", self.nf as f64);
    }

    /// Sets a global the interpreter maintains (NF, NR, FNR) without allocating its name.
    fn set_global_num(&mut self, name: &str, n: f64) {
        match self.globals.get_mut(name) {
            Some(c) => *c = Cell::Scalar(Val::Num(n)),
            None => {
                self.globals
                    .insert(name.to_string(), Cell::Scalar(Val::Num(n)));
            }
        }
    }

    pub(super) fn rebuild_record(&mut self) {
        let ofs = self.special("OFS").unwrap_or_else(|| " ".into());
        self.fields.resize(self.nf, String::new());
        self.record = self.fields.join(&ofs);
    }

    pub(super) fn get_field(&mut self, i: usize) -> Val {
        if i > 0 {
            self.ensure_split();
        }
        if i == 0 {
            Val::StrNum(self.record.clone())
        } else {
            Val::StrNum(self.fields.get(i - 1).cloned().unwrap_or_default())
        }
    }

    pub(super) fn set_field(&mut self, i: usize, v: String) {
        if i == 0 {
            self.set_record(v);
            return;
        }
        self.ensure_split();
        if i > self.nf {
            self.nf = i;
            self.fields.resize(i, String::new());
            self.set_global_num("NF", i as f64);
        }
        self.fields[i - 1] = v;
        self.rebuild_record();
    }

    pub(super) fn lookup(&mut self, name: &str) -> &mut Cell {
        if self.frames.last().is_some_and(|f| f.contains_key(name)) {
            return self
                .frames
                .last_mut()
                .and_then(|f| f.get_mut(name))
                .expect("checked");
        }
        // NF is the split's; FS is about to be read or changed, and the record was read
        // under the old one.
        if self.split_due && matches!(name, "NF" | "FS") {
            self.ensure_split();
        }
        if !self.globals.contains_key(name) {
            self.globals
                .insert(name.to_string(), Cell::Scalar(Val::StrNum(String::new())));
        }
        self.globals.get_mut(name).expect("present")
    }

    pub(super) fn get_var(&mut self, name: &str) -> Val {
        match self.lookup(name) {
            Cell::Scalar(v) => v.clone(),
            Cell::Array(_) => Val::Str(String::new()),
        }
    }

    pub(super) fn set_var(&mut self, name: &str, v: Val) {
        if name == "NF" {
            self.ensure_split();
            let n = v.num().max(0.0) as usize;
            self.nf = n;
            self.rebuild_record();
        }
        *self.lookup(name) = Cell::Scalar(v);
    }

    pub(super) fn array(&mut self, name: &str) -> &mut HashMap<String, Val> {
        let cell = self.lookup(name);
        if !matches!(cell, Cell::Array(_)) {
            *cell = Cell::Array(HashMap::new());
        }
        match cell {
            Cell::Array(a) => a,
            Cell::Scalar(_) => unreachable!("just made an array"),
        }
    }

    pub(super) fn subscript(&mut self, subs: &[Expr]) -> IResult<String> {
        let sep = self.special("SUBSEP").unwrap_or_else(|| "\x1c".into());
        let conv = self.convfmt();
        let mut parts = Vec::new();
        for s in subs {
            parts.push(self.eval(s)?.str(&conv));
        }
        Ok(parts.join(&sep))
    }

    pub(super) fn assign(&mut self, target: &Expr, v: Val) -> IResult<Val> {
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

    pub(super) fn eval(&mut self, e: &Expr) -> IResult<Val> {
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

    pub(super) fn re_match(&mut self, re: &str, text: &str) -> IResult<bool> {
        match self.regex(re) {
            Ok(r) => Ok(r.is_match(text)),
            Err(e) => {
                self.io.eprint(&format!("awk: {e}\n"));
                Err(Flow::Exit(2))
            }
        }
    }

    pub(super) fn regex_arg(&mut self, e: &Expr) -> IResult<regex::Regex> {
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

    pub(super) fn call(&mut self, name: &str, args: &[Expr]) -> IResult<Val> {
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
    pub(super) fn shell(
        &mut self,
        cmd: &str,
        input: Vec<u8>,
        capture: Option<&mut Vec<u8>>,
    ) -> i32 {
        let (out, buf) = match capture {
            Some(_) => {
                let (sink, buf) = sh_utility::io::Sink::buffer();
                (sink, Some(buf))
            }
            None => (self.io.out.clone(), None),
        };
        let io = Io {
            stdin: sh_utility::io::input(input),
            out,
            err: self.io.err.clone(),
            fds: self.io.fds.clone(),
        };
        let status = self.sh.run_in_copy(cmd, &io);
        if let (Some(dst), Some(buf)) = (capture, buf) {
            dst.extend_from_slice(&buf.borrow());
        }
        status
    }

    /// NR and FNR, counted on.
    pub(super) fn counter(&mut self, name: &str, by: f64) {
        let n = match self.globals.get(name) {
            Some(Cell::Scalar(v)) => v.num(),
            _ => 0.0,
        };
        self.set_global_num(name, n + by);
    }

    /// The next record of the main input, split by the RS in force now.
    pub(super) fn next_main_record(&mut self) -> Option<String> {
        let rs = self.special("RS").unwrap_or_else(|| "\n".into());
        self.main.next(self.io, &rs)
    }

    /// `getline`: 1 with a record read, 0 at the end, -1 when the source cannot be read.
    pub(super) fn getline(&mut self, src: &GetSrc, var: Option<&Expr>) -> IResult<f64> {
        let conv = self.convfmt();
        let (rec, main_like) = match src {
            GetSrc::Main => match self.next_main_record() {
                Some(r) => {
                    self.counter("FNR", 1.0);
                    (r, true)
                }
                None => return Ok(0.0),
            },
            GetSrc::File(e) | GetSrc::Cmd(e) => {
                let key = self.eval(e)?.str(&conv);
                if !self.readers.contains_key(&key) {
                    let records = if let GetSrc::Cmd(_) = src {
                        let mut out = Vec::new();
                        self.shell(&key, Vec::new(), Some(&mut out));
                        super::records::Records::bytes(out)
                    } else if key == "-" || key == "/dev/stdin" {
                        super::records::Records::stdin()
                    } else {
                        match super::open_input(self.sh, &key) {
                            Ok(r) => r,
                            Err(_) => return Ok(-1.0),
                        }
                    };
                    self.readers.insert(key.clone(), records);
                }
                let rs = self.special("RS").unwrap_or_else(|| "\n".into());
                let Some(records) = self.readers.get_mut(&key) else {
                    return Ok(-1.0);
                };
                let Some(r) = records.next(self.io, &rs) else {
                    return Ok(0.0);
                };
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

    pub(super) fn output(&mut self, text: &str, redirect: &Redirect) -> IResult<()> {
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
    pub(super) fn loop_body(&mut self, body: &Stmt) -> IResult<bool> {
        match self.exec(body) {
            Err(Flow::Break) => Ok(true),
            Err(Flow::Continue) | Ok(()) => Ok(false),
            Err(f) => Err(f),
        }
    }

    pub(super) fn exec_all(&mut self, stmts: &[Stmt]) -> IResult<()> {
        for s in stmts {
            self.exec(s)?;
        }
        Ok(())
    }

    pub(super) fn exec(&mut self, s: &Stmt) -> IResult<()> {
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
