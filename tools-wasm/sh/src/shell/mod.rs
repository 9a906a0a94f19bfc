//! The interpreter: parse (brush-parser) → expand (`expand`) → execute (this module and its
//! children), with the state that lives between tool calls (`state`). Pipelines run their
//! stages one after another with in-memory pipes (`io`; each stage in a copy of the shell
//! state, as bash runs pipeline stages in subshells); `$(...)` runs in a copy too. The shell's
//! own builtins (`cd`, `read`, `set`, ...) are in `builtins`, conditional expressions in
//! `test`, programs found on PATH in `process`. The utilities it runs (`sort`, `sed`, ...)
//! live apart, in the utility crates; `utilities` registers their commands, and `ctx` is what
//! they see of the shell (`sh_utility::Ctx`).

pub mod builtins;
mod command;
mod ctx;
mod exec;
pub mod nameref;
pub use exec::bash_command;
pub mod expand;
pub mod extglob;
pub use sh_utility::io;
pub mod process;
mod redirect;
pub mod state;
pub mod test;
pub mod utilities;
pub mod xtrace;

use std::collections::BTreeMap;
use std::path::PathBuf;

use brush_parser::ast::{
    self, AndOr, Command, CompoundCommand, CompoundList, IoFileRedirectKind, IoFileRedirectTarget,
    IoRedirect, Pipeline,
};
use serde::{Deserialize, Serialize};

use crate::shell::io::{Io, Sink, input};

pub use sh_utility::{Flow, Status};

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
    /// `set -a`: every variable assigned is exported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allexport: bool,
    /// `set +B`: no brace expansion.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_braceexpand: bool,
    /// `set -n`: commands are read, not run (for the rest of this call only, so a session
    /// is never left unable to run anything).
    #[serde(skip)]
    pub noexec: bool,
    /// Options only an interactive shell acts on (`set -o emacs`, `shopt -s histappend`)
    /// whose state differs from bash's default: kept so they are shown as set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flipped: Vec<String>,
    /// The directory stack below its top (`pushd`, `popd`, `dirs`), nearest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirstack: Vec<String>,
    /// `unset PS4` was run (so a saved shell without it stays without it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ps4_unset: bool,
    /// `umask`'s mask (None: bash's usual 022).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
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
    /// An indexed array of `values`, from index 0.
    pub fn list(values: impl IntoIterator<Item = String>) -> Array {
        Array::Indexed((0..).zip(values).collect())
    }

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

/// The shell's own variables (not exported), as a Linux bash in the sandbox's identity
/// (`uname`, `id`, `hostname`, `ps`) has them; UID, EUID and PPID are readonly.
pub const DEFAULT_VARS: &[(&str, &str)] = &[
    ("IFS", " \t\n"),
    ("PS4", "+ "),
    ("UID", "1000"),
    ("EUID", "1000"),
    ("PPID", "0"),
    ("HOSTNAME", "burrow"),
    ("OSTYPE", "linux-gnu"),
    ("_", "/bin/bash"),
    ("OPTIND", "1"),
];

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
    /// Above 0 while a trap's action runs: $LINENO stays the line that triggered it.
    pub lineno_fixed: u32,
    /// How this shell got its script, for `$-`: `c` (`-c`), `s` (standard input), or
    /// None (a script file).
    pub invocation: Option<char>,
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
            lineno_fixed: 0,
            invocation: None,
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
        for &(k, v) in DEFAULT_VARS {
            s.vars.insert(
                k.into(),
                Var {
                    value: v.into(),
                    exported: false,
                },
            );
        }
        for n in ["UID", "EUID", "PPID"] {
            s.set_attr(n, 'r', true);
        }
        builtins::refresh_option_vars(&mut s);
        s
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        if self.is_ref(name) {
            let target = self.resolve_ref(name);
            return match nameref::element(&target) {
                Some((base, index)) => match self.arrays.get(base)? {
                    Array::Indexed(m) => m.get(&index.parse().ok()?).map(String::as_str),
                    Array::Assoc(m) => m.get(index).map(String::as_str),
                },
                None => self.get_plain(&target),
            };
        }
        self.get_plain(name)
    }

    fn get_plain(&self, name: &str) -> Option<&str> {
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
        let io = crate::shell::io::Io::discard();
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
            let n = crate::shell::expand::arith_str_in(self, &value, who, io)?;
            let base = match old {
                Some(o) => crate::shell::expand::arith_str_in(self, o, who, io)?,
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
        if self.is_ref(name) {
            let target = self.resolve_ref(name);
            if target.is_empty() {
                return;
            }
            match nameref::element(&target) {
                Some((base, index)) => {
                    let (base, index) = (base.to_string(), index.to_string());
                    self.array_set(&base, &index, value.into(), false);
                }
                None => self.set(&target, value),
            }
            return;
        }
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
        let export = self.options.allexport;
        match self.vars.get_mut(name) {
            Some(v) => {
                v.value = value;
                v.exported |= export;
            }
            None => {
                self.vars.insert(
                    name.to_string(),
                    Var {
                        value,
                        exported: export,
                    },
                );
            }
        }
    }

    /// `$_`: the last argument of the last simple command (never exported by `set -a`).
    pub fn set_last_arg(&mut self, value: String) {
        match self.vars.get_mut("_") {
            Some(v) => v.value = value,
            None => {
                self.vars.insert(
                    "_".into(),
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
        let io = crate::shell::io::Io::discard();
        match self.arrays.get(name) {
            Some(Array::Assoc(_)) => {
                crate::shell::expand::single(self, index, &io).unwrap_or_else(|_| index.to_string())
            }
            _ => {
                let i = crate::shell::expand::arith_str(self, index, &io).unwrap_or(0);
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
        let target = self.resolve_ref(name);
        let name = target.as_str();
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
        let target = self.resolve_ref(name);
        if target.is_empty() {
            return;
        }
        let name = match nameref::element(&target) {
            // A nameref to an element is not an array of its own.
            Some(_) => name,
            None => target.as_str(),
        };
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
}

/// Utilities that read their stdin a piece at a time (so an endless writer into them is
/// ended by the reader after them, as in bash) and touch nothing of the shell's state: in a
/// pipeline they may run as a streaming stage of their own (see [`io::Spill`]). Others
/// (sort, which needs its whole input before its first line) stay buffered stages.
const STREAM_FILTERS: &[&str] = &["awk", "cat", "egrep", "fgrep", "grep", "head", "sed", "wc"];

/// Whether expanding `word` may run a command: a `$(...)` (not `$((...))`, arithmetic) or
/// backquotes.
fn runs_commands(word: &str) -> bool {
    word.contains('`')
        || word
            .match_indices("$(")
            .any(|(i, _)| word.as_bytes().get(i + 2) != Some(&b'('))
}

/// Whether `argv` (a [`STREAM_FILTERS`] utility, expanded) reads its stdin piecewise: `cat`
/// only without options (`cat -n` numbers its input whole).
pub fn streams_stdin(argv: &[String]) -> bool {
    match argv.first().map(String::as_str) {
        Some("cat") => argv[1..].iter().all(|a| a == "-" || !a.starts_with('-')),
        // grep searches a streamed stdin a piece at a time unless it has context to show or
        // files to list; then it reads its input whole, as it would in the shell.
        Some("head" | "wc" | "grep" | "egrep" | "fgrep") => true,
        Some("sed") => sed_streams(&argv[1..]),
        Some("awk") => awk_streams(&argv[1..]),
        _ => false,
    }
}

/// Whether awk with these arguments reads only its stdin: a program text and the options
/// -F and -v, and no file operand or assignment (which bash's awk would also read or apply
/// in order); anything else runs it as a buffered stage.
fn awk_streams(args: &[String]) -> bool {
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-F" | "-v" => i += 1,
            "--" => {
                operands += args.len() - i - 1;
                break;
            }
            a if (a.starts_with("-F") || a.starts_with("-v")) && a.len() > 2 => {}
            a if a.starts_with('-') && a.len() > 1 => return false,
            _ => operands += 1,
        }
        i += 1;
    }
    operands == 1
}

/// Whether sed with these arguments edits its stdin (no file operand, not `-i`) with only
/// the options whose meaning is plain here (-n, -E/-r, -e SCRIPT); anything else runs it
/// as a buffered stage, where its option handling decides.
fn sed_streams(args: &[String]) -> bool {
    let mut operands = 0;
    let mut expressions = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-e" | "--expression" => {
                expressions = true;
                i += 1;
            }
            "-n" | "-E" | "-r" | "-nE" | "-En" | "-nr" | "-rn" | "--quiet" | "--silent"
            | "--regexp-extended" => {}
            a if a.starts_with("--expression=") => expressions = true,
            a if a.starts_with('-') && a.len() > 1 => return false,
            _ => operands += 1,
        }
        i += 1;
    }
    // The script is the first operand unless -e gave it; any other operand is a file.
    operands == usize::from(!expressions)
}

/// The words of `cmd` when it may run as a streaming stage: a simple command without
/// assignments or redirections, not a shell builtin, function or alias, whose words expand
/// without running anything (no `$(...)`, backquotes or process substitution), so expanding
/// them when the stage starts is expanding them as its subshell would. Whether it then
/// streams is decided once they are expanded ([`streams_stdin`], or a WebAssembly program on
/// PATH).
fn stream_words(sh: &Shell, cmd: &Command) -> Option<Vec<ast::Word>> {
    let Command::Simple(sc) = cmd else {
        return None;
    };
    if sc.prefix.is_some() {
        return None;
    }
    let name = sc.word_or_name.as_ref()?;
    if crate::shell::builtins::is_shell_builtin(&name.value)
        || sh.functions.contains_key(&name.value)
        || sh.aliases.contains_key(&name.value)
        || runs_commands(&name.value)
    {
        return None;
    }
    let mut words = vec![name.clone()];
    for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(w) if !runs_commands(&w.value) => {
                words.push(w.clone())
            }
            _ => return None,
        }
    }
    Some(words)
}

/// How much of its stdin `cmd` reads when that is known without running it and small
/// enough for the pipe to hold (a prefix of at most 10,000 lines or 1 MiB; a larger one
/// streams instead): `head` with no file operand (`head`, `-N`, `-n N`, `-c N`), its
/// arguments literal or plain variables (`head -n "$n"`, `head -$n`: a stage sees the
/// variables the pipeline started with).
fn reads_prefix(sh: &Shell, cmd: &Command) -> Option<crate::shell::io::Wants> {
    use crate::shell::io::Wants;
    let Command::Simple(sc) = cmd else {
        return None;
    };
    if sc.prefix.is_some() {
        return None;
    }
    // Commands that never read their standard input: a writer into them meets SIGPIPE once
    // it has filled the pipe (`cat /dev/urandom | sleep 1`).
    if matches!(
        sc.word_or_name.as_ref()?.value.as_str(),
        "sleep" | "true" | "false" | ":" | "echo" | "printf" | "exit"
    ) {
        return Some(Wants::Bytes(0));
    }
    if sc.word_or_name.as_ref()?.value != "head" {
        return None;
    }
    let mut args = Vec::new();
    for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(w) => args.push(plain_word(sh, &w.value)?),
            // Where head's output goes does not change what it reads (`head -2 >/dev/null`);
            // a redirection of its input does.
            ast::CommandPrefixOrSuffixItem::IoRedirect(IoRedirect::OutputAndError(..)) => {}
            ast::CommandPrefixOrSuffixItem::IoRedirect(IoRedirect::File(
                fd,
                IoFileRedirectKind::Write
                | IoFileRedirectKind::Append
                | IoFileRedirectKind::Clobber
                | IoFileRedirectKind::DuplicateOutput,
                _,
            )) if *fd != Some(0) => {}
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
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
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
    match wants {
        Wants::Lines(n) if n > 10_000 => None,
        Wants::Bytes(n) if n > 1 << 20 => None,
        _ => Some(wants),
    }
}

/// A word's value when it is made of literal characters, double quotes and plain variables
/// (`$n`, `${n}`: set, not a nameref, not special or dynamic) and nothing that could run
/// anything; None otherwise.
fn plain_word(sh: &Shell, word: &str) -> Option<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = word;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            rest = &rest[1..];
            continue;
        }
        if c != '$' {
            if matches!(c, '`' | '\\' | '\'') {
                return None;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let (name, after) = match rest[1..].strip_prefix('{') {
            Some(braced) => {
                let end = braced.find('}')?;
                (&braced[..end], &braced[end + 1..])
            }
            None => {
                let end = rest[1..]
                    .find(|c: char| !ident(c))
                    .map_or(rest.len() - 1, |e| e);
                (&rest[1..1 + end], &rest[1 + end..])
            }
        };
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(ident);
        // The shell's dynamic variables have no stored value to read here (`$RANDOM` is new
        // at each expansion).
        if !plain || sh.has_attr(name, 'n') || matches!(name, "RANDOM" | "PWD" | "LINENO") {
            return None;
        }
        out.push_str(sh.get(name)?);
        rest = after;
    }
    Some(out)
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
            io.fds.insert(fd, crate::shell::io::Fd::Out(sink));
        }
    }
}

/// Makes `fd` read `from` (0 is stdin).
fn set_input(io: &mut Io, fd: i32, from: crate::shell::io::Input) {
    match fd {
        0 => io.stdin = from,
        _ => {
            io.fds.insert(fd, crate::shell::io::Fd::In(from));
        }
    }
}
