//! `git log`: the walk from the revisions given (newest first by committer date, git's default
//! order), ranges (`A..B`, `^A`, `--all`), path limiting with git's default history
//! simplification (a commit is shown when the paths differ from its parent; a merge whose
//! paths equal one parent's follows only that parent), filters (`--author`, `--grep`, `-i`,
//! `--merges`, `--no-merges`, `--first-parent`, `--skip`, `-n`, `--reverse`), the formats
//! (`--oneline`, `--format`/`--pretty` with short, medium, full and fuller), each commit's
//! diff (`-p`, `--stat`, `--name-only`, `--name-status`), limited to the paths given as git
//! limits it, the orders (`--topo-order`, `--date-order`), `--graph` (drawn by
//! [`super::graph`], diffs behind its padding, parents rewritten past commits the paths
//! simplify away), ref decorations (`--decorate`, `%d`, `%D`), dates (`--date=`, `%ar`,
//! `%as`, ...) and the date limits (`--since`, `--until`) read by [`crate::plumbing::date`].
//! `git show` is this with the objects named shown one by one instead of walked (tags, trees
//! and blobs too) and the patch by default.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use sh_utility::io::Io;

use super::args::{Next, Opt, Refusal, Spec, Unknown, push, set, unrecognized};
use super::graph::Graph;
use crate::plumbing::commit::{ident_name_email, ident_time, read_commit, subject};
use crate::plumbing::date::{DateMode, DateStyle, parse_date_style, read_date, show_date};
use crate::plumbing::diff::{Format, NAME, NAME_STATUS, NO_OUTPUT, PATCH, STAT, commit_diff};
use crate::plumbing::object::{Commit, Kind, Oid, hex, parse_tree};
use crate::plumbing::pathspec::{Pathspec, ambiguous};
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;
use crate::plumbing::text::{abbrev, prefix};
use crate::plumbing::walk::{Limits, Scoped, scoped, shallow, walk, walk_limited};

/// How each commit is printed.
enum Pretty {
    /// git's built-in formats of several lines: `commit`, the idents, the indented message.
    Header(Level),
    /// `--oneline` (abbreviated id) and `--pretty=oneline` (full id).
    Oneline { abbreviated: bool },
    /// `--format=` / `tformat:`: each commit's text ends with a newline.
    Terminated(String),
    /// `format:`: a newline between commits, none after the last.
    Separated(String),
}

/// The built-in formats of several lines (`--pretty=`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `Author` and the message's title.
    Short,
    /// git's default: `Author`, `Date` and the message.
    Medium,
    /// `Author`, `Commit` and the message.
    Full,
    /// `Author`, `AuthorDate`, `Commit`, `CommitDate` and the message.
    Fuller,
}

/// Which command reads the options: `show` shows each object named (without walking from
/// commits) and a commit's patch unless told otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Log,
    Show,
}

/// The order of the commits shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Newest committer date first (git's default).
    Date,
    /// No parent before all its children, lines of history not intermixed (`--topo-order`,
    /// implied by `--graph`).
    Topo,
    /// No parent before its children, otherwise by committer date (`--date-order`).
    TopoDate,
}

/// How ref names are shown next to commits (`--decorate`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decorate {
    Short,
    Full,
}

/// A pattern of `--author`/`--grep`: a POSIX basic regular expression, as git reads them.
fn matcher(pattern: &str, icase: bool) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&sh_utility::pattern::bre_to_ere(pattern))
        .case_insensitive(icase)
        .build()
        .map_err(|_| format!("fatal: command line, '{pattern}': Invalid regular expression"))
}

/// What log (or show) was asked for.
struct Opts {
    max: Option<usize>,
    skip: usize,
    pretty: Pretty,
    abbrev_commit: bool,
    /// The diff shown with each commit: the default until a format is asked for.
    diff: Option<Format>,
    /// The formats asked for, as git's output_format bits (see [`output_format`]).
    output: u8,
    revs: Vec<String>,
    /// An operand was a path: all that follow are paths.
    path_seen: bool,
    all: bool,
    reverse: bool,
    merges: Option<bool>,
    authors: Vec<String>,
    greps: Vec<String>,
    committers: Vec<String>,
    all_match: bool,
    invert_grep: bool,
    /// The date limits as given: they are read after the options (a date burrow cannot read
    /// is fatal, 128, not a usage error).
    since: Option<String>,
    since_filter: Option<String>,
    until: Option<String>,
    style: DateStyle,
    icase: bool,
    first_parent: bool,
    graph: bool,
    order: Order,
    decorate: Option<Decorate>,
}

/// `-n`/`--skip`: a count, as git's revision options read it; a negative one is none
/// (no limit, nothing skipped).
fn count(v: &str) -> Result<Option<usize>, Refusal> {
    let n: i64 = v
        .parse()
        .map_err(|_| Refusal::Fatal(format!("fatal: '{v}': not an integer")))?;
    Ok(usize::try_from(n).ok())
}

const SPEC: Spec<Opts> = Spec {
    name: "log",
    usage: "git log [<options>] [<revision-range>] [[--] <path>...]",
    options: &[
        Opt::flag("--all", |o| o.all = true),
        Opt::flag("--oneline", |o| {
            o.pretty = Pretty::Oneline { abbreviated: true }
        }),
        Opt::flag("--abbrev-commit", |o| o.abbrev_commit = true),
        Opt::flag("--reverse", |o| o.reverse = true),
        Opt::flag("--first-parent", |o| o.first_parent = true),
        Opt::flag("--graph", |o| o.graph = true),
        Opt::flag("--no-graph", |o| o.graph = false),
        Opt::flag("--topo-order", |o| o.order = Order::Topo),
        Opt::flag("--date-order", |o| o.order = Order::TopoDate),
        Opt::optional("--decorate", |o, v| {
            o.decorate = match v.as_deref() {
                None | Some("short") => Some(Decorate::Short),
                Some("full") => Some(Decorate::Full),
                Some("no" | "auto") => None,
                Some(v) => {
                    return Err(Refusal::Fatal(format!(
                        "fatal: invalid --decorate option: {v}"
                    )));
                }
            };
            Ok(())
        }),
        Opt::flag("--no-decorate", |o| o.decorate = None),
        Opt::flag("--merges", |o| o.merges = Some(true)),
        Opt::flag("--no-merges", |o| o.merges = Some(false)),
        Opt::flag("-i/--regexp-ignore-case", |o| o.icase = true),
        Opt::rev_value("--author", |o, v| push(&mut o.authors, v)),
        Opt::rev_value("--grep", |o, v| push(&mut o.greps, v)),
        Opt::rev_value("--committer", |o, v| push(&mut o.committers, v)),
        Opt::flag("--all-match", |o| o.all_match = true),
        Opt::flag("--invert-grep", |o| o.invert_grep = true),
        Opt::rev_value("--since/--after", |o, v| set(&mut o.since, Some(v))),
        Opt::rev_value("--since-as-filter", |o, v| {
            set(&mut o.since_filter, Some(v))
        }),
        Opt::rev_value("--until/--before", |o, v| set(&mut o.until, Some(v))),
        // Seconds since the epoch; the last of these and --since/--until wins.
        Opt::rev_value("--max-age", |o, v| set(&mut o.since, Some(format!("@{v}")))),
        Opt::rev_value("--min-age", |o, v| set(&mut o.until, Some(format!("@{v}")))),
        // A bad date format is fatal (128), not a usage error.
        Opt::rev_value("--date", |o, v| {
            set(&mut o.style, parse_date_style(&v).map_err(Refusal::Fatal)?)
        }),
        Opt::flag("--relative-date", |o| {
            o.style = DateStyle {
                mode: DateMode::Relative,
                local: false,
            }
        }),
        Opt::rev_value("-n/--max-count", |o, v| set(&mut o.max, count(&v)?)),
        Opt::rev_value("--skip", |o, v| set(&mut o.skip, count(&v)?.unwrap_or(0))),
        Opt::count(|o, n| o.max = n.parse().ok()),
        Opt::flag("-s/--no-patch", |o| o.output = NO_OUTPUT),
        Opt::flag("-p/--patch/-u", |o| {
            o.output = (o.output & !NO_OUTPUT) | PATCH
        }),
        Opt::flag("--stat", |o| o.output = (o.output & !NO_OUTPUT) | STAT),
        Opt::flag("--name-only", |o| o.output |= NAME),
        Opt::flag("--name-status", |o| o.output |= NAME_STATUS),
        // A bad format is fatal (128), not a usage error.
        // `--pretty` alone is the medium format; `--format` is only ever `--format=...`
        // (git's revision reader knows no `--format` alone).
        Opt::optional("--pretty", |o, v| match v {
            None => set(&mut o.pretty, Pretty::Header(Level::Medium)),
            Some(v) => set(&mut o.pretty, parse_pretty(&v).map_err(Refusal::Fatal)?),
        }),
        Opt::optional("--format", |o, v| match v {
            None => Err(Refusal::Fatal(unrecognized("--format").0)),
            Some(v) => set(&mut o.pretty, parse_pretty(&v).map_err(Refusal::Fatal)?),
        }),
        // There is no terminal to colour for.
        Opt::ignored("--no-color"),
    ],
    refused: "--shortstat --numstat --branches --tags --remotes --decorate-refs --decorate-refs-exclude --clear-decorations --follow --color --author-date-order --left-right --cherry-pick -S -G --source --full-history --simplify-by-decoration -L -m --cc -c",
    // git log reads revision options, not parse-options: its refusal is this.
    unknown: Unknown::Own(unrecognized),
    help: &[],
};

/// The diff format git's output_format bits ask for, as git settles them: the name
/// formats and `-s` exclude each other and win over the others. A stat with the patch
/// (which git shows one after the other) is refused: log and show draw one format.
fn output_format(output: u8) -> Result<Option<Format>, String> {
    if (output & (NAME | NAME_STATUS | NO_OUTPUT)).count_ones() > 1 {
        return Err("fatal: options '--name-only', '--name-status', '--check', and '-s' cannot be used together".into());
    }
    Ok(if output & NO_OUTPUT != 0 {
        None
    } else if output & NAME_STATUS != 0 {
        Some(Format::NameStatus)
    } else if output & NAME != 0 {
        Some(Format::NameOnly)
    } else if output & (STAT | PATCH) == STAT | PATCH {
        return Err("fatal: '--stat' with '-p' is not supported in burrow's log and show".into());
    } else if output & STAT != 0 {
        Some(Format::Stat)
    } else {
        Some(Format::Patch)
    })
}

/// Reads one of log's operands: a revision (kept), or the first path (after which all are
/// paths), which must exist when no `--` comes first unless it has wildcards (git's
/// looks_like_pathspec).
fn operand(repo: &Repo, cwd: &Path, pre: &[u8], o: &mut Opts, s: &str) -> Result<Next, Refusal> {
    if s == "-" {
        return Err(Refusal::Fatal(unrecognized(s).0));
    }
    if is_revision(repo, s, pre) {
        o.revs.push(s.to_string());
        return Ok(Next::Taken);
    }
    if !s.contains(['*', '?', '[']) && cwd.join(s).symlink_metadata().is_err() {
        // git says what is wrong with a name it can tell is meant as a revision
        // (`HEAD:nope`), after what it printed trying it (twice: as a revision, then to
        // diagnose it).
        let e = crate::plumbing::rev::lookup(repo, s, pre)
            .err()
            .unwrap_or_default();
        let tried: String = e.errors.iter().map(|l| format!("{l}\n")).collect();
        let mut msg = if e.dies.is_some() {
            tried
        } else {
            tried.repeat(2)
        };
        msg.push_str(&e.dies.or(e.fatal).unwrap_or_else(|| ambiguous(s)));
        return Err(Refusal::Fatal(msg));
    }
    o.path_seen = true;
    Ok(Next::Stop)
}

pub(crate) fn log(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    log_or_show(repo, cwd, args, io, Mode::Log)
}

/// `git show`: the objects named (HEAD by default) with `log`'s options, each commit with its
/// patch; a tag's header then what it tags, a tree's names, a blob's content.
pub(crate) fn show(repo: &Repo, cwd: &Path, args: &[String], io: &Io) -> Result<i32, String> {
    log_or_show(repo, cwd, args, io, Mode::Show)
}

fn log_or_show(
    repo: &Repo,
    cwd: &Path,
    args: &[String],
    io: &Io,
    mode: Mode,
) -> Result<i32, String> {
    let mut o = Opts {
        max: None,
        skip: 0,
        pretty: Pretty::Header(Level::Medium),
        abbrev_commit: false,
        diff: (mode == Mode::Show).then_some(Format::Patch),
        output: 0,
        revs: Vec::new(),
        path_seen: false,
        all: false,
        reverse: false,
        merges: None,
        authors: Vec::new(),
        greps: Vec::new(),
        committers: Vec::new(),
        all_match: false,
        invert_grep: false,
        since: None,
        since_filter: None,
        until: None,
        style: DateStyle::default(),
        icase: false,
        first_parent: false,
        graph: false,
        order: Order::Date,
        // log.decorate=auto (the default) decorates only on a terminal, which burrow's
        // output never is.
        decorate: match repo.config("log.decorate").as_deref() {
            Some("short" | "true" | "yes" | "on" | "1") => Some(Decorate::Short),
            Some("full") => Some(Decorate::Full),
            _ => None,
        },
    };
    let pre = prefix(repo, cwd);
    let (operands, after) = match SPEC.parse_with(args, &mut o, io, &mut |o, arg| {
        operand(repo, cwd, &pre, o, arg)
    }) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    if o.output != 0 {
        o.diff = match output_format(o.output) {
            Ok(f) => f,
            Err(e) => return Ok(super::args::fail(io, &e)),
        };
    }
    // After the first path everything is a path (`--` among them left out).
    let paths: Vec<String> = if o.path_seen {
        operands
            .into_iter()
            .chain(after.unwrap_or_default())
            .filter(|p| p != "--")
            .collect()
    } else {
        after.unwrap_or_default()
    };
    let Opts {
        max,
        skip,
        pretty,
        abbrev_commit,
        diff,
        revs,
        all,
        reverse,
        merges,
        authors,
        greps,
        committers,
        all_match,
        invert_grep,
        since: since_text,
        since_filter: since_filter_text,
        until: until_text,
        style,
        icase,
        first_parent,
        graph,
        mut order,
        decorate,
        ..
    } = o;
    let dates = Dates {
        style,
        now: sh_utility::time::now(),
        mailmap: repo
            .work
            .as_ref()
            .is_some_and(|w| w.join(".mailmap").exists())
            || repo.config("mailmap.file").is_some()
            || repo.config("mailmap.blob").is_some(),
    };
    let mut limits = Limits {
        first_parent,
        ..Limits::default()
    };
    let date = |t: Option<String>| t.map(|v| read_date(&v, dates.now)).transpose();
    limits.since = date(since_text)?;
    let since_filter = date(since_filter_text)?;
    let until = date(until_text)?;
    if graph && reverse {
        return Err("fatal: options '--graph' and '--reverse' cannot be used together".into());
    }
    if graph {
        order = Order::Topo;
    }
    limits.scopes = paths.iter().map(|p| Pathspec::new(&pre, p)).collect();
    let mut starts = Vec::new();
    if all {
        // Every ref and HEAD: tags name their commits, other objects are left out.
        let refs = repo.refs_under("refs/");
        for id in refs.iter().map(|(_, id)| *id).chain(repo.head().1) {
            if let Ok(c) = repo.peel_commit(&id)
                && !starts.contains(&c)
            {
                starts.push(c);
            }
        }
    }
    // `show` of objects (not of ranges) shows each as it is, without a walk.
    let show_objects = mode == Mode::Show
        && !all
        && revs
            .iter()
            .all(|r| !r.contains("..") && !r.starts_with('^'));
    let mut excluded = Vec::new();
    let commit_of = |r: &str| -> Result<Oid, String> {
        let id = resolve(repo, r).ok_or_else(|| ambiguous(r))?;
        repo.peel_commit(&id)
    };
    for r in revs.iter().filter(|_| !show_objects) {
        if r.contains("...") {
            return Err(format!(
                "fatal: symmetric ranges ('{r}') are not supported in burrow's git log"
            ));
        }
        if let Some((x, y)) = r.split_once("..") {
            let x = if x.is_empty() { "HEAD" } else { x };
            let y = if y.is_empty() { "HEAD" } else { y };
            excluded.push(commit_of(x)?);
            starts.push(commit_of(y)?);
        } else if let Some(x) = r.strip_prefix('^') {
            excluded.push(commit_of(x)?);
        } else {
            starts.push(commit_of(r)?);
        }
    }
    if starts.is_empty() && excluded.is_empty() && !all && !show_objects {
        match repo.head() {
            (_, Some(id)) => starts.push(id),
            (Some(b), None) => {
                return Err(format!(
                    "fatal: your current branch '{}' does not have any commits yet",
                    b.trim_start_matches("refs/heads/")
                ));
            }
            _ => return Err("fatal: bad default revision 'HEAD'".into()),
        }
    }
    if !excluded.is_empty() {
        limits.hidden = walk(repo, &excluded)?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
    }
    let authors: Vec<regex::Regex> = authors
        .iter()
        .map(|p| matcher(p, icase))
        .collect::<Result<_, _>>()?;
    let greps: Vec<regex::Regex> = greps
        .iter()
        .map(|p| matcher(p, icase))
        .collect::<Result<_, _>>()?;
    let committers: Vec<regex::Regex> = committers
        .iter()
        .map(|p| matcher(p, icase))
        .collect::<Result<_, _>>()?;
    let boundary = shallow(repo);
    let mut simplified = HashMap::new();
    let walked = if show_objects {
        Vec::new()
    } else {
        walk_limited(repo, &starts, &limits, &mut simplified)?
    };
    let walked = match order {
        Order::Date => walked,
        Order::Topo => topo_sort(walked, &boundary, false),
        Order::TopoDate => topo_sort(walked, &boundary, true),
    };
    // As git combines them: patterns on one header field match if any does, the fields
    // (author, committer) must all match, and so must the message patterns (any of them, or
    // all with --all-match; none with --invert-grep).
    let passes = |c: &Commit| {
        // Name <email>, as git matches --author against the ident.
        let field = |ident: &str, pats: &[regex::Regex]| {
            let ident = ident.rsplit_once('>').map_or(ident, |(i, _)| i);
            let ident = format!("{ident}>");
            pats.is_empty() || pats.iter().any(|r| r.is_match(&ident))
        };
        let body = greps.is_empty()
            || invert_grep
                != if all_match {
                    greps.iter().all(|r| r.is_match(&c.message))
                } else {
                    greps.iter().any(|r| r.is_match(&c.message))
                };
        let time = ident_time(&c.committer).0;
        merges.is_none_or(|m| m == (c.parents.len() > 1))
            && field(&c.author, &authors)
            && field(&c.committer, &committers)
            && body
            && until.is_none_or(|u| time <= u)
            && since_filter.is_none_or(|s| time >= s)
    };
    // What the log shows, before --skip and -n: the commits the graph draws edges to.
    let shown: HashSet<Oid> = walked
        .iter()
        .filter(|(_, c)| passes(c))
        .map(|(id, _)| *id)
        .collect();
    let mut commits: Vec<(Oid, Commit)> = walked
        .into_iter()
        .filter(|(id, _)| shown.contains(id))
        .skip(skip)
        .take(max.unwrap_or(usize::MAX))
        .collect();
    if reverse {
        commits.reverse();
    }
    let needs_refs = decorate.is_some()
        || matches!(&pretty, Pretty::Terminated(f) | Pretty::Separated(f)
            if f.contains("%d") || f.contains("%D"));
    // Refs and HEAD are read only when something shows them.
    let deco = if needs_refs {
        Decorations {
            style: decorate.unwrap_or(Decorate::Short),
            by_commit: load_decorations(repo, &boundary),
            head: repo.head().0,
        }
    } else {
        Decorations {
            style: Decorate::Short,
            by_commit: HashMap::new(),
            head: None,
        }
    };
    let shown_deco = |id: &Oid| match decorate {
        Some(_) => deco.format(id, " (", ")"),
        None => String::new(),
    };
    if graph && !show_objects {
        let mut g = Graph::new();
        let parents_of = |id: &Oid, c: &Commit| -> Vec<Oid> {
            if boundary.contains(id) {
                return Vec::new();
            }
            let n = if limits.first_parent { 1 } else { usize::MAX };
            // Parents simplified away by the paths are rewritten to the nearest ancestor
            // shown; the same parent reached twice is drawn once.
            let mut out: Vec<Oid> = Vec::new();
            for p in c.parents.iter().take(n) {
                let mut p = *p;
                while let Some(next) = simplified.get(&p) {
                    match next {
                        Some(q) => p = *q,
                        None => break,
                    }
                }
                if shown.contains(&p) && !out.contains(&p) {
                    out.push(p);
                }
            }
            out
        };
        let mut out = String::new();
        let mut missing_newline = false;
        for (k, (id, c)) in commits.iter().enumerate() {
            g.update(*id, parents_of(id, c));
            let separated = matches!(pretty, Pretty::Header(_) | Pretty::Separated(_));
            if k > 0 && separated {
                if !missing_newline {
                    g.show_padding(&mut out);
                }
                out.push('\n');
            }
            g.show_commit(&mut out);
            let text = match &pretty {
                Pretty::Header(level) => {
                    let header = dates.header(id, c, *level);
                    let (first, rest) = header.split_once('\n').unwrap_or((&header, ""));
                    let first = if abbrev_commit {
                        first.replacen(&hex(id), &abbrev(id), 1)
                    } else {
                        first.to_string()
                    };
                    out.push_str(&first);
                    out.push_str(&shown_deco(id));
                    out.push('\n');
                    g.show_oneline(&mut out);
                    format!("{}\n", rest.trim_end())
                }
                Pretty::Oneline { abbreviated } => {
                    out.push_str(&if *abbreviated || abbrev_commit {
                        abbrev(id)
                    } else {
                        hex(id)
                    });
                    out.push_str(&shown_deco(id));
                    out.push(' ');
                    subject(&c.message)
                }
                Pretty::Terminated(f) | Pretty::Separated(f) => {
                    format_commit(f, id, c, &deco, &dates)?
                }
            };
            missing_newline = !text.ends_with('\n');
            g.show_commit_msg(&mut out, &text);
            let terminated = match &pretty {
                Pretty::Oneline { .. } => true,
                Pretty::Terminated(f) => !f.is_empty(),
                _ => false,
            };
            if terminated {
                if !missing_newline {
                    g.show_padding(&mut out);
                }
                out.push('\n');
            }
            // The diff: after a separator line unless the format is one line or empty, each
            // of its lines behind the drawing's padding, as git prefixes diff output.
            let text = match diff {
                Some(f) => commit_diff(repo, c, f, &limits.scopes)?,
                None => String::new(),
            };
            if !text.is_empty() {
                let one_line = match &pretty {
                    Pretty::Oneline { .. } => true,
                    Pretty::Terminated(f) | Pretty::Separated(f) => f.is_empty(),
                    Pretty::Header(_) => false,
                };
                if !one_line {
                    g.show_padding(&mut out);
                    out.push('\n');
                }
                for line in text.split_inclusive('\n') {
                    g.show_padding(&mut out);
                    out.push_str(line);
                }
            }
        }
        io.print(&out);
        return Ok(0);
    }
    // One commit after `shown_one` other things (a separator goes before it in some formats).
    let render = |out: &mut String, shown_one: bool, id: &Oid, c: &Commit| -> Result<(), String> {
        // `show` gives a merge git's combined diff, with a line after the header even when
        // that diff is empty.
        let combined = mode == Mode::Show && c.parents.len() > 1 && diff.is_some();
        let text = match diff {
            Some(f) if combined => crate::plumbing::diff::merge_diff(repo, c, f, &limits.scopes)?,
            Some(f) => commit_diff(repo, c, f, &limits.scopes)?,
            None => String::new(),
        };
        let separated = !text.is_empty() || combined;
        match &pretty {
            Pretty::Header(level) => {
                if shown_one {
                    out.push('\n');
                }
                let header = dates.header(id, c, *level);
                let header = if abbrev_commit {
                    header.replacen(&hex(id), &abbrev(id), 1)
                } else {
                    header
                };
                match header.split_once('\n') {
                    Some((first, rest)) if decorate.is_some() => {
                        out.push_str(first);
                        out.push_str(&shown_deco(id));
                        out.push('\n');
                        out.push_str(rest);
                    }
                    _ => out.push_str(&header),
                }
                if separated {
                    out.push('\n');
                }
            }
            Pretty::Oneline { abbreviated } => {
                let id_text = if *abbreviated || abbrev_commit {
                    abbrev(id)
                } else {
                    hex(id)
                };
                out.push_str(&format!(
                    "{id_text}{} {}\n",
                    shown_deco(id),
                    subject(&c.message)
                ));
                if combined {
                    out.push('\n');
                }
            }
            // An empty format shows no text and no line between it and the diff
            // (`git log --format= --name-only` lists only the files).
            Pretty::Terminated(f) => {
                out.push_str(&format_commit(f, id, c, &deco, &dates)?);
                if !f.is_empty() {
                    out.push('\n');
                    if separated {
                        out.push('\n');
                    }
                }
            }
            Pretty::Separated(f) => {
                if shown_one {
                    out.push('\n');
                }
                out.push_str(&format_commit(f, id, c, &deco, &dates)?);
                if separated && !f.is_empty() {
                    out.push('\n');
                }
            }
        }
        out.push_str(&text);
        Ok(())
    };
    if show_objects {
        return show_each(
            repo,
            cwd,
            &revs,
            &pretty,
            &dates,
            &limits.scopes,
            io,
            &render,
        );
    }
    let mut out = String::new();
    for (k, (id, c)) in commits.iter().enumerate() {
        render(&mut out, k > 0, id, c)?;
    }
    io.print(&out);
    Ok(0)
}

/// Shows one commit into the output, after `shown_one` other things.
type Render<'a> = dyn Fn(&mut String, bool, &Oid, &Commit) -> Result<(), String> + 'a;

/// `git show`'s objects in the order given: a commit as the log shows it, an annotated tag
/// as its header and message then what it tags, a tree as its names, a blob as it is.
#[allow(clippy::too_many_arguments)]
fn show_each(
    repo: &Repo,
    cwd: &Path,
    revs: &[String],
    pretty: &Pretty,
    dates: &Dates,
    scopes: &[Pathspec],
    io: &Io,
    render: &Render<'_>,
) -> Result<i32, String> {
    let pre = prefix(repo, cwd);
    let head = ["HEAD".to_string()];
    let revs = if revs.is_empty() { &head[..] } else { revs };
    let mut out = String::new();
    let mut shown_one = false;
    // A commit named twice is shown once, as git's walk marks it shown.
    let mut shown: HashSet<Oid> = HashSet::new();
    for rev in revs {
        let mut id = crate::plumbing::rev::lookup(repo, rev, &pre).map_err(|_| ambiguous(rev))?;
        loop {
            let (kind, data) = repo.read(&id)?;
            match kind {
                Kind::Commit => {
                    let c = crate::plumbing::object::parse_commit(&data)?;
                    // With paths, a commit that changes none of them is not shown.
                    if shown.insert(id) && (scopes.is_empty() || touches(repo, &c, scopes)?) {
                        render(&mut out, shown_one, &id, &c)?;
                        shown_one = true;
                    }
                }
                Kind::Tag => {
                    if shown_one {
                        out.push('\n');
                    }
                    out.push_str(&tag_text(&data, pretty, dates));
                    shown_one = true;
                    if let Some(target) = crate::plumbing::object::tag_target(&data) {
                        id = target;
                        continue;
                    }
                }
                Kind::Tree => {
                    if shown_one {
                        out.push('\n');
                    }
                    out.push_str(&format!("tree {rev}\n\n"));
                    for e in parse_tree(&data)? {
                        out.push_str(&String::from_utf8_lossy(&e.name));
                        out.push_str(if e.is_tree() { "/\n" } else { "\n" });
                    }
                    shown_one = true;
                }
                Kind::Blob => {
                    // The content as it is, bytes and all.
                    io.print(&std::mem::take(&mut out));
                    io.out.write(&data);
                }
            }
            break;
        }
    }
    io.print(&out);
    Ok(0)
}

/// Whether a commit changes what `scopes` select: against its parent, a merge against
/// every parent, a root commit by having any of it.
fn touches(repo: &Repo, c: &Commit, scopes: &[Pathspec]) -> Result<bool, String> {
    let mine = scoped(repo, &c.tree, scopes)?;
    if c.parents.is_empty() {
        return Ok(mine.iter().any(Scoped::is_some));
    }
    for p in &c.parents {
        if scoped(repo, &read_commit(repo, p)?.tree, scopes)? == mine {
            return Ok(false);
        }
    }
    Ok(true)
}

/// An annotated tag as `git show` prints it: `tag NAME`, the tagger as the format shows an
/// author (with its date in the default format), then the message.
fn tag_text(data: &[u8], pretty: &Pretty, dates: &Dates) -> String {
    let text = String::from_utf8_lossy(data);
    let (head, message) = match text.split_once("\n\n") {
        Some((h, m)) => (h, format!("\n{m}")),
        None => (text.as_ref(), String::new()),
    };
    let name = head
        .lines()
        .find_map(|l| l.strip_prefix("tag "))
        .unwrap_or("");
    let mut out = format!("tag {name}\n");
    for ident in head.lines().filter_map(|l| l.strip_prefix("tagger ")) {
        let (n, e) = ident_name_email(ident);
        match pretty {
            Pretty::Oneline { .. } => {}
            Pretty::Header(Level::Medium) => {
                out.push_str(&format!("Tagger: {n} <{e}>\nDate:   {}\n", dates.of(ident)));
            }
            Pretty::Header(Level::Fuller) => out.push_str(&format!(
                "Tagger:     {n} <{e}>\nTaggerDate: {}\n",
                dates.of(ident)
            )),
            _ => out.push_str(&format!("Tagger: {n} <{e}>\n")),
        }
    }
    out.push_str(&message);
    out
}

/// A `--format`/`--pretty` value.
fn parse_pretty(v: &str) -> Result<Pretty, String> {
    Ok(match v {
        "" => Pretty::Terminated(String::new()),
        "oneline" => Pretty::Oneline { abbreviated: false },
        "short" => Pretty::Header(Level::Short),
        "medium" => Pretty::Header(Level::Medium),
        "full" => Pretty::Header(Level::Full),
        "fuller" => Pretty::Header(Level::Fuller),
        "raw" | "email" | "reference" | "mboxrd" => {
            return Err(format!(
                "fatal: the pretty format '{v}' is not supported in burrow"
            ));
        }
        _ => {
            if let Some(f) = v.strip_prefix("format:") {
                Pretty::Separated(f.to_string())
            } else if let Some(f) = v.strip_prefix("tformat:") {
                Pretty::Terminated(f.to_string())
            } else if v.contains('%') {
                Pretty::Terminated(v.to_string())
            } else {
                return Err(format!("fatal: invalid --pretty format: {v}"));
            }
        }
    })
}

/// Whether a log argument names commits: a revision, `A..B` or `^A`.
fn is_revision(repo: &Repo, s: &str, pre: &[u8]) -> bool {
    let rev = |r: &str| crate::plumbing::rev::lookup(repo, r, pre).is_ok();
    let one = |r: &str| r.is_empty() || rev(r);
    if let Some((x, y)) = s.split_once("...").or_else(|| s.split_once("..")) {
        return one(x) && one(y) && !(x.is_empty() && y.is_empty());
    }
    match s.strip_prefix('^') {
        Some(x) => rev(x),
        None => rev(s),
    }
}

/// How dates are shown: `--date=` and the time relative dates count from.
struct Dates {
    style: DateStyle,
    now: i64,
    /// Whether the repository has a mailmap (which `%aN` and friends would apply).
    mailmap: bool,
}

impl Dates {
    /// An ident's date in the `--date=` style.
    fn of(&self, ident: &str) -> String {
        let (t, z) = ident_time(ident);
        show_date(t, &z, &self.style, self.now)
    }

    /// An ident's date in a fixed mode (`%ai`, `%ar`, ...).
    fn as_mode(&self, ident: &str, mode: DateMode) -> String {
        let (t, z) = ident_time(ident);
        let style = DateStyle { mode, local: false };
        show_date(t, &z, &style, self.now)
    }

    /// A built-in format's text of a commit: `commit`, the idents, the indented message.
    fn header(&self, id: &Oid, c: &Commit, level: Level) -> String {
        if level == Level::Medium {
            return format_show_header_dated(id, c, &self.of(&c.author));
        }
        let mut out = format!("commit {}\n", hex(id));
        if c.parents.len() > 1 {
            let p: Vec<String> = c.parents.iter().map(abbrev).collect();
            out.push_str(&format!("Merge: {}\n", p.join(" ")));
        }
        let who = |ident: &str| {
            let (n, e) = ident_name_email(ident);
            format!("{n} <{e}>")
        };
        match level {
            Level::Fuller => out.push_str(&format!(
                "Author:     {}\nAuthorDate: {}\nCommit:     {}\nCommitDate: {}\n",
                who(&c.author),
                self.of(&c.author),
                who(&c.committer),
                self.of(&c.committer)
            )),
            Level::Full => out.push_str(&format!(
                "Author: {}\nCommit: {}\n",
                who(&c.author),
                who(&c.committer)
            )),
            _ => out.push_str(&format!("Author: {}\n", who(&c.author))),
        }
        out.push('\n');
        let message = c.message.trim_end_matches('\n');
        // The short format has the title only: the first paragraph.
        let message = match level {
            Level::Short => message.split("\n\n").next().unwrap_or(""),
            _ => message,
        };
        for line in message.lines() {
            out.push_str(&format!("    {line}\n"));
        }
        out
    }
}

/// A date placeholder after `%a` or `%c` (`d`, `r`, `i`, `I`, `s`, `D`, `t`).
fn date_placeholder(k: char, ident: &str, dates: &Dates) -> Option<String> {
    Some(match k {
        'd' => dates.of(ident),
        'r' => dates.as_mode(ident, DateMode::Relative),
        'i' => dates.as_mode(ident, DateMode::Iso),
        'I' => dates.as_mode(ident, DateMode::IsoStrict),
        's' => dates.as_mode(ident, DateMode::Short),
        'D' => dates.as_mode(ident, DateMode::Rfc),
        't' => ident_time(ident).0.to_string(),
        _ => return None,
    })
}

/// `--format` placeholders burrow implements; any other `%x` is refused.
fn format_commit(
    fmt: &str,
    id: &Oid,
    c: &Commit,
    deco: &Decorations,
    dates: &Dates,
) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        let two: Vec<char> = chars.clone().take(2).collect();
        let person = match two.first() {
            Some('a') => Some(&c.author),
            Some('c') => Some(&c.committer),
            _ => None,
        };
        if let (Some(ident), Some(&k)) = (person, two.get(1)) {
            let (name, email) = ident_name_email(ident);
            let text = match k {
                'n' => name,
                'e' => email,
                'l' => email
                    .split_once('@')
                    .map_or(email.clone(), |(l, _)| l.to_string()),
                // The mailmap forms: the same as long as the repository has no .mailmap.
                'N' | 'E' | 'L' if !dates.mailmap => match k {
                    'N' => name,
                    'E' => email,
                    _ => email
                        .split_once('@')
                        .map_or(email.clone(), |(l, _)| l.to_string()),
                },
                k => match date_placeholder(k, ident, dates) {
                    Some(t) => t,
                    None => {
                        return Err(format!(
                            "fatal: the format placeholder '%{}{k}' is not supported in burrow",
                            two[0]
                        ));
                    }
                },
            };
            chars.next();
            chars.next();
            out.push_str(&text);
            continue;
        }
        let two: String = two.into_iter().collect();
        let (text, used) = match two.as_str() {
            _ if two.starts_with('d') => (deco.format(id, " (", ")"), 1),
            _ if two.starts_with('D') => (deco.format(id, "", ""), 1),
            _ => match chars.peek() {
                Some('H') => (hex(id), 1),
                Some('h') => (abbrev(id), 1),
                Some('T') => (hex(&c.tree), 1),
                Some('t') => (abbrev(&c.tree), 1),
                Some('P') => (c.parents.iter().map(hex).collect::<Vec<_>>().join(" "), 1),
                Some('p') => (
                    c.parents.iter().map(abbrev).collect::<Vec<_>>().join(" "),
                    1,
                ),
                Some('s') => (subject(&c.message), 1),
                Some('b') => (
                    c.message
                        .split_once("\n\n")
                        .map(|(_, b)| b.to_string())
                        .unwrap_or_default(),
                    1,
                ),
                Some('B') => (c.message.clone(), 1),
                Some('n') => ("\n".to_string(), 1),
                Some('%') => ("%".to_string(), 1),
                other => {
                    return Err(format!(
                        "fatal: the format placeholder '%{}' is not supported in burrow",
                        other.map(|c| c.to_string()).unwrap_or_default()
                    ));
                }
            },
        };
        for _ in 0..used {
            chars.next();
        }
        out.push_str(&text);
    }
    Ok(out)
}

/// Commits in topological order: each after all of its children in the list. Git's graph
/// order takes the tips as the walk gave them and follows one line of history as far as it
/// can (a stack); the date order takes the newest commit whose children are all out.
fn topo_sort(
    list: Vec<(Oid, Commit)>,
    boundary: &HashSet<Oid>,
    by_date: bool,
) -> Vec<(Oid, Commit)> {
    let parents = |id: &Oid, c: &Commit| -> Vec<Oid> {
        if boundary.contains(id) {
            Vec::new()
        } else {
            c.parents.clone()
        }
    };
    // 1 + the number of children in the list; 0 once emitted (or not in the list).
    let mut indegree: HashMap<Oid, usize> = list.iter().map(|(id, _)| (*id, 1)).collect();
    for (id, c) in &list {
        for p in parents(id, c) {
            if let Some(n) = indegree.get_mut(&p)
                && *n > 0
            {
                *n += 1;
            }
        }
    }
    let index: HashMap<Oid, usize> = list
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    let time = |i: usize| ident_time(&list[i].1.committer).0;
    let mut stack: Vec<usize> = Vec::new();
    let mut heap: BinaryHeap<(i64, Reverse<u64>, usize)> = BinaryHeap::new();
    let mut ctr = 0u64;
    let mut push = |i: usize, stack: &mut Vec<usize>, heap: &mut BinaryHeap<_>| {
        if by_date {
            heap.push((time(i), Reverse(ctr), i));
            ctr += 1;
        } else {
            stack.push(i);
        }
    };
    for (i, (id, _)) in list.iter().enumerate() {
        if indegree.get(id) == Some(&1) {
            push(i, &mut stack, &mut heap);
        }
    }
    // The first tip comes out first.
    stack.reverse();
    let mut order = Vec::with_capacity(list.len());
    loop {
        let next = if by_date {
            heap.pop().map(|(_, _, i)| i)
        } else {
            stack.pop()
        };
        let Some(i) = next else { break };
        let (id, c) = &list[i];
        for p in parents(id, c) {
            let Some(n) = indegree.get_mut(&p) else {
                continue;
            };
            if *n == 0 {
                continue;
            }
            *n -= 1;
            if *n == 1
                && let Some(&j) = index.get(&p)
            {
                push(j, &mut stack, &mut heap);
            }
        }
        indegree.insert(*id, 0);
        order.push(i);
    }
    let mut slots: Vec<Option<(Oid, Commit)>> = list.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// What a ref decoration is, which decides how it is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DecoKind {
    Head,
    Branch,
    Tag,
    Remote,
    Stash,
    Grafted,
}

/// The names shown next to commits.
struct Decorations {
    style: Decorate,
    /// For each commit, its names in the order git shows them.
    by_commit: HashMap<Oid, Vec<(DecoKind, String)>>,
    /// The branch HEAD names, when it names one.
    head: Option<String>,
}

/// Every decoration, as git loads them: the refs of the decorated namespaces in name order,
/// then HEAD, then shallow commits (`grafted`); each commit shows its names last loaded first.
fn load_decorations(repo: &Repo, boundary: &HashSet<Oid>) -> HashMap<Oid, Vec<(DecoKind, String)>> {
    let mut by: HashMap<Oid, Vec<(DecoKind, String)>> = HashMap::new();
    for (name, id) in repo.refs_under("refs/") {
        let kind = if name.starts_with("refs/heads/") {
            DecoKind::Branch
        } else if name.starts_with("refs/tags/") {
            DecoKind::Tag
        } else if name.starts_with("refs/remotes/") {
            DecoKind::Remote
        } else if name == "refs/stash" {
            DecoKind::Stash
        } else {
            continue;
        };
        match repo.read(&id) {
            Ok((Kind::Commit, _)) => by.entry(id).or_default().push((kind, name)),
            // An annotated tag decorates the commit it leads to.
            Ok((Kind::Tag, _)) => {
                if let Ok(c) = repo.peel_commit(&id) {
                    by.entry(c).or_default().push((DecoKind::Tag, name));
                }
            }
            _ => {}
        }
    }
    if let (_, Some(id)) = repo.head() {
        by.entry(id)
            .or_default()
            .push((DecoKind::Head, "HEAD".into()));
    }
    for id in boundary {
        by.entry(*id)
            .or_default()
            .push((DecoKind::Grafted, "grafted".into()));
    }
    for list in by.values_mut() {
        list.reverse();
    }
    by
}

impl Decorations {
    /// `prefix NAME, NAME suffix`, or nothing for a commit without names. HEAD and the branch
    /// it names show as `HEAD -> branch` where HEAD is.
    fn format(&self, id: &Oid, prefix: &str, suffix: &str) -> String {
        let Some(list) = self.by_commit.get(id) else {
            return String::new();
        };
        let name = |n: &str| -> String {
            if self.style == Decorate::Full {
                return n.to_string();
            }
            ["refs/heads/", "refs/tags/", "refs/remotes/"]
                .iter()
                .find_map(|p| n.strip_prefix(p))
                .unwrap_or(n)
                .to_string()
        };
        let current = self.head.as_deref().filter(|b| {
            list.iter().any(|(k, _)| *k == DecoKind::Head)
                && list.iter().any(|(k, n)| *k == DecoKind::Branch && n == b)
        });
        let mut parts = Vec::new();
        for (kind, n) in list {
            if *kind == DecoKind::Branch && Some(n.as_str()) == current {
                continue;
            }
            let mut text = String::new();
            if *kind == DecoKind::Tag {
                text.push_str("tag: ");
            }
            text.push_str(&name(n));
            if *kind == DecoKind::Head
                && let Some(b) = current
            {
                text.push_str(" -> ");
                text.push_str(&name(b));
            }
            parts.push(text);
        }
        format!("{prefix}{}{suffix}", parts.join(", "))
    }
}

/// A commit as `git log` and `git show` print it by default (the medium format), with the
/// author date as `--date=` shows it.
pub(crate) fn format_show_header_dated(id: &Oid, c: &Commit, date: &str) -> String {
    let (name, email) = ident_name_email(&c.author);
    let mut out = format!("commit {}\n", hex(id));
    if c.parents.len() > 1 {
        let p: Vec<String> = c.parents.iter().map(abbrev).collect();
        out.push_str(&format!("Merge: {}\n", p.join(" ")));
    }
    out.push_str(&format!("Author: {name} <{email}>\nDate:   {date}\n\n"));
    // Every line indented, blank ones too, as git does.
    for line in c.message.trim_end_matches('\n').lines() {
        out.push_str(&format!("    {line}\n"));
    }
    out
}
