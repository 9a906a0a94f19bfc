//! `git for-each-ref`: the refs under `refs/` (or those the patterns name), sorted
//! (`--sort=[-]KEY`, `version:refname`), `--count`, `--points-at`, `--merged`,
//! `--no-merged`, `--contains`, `--no-contains`, `--exclude`, shown in a `--format` of git's
//! atoms (`%(refname:short)`, `%(objectname:short)`, `%(subject)`, the author, committer,
//! tagger and creator fields and their dates, `%(upstream)`, `%(HEAD)`, `%(*atom)` of what a
//! tag points at, `%(if)...%(then)...%(else)...%(end)`). Atoms git has and burrow does not
//! are refused by name; unknown ones with git's `fatal: unknown field name`.

use std::cmp::Ordering;

use foldhash::HashSet;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, push, set, usage_error};
use crate::plumbing::commit::ident_time;
use crate::plumbing::date::{git_date, parse_date_style, show_date};
use crate::plumbing::object::{Kind, Oid, hex, parse_commit};
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;

const USAGE: &str = "git for-each-ref [<options>] [<pattern>]
   or: git for-each-ref [--points-at <object>]
   or: git for-each-ref [--merged [<commit>]] [--no-merged [<commit>]]
   or: git for-each-ref [--contains [<commit>]] [--no-contains [<commit>]]

    -s, --[no-]shell      quote placeholders suitably for shells
    -p, --[no-]perl       quote placeholders suitably for perl
    --[no-]python         quote placeholders suitably for python
    --[no-]tcl            quote placeholders suitably for Tcl
    --[no-]omit-empty     do not output a newline after empty formatted refs

    --[no-]count <n>      show only <n> matched refs
    --[no-]format <format>
                          format to use for the output
    --[no-]color[=<when>] respect format colors
    --[no-]exclude <pattern>
                          exclude refs which match pattern
    --[no-]sort <key>     field name to sort on
    --[no-]points-at <object>
                          print only refs which points at the given object
    --merged <commit>     print only refs that are merged
    --no-merged <commit>  print only refs that are not merged
    --contains <commit>   print only refs which contain the commit
    --no-contains <commit>
                          print only refs which don't contain the commit
    --[no-]ignore-case    sorting and filtering are case insensitive
    --[no-]stdin          read reference patterns from stdin
    --[no-]include-root-refs
                          also include HEAD ref and pseudorefs
";

const DEFAULT_FORMAT: &str = "%(objectname) %(objecttype)\t%(refname)";

/// Atoms git knows that burrow's for-each-ref does not show.
const NOT_HERE: &[&str] = &[
    "align",
    "color",
    "describe",
    "push",
    "worktreepath",
    "trailers",
    "signature",
    "raw",
    "rest",
    "deltabase",
    "objectsize",
    "numparent",
    "object",
    "type",
    "ahead-behind",
    "is-base",
];

/// A piece of a format.
#[derive(Debug, Clone)]
enum Piece {
    Text(Vec<u8>),
    Atom(String),
    /// `%(if[:equals=X|:notequals=X])COND%(then)A[%(else)B]%(end)`.
    If {
        test: Option<(bool, String)>,
        cond: Vec<Piece>,
        then: Vec<Piece>,
        other: Vec<Piece>,
    },
}

/// Reads a format into pieces; git's errors for malformed ones.
fn parse_format(f: &str) -> Result<Vec<Piece>, String> {
    let b = f.as_bytes();
    let mut i = 0;
    // The pieces of each open %(if), and where it is: 0 cond, 1 then, 2 else.
    type Open = (Option<(bool, String)>, [Vec<Piece>; 3], usize);
    let mut stack: Vec<Open> = Vec::new();
    let mut top: Vec<Piece> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    fn cur<'a>(top: &'a mut Vec<Piece>, stack: &'a mut [Open]) -> &'a mut Vec<Piece> {
        match stack.last_mut() {
            Some((_, parts, k)) => &mut parts[*k],
            None => top,
        }
    }
    while i < b.len() {
        if b[i] == b'%' && b.get(i + 1) == Some(&b'%') {
            text.push(b'%');
            i += 2;
            continue;
        }
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            let v = u8::from_str_radix(&f[i + 1..i + 3], 16).unwrap_or(b'%');
            text.push(v);
            i += 3;
            continue;
        }
        if b[i] == b'%' && b.get(i + 1) == Some(&b'(') {
            let Some(close) = f[i..].find(')') else {
                return Err(format!("error: malformed format string {}", &f[i..]));
            };
            let atom = f[i + 2..i + close].to_string();
            i += close + 1;
            if !text.is_empty() {
                cur(&mut top, &mut stack).push(Piece::Text(std::mem::take(&mut text)));
            }
            let (name, arg) = match atom.split_once(':') {
                Some((n, a)) => (n, Some(a)),
                None => (atom.as_str(), None),
            };
            match name {
                "if" => {
                    let test = match arg {
                        None => None,
                        Some(a) => {
                            match (a.strip_prefix("equals="), a.strip_prefix("notequals=")) {
                                (Some(v), _) => Some((true, v.to_string())),
                                (_, Some(v)) => Some((false, v.to_string())),
                                _ => {
                                    return Err(format!("fatal: unrecognized %(if) argument: {a}"));
                                }
                            }
                        }
                    };
                    stack.push((test, Default::default(), 0));
                }
                "then" => match stack.last_mut() {
                    Some((_, _, k)) if *k == 0 => *k = 1,
                    Some(_) => {
                        return Err("fatal: format: %(then) atom used more than once".into());
                    }
                    None => {
                        return Err("fatal: format: %(then) atom used without an %(if) atom".into());
                    }
                },
                "else" => match stack.last_mut() {
                    Some((_, _, k)) if *k == 1 => *k = 2,
                    Some((_, _, 0)) => {
                        return Err(
                            "fatal: format: %(else) atom used without a %(then) atom".into()
                        );
                    }
                    Some(_) => {
                        return Err("fatal: format: %(else) atom used more than once".into());
                    }
                    None => {
                        return Err("fatal: format: %(else) atom used without an %(if) atom".into());
                    }
                },
                "end" => match stack.pop() {
                    Some((_, _, 0)) => {
                        return Err("fatal: format: %(if) atom used without a %(then) atom".into());
                    }
                    Some((test, [cond, then, other], _)) => {
                        cur(&mut top, &mut stack).push(Piece::If {
                            test,
                            cond,
                            then,
                            other,
                        });
                    }
                    None => {
                        return Err(
                            "fatal: format: %(end) atom used without corresponding atom".into()
                        );
                    }
                },
                _ => {
                    check_atom(&atom)?;
                    cur(&mut top, &mut stack).push(Piece::Atom(atom));
                }
            }
            continue;
        }
        text.push(b[i]);
        i += 1;
    }
    if !text.is_empty() {
        cur(&mut top, &mut stack).push(Piece::Text(text));
    }
    if !stack.is_empty() {
        return Err("fatal: format: %(end) atom missing".into());
    }
    Ok(top)
}

/// The atoms burrow shows (with the modifiers it reads).
const KNOWN: &[&str] = &[
    "refname",
    "objectname",
    "objecttype",
    "tree",
    "parent",
    "subject",
    "body",
    "contents",
    "authorname",
    "authoremail",
    "authordate",
    "author",
    "committername",
    "committeremail",
    "committerdate",
    "committer",
    "taggername",
    "taggeremail",
    "taggerdate",
    "tagger",
    "creatordate",
    "creator",
    "tag",
    "upstream",
    "HEAD",
    "symref",
];

fn check_atom(atom: &str) -> Result<(), String> {
    let bare = atom.trim_start_matches('*');
    let name = bare.split(':').next().unwrap_or("");
    if KNOWN.contains(&name) {
        return Ok(());
    }
    if NOT_HERE.contains(&name) {
        return Err(format!(
            "fatal: 'git for-each-ref --format=%({atom})' is not supported in burrow"
        ));
    }
    Err(format!("fatal: unknown field name: {name}"))
}

/// One ref and the object it names.
struct Ref {
    name: String,
    id: Oid,
    kind: Kind,
    data: std::rc::Rc<Vec<u8>>,
    /// What an annotated tag points at (its id, kind and data).
    peeled: Option<(Oid, Kind, std::rc::Rc<Vec<u8>>)>,
}

/// The header field `name` of a commit or tag object (`author ...`), and its message.
fn header<'a>(data: &'a str, name: &str) -> Option<&'a str> {
    let head = data.split("\n\n").next().unwrap_or("");
    head.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
}

fn message(data: &str) -> &str {
    data.split_once("\n\n").map(|(_, m)| m).unwrap_or("")
}

/// A message's subject (its first paragraph, lines joined) and body (the rest).
fn subject_body(m: &str) -> (String, String) {
    let m = m.trim_start_matches('\n');
    let (first, rest) = match m.find("\n\n") {
        Some(i) => (&m[..i], m[i..].trim_start_matches('\n')),
        None => (m.trim_end_matches('\n'), ""),
    };
    let subject = first.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    (subject, rest.to_string())
}

/// An ident line's parts: name, `<email>`, the seconds and zone.
fn ident_parts(ident: &str) -> (String, String, i64, String) {
    let (name, rest) = ident.split_once(" <").unwrap_or((ident, ""));
    let email = rest.split_once('>').map(|(e, _)| e).unwrap_or("");
    let (secs, zone) = ident_time(ident);
    (name.to_string(), format!("<{email}>"), secs, zone)
}

struct Ctx2<'a> {
    repo: &'a Repo,
    head: Option<String>,
    now: i64,
}

/// An atom's value for a ref, and for dates the time (what `--sort` compares).
type Value = (String, Option<i64>);

fn value(cx: &Ctx2, r: &Ref, atom: &str) -> Result<Value, String> {
    let (deref, atom) = match atom.strip_prefix('*') {
        Some(a) => (true, a),
        None => (false, atom),
    };
    let (name, arg) = match atom.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (atom, None),
    };
    let (id, kind, data) = if deref {
        match &r.peeled {
            Some((i, k, d)) => (*i, *k, d.clone()),
            None => return Ok((String::new(), None)),
        }
    } else {
        (r.id, r.kind, r.data.clone())
    };
    let text = String::from_utf8_lossy(&data).into_owned();
    let bad_arg = |a: &str| Err(format!("fatal: unrecognized %({name}) argument: {a}"));
    let is_object = matches!(kind, Kind::Commit | Kind::Tag);
    let v = match name {
        "refname" => {
            let n = &r.name;
            match arg {
                None => n.clone(),
                Some("short") => short_ref(cx.repo, n),
                Some(a) => {
                    if let Some(k) = a.strip_prefix("lstrip=").or(a.strip_prefix("strip=")) {
                        strip(
                            n,
                            k.parse::<i64>().map_err(|_| {
                                format!("fatal: Integer value expected refname:lstrip={k}")
                            })?,
                            true,
                        )
                    } else if let Some(k) = a.strip_prefix("rstrip=") {
                        strip(
                            n,
                            k.parse::<i64>().map_err(|_| {
                                format!("fatal: Integer value expected refname:rstrip={k}")
                            })?,
                            false,
                        )
                    } else {
                        return bad_arg(a);
                    }
                }
            }
        }
        "objectname" => match arg {
            None => hex(&id),
            Some("short") => hex(&id)[..7].to_string(),
            Some(a) => match a
                .strip_prefix("short=")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n) => hex(&id)[..n.clamp(4, 40)].to_string(),
                None => return bad_arg(a),
            },
        },
        "objecttype" => kind.name().to_string(),
        "tree" if kind == Kind::Commit => header(&text, "tree").unwrap_or("").to_string(),
        "parent" if kind == Kind::Commit => {
            let c = parse_commit(&data)?;
            c.parents.iter().map(hex).collect::<Vec<_>>().join(" ")
        }
        "subject" | "body" | "contents" if is_object => {
            let m = message(&text);
            let (s, b) = subject_body(m);
            match (name, arg) {
                ("subject", None) | ("contents", Some("subject")) => s,
                ("body", None) | ("contents", Some("body")) => b,
                ("contents", None) => m.to_string(),
                (_, Some(a)) => return bad_arg(a),
                _ => String::new(),
            }
        }
        "tag" if kind == Kind::Tag => header(&text, "tag").unwrap_or("").to_string(),
        "author" | "authorname" | "authoremail" | "authordate" | "committer" | "committername"
        | "committeremail" | "committerdate" | "tagger" | "taggername" | "taggeremail"
        | "taggerdate" | "creator" | "creatordate" => {
            let who = name
                .trim_end_matches("name")
                .trim_end_matches("email")
                .trim_end_matches("date");
            let field = match (who, kind) {
                ("creator", Kind::Commit) => "committer",
                ("creator", Kind::Tag) => "tagger",
                ("author" | "committer", Kind::Commit) => who,
                ("tagger", Kind::Tag) => who,
                _ => return Ok((String::new(), Some(0))),
            };
            let Some(ident) = header(&text, field) else {
                return Ok((String::new(), Some(0)));
            };
            let (n, e, secs, zone) = ident_parts(ident);
            let what = &name[who.len()..];
            match what {
                "" => ident.to_string(),
                "name" => n,
                "email" => match arg {
                    None => e,
                    Some("trim") => e.trim_start_matches('<').trim_end_matches('>').to_string(),
                    Some("localpart") => e
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .split('@')
                        .next()
                        .unwrap_or("")
                        .to_string(),
                    Some(a) => return bad_arg(a),
                },
                _ => {
                    let s = match arg {
                        None => git_date(secs, &zone),
                        Some(a) => {
                            let style = parse_date_style(a)?;
                            show_date(secs, &zone, &style, cx.now)
                        }
                    };
                    return Ok((s, Some(secs)));
                }
            }
        }
        "upstream" => {
            let u = r
                .name
                .strip_prefix("refs/heads/")
                .and_then(|b| upstream_ref(cx.repo, b));
            match (u, arg) {
                (None, _) => String::new(),
                (Some(u), None) => u,
                (Some(u), Some("short")) => short_ref(cx.repo, &u),
                (Some(_), Some(a)) => {
                    return Err(format!(
                        "fatal: 'git for-each-ref --format=%(upstream:{a})' is not supported in burrow"
                    ));
                }
            }
        }
        "HEAD" => {
            if cx.head.as_deref() == Some(r.name.as_str()) {
                "*".into()
            } else {
                " ".into()
            }
        }
        "symref" => String::new(),
        _ => String::new(),
    };
    Ok((v, None))
}

/// The full name of branch `b`'s upstream (`refs/remotes/origin/main`), from its config.
fn upstream_ref(repo: &Repo, b: &str) -> Option<String> {
    let remote = repo.config(&format!("branch.{b}.remote"))?;
    let merge = repo.config(&format!("branch.{b}.merge"))?;
    if remote == "." {
        return Some(merge);
    }
    crate::plumbing::repo::upstream_of(repo, b).map(|u| format!("refs/remotes/{u}"))
}

/// A ref's shortest unambiguous name, as `refname:short` gives it.
fn short_ref(repo: &Repo, n: &str) -> String {
    for p in ["refs/heads/", "refs/tags/", "refs/remotes/"] {
        if let Some(s) = n.strip_prefix(p) {
            // A shorter name another ref also answers to stays long enough to be unique.
            if p != "refs/heads/" && repo.resolve_ref(&format!("refs/heads/{s}")).is_some() {
                return n.strip_prefix("refs/").unwrap_or(n).to_string();
            }
            if p == "refs/remotes/" && repo.resolve_ref(&format!("refs/tags/{s}")).is_some() {
                return n.strip_prefix("refs/").unwrap_or(n).to_string();
            }
            return s.to_string();
        }
    }
    n.strip_prefix("refs/").unwrap_or(n).to_string()
}

/// `lstrip=N` / `rstrip=N`: N components off the left or right (a negative N keeps that
/// many).
fn strip(n: &str, k: i64, left: bool) -> String {
    let parts: Vec<&str> = n.split('/').collect();
    let len = parts.len() as i64;
    let drop = if k < 0 { (len + k).max(0) } else { k.min(len) } as usize;
    if left {
        parts[drop..].join("/")
    } else {
        parts[..parts.len() - drop].join("/")
    }
}

fn render(cx: &Ctx2, r: &Ref, pieces: &[Piece], out: &mut Vec<u8>) -> Result<(), String> {
    for p in pieces {
        match p {
            Piece::Text(t) => out.extend_from_slice(t),
            Piece::Atom(a) => out.extend_from_slice(value(cx, r, a)?.0.as_bytes()),
            Piece::If {
                test,
                cond,
                then,
                other,
            } => {
                let mut c = Vec::new();
                render(cx, r, cond, &mut c)?;
                let c = String::from_utf8_lossy(&c).into_owned();
                let yes = match test {
                    None => !c.trim().is_empty(),
                    Some((true, v)) => c == *v,
                    Some((false, v)) => c != *v,
                };
                render(cx, r, if yes { then } else { other }, out)?;
            }
        }
    }
    Ok(())
}

/// git's version sort: runs of digits compare as numbers, as `sort -V` orders them.
fn version_cmp(a: &str, b: &str) -> Ordering {
    sh_coreutils::sort::version_cmp(a.as_bytes(), b.as_bytes())
}

#[derive(Default)]
struct Opts {
    format: Option<String>,
    sorts: Vec<String>,
    count: Option<usize>,
    points_at: Vec<String>,
    merged: Vec<String>,
    no_merged: Vec<String>,
    contains: Vec<String>,
    no_contains: Vec<String>,
    excludes: Vec<String>,
    patterns: Vec<String>,
}

const SPEC: Spec<Opts> = Spec {
    name: "for-each-ref",
    usage: USAGE,
    options: &[
        Opt::value("--format", |o, v| set(&mut o.format, Some(v))),
        Opt::flag("--no-format", |o| o.format = None),
        Opt::value("--sort", |o, v| push(&mut o.sorts, v)),
        Opt::flag("--no-sort", |o| o.sorts.clear()),
        Opt::number("--count", |o, n| o.count = Some(n)),
        Opt::value("--points-at", |o, v| push(&mut o.points_at, v)),
        // The next word is the commit, whatever it is; HEAD when there is none.
        Opt::value_or("--merged", "HEAD", |o, v| o.merged.push(v)),
        Opt::value_or("--no-merged", "HEAD", |o, v| o.no_merged.push(v)),
        Opt::value_or("--contains", "HEAD", |o, v| o.contains.push(v)),
        Opt::value_or("--no-contains", "HEAD", |o, v| o.no_contains.push(v)),
        Opt::value("--exclude", |o, v| push(&mut o.excludes, v)),
        Opt::ignored("--no-color"),
    ],
    refused: "-s --shell -p --perl --python --tcl --omit-empty --color --ignore-case --stdin --include-root-refs",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn for_each_ref(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    o.patterns = match SPEC.parse(args, &mut o, io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match run(&repo, &o, io) {
        Ok(c) => c,
        Err(e) if e.starts_with("error: malformed format") => usage_error(io, &e, USAGE),
        Err(e) => super::args::fail(io, &e),
    }
}

/// Whether a ref matches a pattern: a glob, or a prefix ending at a `/`.
fn matches(name: &str, p: &str) -> bool {
    if p.contains(['*', '?', '[']) {
        return sh_utility::pattern::pattern_matches(p, name);
    }
    let p = p.trim_end_matches('/');
    name == p || (name.starts_with(p) && name.as_bytes().get(p.len()) == Some(&b'/'))
}

fn run(repo: &Repo, o: &Opts, io: &Io) -> Result<i32, String> {
    let pieces = parse_format(o.format.as_deref().unwrap_or(DEFAULT_FORMAT))?;
    // Sort keys, last given first; `refname` when none is given.
    let mut keys: Vec<(bool, bool, String)> = Vec::new();
    for s in o.sorts.iter().rev() {
        let (rev, k) = match s.strip_prefix('-') {
            Some(k) => (true, k),
            None => (false, s.as_str()),
        };
        let (version, k) = match k.strip_prefix("version:").or(k.strip_prefix("v:")) {
            Some(k) => (true, k),
            None => (false, k),
        };
        check_atom(k)?;
        keys.push((rev, version, k.to_string()));
    }
    if keys.is_empty() {
        keys.push((false, false, "refname".into()));
    }
    let commit_of = |r: &str| -> Result<Oid, String> {
        resolve(repo, r)
            .and_then(|id| repo.peel_commit(&id).ok())
            .ok_or_else(|| format!("fatal: malformed object name {r}"))
    };
    let reach = |c: Oid| -> Result<HashSet<Oid>, String> {
        Ok(crate::plumbing::walk::walk(repo, &[c])?
            .into_iter()
            .map(|(i, _)| i)
            .collect())
    };
    let merged: Vec<HashSet<Oid>> = o
        .merged
        .iter()
        .map(|r| commit_of(r).and_then(reach))
        .collect::<Result<_, _>>()?;
    let no_merged: Vec<HashSet<Oid>> = o
        .no_merged
        .iter()
        .map(|r| commit_of(r).and_then(reach))
        .collect::<Result<_, _>>()?;
    let contains: Vec<Oid> = o
        .contains
        .iter()
        .map(|r| commit_of(r))
        .collect::<Result<_, _>>()?;
    let no_contains: Vec<Oid> = o
        .no_contains
        .iter()
        .map(|r| commit_of(r))
        .collect::<Result<_, _>>()?;
    let points: Vec<Oid> = o
        .points_at
        .iter()
        .map(|r| resolve(repo, r).ok_or_else(|| format!("fatal: malformed object name {r}")))
        .collect::<Result<_, _>>()?;
    let mut refs: Vec<Ref> = Vec::new();
    for (name, id) in repo.refs_under("refs/") {
        if !o.patterns.is_empty() && !o.patterns.iter().any(|p| matches(&name, p)) {
            continue;
        }
        if o.excludes.iter().any(|p| matches(&name, p)) {
            continue;
        }
        let (kind, data) = repo.read(&id)?;
        let peeled = if kind == Kind::Tag {
            crate::plumbing::object::tag_target(&data)
                .and_then(|t| repo.read(&t).ok().map(|(k, d)| (t, k, d)))
        } else {
            None
        };
        if !points.is_empty()
            && !points
                .iter()
                .any(|p| *p == id || peeled.as_ref().is_some_and(|(t, _, _)| t == p))
        {
            continue;
        }
        let filtering = !merged.is_empty()
            || !no_merged.is_empty()
            || !contains.is_empty()
            || !no_contains.is_empty();
        if filtering {
            let Ok(c) = repo.peel_commit(&id) else {
                continue;
            };
            if !merged.is_empty() && !merged.iter().any(|s| s.contains(&c)) {
                continue;
            }
            if no_merged.iter().any(|s| s.contains(&c)) {
                continue;
            }
            if !contains.is_empty() || !no_contains.is_empty() {
                let mine = reach(c)?;
                if !contains.is_empty() && !contains.iter().any(|x| mine.contains(x)) {
                    continue;
                }
                if no_contains.iter().any(|x| mine.contains(x)) {
                    continue;
                }
            }
        }
        refs.push(Ref {
            name,
            id,
            kind,
            data,
            peeled,
        });
    }
    let cx = Ctx2 {
        repo,
        head: repo.head().0,
        now: sh_utility::time::now(),
    };
    // Each ref's sort values, then the sort (refname breaks ties).
    let mut rows: Vec<(Vec<Value>, Ref)> = Vec::new();
    for r in refs {
        let vals = keys
            .iter()
            .map(|(_, _, k)| value(&cx, &r, k))
            .collect::<Result<Vec<_>, _>>()?;
        rows.push((vals, r));
    }
    rows.sort_by(|(va, ra), (vb, rb)| {
        for (n, (rev, version, _)) in keys.iter().enumerate() {
            let (a, b) = (&va[n], &vb[n]);
            let c = match (a.1, b.1) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ if *version => version_cmp(&a.0, &b.0),
                _ => a.0.cmp(&b.0),
            };
            let c = if *rev { c.reverse() } else { c };
            if c != Ordering::Equal {
                return c;
            }
        }
        ra.name.cmp(&rb.name)
    });
    let mut out: Vec<u8> = Vec::new();
    for (_, r) in rows.iter().take(o.count.unwrap_or(usize::MAX)) {
        render(&cx, r, &pieces, &mut out)?;
        out.push(b'\n');
    }
    io.print(&String::from_utf8_lossy(&out));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_by_their_numbers() {
        assert_eq!(version_cmp("v1.10", "v1.9"), Ordering::Greater);
        assert_eq!(version_cmp("v2", "v10"), Ordering::Less);
        assert_eq!(version_cmp("v1", "v1"), Ordering::Equal);
    }

    #[test]
    fn refnames_strip_from_either_end() {
        assert_eq!(strip("refs/heads/a/b", 2, true), "a/b");
        assert_eq!(strip("refs/heads/a/b", -1, true), "b");
        assert_eq!(strip("refs/heads/a/b", 1, false), "refs/heads/a");
    }

    #[test]
    fn formats_parse_with_conditionals() {
        let p = parse_format("%(if)%(HEAD)%(then)* %(else)  %(end)%(refname)").unwrap();
        assert_eq!(p.len(), 2);
        assert!(parse_format("%(if)x%(end)").is_err());
        assert!(parse_format("%(bogus)").is_err());
    }
}
