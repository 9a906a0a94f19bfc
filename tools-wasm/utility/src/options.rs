//! The option gate: before a built-in utility runs, its command line is read against the
//! registry's option list as GNU getopt_long reads it. An option burrow does not implement is
//! refused there with GNU's words and the utility's usage status (never ignored); `--help`
//! prints the registry's help and `--version` burrow's version. Long options are handed to the
//! utility in one spelling: the full name (abbreviations resolved, `--key 2` joined to
//! `--key=2`), or the short option when there is one (`--parents` is `-p`), so each utility's
//! own parser sees only what it implements.

use crate::io::Io;
use crate::registry::{Arg, Digits, Opt, Parse, Style, Utility};

/// What the gate decided.
pub enum Gate {
    /// Run the utility with these arguments (argv[0] included).
    Run(Vec<String>),
    /// Done already (help, version or a usage error) with this status.
    Done(i32),
}

/// The name a utility's messages give: egrep and fgrep are grep, gunzip and zcat gzip.
fn program(u: &Utility) -> &'static str {
    match u.style {
        Style::Grep => "grep",
        Style::Gzip => "gzip",
        _ => u.name,
    }
}

/// A usage error: GNU getopt's first line, then what the utility prints after it.
fn usage_error(u: &Utility, msg: &str, io: &Io) -> Gate {
    let name = program(u);
    let rest = match u.style {
        Style::Gnu => format!("Try '{name} --help' for more information.\n"),
        Style::Prefixed => format!("{name}: Try '{name} --help' for more information.\n"),
        Style::Grep => {
            "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"
                .to_string()
        }
        Style::Gzip => "Try `gzip --help' for more information.\n".to_string(),
        Style::Sed | Style::Bc => {
            let h = help(u);
            h.split_once('\n').map_or(h.clone(), |(first, rest)| {
                // The usage line, then the option list.
                format!("{first}\n{}", rest.split_once('\n').map_or("", |(_, r)| r))
            })
        }
    };
    io.eprint(&format!("{name}: {msg}\n{rest}"));
    Gate::Done(u.usage_status)
}

/// `NAME --help`, from the registry.
pub fn help(u: &Utility) -> String {
    let mut out = format!("Usage: {} {}\n{}\n", u.name, u.usage, u.about);
    let opts = u.opts();
    if !opts.is_empty() {
        out.push_str("\nThe options burrow implements (any other is refused):\n");
        for o in &opts {
            out.push_str(&format!("  {}\n", spelling(o)));
        }
    }
    if u.parse != Parse::Own {
        if opts.is_empty() {
            out.push_str("\nburrow implements no options of it (any is refused).\n");
        }
        out.push_str("      --help        display this help and exit\n");
        out.push_str("      --version     output version information and exit\n");
    }
    if !u.notes.is_empty() {
        out.push_str(&format!("\nIn burrow: {}\n", u.notes));
    }
    out
}

/// An option as --help shows it: `-k, --key=KEYDEF`, `    --debug`, `-i[SUFFIX]`.
pub fn spelling(o: &Opt) -> String {
    let arg = |long: bool| match o.arg {
        Arg::None => String::new(),
        Arg::Required if long => format!("={}", o.metavar),
        Arg::Required => format!(" {}", o.metavar),
        Arg::Optional if long => format!("[={}]", o.metavar),
        Arg::Optional => format!("[{}]", o.metavar),
    };
    let longs: Vec<String> = o
        .long
        .iter()
        .map(|l| format!("--{l}{}", arg(true)))
        .collect();
    match o.short {
        Some(c) if longs.is_empty() => format!("-{c}{}", arg(false)),
        Some(c) => format!("-{c}, {}", longs.join(", ")),
        None => format!("    {}", longs.join(", ")),
    }
}

/// Reads `argv` for utility `u`.
pub fn gate(u: &Utility, argv: &[String], io: &Io) -> Gate {
    let args = &argv[1..];
    match u.parse {
        Parse::Program => return Gate::Run(argv.to_vec()),
        Parse::Own => {
            if args.len() == 1 && args[0] == "--help" {
                io.print(&help(u));
                return Gate::Done(0);
            }
            return Gate::Run(argv.to_vec());
        }
        Parse::Getopt | Parse::Posix => {}
    }
    let opts = u.opts();
    let mut out = vec![argv[0].clone()];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.push(a.clone());
            out.extend(args[i..].iter().cloned());
            break;
        }
        if a == "-" || !a.starts_with('-') {
            out.push(a.clone());
            if u.parse == Parse::Posix {
                out.extend(args[i..].iter().cloned());
                break;
            }
            continue;
        }
        let body = &a[1..];
        match u.digits {
            Digits::Count(c) if body.bytes().all(|b| b.is_ascii_digit()) => {
                out.push(format!("-{c}"));
                out.push(body.to_string());
                continue;
            }
            Digits::Operand if body.parse::<f64>().is_ok() => {
                out.push(a.clone());
                continue;
            }
            _ => {}
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let found = if name.is_empty() {
                Err(Vec::new())
            } else {
                find_long(&opts, name)
            };
            let o = match found {
                Ok(o) => o,
                Err(candidates) if candidates.is_empty() => {
                    // --help and --version, unless the utility has options of those names.
                    if "help".starts_with(name) && name.len() >= 3 && value.is_none() {
                        io.print(&help(u));
                        return Gate::Done(0);
                    }
                    if "version".starts_with(name) && name.len() >= 3 && value.is_none() {
                        io.print(&format!(
                            "{} (burrow) {}\n",
                            u.name,
                            env!("CARGO_PKG_VERSION")
                        ));
                        return Gate::Done(0);
                    }
                    return usage_error(u, &format!("unrecognized option '{a}'"), io);
                }
                Err(candidates) => {
                    let list: Vec<String> = candidates.iter().map(|c| format!("'--{c}'")).collect();
                    return usage_error(
                        u,
                        &format!(
                            "option '--{name}' is ambiguous; possibilities: {}",
                            list.join(" ")
                        ),
                        io,
                    );
                }
            };
            let full = o
                .long
                .iter()
                .find(|l| l.starts_with(name))
                .copied()
                .unwrap_or(name);
            let value = match (o.arg, value) {
                (Arg::None, Some(_)) => {
                    return usage_error(
                        u,
                        &format!("option '--{full}' doesn't allow an argument"),
                        io,
                    );
                }
                (Arg::None, None) => None,
                (Arg::Optional, v) => v,
                (Arg::Required, Some(v)) => Some(v),
                (Arg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return usage_error(
                            u,
                            &format!("option '--{full}' requires an argument"),
                            io,
                        );
                    }
                },
            };
            match (o.short, o.arg, value) {
                (Some(c), Arg::Optional, Some(v)) => out.push(format!("-{c}{v}")),
                (Some(c), _, Some(v)) => {
                    out.push(format!("-{c}"));
                    out.push(v);
                }
                (Some(c), _, None) => out.push(format!("-{c}")),
                (None, _, Some(v)) => out.push(format!("--{full}={v}")),
                (None, _, None) => out.push(format!("--{full}")),
            }
            continue;
        }
        // A cluster of short options: each must be known; a valued one takes the rest of the
        // cluster or the next argument. Each goes on alone (`-rn` as `-r -n`, `-k2` as
        // `-k 2`; an optional argument stays attached), so every utility's parser reads the
        // one form, unless the utility keeps clusters (diff prints them in `diff -ru A B`).
        let keep = u.keeps_clusters;
        if keep {
            out.push(a.clone());
        }
        for (j, c) in body.char_indices() {
            let Some(o) = opts.iter().find(|o| o.short == Some(c)) else {
                return usage_error(u, &format!("invalid option -- '{c}'"), io);
            };
            let rest = &body[j + c.len_utf8()..];
            match o.arg {
                Arg::None => {
                    if !keep {
                        out.push(format!("-{c}"));
                    }
                }
                Arg::Optional => {
                    if !keep {
                        out.push(format!("-{c}{rest}"));
                    }
                    break;
                }
                Arg::Required => {
                    let value = if !rest.is_empty() {
                        rest.to_string()
                    } else {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            None => {
                                return usage_error(
                                    u,
                                    &format!("option requires an argument -- '{c}'"),
                                    io,
                                );
                            }
                        }
                    };
                    if keep {
                        if rest.is_empty() {
                            out.push(value);
                        }
                    } else {
                        out.push(format!("-{c}"));
                        out.push(value);
                    }
                    break;
                }
            }
        }
    }
    Gate::Run(out)
}

/// The option whose long name is `name` or starts with it (GNU's abbreviations); the
/// candidates when there are none or several.
fn find_long<'a>(opts: &'a [Opt], name: &str) -> Result<&'a Opt, Vec<&'static str>> {
    if let Some(o) = opts.iter().find(|o| o.long.contains(&name)) {
        return Ok(o);
    }
    let matches: Vec<(&Opt, &'static str)> = opts
        .iter()
        .flat_map(|o| o.long.iter().map(move |l| (o, *l)))
        .filter(|(_, l)| l.starts_with(name))
        .collect();
    match matches.as_slice() {
        [(o, _)] => Ok(o),
        // Several names of one option (`--quiet`/`--silent` never share a prefix, but two
        // spellings might): still one option.
        [(o, _), rest @ ..] if rest.iter().all(|(p, _)| std::ptr::eq(*p, *o)) => Ok(o),
        _ => Err(matches.iter().map(|(_, l)| *l).collect()),
    }
}

/// `--color[=WHEN]` / `--colour[=WHEN]` among a utility's arguments (as the gate hands them
/// on, full names): burrow's output is never coloured, so `always` is refused, and so is ls's
/// bare `--color`, which means always there (grep's means auto); ls also refuses a WHEN it
/// does not know, with GNU's list. The status to end with, if refused.
pub fn colour_refused(cmd: &str, args: &[String], status: i32, io: &Io) -> Option<i32> {
    for a in args {
        if a == "--" {
            break;
        }
        let Some(rest) = a
            .strip_prefix("--color")
            .or_else(|| a.strip_prefix("--colour"))
        else {
            continue;
        };
        let name = &a[2..a.len() - rest.len()];
        let when = rest.strip_prefix('=');
        let known = [
            "always", "yes", "force", "never", "no", "none", "auto", "tty", "if-tty",
        ];
        if cmd == "ls" && when.is_some_and(|w| !known.contains(&w)) {
            io.eprint(&format!(
                "ls: invalid argument '{}' for '--{name}'\nValid arguments are:\n  - 'always', 'yes', 'force'\n  - 'never', 'no', 'none'\n  - 'auto', 'tty', 'if-tty'\nTry 'ls --help' for more information.\n",
                when.unwrap_or_default()
            ));
            return Some(1);
        }
        if matches!(when, Some("always" | "yes" | "force")) || when.is_none() && cmd == "ls" {
            io.eprint(&format!(
                "{cmd}: --{name}=always is not supported in burrow (its output is never coloured)\n"
            ));
            return Some(status);
        }
    }
    None
}
