//! `git format-patch`: `-<n>`, `<since>`, `<revision-range>`, `--stdout`, `-o <dir>`,
//! `-n`/`-N`, `--subject-prefix`, `--stat` (the default) and `--no-stat`/`-p`,
//! `--signature`/`--no-signature`, `-q`: each commit as the mbox message git writes, so
//! that `git am` (burrow's or git's) makes the same commit again. The signature is
//! burrow's own version (what `git --version` says), so `--signature` makes the output
//! byte for byte git's.

use std::collections::HashSet;

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Next, Opt, Refusal, Spec, Unknown, set, unrecognized};
use crate::plumbing::commit::{ident_name_email, ident_time, read_commit, resolve_commit};
use crate::plumbing::date::{parse_date_style, show_date};
use crate::plumbing::object::{Commit, Kind, Oid, hex};
use crate::plumbing::repo::Repo;
use crate::plumbing::tree::tree_files;

const USAGE: &str = "git format-patch [<options>] [<since> | <revision-range>]";

/// What format-patch was asked for.
struct Opts {
    count: Option<usize>,
    numbered: Option<bool>,
    prefix: String,
    stdout: bool,
    dir: Option<String>,
    /// The diffstat: `--stat --summary` by default, `--stat` alone when asked for, none.
    stat: Option<bool>,
    signature: Option<String>,
    quiet: bool,
}

const SPEC: Spec<Opts> = Spec {
    name: "format-patch",
    usage: USAGE,
    options: &[
        Opt::count(|o, n| o.count = n.parse().ok()),
        Opt::flag("-n/--numbered", |o| o.numbered = Some(true)),
        Opt::flag("-N/--no-numbered", |o| o.numbered = Some(false)),
        Opt::value("--subject-prefix", |o, v| set(&mut o.prefix, v)),
        Opt::flag("--stdout", |o| o.stdout = true),
        Opt::value("-o/--output-directory", |o, v| set(&mut o.dir, Some(v))),
        Opt::flag("--stat", |o| o.stat = Some(false)),
        Opt::flag("--no-stat/-p/--no-patch-stat", |o| o.stat = None),
        Opt::value("--signature", |o, v| set(&mut o.signature, Some(v))),
        Opt::flag("--no-signature", |o| o.signature = None),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
    ],
    // Options git has that burrow's format-patch leaves out.
    refused: "--cover-letter --thread --no-thread --in-reply-to --attach --inline --no-attach -k --keep-subject --to --cc --from --base --range-diff --interdiff --rfc -v --reroll-count --binary --no-binary --zero-commit --suffix --root --filename-max-length --notes --signature-file --progress --start-number --numbered-files -s --signoff --add-header --ignore-if-in-upstream --always --encode-email-headers -M -C -U --unified",
    // format-patch reads revision options: git's refusal is the revision reader's.
    unknown: Unknown::Own(unrecognized),
    help: &[],
};

pub fn format_patch(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut o = Opts {
        count: None,
        numbered: None,
        prefix: "PATCH".to_string(),
        stdout: false,
        dir: None,
        stat: Some(true),
        signature: Some(super::args::VERSION.to_string()),
        quiet: false,
    };
    let revs = match SPEC.parse_with(args, &mut o, io, &mut |_, arg| match arg {
        "-" => Err(Refusal::Fatal(unrecognized(arg).0)),
        _ => Ok(Next::Operand),
    }) {
        Ok((_, Some(paths))) if !paths.is_empty() => {
            return super::args::not_here(io, "format-patch", "-- <path>");
        }
        Ok((revs, _)) => revs,
        Err(code) => return code,
    };
    let Opts {
        count,
        numbered,
        prefix,
        stdout,
        dir,
        stat,
        signature,
        quiet,
    } = o;
    if stdout && dir.is_some() {
        io.eprint(
            "fatal: options '--stdout' and '--output-directory ...' cannot be used together\n",
        );
        return 128;
    }
    let commits = match select(&repo, &revs, count) {
        Ok(c) => c,
        Err(e) => return super::args::fail(io, &e),
    };
    let total = commits.len();
    let numbered = numbered.unwrap_or(total > 1);
    let mut out = String::new();
    let mut names = String::new();
    for (n, (id, c)) in commits.iter().enumerate() {
        let text = match message(
            &repo,
            id,
            c,
            n + 1,
            total,
            numbered,
            &prefix,
            stat,
            &signature,
        ) {
            Ok(t) => t,
            Err(e) => return super::args::fail(io, &e),
        };
        if stdout {
            // git's separator between messages.
            if n > 0 {
                out.push('\n');
            }
            out.push_str(&text);
            continue;
        }
        let mut name = format!(
            "{:04}-{}",
            n + 1,
            sanitized(&crate::plumbing::commit::subject(&c.message))
        );
        // git's name limit: 64 with the suffix and its dot.
        name.truncate(64 - ".patch".len() - 1);
        name.push_str(".patch");
        let (shown, path) = match &dir {
            Some(d) => {
                let shown = if d.ends_with('/') {
                    format!("{d}{name}")
                } else {
                    format!("{d}/{name}")
                };
                (shown.clone(), cwd.join(&shown))
            }
            None => (name.clone(), cwd.join(&name)),
        };
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return super::args::fail(
                io,
                &format!("fatal: could not create leading directories of '{shown}': {e}"),
            );
        }
        if let Err(e) = std::fs::write(&path, text.as_bytes()) {
            return super::args::fail(io, &format!("fatal: cannot open patch file {shown}: {e}"));
        }
        if !quiet {
            names.push_str(&shown);
            names.push('\n');
        }
    }
    io.print(&out);
    io.print(&names);
    0
}

/// The commits to format, oldest first: `-<n>` from a revision (HEAD by default), else
/// those of `A..B`, or of `<since>..HEAD` for one revision. Merges are left out, as git
/// leaves them out.
fn select(
    repo: &Repo,
    revs: &[String],
    count: Option<usize>,
) -> Result<Vec<(Oid, Commit)>, String> {
    let resolve = |r: &str| -> Result<Oid, String> {
        resolve_commit(repo, r).ok_or_else(|| crate::plumbing::pathspec::ambiguous(r))
    };
    let mut include: Vec<Oid> = Vec::new();
    let mut exclude: Vec<Oid> = Vec::new();
    for r in revs {
        if let Some((a, b)) = r.split_once("..") {
            exclude.push(resolve(if a.is_empty() { "HEAD" } else { a })?);
            include.push(resolve(if b.is_empty() { "HEAD" } else { b })?);
        } else if let Some(x) = r.strip_prefix('^') {
            exclude.push(resolve(x)?);
        } else {
            include.push(resolve(r)?);
        }
    }
    // One revision alone, without a count, is where the series starts from.
    if count.is_none() && exclude.is_empty() && include.len() == 1 {
        exclude.push(include.remove(0));
    }
    if include.is_empty() {
        include.push(resolve("HEAD")?);
    }
    let mut hidden: HashSet<Oid> = HashSet::new();
    if !exclude.is_empty() {
        for (id, _) in crate::plumbing::walk::walk(repo, &exclude)? {
            hidden.insert(id);
        }
    }
    let mut list: Vec<(Oid, Commit)> = crate::plumbing::walk::walk(repo, &include)?
        .into_iter()
        .filter(|(id, c)| !hidden.contains(id) && c.parents.len() <= 1)
        .collect();
    if let Some(n) = count {
        list.truncate(n);
    }
    list.reverse();
    Ok(list)
}

/// git's file name for a subject (`%f`): letters, digits, `.` and `_` kept, each run of
/// anything else one `-`, no `.` or `-` at the end.
fn sanitized(subject: &str) -> String {
    let mut out = String::new();
    let mut space = 2;
    let b = subject.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
            if space == 1 {
                out.push('-');
            }
            space = 0;
            out.push(c as char);
            if c == b'.' {
                while b.get(i + 1) == Some(&b'.') {
                    i += 1;
                }
            }
        } else {
            space |= 1;
        }
        i += 1;
    }
    while out.ends_with('.') || out.ends_with('-') {
        out.pop();
    }
    out
}

/// Words wrapped as git folds a mail header: lines of at most 78 columns, the first one
/// starting after `used` columns, the others indented by one space.
fn wrapped(text: &str, used: usize) -> String {
    let mut out = String::new();
    let mut col = used;
    for (k, w) in text.split(' ').enumerate() {
        if k > 0 {
            if col + 1 + w.len() > 78 {
                out.push_str("\n ");
                col = 1;
            } else {
                out.push(' ');
                col += 1;
            }
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

fn is_binary(d: &[u8]) -> bool {
    d[..d.len().min(8000)].contains(&0)
}

/// One commit as git's mbox message.
#[allow(clippy::too_many_arguments)]
fn message(
    repo: &Repo,
    id: &Oid,
    c: &Commit,
    n: usize,
    total: usize,
    numbered: bool,
    prefix: &str,
    stat: Option<bool>,
    signature: &Option<String>,
) -> Result<String, String> {
    if !c.message.is_ascii() || !c.author.is_ascii() {
        return Err(
            "fatal: 'git format-patch' of a commit with non-ASCII text is not supported in burrow"
                .into(),
        );
    }
    let before = match c.parents.first() {
        Some(p) => tree_files(repo, read_commit(repo, p)?.tree)?,
        None => Default::default(),
    };
    let after = tree_files(repo, c.tree)?;
    for (p, v) in &after {
        if before.get(p) != Some(v)
            && v.0 != 0o160000
            && is_binary(&repo.read_kind(&v.1, Kind::Blob)?)
        {
            return Err(
                "fatal: 'git format-patch' of a binary file is not supported in burrow".into(),
            );
        }
    }
    for (p, v) in &before {
        if after.get(p) != Some(v)
            && v.0 != 0o160000
            && is_binary(&repo.read_kind(&v.1, Kind::Blob)?)
        {
            return Err(
                "fatal: 'git format-patch' of a binary file is not supported in burrow".into(),
            );
        }
    }
    let (name, email) = ident_name_email(&c.author);
    let (secs, zone) = ident_time(&c.author);
    let style = parse_date_style("rfc")?;
    let date = show_date(secs, &zone, &style, 0);
    let tag = match (prefix.is_empty(), numbered) {
        (false, true) => format!("[{prefix} {n}/{total}] "),
        (false, false) => format!("[{prefix}] "),
        (true, true) => format!("[{n}/{total}] "),
        (true, false) => String::new(),
    };
    let subject = crate::plumbing::commit::subject(&c.message);
    let head = format!("Subject: {tag}");
    let mut out = format!(
        "From {} Mon Sep 17 00:00:00 2001\nFrom: {name} <{email}>\nDate: {date}\n{head}{}\n\n",
        hex(id),
        wrapped(&subject, head.len())
    );
    // The body: what follows the subject's paragraph.
    let body = match c.message.split_once("\n\n") {
        Some((_, rest)) => rest.trim_start_matches('\n').to_string(),
        None => String::new(),
    };
    if !body.is_empty() {
        out.push_str(&body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
    }
    match stat {
        Some(true) => {
            out.push_str("---\n");
            out.push_str(&crate::plumbing::diff::tree_stat(repo, &before, &after)?);
        }
        Some(false) => {
            out.push_str("---\n");
            out.push_str(&crate::plumbing::diff::stat_of(repo, &before, &after)?);
        }
        None => {}
    }
    out.push('\n');
    out.push_str(&crate::plumbing::diff::patch_of_trees(
        repo, &before, &after,
    )?);
    if let Some(sig) = signature {
        out.push_str("-- \n");
        out.push_str(sig);
        if !sig.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_subjects_as_git_makes_them() {
        assert_eq!(sanitized("Fix: the *thing*... now."), "Fix-the-thing-.-now");
        assert_eq!(sanitized("Dev work"), "Dev-work");
        assert_eq!(wrapped("a b", 76), "a\n b");
        assert_eq!(wrapped("a b", 10), "a b");
    }
}
