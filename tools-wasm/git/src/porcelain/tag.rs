//! `git tag`: listing (`-l PATTERN`, `-n`), lightweight and annotated tags (`-a`, `-m`, `-F`),
//! `-f` to move one, `-d` to delete. Annotated tags are tag objects as git writes them.

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Message, Opt, Refusal, Spec, Unknown, push, read_messages};
use crate::plumbing::commit::{clean_message, ident, subject};
use crate::plumbing::object::{Kind, hex};
use crate::plumbing::refs::{remove_ref, valid_branch};
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;
use crate::plumbing::text::abbrev;
use crate::plumbing::write::{write_file, write_object};

/// What `git tag` was asked for.
#[derive(Default)]
struct Opts {
    list: bool,
    delete: bool,
    annotate: bool,
    force: bool,
    /// `-n[<num>]`: lines of each annotation listed.
    lines: usize,
    /// `-m` texts and `-F` files, in order.
    messages: Vec<Message>,
}

const USAGE: &str = "git tag [-a | -s | -u <key-id>] [-f] [-m <msg> | -F <file>] [-e]\n        [(--trailer <token>[(=|:)<value>])...]\n        <tagname> [<commit> | <object>]\n   or: git tag -d <tagname>...\n   or: git tag [-n[<num>]] -l [--contains <commit>] [--no-contains <commit>]\n        [--points-at <object>] [--column[=<options>] | --no-column]\n        [--create-reflog] [--sort=<key>] [--format=<format>]\n        [--merged <commit>] [--no-merged <commit>] [<pattern>...]\n   or: git tag -v [--format=<format>] <tagname>...";

const SPEC: Spec<Opts> = Spec {
    name: "tag",
    usage: USAGE,
    options: &[
        Opt::flag("-l/--list", |o| o.list = true),
        Opt::flag("-d/--delete", |o| o.delete = true),
        Opt::flag("-a/--annotate", |o| o.annotate = true),
        Opt::flag("-f/--force", |o| o.force = true),
        Opt::value("-m/--message", |o, v| {
            push(&mut o.messages, Message::Text(v))
        }),
        Opt::value("-F/--file", |o, v| push(&mut o.messages, Message::File(v))),
        Opt::optional("-n", |o, v| {
            o.lines = match v {
                None => 1,
                Some(v) => v.parse().map_err(|_| {
                    Refusal::Alone("error: switch `n' expects a numerical value".into())
                })?,
            };
            Ok(())
        }),
    ],
    refused: "-s --sign -u --local-user -v --verify --contains --no-contains --points-at --merged --no-merged --sort --format --column -e --edit --trailer --cleanup --create-reflog -i --ignore-case",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn tag(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    let operands = match SPEC.parse(args, &mut o, io) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let unreadable = |f: &str, e: &str| format!("fatal: could not open or read '{f}': {e}");
    let messages = match read_messages(sh, &o.messages, unreadable) {
        Ok(m) => m,
        Err(e) => return super::args::fail(io, &e),
    };
    let Opts {
        list,
        delete,
        mut annotate,
        force,
        lines,
        ..
    } = o;
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = if delete {
        delete_tags(&repo, &operands, io)
    } else if list || operands.is_empty() {
        list_tags(&repo, &operands, lines, io)
    } else {
        if !messages.is_empty() {
            annotate = true;
        }
        create(sh, &repo, &operands, annotate, force, &messages, io)
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

fn list_tags(repo: &Repo, patterns: &[String], lines: usize, io: &Io) -> Result<i32, String> {
    let mut out = String::new();
    for (r, id) in repo.refs_under("refs/tags/") {
        let name = &r["refs/tags/".len()..];
        if !patterns.is_empty()
            && !patterns
                .iter()
                .any(|p| sh_utility::pattern::pattern_matches(p, name))
        {
            continue;
        }
        if lines == 0 {
            out.push_str(&format!("{name}\n"));
            continue;
        }
        // -n: the annotation's first lines, or the commit's subject.
        let (kind, data) = repo.read(&id)?;
        let text = String::from_utf8_lossy(&data).into_owned();
        let message = match kind {
            Kind::Tag | Kind::Commit => text.split_once("\n\n").map(|(_, m)| m.to_string()),
            _ => None,
        }
        .unwrap_or_default();
        let body: Vec<&str> = if lines == 1 {
            vec![]
        } else {
            message.lines().skip(1).take(lines - 1).collect()
        };
        let first = subject(&message);
        out.push_str(&format!("{name:<15} {first}\n"));
        for l in body {
            out.push_str(&format!("    {l}\n"));
        }
    }
    io.print(&out);
    Ok(0)
}

fn delete_tags(repo: &Repo, names: &[String], io: &Io) -> Result<i32, String> {
    let mut code = 0;
    for n in names {
        let r = format!("refs/tags/{n}");
        let Some(id) = repo.resolve_ref(&r) else {
            io.eprint(&format!("error: tag '{n}' not found.\n"));
            code = 1;
            continue;
        };
        remove_ref(repo, &r);
        io.print(&format!("Deleted tag '{n}' (was {})\n", abbrev(&id)));
    }
    Ok(code)
}

fn create(
    sh: &dyn Ctx,
    repo: &Repo,
    operands: &[String],
    annotate: bool,
    force: bool,
    messages: &[String],
    io: &Io,
) -> Result<i32, String> {
    let (name, target) = match operands {
        [n] => (n, "HEAD"),
        [n, t] => (n, t.as_str()),
        _ => return Err("fatal: too many arguments".into()),
    };
    if !valid_branch(name) {
        return Err(format!("fatal: '{name}' is not a valid tag name."));
    }
    let id = resolve(repo, target)
        .ok_or_else(|| format!("fatal: Failed to resolve '{target}' as a valid ref."))?;
    let r = format!("refs/tags/{name}");
    let old = repo.resolve_ref(&r);
    if old.is_some() && !force {
        return Err(format!("fatal: tag '{name}' already exists"));
    }
    let id = if annotate {
        if messages.is_empty() {
            return Err(
                "fatal: burrow's git has no editor: give the tag message with -m or -F".into(),
            );
        }
        let (kind, _) = repo.read(&id)?;
        let tagger = ident(sh, repo, "COMMITTER")?;
        let message = clean_message(&messages.join("\n\n"));
        let body = format!(
            "object {}\ntype {}\ntag {name}\ntagger {tagger}\n\n{message}",
            hex(&id),
            kind.name()
        );
        write_object(repo, Kind::Tag, body.as_bytes())?
    } else {
        id
    };
    write_file(&repo.git_dir.join(&r), format!("{}\n", hex(&id)).as_bytes())?;
    if let Some(o) = old
        && o != id
    {
        io.print(&format!("Updated tag '{name}' (was {})\n", abbrev(&o)));
    }
    Ok(0)
}
