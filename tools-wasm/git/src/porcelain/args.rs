//! What every command of the porcelain shares about its command line and its ending: git's
//! options reader ([`Args`]), the refusals and statuses git gives (usage errors 129, fatal
//! errors 128, options burrow does not implement), and finding the repository.

use sh_utility::Ctx;
use sh_utility::io::Io;

use crate::plumbing::repo::Repo;

/// The version `git --version` reports: the git burrow's output follows, marked as burrow's.
pub(crate) const VERSION: &str = "2.47.3.burrow";

/// git's options reader for one command: `--name=value` and `--name value`, bundled short
/// flags (`-qn`), a short option's value attached (`-bmain`) or next, a short option's
/// optional value attached only (`-n3`).
struct Args<'a> {
    args: &'a [String],
    i: usize,
    /// Options still to come from a bundle, each with the value attached to it.
    queue: std::collections::VecDeque<(String, Option<String>)>,
    pending: Option<String>,
    /// Short options that take a value.
    valued: String,
    /// Short options that may take a value attached.
    optional: String,
    /// Whether `-qn` is two options (git's parse-options) or one word (git's revision
    /// options, which read whole words).
    bundles: bool,
}

impl<'a> Args<'a> {
    fn new(args: &'a [String], valued: String, optional: String) -> Args<'a> {
        Args {
            args,
            i: 0,
            queue: Default::default(),
            pending: None,
            valued,
            optional,
            bundles: true,
        }
    }

    fn next(&mut self) -> Option<String> {
        if let Some((q, v)) = self.queue.pop_front() {
            self.pending = v;
            return Some(q);
        }
        self.pending = None;
        let a = self.args.get(self.i)?.clone();
        self.i += 1;
        if let Some(long) = a.strip_prefix("--")
            && let Some((name, value)) = long.split_once('=')
        {
            self.pending = Some(value.to_string());
            return Some(format!("--{name}"));
        }
        // Bundled short flags; `-10` (a count) stays whole.
        if self.bundles
            && a.len() > 2
            && a.starts_with('-')
            && !a.starts_with("--")
            && !a[1..].bytes().all(|b| b.is_ascii_digit())
        {
            let letters: Vec<char> = a[1..].chars().collect();
            for (k, c) in letters.iter().enumerate() {
                if self.valued.contains(*c) || self.optional.contains(*c) {
                    let rest: String = letters[k + 1..].iter().collect();
                    self.queue
                        .push_back((format!("-{c}"), Some(rest).filter(|r| !r.is_empty())));
                    break;
                }
                self.queue.push_back((format!("-{c}"), None));
            }
            return self.next();
        }
        Some(a)
    }

    /// The value of the option just read, attached or next; None after the last argument.
    fn value(&mut self) -> Option<String> {
        if let Some(v) = self.pending.take() {
            return Some(v);
        }
        let v = self.args.get(self.i)?.clone();
        self.i += 1;
        Some(v)
    }

    /// Everything not read yet.
    fn rest(&mut self) -> Vec<String> {
        let r = self.args[self.i..].to_vec();
        self.i = self.args.len();
        r
    }
}

/// How git's messages name an option as it was spelled: `switch `m'` or `option `message'`.
fn spelled(arg: &str) -> String {
    match arg.strip_prefix("--") {
        Some(long) => format!("option `{long}'"),
        None => format!("switch `{}'", arg.trim_start_matches('-')),
    }
}

/// git's message for an option it does not know.
fn unknown(s: &str) -> String {
    match s.strip_prefix("--") {
        Some(long) => format!("error: unknown option `{long}'"),
        None => format!(
            "error: unknown switch `{}'",
            s.trim_start_matches('-').chars().next().unwrap_or('-')
        ),
    }
}

/// The refusal of the commands that read revision options (`log`, `format-patch`) rather
/// than git's parse-options, for an option they do not know: status 128.
pub(crate) fn unrecognized(arg: &str) -> (String, i32) {
    (format!("fatal: unrecognized argument: {arg}"), 128)
}

/// A command's options, declared as git's parse-options declares them: one table per
/// command, read by [`Spec::parse`] in the order given, so that every command reads
/// `--name=value`, bundles and values the same way and refuses the same way. What the
/// options mean together (modes that exclude each other, options that need another) is
/// checked by the command after parsing, from the values parsed.
pub(crate) struct Spec<T: 'static> {
    /// The command's name, for its refusals (`git NAME --x is not supported in burrow`).
    pub name: &'static str,
    /// git's usage text, printed after a usage error.
    pub usage: &'static str,
    pub options: &'static [Opt<T>],
    /// git's options that burrow's git does not implement, separated by spaces: refused by
    /// name with status 128 instead of being reported as unknown.
    pub refused: &'static str,
    /// What an option that is neither declared nor refused gets.
    pub unknown: Unknown,
    /// The options' help git prints under the usage, section after section (none for most
    /// commands: their usage text is whole).
    pub help: &'static [&'static [Help]],
}

/// One option's line of git's help under a usage: how it is spelled (`-n, --no-commit`,
/// `--[no-]cleanup <mode>`) and what it does; or, spelled empty ([`Help::group`]), the title
/// of a group of options (git's OPT_GROUP).
pub(crate) struct Help(pub &'static str, pub &'static str);

impl Help {
    /// A group's title (`Generic options`), on a line of its own after an empty line.
    pub const fn group(title: &'static str) -> Help {
        Help("", title)
    }
}

/// git's usage text: the synopsis, then (after an empty line) each option's help laid out
/// as git's `usage_with_options` lays it out, from column 26, on a line of its own below
/// an option spelled longer than that; a group's title after an empty line.
fn usage_text(synopsis: &str, help: &[&[Help]]) -> String {
    const WIDTH: usize = 26;
    let mut out = synopsis.to_string();
    if !help.is_empty() {
        out.push('\n');
    }
    for (k, Help(option, what)) in help.iter().copied().flatten().enumerate() {
        if option.is_empty() {
            out.push_str(&format!("\n{what}\n"));
            continue;
        }
        if k == 0 {
            out.push('\n');
        }
        let spelled = format!("    {option}");
        let n = spelled.chars().count();
        out.push_str(&spelled);
        if n < WIDTH {
            out.push_str(&" ".repeat(WIDTH - n));
        } else {
            out.push('\n');
            out.push_str(&" ".repeat(WIDTH));
        }
        out.push_str(what);
        out.push('\n');
    }
    out
}

/// The answer to an option a command does not know.
pub(crate) enum Unknown {
    /// git's "unknown option" line, then the usage (status 129).
    Usage,
    /// The usage alone, without git's "unknown option" line (the sequencer's commands).
    UsageAlone,
    /// The command's own message for the option as given, and its status (`git log` reads
    /// revision options, not parse-options: `fatal: unrecognized argument: --x`, 128).
    Own(fn(&str) -> (String, i32)),
    /// Read as git's revision options read a command line: whole words (`-pq` is one word,
    /// not two options), and a word the table does not name (a switch given a value among
    /// them) goes to the command's reading of operands, which decides: `rev-parse` passes
    /// it through, `diff` refuses it once it has read the rest.
    Operand,
}

/// One option: its spellings (`-q/--quiet`, `--ff-only`; a short one takes a value
/// attached, `-mMSG`, or next) and what it does to the command's options.
pub(crate) struct Opt<T> {
    pub names: &'static str,
    pub takes: Takes<T>,
}

pub(crate) enum Takes<T> {
    /// A switch: a value given to it (`--quiet=1`) is git's "takes no value".
    Flag(fn(&mut T)),
    /// A switch and its negation `--no-NAME` (git's OPT_BOOL): true, then false.
    Bool(fn(&mut T, bool)),
    /// A switch that may be given a value attached (`--abbrev=7`, `--dirty=-x`, `-n3`).
    Optional(fn(&mut T, Option<String>) -> Result<(), Refusal>),
    /// A value, attached or next (`-m MSG`, `--message=MSG`).
    Value(fn(&mut T, String) -> Result<(), Refusal>),
    /// A value of git's revision options (`log --author X`, `-n 3`): the same, but missing
    /// it is the revision reader's `fatal: Option '--author' requires a value` (or for
    /// `-n`, `error: -n requires an argument`), status 128.
    RevValue(fn(&mut T, String) -> Result<(), Refusal>),
    /// A value, attached or next, or this one when the option is the last argument
    /// (`--merged [<commit>]`, git's PARSE_OPT_LASTARG_DEFAULT).
    ValueOr(&'static str, fn(&mut T, String)),
    /// A whole number, attached or next (git's OPT_INTEGER): anything else is git's
    /// "expects a numerical value".
    Number(fn(&mut T, usize)),
    /// `-NUM` (`log -3`): named `-<n>`, given the digits.
    Count(fn(&mut T, &str)),
    /// One of the command's modes (git's OPT_CMDMODE): two different ones are refused as
    /// git refuses them.
    Mode(fn(&mut T)),
    /// A switch accepted without effect here (`--progress`: no terminal, no progress).
    Ignored,
}

impl<T> Opt<T> {
    pub const fn flag(names: &'static str, set: fn(&mut T)) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Flag(set),
        }
    }
    pub const fn bool(names: &'static str, set: fn(&mut T, bool)) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Bool(set),
        }
    }
    pub const fn optional(
        names: &'static str,
        set: fn(&mut T, Option<String>) -> Result<(), Refusal>,
    ) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Optional(set),
        }
    }
    pub const fn value(
        names: &'static str,
        set: fn(&mut T, String) -> Result<(), Refusal>,
    ) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Value(set),
        }
    }
    pub const fn rev_value(
        names: &'static str,
        set: fn(&mut T, String) -> Result<(), Refusal>,
    ) -> Opt<T> {
        Opt {
            names,
            takes: Takes::RevValue(set),
        }
    }
    pub const fn value_or(
        names: &'static str,
        default: &'static str,
        set: fn(&mut T, String),
    ) -> Opt<T> {
        Opt {
            names,
            takes: Takes::ValueOr(default, set),
        }
    }
    pub const fn number(names: &'static str, set: fn(&mut T, usize)) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Number(set),
        }
    }
    pub const fn count(set: fn(&mut T, &str)) -> Opt<T> {
        Opt {
            names: "-<n>",
            takes: Takes::Count(set),
        }
    }
    pub const fn mode(names: &'static str, set: fn(&mut T)) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Mode(set),
        }
    }
    pub const fn ignored(names: &'static str) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Ignored,
        }
    }

    /// Whether `arg` names this option: Some(false) for the negation of a [`Takes::Bool`].
    fn named(&self, arg: &str) -> Option<bool> {
        if let Takes::Count(_) = self.takes {
            let digits = arg.strip_prefix('-')?;
            return (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then_some(true);
        }
        if self.names.split('/').any(|n| n == arg) {
            return Some(true);
        }
        let negated = arg.strip_prefix("--no-")?;
        (matches!(self.takes, Takes::Bool(_))
            && self
                .names
                .split('/')
                .any(|n| n.strip_prefix("--") == Some(negated)))
        .then_some(false)
    }

    /// Its short spellings, for the reader's bundles.
    fn letters(&self) -> impl Iterator<Item = &'static str> {
        self.names
            .split('/')
            .filter_map(|n| n.strip_prefix('-').filter(|n| n.len() == 1))
    }
}

/// Why an option stops the command.
pub(crate) enum Refusal {
    /// A usage error: the message, then the usage text (status 129).
    Usage(String),
    /// An option (or a value of one) burrow's git does not implement (status 128).
    NotHere(String),
    /// git's message alone, without the usage (status 129): a value the option refuses.
    Alone(String),
    /// A failure of the command's (status 128 for a `fatal:`, 1 for an `error:`), as
    /// [`fail`] gives it: a value git reads and refuses (`--date=nope`), a file unread.
    Fatal(String),
    /// git's message and the status it exits with (`log -n`: an `error:`, 128).
    Status(String, i32),
}

impl From<String> for Refusal {
    fn from(e: String) -> Refusal {
        Refusal::Usage(e)
    }
}

/// What the reader does with an operand (a command's own reading of them, as `git log`
/// tells revisions from paths).
pub(crate) enum Next {
    /// Keep it among the operands and read on.
    Operand,
    /// The command kept it; read on.
    Taken,
    /// Keep it, and options end here: what follows is operands (and after `--`, the second
    /// list), as git's PARSE_OPT_STOP_AT_NON_OPTION.
    Stop,
}

/// The operands [`Spec::parse_split`] returns: those before `--`, and those after it (None
/// without `--`).
pub(crate) type Operands = (Vec<String>, Option<Vec<String>>);

impl<T> Spec<T> {
    /// Reads `args` into `opts` and returns the operands (everything after `--` among them,
    /// in order), or prints the refusal and returns its status.
    pub(crate) fn parse(&self, args: &[String], opts: &mut T, io: &Io) -> Result<Vec<String>, i32> {
        let (mut operands, after) = self.parse_split(args, opts, io)?;
        operands.extend(after.unwrap_or_default());
        Ok(operands)
    }

    /// [`Spec::parse`] for a command that tells the operands before `--` from those after it
    /// (`reset REV -- PATHS`): both lists, the second None without `--`.
    pub(crate) fn parse_split(
        &self,
        args: &[String],
        opts: &mut T,
        io: &Io,
    ) -> Result<Operands, i32> {
        self.parse_with(args, opts, io, &mut |_, _| Ok(Next::Operand))
    }

    /// [`Spec::parse_split`] with the command reading each operand as it comes.
    pub(crate) fn parse_with(
        &self,
        args: &[String],
        opts: &mut T,
        io: &Io,
        operand: &mut dyn FnMut(&mut T, &str) -> Result<Next, Refusal>,
    ) -> Result<Operands, i32> {
        let letters = |valued: bool| -> String {
            self.options
                .iter()
                .filter(|o| match o.takes {
                    Takes::Value(_)
                    | Takes::RevValue(_)
                    | Takes::ValueOr(..)
                    | Takes::Number(_) => valued,
                    Takes::Optional(_) => !valued,
                    _ => false,
                })
                .flat_map(Opt::letters)
                .collect()
        };
        let words = matches!(self.unknown, Unknown::Operand);
        let mut a = Args::new(args, letters(true), letters(false));
        a.bundles = !words;
        let mut operands = Vec::new();
        let mut mode: Option<(String, &'static str)> = None;
        while let Some(mut arg) = a.next() {
            let mut named = self.options.iter().find_map(|o| Some((o, o.named(&arg)?)));
            // Read whole, a switch given a value is a word the table does not name.
            if words
                && let Some((o, _)) = named
                && matches!(
                    o.takes,
                    Takes::Flag(_) | Takes::Bool(_) | Takes::Mode(_) | Takes::Ignored
                )
                && let Some(v) = a.pending.take()
            {
                arg = format!("{arg}={v}");
                named = None;
            }
            let word = match named {
                Some((o, on)) => self
                    .take(o, on, &arg, &mut a, &mut mode, opts)
                    .map(|()| None),
                // Read whole, a short option is also named with its value attached (`-U5`).
                None if self.refused.split_whitespace().any(|r| {
                    r == arg || (words && r.len() == 2 && r != "--" && arg.starts_with(r))
                }) =>
                {
                    Err(Refusal::NotHere(arg))
                }
                None if arg == "--" => return Ok((operands, Some(a.rest()))),
                None if arg.starts_with('-') && arg != "-" => {
                    // As given: git names `--x=1` whole.
                    let given = match a.pending.take() {
                        Some(v) => format!("{arg}={v}"),
                        None => arg,
                    };
                    match self.unknown {
                        Unknown::Usage => Err(Refusal::Usage(unknown(&given))),
                        Unknown::UsageAlone => Err(Refusal::Usage(String::new())),
                        Unknown::Own(said) => {
                            let (e, code) = said(&given);
                            io.eprint(&format!("{e}\n"));
                            return Err(code);
                        }
                        Unknown::Operand => Ok(Some(given)),
                    }
                }
                None => Ok(Some(arg)),
            };
            let r = match word {
                Ok(None) => Ok(()),
                Err(e) => Err(e),
                Ok(Some(arg)) => match operand(opts, &arg) {
                    Ok(Next::Taken) => Ok(()),
                    Ok(Next::Operand) => {
                        operands.push(arg);
                        Ok(())
                    }
                    Ok(Next::Stop) => {
                        operands.push(arg);
                        let mut rest = a.rest().into_iter();
                        while let Some(o) = rest.next() {
                            if o == "--" {
                                return Ok((operands, Some(rest.collect())));
                            }
                            operands.push(o);
                        }
                        return Ok((operands, None));
                    }
                    Err(e) => Err(e),
                },
            };
            match r {
                Ok(()) => {}
                Err(Refusal::Usage(e)) => return Err(self.usage_error(io, &e)),
                Err(Refusal::NotHere(arg)) => return Err(not_here(io, self.name, &arg)),
                Err(Refusal::Alone(e)) => {
                    io.eprint(&format!("{e}\n"));
                    return Err(129);
                }
                Err(Refusal::Fatal(e)) => return Err(fail(io, &e)),
                Err(Refusal::Status(e, code)) => {
                    io.eprint(&format!("{e}\n"));
                    return Err(code);
                }
            }
        }
        Ok((operands, None))
    }

    /// A usage error: the message, then the command's usage (status 129).
    pub(crate) fn usage_error(&self, io: &Io, msg: &str) -> i32 {
        usage_error(io, msg, &usage_text(self.usage, self.help))
    }

    /// Reads one option given as `arg` (`on`: not its negation) into `opts`.
    fn take(
        &self,
        o: &Opt<T>,
        on: bool,
        arg: &str,
        a: &mut Args,
        mode: &mut Option<(String, &'static str)>,
        opts: &mut T,
    ) -> Result<(), Refusal> {
        let no_value = |a: &mut Args| match a.pending.take() {
            Some(_) => Err(Refusal::Alone(format!(
                "error: {} takes no value",
                spelled(arg)
            ))),
            None => Ok(()),
        };
        let value = |a: &mut Args| {
            a.value()
                .ok_or_else(|| Refusal::Alone(format!("error: {} requires a value", spelled(arg))))
        };
        match &o.takes {
            Takes::Flag(set) => no_value(a).map(|_| set(opts)),
            Takes::Bool(set) => no_value(a).map(|_| set(opts, on)),
            Takes::Optional(set) => set(opts, a.pending.take()),
            Takes::Value(set) => set(opts, value(a)?),
            Takes::RevValue(set) => {
                let v = match a.value() {
                    Some(v) => v,
                    None if arg.starts_with("--") => {
                        return Err(Refusal::Fatal(format!(
                            "fatal: Option '{arg}' requires a value"
                        )));
                    }
                    None => {
                        return Err(Refusal::Status(
                            format!("error: {arg} requires an argument"),
                            128,
                        ));
                    }
                };
                set(opts, v)
            }
            Takes::ValueOr(default, set) => {
                set(opts, a.value().unwrap_or_else(|| default.to_string()));
                Ok(())
            }
            Takes::Number(set) => {
                let v = value(a)?;
                let n = v.parse().map_err(|_| {
                    Refusal::Alone(format!("error: {} expects a numerical value", spelled(arg)))
                })?;
                set(opts, n);
                Ok(())
            }
            Takes::Count(set) => {
                set(opts, &arg[1..]);
                Ok(())
            }
            Takes::Mode(set) => {
                no_value(a)?;
                if let Some((first, names)) = mode.as_ref()
                    && *names != o.names
                {
                    return Err(Refusal::Alone(format!(
                        "error: options '{arg}' and '{first}' cannot be used together"
                    )));
                }
                *mode = Some((arg.to_string(), o.names));
                set(opts);
                Ok(())
            }
            Takes::Ignored => no_value(a),
        }
    }
}

/// A value an option sets (`--format`, `-o`), for its table.
pub(crate) fn set<V>(slot: &mut V, v: V) -> Result<(), Refusal> {
    *slot = v;
    Ok(())
}

/// A value an option adds to a list (`--author`, `--sort`, `-m`), for its table.
pub(crate) fn push<V>(list: &mut Vec<V>, v: V) -> Result<(), Refusal> {
    list.push(v);
    Ok(())
}

/// A message given on the command line (`-m TEXT`, `-F FILE`), read in order once the
/// options are.
pub(crate) enum Message {
    Text(String),
    File(String),
}

/// The messages' texts, each file read from the shell's working directory; a file that
/// cannot be read is refused with `unreadable` (given its name and why).
pub(crate) fn read_messages(
    sh: &dyn Ctx,
    messages: &[Message],
    unreadable: fn(&str, &str) -> String,
) -> Result<Vec<String>, String> {
    messages
        .iter()
        .map(|m| match m {
            Message::Text(t) => Ok(t.clone()),
            Message::File(f) => std::fs::read_to_string(sh.path(f))
                .map_err(|e| unreadable(f, &sh_utility::format::io_msg(&e))),
        })
        .collect()
}

/// Prints a command's failure and gives git's status for it: 1 for an `error:` alone, 128
/// when it is (or ends in) a `fatal:`.
pub fn fail(io: &Io, e: &str) -> i32 {
    io.eprint(&format!("{e}\n"));
    if e.starts_with("error:") && !e.contains("\nfatal:") {
        1
    } else {
        128
    }
}

/// Refuses an option of git's that burrow's git does not implement (status 128).
pub fn not_here(io: &Io, cmd: &str, arg: &str) -> i32 {
    io.eprint(&format!(
        "fatal: 'git {cmd} {arg}' is not supported in burrow\n"
    ));
    128
}

/// The repository the shell's working directory is in, with that directory, or git's
/// refusal outside one (status 128).
pub fn open_repo(sh: &dyn Ctx, io: &Io) -> Result<(Repo, std::path::PathBuf), i32> {
    let cwd = std::path::PathBuf::from(&sh.cwd());
    match Repo::discover(&cwd) {
        Some(r) => Ok((r, cwd)),
        None => {
            io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
            Err(128)
        }
    }
}

/// A usage error: the message, git's usage line (none for a command whose misuse git names
/// without it: an empty usage), status 129.
pub fn usage_error(io: &Io, msg: &str, usage: &str) -> i32 {
    if !msg.is_empty() {
        io.eprint(&format!("{msg}\n"));
    }
    if !usage.is_empty() {
        io.eprint(&format!("usage: {usage}\n"));
    }
    129
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_read_as_git_reads_them() {
        let v = strings(&["-qbmain", "-n3", "--depth=1", "--branch", "dev", "url"]);
        let mut a = Args::new(&v, "b".into(), "n".into());
        assert_eq!(a.next().as_deref(), Some("-q"));
        assert_eq!(a.next().as_deref(), Some("-b"));
        assert_eq!(a.value().as_deref(), Some("main"));
        assert_eq!(a.next().as_deref(), Some("-n"));
        assert_eq!(a.pending.take().as_deref(), Some("3"));
        assert_eq!(a.next().as_deref(), Some("--depth"));
        assert_eq!(a.value().as_deref(), Some("1"));
        assert_eq!(a.next().as_deref(), Some("--branch"));
        assert_eq!(a.value().as_deref(), Some("dev"));
        assert_eq!(a.next().as_deref(), Some("url"));
        assert_eq!(a.value(), None);
        assert_eq!(unknown("--frob"), "error: unknown option `frob'");
        assert_eq!(unknown("-x"), "error: unknown switch `x'");
    }

    #[derive(Default, Debug, PartialEq)]
    struct T {
        quiet: bool,
        message: Option<String>,
        abbrev: Option<String>,
    }

    const SPEC: Spec<T> = Spec {
        name: "x",
        usage: "git x",
        options: &[
            Opt::flag("-q/--quiet", |t| t.quiet = true),
            Opt::value("-m/--message", |t, v| {
                t.message = Some(v);
                Ok(())
            }),
            Opt::optional("--abbrev", |t, v| {
                t.abbrev = v;
                Ok(())
            }),
            Opt::ignored("--progress"),
        ],
        refused: "--frob -z",
        unknown: Unknown::Usage,
        help: &[],
    };

    /// Parses `args` with [`SPEC`]: the options, the operands, and what went to stderr.
    fn parse(args: &[&str]) -> (T, Result<Vec<String>, i32>, String) {
        let (err, buf) = sh_utility::io::Sink::buffer();
        let io = Io::new(
            sh_utility::io::input(Vec::new()),
            sh_utility::io::Sink::Null,
            err,
        );
        let mut t = T::default();
        let r = SPEC.parse(&strings(args), &mut t, &io);
        let text = String::from_utf8_lossy(&buf.borrow()).into_owned();
        (t, r, text)
    }

    #[test]
    fn option_tables_read_as_git_reads_them() {
        let (t, r, _) = parse(&["-qmhello", "a", "--abbrev=7", "--progress", "--", "-b"]);
        assert_eq!(r, Ok(strings(&["a", "-b"])));
        assert_eq!(
            t,
            T {
                quiet: true,
                message: Some("hello".into()),
                abbrev: Some("7".into()),
            }
        );
        let (_, r, e) = parse(&["--quiet=1"]);
        assert_eq!(
            (r, e.as_str()),
            (Err(129), "error: option `quiet' takes no value\n")
        );
        let (_, r, e) = parse(&["-m"]);
        assert_eq!(
            (r, e.lines().next()),
            (Err(129), Some("error: switch `m' requires a value"))
        );
        let (_, r, e) = parse(&["--frob=1"]);
        assert_eq!(
            (r, e.as_str()),
            (
                Err(128),
                "fatal: 'git x --frob' is not supported in burrow\n"
            )
        );
        let (_, r, e) = parse(&["--what"]);
        assert_eq!(
            (r, e.lines().next()),
            (Err(129), Some("error: unknown option `what'"))
        );
    }

    /// The options of git's kinds beyond flags and values, as one table.
    #[derive(Default, Debug, PartialEq)]
    struct K {
        cached: Option<bool>,
        lines: Option<usize>,
        context: usize,
        count: Option<String>,
        merged: Vec<String>,
        mode: Vec<&'static str>,
    }

    const KINDS: Spec<K> = Spec {
        name: "k",
        usage: "git k",
        options: &[
            Opt::bool("-c/--cached", |k, on| k.cached = Some(on)),
            Opt::optional("-n", |k, v| {
                k.lines = Some(v.map_or(1, |v| v.parse().unwrap_or(0)));
                Ok(())
            }),
            Opt::number("-C/--context", |k, n| k.context = n),
            Opt::count(|k, n| k.count = Some(n.to_string())),
            Opt::value_or("--merged", "HEAD", |k, v| k.merged.push(v)),
            Opt::mode("--get", |k| k.mode.push("get")),
            Opt::mode("-l/--list", |k| k.mode.push("list")),
        ],
        refused: "",
        unknown: Unknown::Own(unrecognized),
        help: &[&[
            Help("-c, --[no-]cached", "cached"),
            Help("-C, --context <n>", "lines"),
        ]],
    };

    /// Parses `args` with [`KINDS`], reading operands with `operand`.
    fn kinds(
        args: &[&str],
        operand: &mut dyn FnMut(&mut K, &str) -> Result<Next, Refusal>,
    ) -> (K, Result<Operands, i32>, String) {
        let (err, buf) = sh_utility::io::Sink::buffer();
        let io = Io::new(
            sh_utility::io::input(Vec::new()),
            sh_utility::io::Sink::Null,
            err,
        );
        let mut k = K::default();
        let r = KINDS.parse_with(&strings(args), &mut k, &io, operand);
        let text = String::from_utf8_lossy(&buf.borrow()).into_owned();
        (k, r, text)
    }

    #[test]
    fn option_kinds_read_as_git_reads_them() {
        let mut keep = |_: &mut K, _: &str| Ok(Next::Operand);
        let (k, r, _) = kinds(
            &[
                "-cn3",
                "--no-cached",
                "-C2",
                "-12",
                "--merged",
                "x",
                "a",
                "--merged",
            ],
            &mut keep,
        );
        assert_eq!(r, Ok((strings(&["a"]), None)));
        assert_eq!(
            k,
            K {
                cached: Some(false),
                lines: Some(3),
                context: 2,
                count: Some("12".into()),
                merged: strings(&["x", "HEAD"]),
                mode: vec![],
            }
        );
        let (_, r, e) = kinds(&["-C", "x"], &mut keep);
        assert_eq!(
            (r, e.as_str()),
            (Err(129), "error: switch `C' expects a numerical value\n")
        );
        assert_eq!(
            usage_text(KINDS.usage, KINDS.help),
            "git k\n\n    -c, --[no-]cached     cached\n    -C, --context <n>     lines\n"
        );
        let (k, r, e) = kinds(&["--get", "--get", "-l"], &mut keep);
        assert_eq!(
            (k.mode, r, e.as_str()),
            (
                vec!["get", "get"],
                Err(129),
                "error: options '-l' and '--get' cannot be used together\n"
            )
        );
        let (_, r, e) = kinds(&["--frob=1"], &mut keep);
        assert_eq!(
            (r, e.as_str()),
            (Err(128), "fatal: unrecognized argument: --frob=1\n")
        );
    }

    #[test]
    fn an_operand_can_end_the_options() {
        let mut stop = |_: &mut K, _: &str| Ok(Next::Stop);
        let (k, r, _) = kinds(&["-c", "pat", "-c", "rev", "--", "-n"], &mut stop);
        assert_eq!(
            (k.cached, r),
            (
                Some(true),
                Ok((strings(&["pat", "-c", "rev"]), Some(strings(&["-n"]))))
            )
        );
        let mut taken = |k: &mut K, a: &str| {
            k.merged.push(a.to_string());
            Ok(Next::Taken)
        };
        let (k, r, _) = kinds(&["a", "-c", "b", "--", "c"], &mut taken);
        assert_eq!(
            (k.merged, k.cached, r),
            (
                strings(&["a", "b"]),
                Some(true),
                Ok((vec![], Some(strings(&["c"]))))
            )
        );
    }

    const WORDS: Spec<K> = Spec {
        name: "w",
        usage: "git w",
        options: &[
            Opt::flag("-q/--quiet", |k| k.mode.push("quiet")),
            Opt::optional("--short", |k, v| {
                k.lines = v.map(|v| v.len());
                Ok(())
            }),
        ],
        refused: "-U --frob",
        unknown: Unknown::Operand,
        help: &[&[
            Help::group("Group one"),
            Help("-q", "quiet"),
            Help::group("Group two:"),
            Help("--short", "short"),
        ]],
    };

    #[test]
    fn whole_words_go_to_the_command() {
        let (err, _) = sh_utility::io::Sink::buffer();
        let io = Io::new(
            sh_utility::io::input(Vec::new()),
            sh_utility::io::Sink::Null,
            err,
        );
        let mut k = K::default();
        let mut seen = Vec::new();
        let r = WORDS.parse_with(
            &strings(&["-qv", "-q", "--quiet=1", "--short=abc", "--x=1", "rev"]),
            &mut k,
            &io,
            &mut |_, a| {
                seen.push(a.to_string());
                Ok(Next::Taken)
            },
        );
        assert_eq!(r, Ok((vec![], None)));
        assert_eq!(seen, strings(&["-qv", "--quiet=1", "--x=1", "rev"]));
        assert_eq!((k.mode, k.lines), (vec!["quiet"], Some(3)));
        // A refused short option is named with its value attached.
        let r = WORDS.parse_with(&strings(&["-U5"]), &mut K::default(), &io, &mut |_, _| {
            Ok(Next::Taken)
        });
        assert_eq!(r, Err(128));
        assert_eq!(
            usage_text(WORDS.usage, WORDS.help),
            "git w\n\nGroup one\n    -q                    quiet\n\nGroup two:\n    --short               short\n"
        );
    }
}
