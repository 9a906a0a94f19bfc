//! What every command of the porcelain shares about its command line and its ending: git's
//! options reader ([`Args`]), the refusals and statuses git gives (usage errors 129, fatal
//! errors 128, options burrow does not implement), and finding the repository.

use sh_utility::Ctx;
use sh_utility::io::Io;

use crate::plumbing::repo::Repo;

/// The version `git --version` reports: the git burrow's output follows, marked as burrow's.
pub(crate) const VERSION: &str = "2.47.3.burrow";

/// git's options reader for one command: `--name=value` and `--name value`, bundled short
/// flags (`-qn`), a short option's value attached (`-bmain`) or next.
pub struct Args<'a> {
    args: &'a [String],
    i: usize,
    queue: std::collections::VecDeque<String>,
    pending: Option<String>,
    /// Short options that take a value.
    valued: String,
}

impl<'a> Args<'a> {
    pub fn with_values(args: &'a [String], valued: &str) -> Args<'a> {
        Args {
            args,
            i: 0,
            queue: Default::default(),
            pending: None,
            valued: valued.to_string(),
        }
    }

    pub(crate) fn next(&mut self) -> Option<String> {
        self.pending = None;
        if let Some(q) = self.queue.pop_front() {
            return Some(q);
        }
        let a = self.args.get(self.i)?.clone();
        self.i += 1;
        if let Some(long) = a.strip_prefix("--")
            && let Some((name, value)) = long.split_once('=')
        {
            self.pending = Some(value.to_string());
            return Some(format!("--{name}"));
        }
        // Bundled short flags; `-10` (a count) stays whole.
        if a.len() > 2
            && a.starts_with('-')
            && !a.starts_with("--")
            && !a[1..].bytes().all(|b| b.is_ascii_digit())
        {
            let letters: Vec<char> = a[1..].chars().collect();
            for (k, c) in letters.iter().enumerate() {
                self.queue.push_back(format!("-{c}"));
                if self.valued.contains(*c) {
                    let rest: String = letters[k + 1..].iter().collect();
                    if !rest.is_empty() {
                        self.queue.push_back(rest);
                    }
                    break;
                }
            }
            return self.queue.pop_front();
        }
        Some(a)
    }

    /// The value of the option just read.
    pub fn value(&mut self, name: &str) -> Result<String, String> {
        if let Some(v) = self.pending.take() {
            return Ok(v);
        }
        if let Some(q) = self.queue.pop_front() {
            return Ok(q);
        }
        match self.args.get(self.i) {
            Some(v) => {
                self.i += 1;
                Ok(v.clone())
            }
            None => Err(format!("error: option `{name}' requires a value")),
        }
    }

    /// The `=value` given to the option just read, if any.
    pub fn pending_value(&mut self) -> Option<&str> {
        self.pending.as_deref()
    }

    /// Fails when a flag was given a value (`--quiet=1`).
    pub fn flag(&mut self, name: &str) -> Result<(), String> {
        match self.pending.take() {
            Some(_) => Err(format!("error: option `{name}' takes no value")),
            None => Ok(()),
        }
    }

    /// Everything after `--`.
    pub fn rest(&mut self) -> Vec<String> {
        let r = self.args[self.i..].to_vec();
        self.i = self.args.len();
        r
    }

    /// git's message for an option it does not know.
    pub fn unknown(&self, s: &str) -> String {
        match s.strip_prefix("--") {
            Some(long) => format!("error: unknown option `{long}'"),
            None => format!(
                "error: unknown switch `{}'",
                s.trim_start_matches('-').chars().next().unwrap_or('-')
            ),
        }
    }
}

/// A command's options, declared as git's parse-options declares them: one table per
/// command, read by [`Spec::parse`] in the order given, so that every command reads
/// `--name=value`, bundles and values the same way and refuses the same way.
pub(crate) struct Spec<T: 'static> {
    /// The command's name, for its refusals (`git NAME --x is not supported in burrow`).
    pub name: &'static str,
    /// git's usage text, printed after a usage error.
    pub usage: &'static str,
    pub options: &'static [Opt<T>],
    /// git's options that burrow's git does not implement, separated by spaces: refused by
    /// name with status 128 instead of being reported as unknown.
    pub refused: &'static str,
    /// An unknown option is answered with the usage alone, without git's "unknown option"
    /// line (the sequencer's commands).
    pub usage_alone: bool,
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
    /// A switch that may be given a value attached (`--abbrev=7`, `--dirty=-x`).
    Optional(fn(&mut T, Option<String>) -> Result<(), Refusal>),
    /// A value, attached or next (`-m MSG`, `--message=MSG`).
    Value(fn(&mut T, String) -> Result<(), Refusal>),
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
    pub const fn ignored(names: &'static str) -> Opt<T> {
        Opt {
            names,
            takes: Takes::Ignored,
        }
    }

    fn named(&self, arg: &str) -> bool {
        self.names.split('/').any(|n| n == arg)
    }

    /// Its long name, as git's messages name the option.
    fn long(&self) -> &'static str {
        self.names
            .split('/')
            .find_map(|n| n.strip_prefix("--"))
            .unwrap_or_else(|| self.names.trim_start_matches('-'))
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
}

impl From<String> for Refusal {
    fn from(e: String) -> Refusal {
        Refusal::Usage(e)
    }
}

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
    ) -> Result<(Vec<String>, Option<Vec<String>>), i32> {
        let valued: String = self
            .options
            .iter()
            .filter(|o| matches!(o.takes, Takes::Value(_)))
            .flat_map(|o| o.names.split('/'))
            .filter_map(|n| n.strip_prefix('-').filter(|n| n.len() == 1))
            .collect();
        let mut a = Args::with_values(args, &valued);
        let mut operands = Vec::new();
        let mut after = None;
        while let Some(arg) = a.next() {
            let r = match self.options.iter().find(|o| o.named(&arg)) {
                Some(o) => match &o.takes {
                    Takes::Flag(set) => a.flag(o.long()).map(|_| set(opts)).map_err(Refusal::Usage),
                    Takes::Optional(set) => {
                        let v = a.pending_value().map(str::to_string);
                        set(opts, v)
                    }
                    Takes::Value(set) => match a.value(o.long()) {
                        Ok(v) => set(opts, v),
                        Err(e) => Err(Refusal::Usage(e)),
                    },
                    Takes::Ignored => a.flag(o.long()).map_err(Refusal::Usage),
                },
                None if self.refused.split_whitespace().any(|r| r == arg) => {
                    Err(Refusal::NotHere(arg))
                }
                None if arg == "--" => {
                    after = Some(a.rest());
                    Ok(())
                }
                None if arg.starts_with('-') && arg != "-" => {
                    Err(Refusal::Usage(if self.usage_alone {
                        String::new()
                    } else {
                        a.unknown(&arg)
                    }))
                }
                None => {
                    operands.push(arg);
                    Ok(())
                }
            };
            match r {
                Ok(()) => {}
                Err(Refusal::Usage(e)) => return Err(usage_error(io, &e, self.usage)),
                Err(Refusal::NotHere(arg)) => return Err(not_here(io, self.name, &arg)),
                Err(Refusal::Alone(e)) => {
                    io.eprint(&format!("{e}\n"));
                    return Err(129);
                }
            }
        }
        Ok((operands, after))
    }
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

/// A usage error: the message, git's usage line, status 129.
pub fn usage_error(io: &Io, msg: &str, usage: &str) -> i32 {
    if !msg.is_empty() {
        io.eprint(&format!("{msg}\n"));
    }
    io.eprint(&format!("usage: {usage}\n"));
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
        let v = strings(&["-qbmain", "--depth=1", "--branch", "dev", "url"]);
        let mut a = Args::with_values(&v, "b");
        assert_eq!(a.next().as_deref(), Some("-q"));
        assert_eq!(a.next().as_deref(), Some("-b"));
        assert_eq!(a.value("branch").unwrap(), "main");
        assert_eq!(a.next().as_deref(), Some("--depth"));
        assert_eq!(a.value("depth").unwrap(), "1");
        assert_eq!(a.next().as_deref(), Some("--branch"));
        assert_eq!(a.value("branch").unwrap(), "dev");
        assert_eq!(a.next().as_deref(), Some("url"));
        assert_eq!(a.unknown("--frob"), "error: unknown option `frob'");
        assert_eq!(a.unknown("-x"), "error: unknown switch `x'");
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
        usage_alone: false,
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
            (
                Err(129),
                "error: option `quiet' takes no value\nusage: git x\n"
            )
        );
        let (_, r, e) = parse(&["-m"]);
        assert_eq!(
            (r, e.lines().next()),
            (Err(129), Some("error: option `message' requires a value"))
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
}
