//! The interpreter: walks brush-parser's AST. Pipelines run their stages one after another
//! with in-memory pipes (each stage in a copy of the shell state, as bash runs pipeline stages
//! in subshells); `$(...)` runs in a copy too. The state that persists between tool calls
//! (cwd, variables, functions, aliases, options) is plain data (see `state.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use brush_parser::ast::{
    self, AndOr, Command, CompoundCommand, CompoundList, IoFileRedirectKind, IoFileRedirectTarget,
    IoRedirect, Pipeline,
};
use serde::{Deserialize, Serialize};

use crate::io::{Io, Sink, input};

/// Control flow leaving a command early.
#[derive(Debug)]
pub enum Flow {
    Break(u32),
    Continue(u32),
    Return(i32),
    Exit(i32),
    /// An error that ends the complete command it is in (an assignment to a readonly
    /// variable): a shell goes on with its next command, a subshell ends with the status.
    Abort(i32),
}

pub type Status = Result<i32, Flow>;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Var {
    pub value: String,
    pub exported: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Options {
    pub errexit: bool,
    pub nounset: bool,
    pub pipefail: bool,
    pub xtrace: bool,
    pub noglob: bool,
    /// `set -E` and `set -T`: kept and shown; ERR traps run in functions either way.
    #[serde(default)]
    pub errtrace: bool,
    #[serde(default)]
    pub functrace: bool,
    /// `set -C`: `>` refuses to overwrite an existing regular file (`>|` still does).
    #[serde(default)]
    pub noclobber: bool,
    /// `trap` actions by condition (`EXIT`, `ERR`, signal names); "" ignores it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub traps: BTreeMap<String, String>,
    /// `shopt -s` options that are on (`nullglob`, `dotglob`, `globstar`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shopts: Vec<String>,
}

impl Options {
    /// Whether `shopt` option `name` is on.
    pub fn shopt(&self, name: &str) -> bool {
        self.shopts.iter().any(|s| s == name)
    }
}

/// A bash array: indexed (sparse, by integer) or associative (`declare -A`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Array {
    Indexed(BTreeMap<i64, String>),
    Assoc(BTreeMap<String, String>),
}

impl Array {
    pub fn values(&self) -> Vec<String> {
        match self {
            Array::Indexed(m) => m.values().cloned().collect(),
            Array::Assoc(m) => m.values().cloned().collect(),
        }
    }

    pub fn keys(&self) -> Vec<String> {
        match self {
            Array::Indexed(m) => m.keys().map(i64::to_string).collect(),
            Array::Assoc(m) => m.keys().cloned().collect(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Array::Indexed(m) => m.len(),
            Array::Assoc(m) => m.len(),
        }
    }

    /// The index after the last element (where `+=` appends).
    pub fn next_index(&self) -> i64 {
        match self {
            Array::Indexed(m) => m.keys().next_back().map_or(0, |k| k + 1),
            Array::Assoc(_) => 0,
        }
    }
}

/// Deepest function call chain (see `call_function`).
pub const MAX_FUNCTION_NESTING: usize = 150;

/// A name `local` shadowed: its scalar, its array and its attributes before the function's
/// own.
pub type Hidden = (String, Option<Var>, Option<Array>, Option<String>);

/// Everything the shell knows.
#[derive(Clone)]
pub struct Shell {
    pub cwd: String,
    /// `$0`.
    pub arg0: String,
    pub vars: BTreeMap<String, Var>,
    /// Array variables (a name is either here or in `vars`).
    pub arrays: BTreeMap<String, Array>,
    /// Function name -> (definition source, parsed body).
    pub functions: BTreeMap<String, (String, ast::FunctionDefinition)>,
    pub aliases: BTreeMap<String, String>,
    pub options: Options,
    pub positional: Vec<String>,
    pub last_status: i32,
    /// The status of the last command substitution of the simple command being expanded:
    /// a command with no words (`x=$(false)`, `$(exit 3)`) has it as its own.
    pub subst_status: Option<i32>,
    /// What `local` hid in each enclosing function call: the name's scalar and array, put
    /// back when the function returns.
    pub locals: Vec<Vec<Hidden>>,
    /// Depth of `if`/`while` conditions and `&&`/`||` operands (where `set -e` is off).
    pub condition_depth: u32,
    /// Depth of function calls, loops (for `break`/`return` validity).
    pub loop_depth: u32,
    /// `$LINENO`: the line the running simple command starts on (0 before any).
    pub lineno: usize,
    /// Attributes other than export and array-ness, by variable name: `i` (integer), `r`
    /// (readonly), `l` and `u` (lower and upper case), as `declare` gives them.
    pub attrs: BTreeMap<String, String>,
}

pub fn parser_options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

/// Parses a script into a program; the error is worded as bash words it.
pub fn parse(src: &str) -> Result<ast::Program, String> {
    let mut p = brush_parser::Parser::new(std::io::Cursor::new(src), &parser_options());
    p.parse_program().map_err(|e| match e {
        brush_parser::ParseError::ParsingNear(pos) => {
            let line_no = pos.line.max(1);
            let line = src.lines().nth(line_no - 1).unwrap_or("");
            let col = (pos.column.max(1) - 1).min(line.len());
            let token: String = line[col..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ';')
                .collect();
            format!(
                "bash: -c: line {line_no}: syntax error near unexpected token `{token}'\nbash: -c: line {line_no}: `{line}'"
            )
        }
        brush_parser::ParseError::ParsingAtEndOfInput => {
            format!("bash: -c: line {}: syntax error: unexpected end of file", src.lines().count().max(1))
        }
        other => format!("bash: -c: {other}"),
    })
}

/// A `>(cmd)` waiting for its command to end: the buffer it reads, cmd, and the streams
/// it was started with.
type PendingOutput = (crate::sys::Buffer, ast::SubshellCommand, Io);

thread_local! {
    static PENDING_OUTPUTS: std::cell::RefCell<Vec<PendingOutput>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Shell {
    pub fn new(cwd: &str) -> Shell {
        let mut s = Shell {
            cwd: cwd.to_string(),
            arg0: "bash".to_string(),
            vars: BTreeMap::new(),
            arrays: BTreeMap::new(),
            functions: BTreeMap::new(),
            aliases: BTreeMap::new(),
            options: Options::default(),
            positional: Vec::new(),
            last_status: 0,
            subst_status: None,
            locals: Vec::new(),
            condition_depth: 0,
            lineno: 0,
            loop_depth: 0,
            attrs: BTreeMap::new(),
        };
        for (k, v) in [
            ("HOME", "/home/agent"),
            ("TMPDIR", "/tmp"),
            (
                "PATH",
                "/workspace/.bin:/home/agent/.local/bin:/opt/burrow/bin:/usr/local/bin:/usr/bin:/bin",
            ),
            ("SHELL", "/bin/bash"),
            ("USER", "agent"),
            ("LANG", "C.UTF-8"),
            ("TERM", "dumb"),
        ] {
            s.set_exported(k, v);
        }
        s.vars.insert(
            "IFS".into(),
            Var {
                value: " \t\n".into(),
                exported: false,
            },
        );
        s
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        match self.vars.get(name) {
            Some(v) => Some(v.value.as_str()),
            // `$a` of an array is its element 0.
            None => match self.arrays.get(name)? {
                Array::Indexed(m) => m.get(&0).map(String::as_str),
                Array::Assoc(m) => m.get("0").map(String::as_str),
            },
        }
    }

    /// Whether `name` has attribute `flag` (`i`, `r`, `l`, `u`).
    pub fn has_attr(&self, name: &str, flag: char) -> bool {
        self.attrs.get(name).is_some_and(|a| a.contains(flag))
    }

    /// Gives (`on`) or takes away attribute `flag` of `name`.
    pub fn set_attr(&mut self, name: &str, flag: char, on: bool) {
        let a = self.attrs.entry(name.to_string()).or_default();
        if on && !a.contains(flag) {
            a.push(flag);
            // `-l` and `-u` exclude each other: the last one given wins, as in bash.
            match flag {
                'l' => a.retain(|c| c != 'u'),
                'u' => a.retain(|c| c != 'l'),
                _ => {}
            }
        } else if !on {
            a.retain(|c| c != flag);
        }
        if a.is_empty() {
            self.attrs.remove(name);
        }
    }

    /// bash's attribute letters of `name` in `declare -p`'s order (`${x@a}`): "" when it has
    /// none or does not exist.
    pub fn attr_flags(&self, name: &str) -> String {
        let mut f = String::new();
        match self.arrays.get(name) {
            Some(Array::Indexed(_)) => f.push('a'),
            Some(Array::Assoc(_)) => f.push('A'),
            None => {}
        }
        let own = self.attrs.get(name).map(String::as_str).unwrap_or("");
        for c in ['i', 'n', 'r', 't'] {
            if own.contains(c) {
                f.push(c);
            }
        }
        if self.vars.get(name).is_some_and(|v| v.exported) {
            f.push('x');
        }
        for c in ['c', 'l', 'u'] {
            if own.contains(c) {
                f.push(c);
            }
        }
        f
    }

    /// A value as `name`'s attributes make it: evaluated arithmetically under `-i` (`old`
    /// is added for `+=`), lower- or upper-cased under `-l`/`-u`.
    /// Where no error can be reported (an element of a list), a value that is not valid
    /// arithmetic counts as 0; [`Shell::shaped`] reports it.
    pub fn attr_value(&mut self, name: &str, value: String, old: Option<&str>) -> String {
        let io = crate::io::Io::discard();
        self.shaped(name, value, old, "", &io)
            .unwrap_or_else(|_| "0".to_string())
    }

    /// As [`Shell::attr_value`], but a value that is not valid arithmetic for an integer
    /// variable is the error bash reports (`who` names the builtin, as `declare: `) and ends
    /// the shell as `$((1+))` does.
    pub fn shaped(
        &mut self,
        name: &str,
        value: String,
        old: Option<&str>,
        who: &str,
        io: &Io,
    ) -> Result<String, Flow> {
        let Some(own) = self.attrs.get(name).cloned() else {
            return Ok(match old {
                Some(o) => format!("{o}{value}"),
                None => value,
            });
        };
        let mut value = if own.contains('i') {
            let n = crate::expand::arith_str_in(self, &value, who, io)?;
            let base = match old {
                Some(o) => crate::expand::arith_str_in(self, o, who, io)?,
                None => 0,
            };
            base.wrapping_add(n).to_string()
        } else {
            match old {
                Some(o) => format!("{o}{value}"),
                None => value,
            }
        };
        if own.contains('l') {
            value = value.to_lowercase();
        } else if own.contains('u') {
            value = value.to_uppercase();
        }
        Ok(value)
    }

    /// Sets a scalar to a value already shaped by its attributes ([`Shell::shaped`]), so
    /// that `set` does not evaluate it a second time.
    pub fn set_shaped(&mut self, name: &str, value: String) {
        let attrs = self.attrs.remove(name);
        self.set(name, value);
        if let Some(attrs) = attrs {
            self.attrs.insert(name.to_string(), attrs);
        }
    }

    /// Refuses a change to a readonly variable the way bash does: the message, and true.
    pub fn readonly_refused(&self, name: &str, io: &Io) -> bool {
        if self.has_attr(name, 'r') {
            io.eprint(&format!("bash: {name}: readonly variable\n"));
            return true;
        }
        false
    }

    /// Sets a scalar (element 0 of an array of that name). A readonly variable is left as it
    /// is (callers that report it check [`Shell::readonly_refused`] first); `-i`, `-l` and
    /// `-u` shape the value.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        if self.has_attr(name, 'r') {
            return;
        }
        let mut value = value.into();
        if self.attrs.contains_key(name) {
            value = self.attr_value(name, value, None);
        }
        if let Some(a) = self.arrays.get_mut(name) {
            match a {
                Array::Indexed(m) => m.insert(0, value),
                Array::Assoc(m) => m.insert("0".into(), value),
            };
            return;
        }
        match self.vars.get_mut(name) {
            Some(v) => v.value = value,
            None => {
                self.vars.insert(
                    name.to_string(),
                    Var {
                        value,
                        exported: false,
                    },
                );
            }
        }
    }

    pub fn set_exported(&mut self, name: &str, value: impl Into<String>) {
        self.vars.insert(
            name.to_string(),
            Var {
                value: value.into(),
                exported: true,
            },
        );
    }

    pub fn unset(&mut self, name: &str) {
        // `unset a[i]` removes one element.
        if let Some((n, idx)) = name.strip_suffix(']').and_then(|s| s.split_once('[')) {
            let key = self.array_key(n, idx);
            match self.arrays.get_mut(n) {
                Some(Array::Indexed(m)) => {
                    if let Ok(i) = key.parse::<i64>() {
                        m.remove(&i);
                    }
                }
                Some(Array::Assoc(m)) => {
                    m.remove(&key);
                }
                None => {}
            }
            return;
        }
        self.vars.remove(name);
        self.arrays.remove(name);
    }

    /// An array subscript as a key: evaluated arithmetically for indexed arrays (negative
    /// counts from the end), expanded as a word for associative ones.
    pub fn array_key(&mut self, name: &str, index: &str) -> String {
        let io = crate::io::Io::discard();
        match self.arrays.get(name) {
            Some(Array::Assoc(_)) => {
                crate::expand::single(self, index, &io).unwrap_or_else(|_| index.to_string())
            }
            _ => {
                let i = crate::expand::arith_str(self, index, &io).unwrap_or(0);
                if i < 0
                    && let Some(Array::Indexed(m)) = self.arrays.get(name)
                {
                    return (m.keys().next_back().map_or(0, |k| k + 1) + i).to_string();
                }
                i.to_string()
            }
        }
    }

    /// `${a[i]}`.
    pub fn array_get(&mut self, name: &str, index: &str) -> Option<String> {
        let key = self.array_key(name, index);
        match self.arrays.get(name) {
            Some(Array::Indexed(m)) => m.get(&key.parse::<i64>().ok()?).cloned(),
            Some(Array::Assoc(m)) => m.get(&key).cloned(),
            // A scalar is an array of one element.
            None if key == "0" => self.vars.get(name).map(|v| v.value.clone()),
            None => None,
        }
    }

    /// `a[i]=v`: makes `a` an indexed array if it is not one yet.
    pub fn array_set(&mut self, name: &str, index: &str, value: String, append: bool) {
        let key = self.array_key(name, index);
        if !self.arrays.contains_key(name) {
            let mut m = BTreeMap::new();
            if let Some(v) = self.vars.remove(name) {
                m.insert(0, v.value);
            }
            self.arrays.insert(name.to_string(), Array::Indexed(m));
        }
        let old = match self.arrays.get(name) {
            Some(Array::Indexed(m)) if append => m.get(&key.parse::<i64>().unwrap_or(0)).cloned(),
            Some(Array::Assoc(m)) if append => m.get(&key).cloned(),
            _ => None,
        };
        let value = match (old, append) {
            (old, true) => self.attr_value(name, value, Some(old.as_deref().unwrap_or(""))),
            (_, false) => self.attr_value(name, value, None),
        };
        match self.arrays.get_mut(name) {
            Some(Array::Indexed(m)) => {
                m.insert(key.parse::<i64>().unwrap_or(0), value);
            }
            Some(Array::Assoc(m)) => {
                m.insert(key, value);
            }
            None => {}
        }
    }

    /// A path of the guest filesystem, resolved against the shell's cwd.
    pub fn path(&self, p: &str) -> PathBuf {
        if p.starts_with('/') {
            PathBuf::from(p)
        } else if p.is_empty() {
            PathBuf::from(&self.cwd)
        } else {
            PathBuf::from(&self.cwd).join(p)
        }
    }

    /// Runs a script; returns its status.
    pub fn run_script(&mut self, src: &str, io: &Io) -> Status {
        self.run_program(src, io, false)
    }

    /// Runs a whole shell's script (the call's, `bash -c`, a script file): as [`run_script`],
    /// except that an error that aborts a complete command ([`Flow::Abort`]) goes on with
    /// the next one.
    ///
    /// [`run_script`]: Shell::run_script
    pub fn run_top(&mut self, src: &str, io: &Io) -> Status {
        self.run_program(src, io, true)
    }

    fn run_program(&mut self, src: &str, io: &Io, top: bool) -> Status {
        let program = match parse(src) {
            Ok(p) => p,
            Err(e) => {
                io.eprint(&format!("{e}\n"));
                return Ok(2);
            }
        };
        let mut status = 0;
        for cc in &program.complete_commands {
            status = match self.run_list(cc, io) {
                Err(Flow::Abort(s)) if top => {
                    self.last_status = s;
                    s
                }
                other => other?,
            };
        }
        Ok(status)
    }

    pub fn run_list(&mut self, list: &CompoundList, io: &Io) -> Status {
        let mut status = 0;
        for item in &list.0 {
            // `cmd &` runs in the foreground: a sandboxed call has no background jobs.
            let ast::CompoundListItem(and_or, _separator) = item;
            status = self.run_and_or(and_or, io)?;
        }
        Ok(status)
    }

    fn run_and_or(&mut self, list: &ast::AndOrList, io: &Io) -> Status {
        let has_more = !list.additional.is_empty();
        if has_more {
            self.condition_depth += 1;
        }
        // Whether the pipeline that gave the status was negated with `!` (exempt from -e),
        // or is one compound command (its own commands met -e already: `{ a && b; }` that
        // ends on a skipped `b` does not exit, as in bash).
        let mut negated = list.first.bang || errexit_exempt(&list.first);
        let mut status = self.run_pipeline(&list.first, io);
        for (i, next) in list.additional.iter().enumerate() {
            let last = i + 1 == list.additional.len();
            let s = match status {
                Ok(s) => s,
                Err(f) => {
                    self.condition_depth -= 1;
                    return Err(f);
                }
            };
            let (run, p) = match next {
                AndOr::And(p) => (s == 0, p),
                AndOr::Or(p) => (s != 0, p),
            };
            if last {
                self.condition_depth -= 1;
            }
            if run {
                negated = p.bang || errexit_exempt(p);
            }
            status = if run { self.run_pipeline(p, io) } else { Ok(s) };
            if last && !run {
                // The list ended on a skipped operand: its status is not an error for -e.
                return status;
            }
        }
        let s = status?;
        if !negated {
            self.check_errexit(s, io)?;
        }
        Ok(s)
    }

    /// A command failed where `set -e` applies (not in a condition, not negated): the ERR
    /// trap runs, then -e exits.
    fn check_errexit(&mut self, status: i32, io: &Io) -> Result<(), Flow> {
        if status == 0 || self.condition_depth > 0 {
            return Ok(());
        }
        if let Some(action) = self
            .options
            .traps
            .get("ERR")
            .filter(|a| !a.is_empty())
            .cloned()
        {
            // The trap's own failures do not trigger it again.
            self.condition_depth += 1;
            let r = self.run_script(&action, io);
            self.condition_depth -= 1;
            self.last_status = status;
            if let Err(Flow::Exit(n)) = r {
                return Err(Flow::Exit(n));
            }
        }
        if self.options.errexit {
            return Err(Flow::Exit(status));
        }
        Ok(())
    }

    /// The end of a shell (a subshell, `bash -c`, a script, the call's shell on `exit`):
    /// runs the EXIT trap, once. `status` is the shell's; an `exit` in the trap replaces it.
    pub fn finish(&mut self, status: i32, io: &Io) -> i32 {
        let Some(action) = self.options.traps.remove("EXIT").filter(|a| !a.is_empty()) else {
            return status;
        };
        self.last_status = status;
        self.condition_depth += 1;
        let r = self.run_script(&action, io);
        self.condition_depth -= 1;
        match r {
            Err(Flow::Exit(n)) => n,
            _ => status,
        }
    }

    /// A copy of this shell for a subshell: traps are reset (ignored ones stay ignored), as
    /// bash resets them.
    pub fn subshell(&self) -> Shell {
        let mut sub = self.clone();
        sub.options.traps.retain(|_, a| a.is_empty());
        sub
    }

    fn run_pipeline(&mut self, p: &Pipeline, io: &Io) -> Status {
        if p.bang {
            self.condition_depth += 1;
        }
        let result = self.run_pipeline_inner(p, io);
        if p.bang {
            self.condition_depth -= 1;
        }
        let s = result?;
        let s = if p.bang { i32::from(s == 0) } else { s };
        self.last_status = s;
        Ok(s)
    }

    fn run_pipeline_inner(&mut self, p: &Pipeline, io: &Io) -> Status {
        if p.seq.len() == 1 {
            let r = self.run_command(&p.seq[0], io);
            // bash sets PIPESTATUS after every pipeline, one command long included.
            if let Ok(s) = &r {
                self.arrays.insert(
                    "PIPESTATUS".into(),
                    Array::Indexed([(0, s.to_string())].into_iter().collect()),
                );
            }
            return r;
        }
        let mut stdin = io.stdin.clone();
        let mut statuses = Vec::new();
        for (i, cmd) in p.seq.iter().enumerate() {
            let last = i + 1 == p.seq.len();
            let (out, buf, pipe) = if last {
                (io.out.clone(), None, None)
            } else if let Some(wants) = p.seq.get(i + 1).and_then(reads_prefix) {
                let (s, pipe) = Sink::pipe(wants);
                (s, None, Some(pipe))
            } else {
                let (s, b) = Sink::buffer();
                (s, Some(b), None)
            };
            let stage_io = Io {
                stdin: stdin.clone(),
                out,
                err: io.err.clone(),
                fds: io.fds.clone(),
            };
            // Each stage is a subshell: `set -e` ends the stage (not the shell) at its first
            // failure, and the ERR trap is not inherited, as in bash.
            let mut sub = self.clone();
            sub.options.traps.remove("ERR");
            let s = match sub.run_command(cmd, &stage_io) {
                Ok(s) => s,
                Err(Flow::Exit(s)) | Err(Flow::Return(s)) | Err(Flow::Abort(s)) => s,
                Err(_) => 0,
            };
            statuses.push(s);
            if let Some(b) = buf {
                stdin = input(std::mem::take(&mut *b.borrow_mut()));
            }
            if let Some(pipe) = pipe {
                stdin = input(std::mem::take(&mut pipe.borrow_mut().data));
            }
        }
        let last = *statuses.last().unwrap_or(&0);
        self.arrays.insert(
            "PIPESTATUS".into(),
            Array::Indexed(
                statuses
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as i64, s.to_string()))
                    .collect(),
            ),
        );
        if self.options.pipefail {
            return Ok(statuses
                .iter()
                .rev()
                .find(|&&s| s != 0)
                .copied()
                .unwrap_or(0));
        }
        Ok(last)
    }

    pub fn run_command(&mut self, cmd: &Command, io: &Io) -> Status {
        // A process substitution's `/dev/fd/N` lives as long as the command that names it; a
        // `>(...)` reads what the command wrote there once it has ended.
        let mark = crate::sys::substitutions_mark();
        let pending = PENDING_OUTPUTS.with(|p| p.borrow().len());
        let r = self.run_command_here(cmd, io);
        let waiting: Vec<PendingOutput> =
            PENDING_OUTPUTS.with(|p| p.borrow_mut().drain(pending..).collect());
        for (buf, sub, sub_io) in waiting {
            let input_bytes = buf.borrow().clone();
            let mut copy = self.clone();
            let child_io = Io {
                stdin: input(input_bytes),
                out: sub_io.out.clone(),
                err: sub_io.err.clone(),
                fds: sub_io.fds.clone(),
            };
            match copy.run_list(&sub.list, &child_io) {
                Ok(_) | Err(Flow::Exit(_)) | Err(Flow::Return(_)) | Err(Flow::Abort(_)) => {}
                Err(f) => {
                    crate::sys::substitutions_release(mark);
                    return Err(f);
                }
            }
        }
        crate::sys::substitutions_release(mark);
        r
    }

    fn run_command_here(&mut self, cmd: &Command, io: &Io) -> Status {
        match cmd {
            Command::Simple(sc) => {
                // $LINENO: the line the command starts on, in the script being run.
                if let Some(loc) = ast::SourceLocation::location(sc) {
                    self.lineno = loc.start.line;
                }
                self.run_simple(sc, io)
            }
            Command::Compound(cc, redirects) => {
                let io = match redirects {
                    Some(r) => match self.apply_redirects(&r.0, io)? {
                        Some(io) => io,
                        None => return Ok(1),
                    },
                    None => io.clone(),
                };
                self.run_compound(cc, &io)
            }
            Command::Function(def) => {
                let name = def.fname.value.clone();
                self.functions.insert(name, (def.to_string(), def.clone()));
                Ok(0)
            }
            Command::ExtendedTest(t, redirects) => {
                let io = match redirects {
                    Some(r) => match self.apply_redirects(&r.0, io)? {
                        Some(io) => io,
                        None => return Ok(1),
                    },
                    None => io.clone(),
                };
                match crate::test::extended(self, &t.expr, &io) {
                    Ok(true) => Ok(0),
                    Ok(false) => Ok(1),
                    Err(e) => {
                        io.eprint(&format!("bash: {e}\n"));
                        Ok(2)
                    }
                }
            }
        }
    }

    fn run_compound(&mut self, cc: &CompoundCommand, io: &Io) -> Status {
        match cc {
            CompoundCommand::BraceGroup(g) => self.run_list(&g.list, io),
            CompoundCommand::Subshell(s) => {
                let mut sub = self.subshell();
                // A subshell's `exec` redirections end with it.
                let fds = crate::io::shell_fds();
                let status = match sub.run_list(&s.list, io) {
                    Ok(s) => s,
                    Err(Flow::Abort(s)) => s,
                    // A fatal error ends a subshell with 1, as bash's do.
                    Err(Flow::Exit(s)) => {
                        if crate::sys::take_fatal() {
                            1
                        } else {
                            s
                        }
                    }
                    Err(f) => {
                        crate::io::restore_shell_fds(fds);
                        return Err(f);
                    }
                };
                let status = sub.finish(status, io);
                crate::io::restore_shell_fds(fds);
                Ok(status)
            }
            CompoundCommand::IfClause(c) => {
                self.condition_depth += 1;
                let cond = self.run_list(&c.condition, io);
                self.condition_depth -= 1;
                if cond? == 0 {
                    return self.run_list(&c.then, io);
                }
                for e in c.elses.iter().flatten() {
                    match &e.condition {
                        Some(cond) => {
                            self.condition_depth += 1;
                            let r = self.run_list(cond, io);
                            self.condition_depth -= 1;
                            if r? == 0 {
                                return self.run_list(&e.body, io);
                            }
                        }
                        None => return self.run_list(&e.body, io),
                    }
                }
                Ok(0)
            }
            CompoundCommand::ForClause(f) => {
                let values = match &f.values {
                    Some(words) => crate::expand::words(self, words, io)?,
                    None => self.positional.clone(),
                };
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    for v in values {
                        self.set(&f.variable_name, v);
                        if !self.iteration(&f.body.list, io, &mut status)? {
                            break;
                        }
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::ArithmeticForClause(f) => {
                let eval = |sh: &mut Shell,
                            e: &Option<ast::UnexpandedArithmeticExpr>|
                 -> Result<i64, Flow> {
                    match e {
                        Some(e) => crate::expand::arith_str(sh, &e.value, io),
                        None => Ok(1),
                    }
                };
                eval(self, &f.initializer)?;
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    while eval(self, &f.condition)? != 0 {
                        if !self.iteration(&f.body.list, io, &mut status)? {
                            break;
                        }
                        eval(self, &f.updater)?;
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                let until = matches!(cc, CompoundCommand::UntilClause(_));
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    loop {
                        self.condition_depth += 1;
                        let c = self.run_list(&w.0, io);
                        self.condition_depth -= 1;
                        // `while break; do`: break in the condition ends this loop, as in
                        // bash, and so does a `continue` there (bash leaves the loop too).
                        let c = match c {
                            Err(Flow::Break(n)) if n > 1 => return Err(Flow::Break(n - 1)),
                            Err(Flow::Continue(n)) if n > 1 => {
                                return Err(Flow::Continue(n - 1));
                            }
                            Err(Flow::Break(_) | Flow::Continue(_)) => break,
                            other => other?,
                        };
                        if (c == 0) == until {
                            break;
                        }
                        if !self.iteration(&w.1.list, io, &mut status)? {
                            break;
                        }
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::CaseClause(c) => {
                let value = crate::expand::single(self, &c.value.value, io)?;
                let mut i = 0;
                let mut fallthrough = false;
                let mut status = 0;
                while i < c.cases.len() {
                    let item = &c.cases[i];
                    let mut matched = fallthrough;
                    if !matched {
                        for p in &item.patterns {
                            let pat = crate::expand::pattern(self, &p.value, io)?;
                            if crate::expand::shell_pattern_matches(self, &pat, &value) {
                                matched = true;
                                break;
                            }
                        }
                    }
                    if matched {
                        if let Some(cmd) = &item.cmd {
                            status = self.run_list(cmd, io)?;
                        }
                        match item.post_action {
                            ast::CaseItemPostAction::ExitCase => return Ok(status),
                            ast::CaseItemPostAction::UnconditionallyExecuteNextCaseItem => {
                                fallthrough = true;
                            }
                            ast::CaseItemPostAction::ContinueEvaluatingCases => fallthrough = false,
                        }
                    }
                    i += 1;
                }
                Ok(status)
            }
            CompoundCommand::Arithmetic(a) => crate::expand::arith_command(self, &a.expr.value, io),
            CompoundCommand::Coprocess(_) => {
                io.eprint("bash: coproc: not supported in burrow's shell\n");
                Ok(2)
            }
        }
    }

    /// Runs one loop iteration's body; false when the loop must stop (`break`). `break N` and
    /// `continue N` for N > 1 propagate to the enclosing loop with N - 1.
    fn iteration(&mut self, body: &CompoundList, io: &Io, status: &mut i32) -> Result<bool, Flow> {
        match self.run_list(body, io) {
            Ok(s) => {
                *status = s;
                Ok(true)
            }
            Err(Flow::Break(n)) if n > 1 => Err(Flow::Break(n - 1)),
            Err(Flow::Break(_)) => Ok(false),
            Err(Flow::Continue(n)) if n > 1 => Err(Flow::Continue(n - 1)),
            Err(Flow::Continue(_)) => Ok(true),
            Err(f) => Err(f),
        }
    }

    /// Applies redirections; None when one failed (already reported).
    pub fn apply_redirects(
        &mut self,
        redirects: &[IoRedirect],
        io: &Io,
    ) -> Result<Option<Io>, Flow> {
        let mut io = io.clone();
        for r in redirects {
            match r {
                IoRedirect::File(fd, kind, target) => {
                    let fd = fd.unwrap_or(match kind {
                        IoFileRedirectKind::Read
                        | IoFileRedirectKind::DuplicateInput
                        | IoFileRedirectKind::ReadAndWrite => 0,
                        _ => 1,
                    });
                    match (kind, target) {
                        (IoFileRedirectKind::DuplicateOutput, IoFileRedirectTarget::Fd(_))
                        | (
                            IoFileRedirectKind::DuplicateOutput,
                            IoFileRedirectTarget::Duplicate(_),
                        ) => {
                            let src = match target {
                                IoFileRedirectTarget::Fd(s) => Some(*s),
                                IoFileRedirectTarget::Duplicate(w) => {
                                    let t = crate::expand::single(self, &w.value, &io)?;
                                    if t == "-" {
                                        set_fd(&mut io, fd, Sink::Null);
                                        continue;
                                    }
                                    t.parse().ok()
                                }
                                _ => None,
                            };
                            let opened = src.filter(|n| *n >= 3).and_then(|n| io.output_fd(n));
                            let sink = match (src, opened) {
                                (_, Some(s)) => s,
                                (Some(1), _) => io.out.clone(),
                                (Some(2), _) => io.err.clone(),
                                _ => {
                                    io.eprint(&format!(
                                        "bash: {}: Bad file descriptor\n",
                                        src.unwrap_or(-1)
                                    ));
                                    return Ok(None);
                                }
                            };
                            set_fd(&mut io, fd, sink);
                        }
                        (IoFileRedirectKind::DuplicateInput, _) => {
                            // `<&3`, `3<&0`, `<&-`: fd reads what the other reads (one shared
                            // offset), or nothing once closed.
                            let src = match target {
                                IoFileRedirectTarget::Fd(s) => s.to_string(),
                                IoFileRedirectTarget::Duplicate(w) => {
                                    crate::expand::single(self, &w.value, &io)?
                                }
                                _ => String::new(),
                            };
                            if src == "-" {
                                if fd == 0 {
                                    io.stdin = input(Vec::new());
                                } else {
                                    io.fds.remove(&fd);
                                }
                                continue;
                            }
                            match src.parse::<i32>().ok().and_then(|n| io.input_fd(n)) {
                                Some(from) => set_input(&mut io, fd, from),
                                None => {
                                    io.eprint(&format!("bash: {src}: Bad file descriptor\n"));
                                    return Ok(None);
                                }
                            }
                        }
                        (_, IoFileRedirectTarget::Filename(w)) => {
                            let name = crate::expand::single(self, &w.value, &io)?;
                            let path = self.path(&name);
                            match kind {
                                IoFileRedirectKind::Read if name == "/dev/null" => {
                                    set_input(&mut io, fd, input(Vec::new()))
                                }
                                // `< /dev/stdin` leaves the input as it is.
                                IoFileRedirectKind::Read if crate::sys::is_stdin(&path) => {
                                    let stdin = io.stdin.clone();
                                    set_input(&mut io, fd, stdin);
                                }
                                // `<> file` is opened for reading and writing: created when
                                // missing and never truncated, and read as the input.
                                IoFileRedirectKind::Read | IoFileRedirectKind::ReadAndWrite => {
                                    let opened = match kind {
                                        IoFileRedirectKind::ReadAndWrite => {
                                            std::fs::OpenOptions::new()
                                                .read(true)
                                                .write(true)
                                                .create(true)
                                                .truncate(false)
                                                .open(&path)
                                                .map(drop)
                                        }
                                        _ => Ok(()),
                                    };
                                    match opened.and_then(|()| crate::sys::read(&path)) {
                                        Ok(b) => set_input(&mut io, fd, input(b)),
                                        Err(e) => {
                                            io.eprint(&format!(
                                                "bash: {name}: {}\n",
                                                crate::builtins::io_msg(&e)
                                            ));
                                            return Ok(None);
                                        }
                                    }
                                }
                                _ => {
                                    let append = matches!(kind, IoFileRedirectKind::Append);
                                    if name == "/dev/null" {
                                        set_fd(&mut io, fd, Sink::Null);
                                        continue;
                                    }
                                    if name == "/dev/stderr" || name == "/dev/fd/2" {
                                        let s = io.err.clone();
                                        set_fd(&mut io, fd, s);
                                        continue;
                                    }
                                    if name == "/dev/stdout" || name == "/dev/fd/1" {
                                        let s = io.out.clone();
                                        set_fd(&mut io, fd, s);
                                        continue;
                                    }
                                    if let Some(buf) = crate::sys::output_buffer(&path) {
                                        set_fd(&mut io, fd, Sink::Buf(buf));
                                        continue;
                                    }
                                    if self.options.noclobber
                                        && matches!(kind, IoFileRedirectKind::Write)
                                        && path.is_file()
                                    {
                                        io.eprint(&format!(
                                            "bash: {name}: cannot overwrite existing file\n"
                                        ));
                                        return Ok(None);
                                    }
                                    let f = std::fs::OpenOptions::new()
                                        .write(true)
                                        .create(true)
                                        .append(append)
                                        .truncate(!append)
                                        .open(&path);
                                    match f {
                                        Ok(f) => set_fd(
                                            &mut io,
                                            fd,
                                            Sink::File(std::rc::Rc::new(std::cell::RefCell::new(
                                                f,
                                            ))),
                                        ),
                                        Err(e) => {
                                            io.eprint(&format!(
                                                "bash: {name}: {}\n",
                                                crate::builtins::io_msg(&e)
                                            ));
                                            return Ok(None);
                                        }
                                    }
                                }
                            }
                        }
                        (
                            IoFileRedirectKind::Write
                            | IoFileRedirectKind::Append
                            | IoFileRedirectKind::Clobber,
                            IoFileRedirectTarget::ProcessSubstitution(
                                k @ ast::ProcessSubstitutionKind::Write,
                                cmd,
                            ),
                        ) => {
                            // `> >(cmd)`: the output goes to cmd when the command ends.
                            let Some(w) = self.process_substitution(k, cmd, &io)? else {
                                return Ok(None);
                            };
                            let Some(buf) =
                                crate::sys::output_buffer(std::path::Path::new(&w.value))
                            else {
                                return Ok(None);
                            };
                            set_fd(&mut io, fd, Sink::Buf(buf));
                        }
                        (
                            IoFileRedirectKind::Read,
                            IoFileRedirectTarget::ProcessSubstitution(k, cmd),
                        ) => {
                            // `< <(cmd)`: cmd's output on stdin (its fd is free again).
                            let mark = crate::sys::substitutions_mark();
                            let Some(w) = self.process_substitution(k, cmd, &io)? else {
                                return Ok(None);
                            };
                            let bytes = crate::sys::read(&w.value).unwrap_or_default();
                            crate::sys::substitutions_release(mark);
                            io.stdin = input(bytes);
                        }
                        _ => {
                            io.eprint("bash: unsupported redirection\n");
                            return Ok(None);
                        }
                    }
                }
                IoRedirect::HereDocument(fd, doc) => {
                    let text = if doc.requires_expansion {
                        crate::expand::heredoc(self, &doc.doc.value, &io)?
                    } else {
                        doc.doc.value.clone()
                    };
                    set_input(&mut io, fd.unwrap_or(0), input(text.into_bytes()));
                }
                IoRedirect::HereString(fd, w) => {
                    let mut text = crate::expand::single(self, &w.value, &io)?;
                    text.push('\n');
                    set_input(&mut io, fd.unwrap_or(0), input(text.into_bytes()));
                }
                IoRedirect::OutputAndError(w, append) => {
                    let name = crate::expand::single(self, &w.value, &io)?;
                    if name == "/dev/null" {
                        io.out = Sink::Null;
                        io.err = Sink::Null;
                        continue;
                    }
                    if self.options.noclobber && !*append && self.path(&name).is_file() {
                        io.eprint(&format!("bash: {name}: cannot overwrite existing file\n"));
                        return Ok(None);
                    }
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .append(*append)
                        .truncate(!*append)
                        .open(self.path(&name));
                    match f {
                        Ok(f) => {
                            let s = Sink::File(std::rc::Rc::new(std::cell::RefCell::new(f)));
                            io.out = s.clone();
                            io.err = s;
                        }
                        Err(e) => {
                            io.eprint(&format!("bash: {name}: {}\n", crate::builtins::io_msg(&e)));
                            return Ok(None);
                        }
                    }
                }
            }
        }
        Ok(Some(io))
    }

    fn run_simple(&mut self, sc: &ast::SimpleCommand, io: &Io) -> Status {
        let mut assignments = Vec::new();
        let mut words: Vec<ast::Word> = Vec::new();
        let mut redirects = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _) => assignments.push(a.clone()),
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, cmd) => {
                    match self.process_substitution(kind, cmd, io)? {
                        Some(w) => words.push(w),
                        None => return Ok(2),
                    }
                }
            }
        }
        if let Some(w) = &sc.word_or_name {
            words.push(w.clone());
        }
        // `declare -a a=(...)`, `local arr=("$@")`: a declaration builtin's array assignments
        // are assignments (their items expanded as an array's), not words.
        let declaration = sc.word_or_name.as_ref().is_some_and(|w| {
            matches!(
                w.value.as_str(),
                "readonly" | "declare" | "local" | "typeset"
            )
        });
        let mut array_assignments = Vec::new();
        for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _)
                    if declaration && matches!(a.value, ast::AssignmentValue::Array(_)) =>
                {
                    array_assignments.push(a.clone());
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, cmd) => {
                    match self.process_substitution(kind, cmd, io)? {
                        Some(w) => words.push(w),
                        None => return Ok(2),
                    }
                }
            }
        }
        // Aliases: the first word, unquoted.
        if let Some(first) = words.first()
            && let Some(alias) = self.aliases.get(&first.value).cloned()
        {
            let rest: Vec<String> = words[1..].iter().map(|w| w.value.clone()).collect();
            let src = format!("{alias} {}", rest.join(" "));
            let io = match self.apply_redirects(&redirects, io)? {
                Some(io) => io,
                None => return Ok(1),
            };
            let mut s = self.clone();
            s.aliases.remove(&first.value);
            let r = s.run_script(&src, &io);
            // Keep state changes of the expanded alias (it runs in this shell).
            let aliases = std::mem::take(&mut self.aliases);
            *self = s;
            self.aliases = aliases;
            return r;
        }
        self.subst_status = None;
        // `export x=~/bin:~/lib`: a declaration builtin's assignment arguments get an
        // assignment's tilde expansion (after `=` and each `:`), as in bash.
        if words.first().is_some_and(|w| {
            matches!(
                w.value.as_str(),
                "export" | "readonly" | "declare" | "local" | "typeset"
            )
        }) {
            for w in words.iter_mut().skip(1) {
                if let Some(eq) = w.value.find('=')
                    && w.value[..eq]
                        .trim_end_matches('+')
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && eq > 0
                {
                    let (name, value) = w.value.split_at(eq + 1);
                    // `:` before the value makes a leading `~` one to expand as well.
                    let value = crate::expand::assignment_tildes(self, &format!(":{value}"));
                    w.value = format!("{name}{}", &value[1..]);
                }
            }
        }
        let argv = crate::expand::words(self, &words, io)?;
        // `exec` with only redirections (and `{var}` names for them) changes the shell's own
        // descriptors for the rest of the call.
        if argv.first().map(String::as_str) == Some("exec")
            && !redirects.is_empty()
            && argv[1..].iter().all(|a| fd_var(a).is_some())
        {
            return self.exec_redirects(&argv[1..], &redirects, io);
        }
        let io2 = match self.apply_redirects(&redirects, io)? {
            Some(io) => io,
            None => return Ok(1),
        };
        if !array_assignments.is_empty() {
            return self.declare_arrays(&argv, &array_assignments, &io2);
        }
        if argv.is_empty() {
            for a in &assignments {
                if !self.assign(a, io)? {
                    return Err(Flow::Abort(1));
                }
            }
            // No command: the status is the last command substitution's, as in bash.
            return Ok(self.subst_status.take().unwrap_or(0));
        }
        // Assignments before a command apply to that command only (exported to it).
        let mut saved = Vec::new();
        for a in &assignments {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n) => n.clone(),
                ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            saved.push((name.clone(), self.vars.get(&name).cloned()));
            if !self.assign(a, io)? {
                // bash runs no command when one of its assignments is refused.
                saved.pop();
                for (name, old) in saved {
                    match old {
                        Some(v) => self.vars.insert(name, v),
                        None => self.vars.remove(&name),
                    };
                }
                return Err(Flow::Abort(1));
            }
            if let Some(v) = self.vars.get_mut(&name) {
                v.exported = true;
            }
        }
        if self.options.xtrace {
            io2.eprint(&format!("+ {}\n", argv.join(" ")));
        }
        let mut r = self.dispatch(&argv, &io2);
        // It wrote to a pipe whose reader has gone: SIGPIPE ends it (and the stage it is in).
        if r.is_ok() && io.out.broken() {
            r = Err(Flow::Exit(141));
        }
        for (name, old) in saved {
            match old {
                Some(v) => {
                    self.vars.insert(name, v);
                }
                None => {
                    self.vars.remove(&name);
                }
            }
        }
        io2.out.flush();
        r
    }

    /// A declaration builtin with array assignments (`declare -A m=([k]=v) n`): each array is
    /// declared with the options (so `-A`, `-i` and a function's `local` apply first), then
    /// assigned as `a=(...)` is, then made readonly if asked; the other names follow.
    fn declare_arrays(&mut self, argv: &[String], arrays: &[ast::Assignment], io: &Io) -> Status {
        let Some(cmd) = argv.first() else {
            return Ok(0);
        };
        let options: Vec<String> = argv[1..]
            .iter()
            .take_while(|a| a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) && *a != "--")
            .cloned()
            .collect();
        let readonly = cmd == "readonly"
            || options
                .iter()
                .any(|o| o.starts_with('-') && o.contains('r'));
        // The declaration itself: never readonly yet (the values are still to come).
        let mut first: Vec<String> = vec![if cmd == "readonly" {
            "declare".to_string()
        } else {
            cmd.clone()
        }];
        if cmd == "readonly" {
            first.push("-g".to_string());
        }
        for o in &options {
            let o = o.replace('r', "");
            if o.len() > 1 {
                first.push(o);
            }
        }
        let mut status = 0;
        for a in arrays {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n)
                | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            if self.readonly_refused(&name, io) {
                status = 1;
                continue;
            }
            let mut declare = first.clone();
            declare.push(name.clone());
            let s = self.dispatch(&declare, io)?;
            if s != 0 {
                status = s;
                continue;
            }
            if !self.assign(a, io)? {
                status = 1;
                continue;
            }
            if readonly {
                self.set_attr(&name, 'r', true);
            }
        }
        let names = argv.len() - 1 - options.len();
        if names > 0 {
            let s = self.dispatch(argv, io)?;
            if s != 0 {
                status = s;
            }
        }
        Ok(status)
    }

    /// `exec 3> file`, `exec >> log 2>&1`, `exec {fd}> file`, `exec 3>&-`, `exec 3< file`,
    /// `exec 4<<EOF`: points the shell's descriptors at files, here-documents or other
    /// descriptors, or closes them. A new standard input (`exec < file`) is refused.
    fn exec_redirects(&mut self, names: &[String], redirects: &[IoRedirect], io: &Io) -> Status {
        let mut names = names.iter().filter_map(|n| fd_var(n));
        for r in redirects {
            let (fd, kind, target) = match r {
                IoRedirect::File(fd, kind, target) => (fd, kind, target),
                IoRedirect::HereDocument(Some(fd), _) | IoRedirect::HereString(Some(fd), _)
                    if *fd >= 3 =>
                {
                    let Some(opened) = self.apply_redirects(std::slice::from_ref(r), io)? else {
                        return Ok(1);
                    };
                    crate::io::set_shell_input(*fd, opened.input_fd(*fd));
                    continue;
                }
                _ => {
                    io.eprint(
                        "bash: exec: a new standard input cannot be kept open in burrow's shell\n",
                    );
                    return Ok(1);
                }
            };
            let closing = match target {
                IoFileRedirectTarget::Duplicate(w) => {
                    crate::expand::single(self, &w.value, io)? == "-"
                }
                _ => false,
            };
            let input = matches!(
                kind,
                IoFileRedirectKind::Read
                    | IoFileRedirectKind::DuplicateInput
                    | IoFileRedirectKind::ReadAndWrite
            );
            let fd = match (fd, names.next()) {
                (Some(n), _) => *n,
                (None, Some(var)) if closing => match self.get(var).and_then(|v| v.parse().ok()) {
                    Some(n) => n,
                    None => {
                        io.eprint(&format!("bash: {var}: ambiguous redirect\n"));
                        return Ok(1);
                    }
                },
                (None, Some(var)) => {
                    let n = crate::io::free_shell_fd();
                    self.set(var, n.to_string());
                    n
                }
                (None, None) if input => 0,
                (None, None) => 1,
            };
            if closing {
                let closed = (fd <= 2).then_some(Sink::Null);
                crate::io::set_shell_fd(fd, closed);
                continue;
            }
            if input && fd >= 3 {
                let one = IoRedirect::File(Some(fd), kind.clone(), target.clone());
                let Some(opened) = self.apply_redirects(&[one], io)? else {
                    return Ok(1);
                };
                crate::io::set_shell_input(fd, opened.input_fd(fd));
                continue;
            }
            if input {
                io.eprint(&format!(
                    "bash: exec: {fd}<: a new standard input cannot be kept open in burrow's shell\n"
                ));
                return Ok(1);
            }
            // Open it as the command's stdout would be, then keep that sink as `fd`.
            let one = IoRedirect::File(Some(1), kind.clone(), target.clone());
            let Some(opened) = self.apply_redirects(&[one], io)? else {
                return Ok(1);
            };
            crate::io::set_shell_fd(fd, Some(opened.out));
        }
        Ok(0)
    }

    /// An assignment statement (or a command's prefix assignment). False when it was refused
    /// (a readonly variable), with bash's message printed.
    pub fn assign(&mut self, a: &ast::Assignment, io: &Io) -> Result<bool, Flow> {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => {
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(w) => crate::expand::single(self, &w.value, io)?,
                    ast::AssignmentValue::Array(_) => {
                        io.eprint(&format!(
                            "bash: {n}[{index}]: cannot assign list to array member\n"
                        ));
                        return Ok(false);
                    }
                };
                if self.readonly_refused(n, io) {
                    return Ok(false);
                }
                self.array_set(n, index, value, a.append);
                return Ok(true);
            }
        };
        if self.readonly_refused(&name, io) {
            return Ok(false);
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                let raw = crate::expand::assignment_tildes(self, &w.value);
                let value = crate::expand::single(self, &raw, io)?;
                let old = a.append.then(|| self.get(&name).unwrap_or("").to_string());
                let value = self.shaped(&name, value, old.as_deref(), "", io)?;
                self.set_shaped(&name, value);
            }
            ast::AssignmentValue::Array(items) => {
                let assoc = matches!(self.arrays.get(&name), Some(Array::Assoc(_)));
                let mut array = match (a.append, self.arrays.remove(&name)) {
                    (true, Some(existing)) => existing,
                    (true, None) => {
                        let mut m = BTreeMap::new();
                        if let Some(v) = self.vars.remove(&name) {
                            m.insert(0, v.value);
                        }
                        Array::Indexed(m)
                    }
                    (false, _) if assoc => Array::Assoc(BTreeMap::new()),
                    (false, _) => Array::Indexed(BTreeMap::new()),
                };
                self.vars.remove(&name);
                let mut next = array.next_index();
                for (key, w) in items {
                    let key = match key {
                        Some(k) => Some(crate::expand::single(self, &k.value, io)?),
                        None => None,
                    };
                    let vals = match &key {
                        // `[k]=v` is one value, unsplit.
                        Some(_) => vec![crate::expand::single(self, &w.value, io)?],
                        None => crate::expand::words(self, std::slice::from_ref(w), io)?,
                    };
                    for v in vals {
                        match &mut array {
                            Array::Indexed(m) => {
                                let i = match &key {
                                    Some(k) => crate::expand::arith_str(self, k, io).unwrap_or(0),
                                    None => next,
                                };
                                m.insert(i, v);
                                next = i + 1;
                            }
                            Array::Assoc(m) => {
                                m.insert(key.clone().unwrap_or_default(), v);
                            }
                        }
                    }
                }
                if self.attrs.contains_key(&name) {
                    let mut shaped = array.clone();
                    match &mut shaped {
                        Array::Indexed(m) => {
                            for v in m.values_mut() {
                                *v = self.attr_value(&name, std::mem::take(v), None);
                            }
                        }
                        Array::Assoc(m) => {
                            for v in m.values_mut() {
                                *v = self.attr_value(&name, std::mem::take(v), None);
                            }
                        }
                    }
                    array = shaped;
                }
                self.arrays.insert(name, array);
            }
        }
        Ok(true)
    }

    /// Runs a command by name: a function, a shell builtin, a program or script on PATH (which
    /// may shadow the built-in utilities, as /workspace/.bin comes first), a built-in
    /// utility; else bash's 127.
    pub fn dispatch(&mut self, argv: &[String], io: &Io) -> Status {
        // A `timeout` whose time is up stops its command here, before the next one.
        if crate::sys::deadline_passed() {
            return Err(Flow::Exit(124));
        }
        // `/usr/bin/cat` and `/bin/cat` are the built-in `cat` (the sandbox lists every
        // built-in utility there, as empty files).
        if let Some(base) = argv[0]
            .strip_prefix("/usr/bin/")
            .or_else(|| argv[0].strip_prefix("/bin/"))
            && crate::builtins::is_builtin(base)
            && (!crate::builtins::is_shell_builtin(base)
                || matches!(
                    base,
                    "echo" | "printf" | "true" | "false" | "test" | "[" | "pwd"
                ))
        {
            let mut argv = argv.to_vec();
            argv[0] = base.to_string();
            return crate::sys::with_stdin(&io.stdin, || self.dispatch_name(&argv, io));
        }
        crate::sys::with_stdin(&io.stdin, || self.dispatch_name(argv, io))
    }

    fn dispatch_name(&mut self, argv: &[String], io: &Io) -> Status {
        let name = argv[0].as_str();
        if let Some((_, def)) = self.functions.get(name).cloned() {
            return self.call_function(&def, argv, io);
        }
        if !crate::builtins::is_shell_builtin(name)
            && let Some(path) = crate::process::find(self, name)
        {
            return crate::process::exec(self, &path, argv, io);
        }
        if let Some(s) = crate::builtins::run(self, argv, io) {
            return s;
        }
        if name.contains('/') {
            let p = self.path(name);
            if p.is_dir() {
                io.eprint(&format!("bash: {name}: Is a directory\n"));
                return Ok(126);
            }
            io.eprint(&format!("bash: {name}: No such file or directory\n"));
            return Ok(127);
        }
        io.eprint(&format!("bash: {name}: command not found\n"));
        Ok(127)
    }

    fn call_function(&mut self, def: &ast::FunctionDefinition, argv: &[String], io: &Io) -> Status {
        // bash's FUNCNEST, fixed: the interpreter recurses on the guest stack, and a clear
        // error beats a trap when a function recurses without end.
        if self.locals.len() >= MAX_FUNCTION_NESTING {
            io.eprint(&format!(
                "bash: {}: maximum function nesting level exceeded ({MAX_FUNCTION_NESTING})\n",
                argv[0]
            ));
            return Ok(1);
        }
        let saved_pos = std::mem::replace(&mut self.positional, argv[1..].to_vec());
        self.locals.push(Vec::new());
        let ast::FunctionBody(body, redirects) = &def.body;
        let io = match redirects {
            Some(r) => match self.apply_redirects(&r.0, io)? {
                Some(io) => io,
                None => return Ok(1),
            },
            None => io.clone(),
        };
        let r = self.run_compound(body, &io);
        let frame = self.locals.pop().unwrap_or_default();
        for (name, old_var, old_array, old_attrs) in frame.into_iter().rev() {
            match old_attrs {
                Some(a) => self.attrs.insert(name.clone(), a),
                None => self.attrs.remove(&name),
            };
            match old_var {
                Some(v) => {
                    self.vars.insert(name.clone(), v);
                }
                None => {
                    self.vars.remove(&name);
                }
            }
            match old_array {
                Some(a) => {
                    self.arrays.insert(name, a);
                }
                None => {
                    self.arrays.remove(&name);
                }
            }
        }
        self.positional = saved_pos;
        match r {
            Err(Flow::Return(s)) => Ok(s),
            other => other,
        }
    }

    /// `<(cmd)`: runs cmd now in a copy of the shell (bash runs it alongside; its output is
    /// the same) and gives the word `/dev/fd/N` that reads its output, which the built-in
    /// utilities open like a file. `>(cmd)` is refused (None after the message).
    fn process_substitution(
        &mut self,
        kind: &ast::ProcessSubstitutionKind,
        cmd: &ast::SubshellCommand,
        io: &Io,
    ) -> Result<Option<ast::Word>, Flow> {
        if matches!(kind, ast::ProcessSubstitutionKind::Write) {
            // `>(cmd)`: the command writes into a buffer; cmd reads it when the command ends
            // (see `run_command`), with this shell's output.
            let (name, buf) = crate::sys::output_substitution();
            PENDING_OUTPUTS.with(|p| p.borrow_mut().push((buf, cmd.clone(), io.clone())));
            return Ok(Some(ast::Word {
                value: name,
                loc: None,
            }));
        }
        let (r, bytes) = self.in_subshell(io, |sub, sub_io| sub.run_list(&cmd.list, sub_io));
        match r {
            Ok(_) | Err(Flow::Exit(_)) | Err(Flow::Return(_)) | Err(Flow::Abort(_)) => {}
            Err(f) => return Err(f),
        }
        let name = crate::sys::substitution(bytes);
        Ok(Some(ast::Word {
            value: name,
            loc: None,
        }))
    }

    /// Runs `f` in a copy of the shell with empty stdin and stdout captured: its result and
    /// the bytes it wrote (for `$(...)` and `<(...)`).
    fn in_subshell(
        &mut self,
        io: &Io,
        f: impl FnOnce(&mut Shell, &Io) -> Status,
    ) -> (Status, Vec<u8>) {
        let (out, buf) = Sink::buffer();
        let sub_io = Io {
            stdin: input(Vec::new()),
            out,
            err: io.err.clone(),
            fds: io.fds.clone(),
        };
        let mut sub = self.subshell();
        // Like `( ... )`, its `exec` redirections end with it.
        let fds = crate::io::shell_fds();
        let r = match f(&mut sub, &sub_io) {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Abort(s)) => Ok(sub.finish(s, &sub_io)),
            other => other,
        };
        crate::io::restore_shell_fds(fds);
        let bytes = buf.borrow().clone();
        (r, bytes)
    }

    /// Runs `src` in a copy of the shell and returns its stdout (for `$(...)`).
    pub fn capture(&mut self, src: &str, io: &Io) -> Result<String, Flow> {
        // Outside POSIX mode bash clears -e in command substitutions (unless
        // `shopt -s inherit_errexit`).
        let (r, bytes) = self.in_subshell(io, |sub, sub_io| {
            sub.options.errexit &= sub.options.shopt("inherit_errexit");
            sub.run_script(src, sub_io)
        });
        let status = match r {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Return(s)) | Err(Flow::Abort(s)) => s,
            Err(_) => 0,
        };
        self.last_status = status;
        self.subst_status = Some(status);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}

/// How much of its stdin `cmd` reads when that is known without running it: `head` with
/// literal arguments and no file operand (`head`, `-N`, `-n N`, `-c N`).
fn reads_prefix(cmd: &Command) -> Option<crate::io::Wants> {
    use crate::io::Wants;
    let Command::Simple(sc) = cmd else {
        return None;
    };
    if sc.prefix.is_some() || sc.word_or_name.as_ref()?.value != "head" {
        return None;
    }
    let mut args = Vec::new();
    for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(w) => args.push(w.value.as_str()),
            _ => return None,
        }
    }
    let literal = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '=')
    };
    if !args.iter().all(|a| literal(a)) {
        return None;
    }
    let count = |s: &str| s.parse::<usize>().ok();
    let mut wants = Wants::Lines(10);
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        wants = if a == "-n" || a == "-c" {
            i += 1;
            let n = count(args.get(i)?)?;
            if a == "-n" {
                Wants::Lines(n)
            } else {
                Wants::Bytes(n)
            }
        } else if let Some(n) = a.strip_prefix("--lines=") {
            Wants::Lines(count(n)?)
        } else if let Some(n) = a.strip_prefix("--bytes=") {
            Wants::Bytes(count(n)?)
        } else if let Some(n) = a.strip_prefix("-n") {
            Wants::Lines(count(n)?)
        } else if let Some(n) = a.strip_prefix("-c") {
            Wants::Bytes(count(n)?)
        } else if let Some(n) = a.strip_prefix('-') {
            Wants::Lines(count(n)?)
        } else {
            // A file operand: head does not read the pipe at all.
            return None;
        };
        i += 1;
    }
    Some(wants)
}

/// The variable name of a `{name}` word (bash's `exec {fd}> file`), if it is one.
fn fd_var(word: &str) -> Option<&str> {
    let name = word.strip_prefix('{')?.strip_suffix('}')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// Whether a pipeline's failure is left to the commands inside it under `set -e`: a lone
/// brace group, `if`, `case`, `for`, `while` or `until` without redirections of its own (a
/// subshell's failure, `(( ))`, `[[ ]]` and a failed redirection do count, as in bash).
fn errexit_exempt(p: &Pipeline) -> bool {
    match p.seq.as_slice() {
        [Command::Compound(cc, None)] => matches!(
            cc,
            CompoundCommand::BraceGroup(_)
                | CompoundCommand::IfClause(_)
                | CompoundCommand::CaseClause(_)
                | CompoundCommand::ForClause(_)
                | CompoundCommand::ArithmeticForClause(_)
                | CompoundCommand::WhileClause(_)
                | CompoundCommand::UntilClause(_)
        ),
        _ => false,
    }
}

fn set_fd(io: &mut Io, fd: i32, sink: Sink) {
    match fd {
        1 => io.out = sink,
        2 => io.err = sink,
        0 => {}
        _ => {
            io.fds.insert(fd, crate::io::Fd::Out(sink));
        }
    }
}

/// Makes `fd` read `from` (0 is stdin).
fn set_input(io: &mut Io, fd: i32, from: crate::io::Input) {
    match fd {
        0 => io.stdin = from,
        _ => {
            io.fds.insert(fd, crate::io::Fd::In(from));
        }
    }
}
