//! `git am`: the messages of mbox files (as `git format-patch` writes them, or stdin) made
//! commits, each with the author and date of its `From:` and `Date:` headers and the
//! committer of now, so the ids are git's. A patch that does not apply stops the session in
//! `.git/rebase-apply` (as git keeps it) for `--continue`, `--skip` or `--abort`.

use std::path::PathBuf;

use sh_utility::Ctx;
use sh_utility::io::{Io, read_all};

use super::args::{Opt, Spec, Unknown};
use crate::plumbing::checkout::{hard_reset, work_of};
use crate::plumbing::commit::{make_commit, read_commit};
use crate::plumbing::index::{index_dirty, index_map};
use crate::plumbing::object::{hex, parse_hex};
use crate::plumbing::refs::set_head;
use crate::plumbing::repo::{IndexEntry, Repo};
use crate::plumbing::tree::{head_files, write_trees};
use crate::plumbing::write::write_file;

const USAGE: &str = "git am [<options>] [(<mbox> | <Maildir>)...]\n   or: git am [<options>] (--continue | --skip | --abort)";

const HINTS: &str = "hint: When you have resolved this problem, run \"git am --continue\".\n\
hint: If you prefer to skip this patch, run \"git am --skip\" instead.\n\
hint: To restore the original branch and stop patching, run \"git am --abort\".\n\
hint: Disable this message with \"git config advice.mergeConflict false\"\n";

const NOT_RESUMING: &str = "fatal: Resolve operation not in progress, we are not resuming.";

/// git's options that burrow's am leaves out.
const NOT_HERE: &str = "-3 --3way -s --signoff -k --keep --keep-non-patch -m --message-id -c --scissors -i --interactive --show-current-patch --quit --committer-date-is-author-date --ignore-date --resolved -r --patch-format --reject --directory --exclude --include -p -C --whitespace --empty --allow-empty -S --gpg-sign --keep-cr --no-keep-cr --utf8 --no-utf8";

/// One mail: the author, its date (`SECONDS ZONE`), the commit message and the patch.
struct Mail {
    name: String,
    email: String,
    date: String,
    subject: String,
    message: String,
    patch: String,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn state_dir(repo: &Repo) -> PathBuf {
    repo.git_dir.join("rebase-apply")
}

#[derive(Default)]
struct Am {
    /// `--continue`, `--skip` or `--abort`.
    action: Option<&'static str>,
    quiet: bool,
}

/// am's options, as git's `builtin/am.c` declares them.
const SPEC: Spec<Am> = Spec {
    name: "am",
    usage: USAGE,
    options: &[
        Opt::flag("--continue", |o| o.action = Some("continue")),
        Opt::flag("--skip", |o| o.action = Some("skip")),
        Opt::flag("--abort", |o| o.action = Some("abort")),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
    ],
    refused: NOT_HERE,
    unknown: Unknown::Usage,
    help: &[],
};

pub fn am(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let (repo, _cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut o = Am::default();
    let files = match SPEC.parse(args, &mut o, io) {
        Ok(files) => files,
        Err(code) => return code,
    };
    let Am { action, quiet } = o;
    let r = match action {
        Some(_) if !state_dir(&repo).is_dir() => Err(NOT_RESUMING.to_string()),
        Some("abort") => abort(sh, &repo),
        Some("skip") => skip(sh, &repo, io),
        Some(_) => resume(sh, &repo, io),
        None => start(sh, &repo, &files, quiet, io),
    };
    match r {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

fn start(sh: &dyn Ctx, repo: &Repo, files: &[String], quiet: bool, io: &Io) -> Result<i32, String> {
    let dir = state_dir(repo);
    if dir.is_dir() {
        return Err(
            "fatal: previous rebase directory .git/rebase-apply still exists but mbox given."
                .into(),
        );
    }
    // Each file (or stdin) is an mbox of its own.
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    if files.is_empty() {
        inputs.push(read_all(&io.stdin));
    }
    for f in files {
        match std::fs::read(sh.path(f)) {
            Ok(d) => inputs.push(d),
            Err(e) => {
                return Err(format!(
                    "fatal: could not open '{f}' for reading: {}",
                    sh_utility::format::io_msg(&e)
                ));
            }
        }
    }
    let mut mails: Vec<String> = Vec::new();
    let mut blank = true;
    for d in &inputs {
        let text = String::from_utf8_lossy(d);
        mails.extend(split(&text));
        blank &= text.trim().is_empty();
    }
    if mails.is_empty() {
        if blank {
            return Ok(0);
        }
        io.eprint("Patch format detection failed.\n");
        return Ok(128);
    }
    let (_, head) = repo.head();
    let Some(head) = head else {
        return Err("fatal: 'git am' on an unborn branch is not supported in burrow".into());
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("fatal: {e}"))?;
    for (k, m) in mails.iter().enumerate() {
        write_file(&dir.join(format!("{:04}", k + 1)), m.as_bytes())?;
    }
    write_file(&dir.join("last"), format!("{}\n", mails.len()).as_bytes())?;
    write_file(&dir.join("next"), b"1\n")?;
    write_file(
        &dir.join("orig-head"),
        format!("{}\n", hex(&head)).as_bytes(),
    )?;
    write_file(&dir.join("applying"), b"")?;
    if quiet {
        write_file(&dir.join("quiet"), b"t\n")?;
    }
    write_file(
        &repo.git_dir.join("ORIG_HEAD"),
        format!("{}\n", hex(&head)).as_bytes(),
    )?;
    // git checks the index after it has set the session up (and leaves it there).
    if index_dirty(repo, Some(head))? {
        // `--abort` then only ends the session.
        write_file(&dir.join("dirtyindex"), b"")?;
        let files = head_files(repo, Some(head))?;
        let dirty: Vec<String> = index_map(repo)?
            .iter()
            .filter(|(p, e)| files.get(*p) != Some(&(e.mode, e.oid)))
            .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
            .chain(
                files
                    .keys()
                    .filter(|p| !index_map(repo).is_ok_and(|i| i.contains_key(*p)))
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
            )
            .collect();
        return Err(format!(
            "fatal: Dirty index: cannot apply patches (dirty: {})",
            dirty.join(" ")
        ));
    }
    run(sh, repo, io)
}

/// The mails of an mbox: each starts at a `From ` line (the first line, or one after an
/// empty line).
fn split(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev_empty = true;
    for line in text.split_inclusive('\n') {
        if line.starts_with("From ") && prev_empty {
            out.push(String::new());
        }
        if let Some(m) = out.last_mut() {
            m.push_str(line);
        }
        prev_empty = line.trim_end_matches(['\n', '\r']).is_empty();
    }
    out.retain(|m| parse(m).is_some());
    out
}

/// git mailinfo's reading of a mail.
fn parse(mail: &str) -> Option<Mail> {
    let mut lines = mail.split_inclusive('\n');
    lines.next()?; // the `From <id> <date>` line
    // Headers, continuation lines unfolded.
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut rest = String::new();
    let mut in_headers = true;
    for line in lines {
        if in_headers {
            let l = line.trim_end_matches(['\n', '\r']);
            if l.is_empty() {
                in_headers = false;
                continue;
            }
            if l.starts_with([' ', '\t']) {
                if let Some((_, v)) = headers.last_mut() {
                    v.push_str(l);
                }
                continue;
            }
            let (k, v) = l.split_once(':')?;
            headers.push((k.to_ascii_lowercase(), v.trim_start().to_string()));
            continue;
        }
        rest.push_str(line);
    }
    let header = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
    let from = header("from")?;
    let (name, email) = match from.rsplit_once('<') {
        Some((n, e)) => (
            n.trim().trim_matches('"').to_string(),
            e.trim_end_matches('>').trim().to_string(),
        ),
        None => (from.trim().to_string(), from.trim().to_string()),
    };
    let date = crate::plumbing::date::parse_ident_date(&header("date")?, now())?;
    let subject = clean_subject(&header("subject").unwrap_or_default());
    // The body runs to the patch: a `---` line, or a `diff -` line.
    let mut body = String::new();
    let mut patch = String::new();
    let mut in_patch = false;
    for line in rest.split_inclusive('\n') {
        let l = line.trim_end_matches(['\n', '\r']);
        if !in_patch
            && (l.trim_end() == "---" || l.starts_with("diff -") || l.starts_with("Index: "))
        {
            in_patch = true;
        }
        if in_patch {
            patch.push_str(line);
        } else {
            body.push_str(line);
        }
    }
    // The signature git adds after the patch.
    if let Some(k) = patch.rfind("\n-- \n") {
        patch.truncate(k + 1);
    }
    let patch = match patch.find("diff --git ") {
        Some(k) if k == 0 || patch.as_bytes()[k - 1] == b'\n' => patch[k..].to_string(),
        _ => String::new(),
    };
    let body = crate::plumbing::commit::clean_message(&body);
    let message = if body.trim().is_empty() {
        format!("{subject}\n")
    } else {
        format!("{subject}\n\n{body}")
    };
    Some(Mail {
        name,
        email,
        date,
        subject,
        message,
        patch,
    })
}

/// A subject without its `Re:` and `[PATCH ...]` prefixes (git mailinfo's cleanup).
fn clean_subject(s: &str) -> String {
    let mut s = s.trim();
    loop {
        if let Some(r) = s
            .get(..3)
            .filter(|p| p.eq_ignore_ascii_case("re:"))
            .map(|_| &s[3..])
        {
            s = r.trim_start();
        } else if s.starts_with('[')
            && let Some(k) = s.find(']')
        {
            s = s[k + 1..].trim_start();
        } else {
            break;
        }
    }
    s.to_string()
}

fn read_num(repo: &Repo, f: &str) -> usize {
    std::fs::read_to_string(state_dir(repo).join(f))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

fn current(repo: &Repo) -> Result<(usize, Mail), String> {
    let n = read_num(repo, "next");
    let text = std::fs::read_to_string(state_dir(repo).join(format!("{n:04}")))
        .map_err(|e| format!("fatal: {e}"))?;
    let mail = parse(&text).ok_or("fatal: a patch of the session is gone")?;
    Ok((n, mail))
}

fn quiet(repo: &Repo) -> bool {
    state_dir(repo).join("quiet").is_file()
}

/// Applies the mails from `next` on, stopping at one that does not apply.
fn run(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let last = read_num(repo, "last");
    loop {
        let n = read_num(repo, "next");
        if n > last {
            let _ = std::fs::remove_dir_all(state_dir(repo));
            return Ok(0);
        }
        let (_, mail) = current(repo)?;
        if !quiet(repo) {
            io.print(&format!("Applying: {}\n", mail.subject));
        }
        if mail.patch.is_empty() {
            io.print("Patch is empty.\n");
            io.eprint(HINTS);
            return Ok(128);
        }
        if let Some(errors) = super::apply::apply_index(repo, &mail.patch)? {
            io.eprint(&errors);
            io.eprint("hint: Use 'git am --show-current-patch=diff' to see the failed patch\n");
            io.eprint(HINTS);
            io.print(&format!("Patch failed at {n:04} {}\n", mail.subject));
            return Ok(128);
        }
        commit(sh, repo, &mail)?;
        write_file(
            &state_dir(repo).join("next"),
            format!("{}\n", n + 1).as_bytes(),
        )?;
    }
}

/// Commits the index as the mail says.
fn commit(sh: &dyn Ctx, repo: &Repo, mail: &Mail) -> Result<(), String> {
    let (_, head) = repo.head();
    let index = index_map(repo)?;
    let entries: Vec<&IndexEntry> = index.values().collect();
    let tree = write_trees(repo, &entries, 0)?;
    let author = format!("{} <{}> {}", mail.name, mail.email, mail.date);
    let id = make_commit(sh, repo, tree, head, &author, &mail.message)?;
    set_head(sh, repo, head, id, &format!("am: {}", mail.subject))
}

fn resume(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let (n, mail) = current(repo)?;
    if !quiet(repo) {
        io.print(&format!("Applying: {}\n", mail.subject));
    }
    if !crate::plumbing::index::load_conflicts(repo)?.is_empty() {
        io.print("You still have unmerged paths in your index.\nYou should 'git add' each file with resolved conflicts to mark them as such.\nYou might run `git rm` on a file to accept \"deleted by them\" for it.\n");
        io.eprint(HINTS);
        return Ok(128);
    }
    let (_, head) = repo.head();
    if !index_dirty(repo, head)? {
        io.print("No changes - did you forget to use 'git add'?\nIf there is nothing left to stage, chances are that something else\nalready introduced the same changes; you might want to skip this patch.\n");
        io.eprint(HINTS);
        return Ok(128);
    }
    commit(sh, repo, &mail)?;
    write_file(
        &state_dir(repo).join("next"),
        format!("{}\n", n + 1).as_bytes(),
    )?;
    run(sh, repo, io)
}

fn skip(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let work = work_of(repo)?;
    let (_, head) = repo.head();
    let files = head_files(repo, head)?;
    let mut index = index_map(repo)?;
    hard_reset(repo, &work, head, &files, &mut index)?;
    let n = read_num(repo, "next");
    write_file(
        &state_dir(repo).join("next"),
        format!("{}\n", n + 1).as_bytes(),
    )?;
    run(sh, repo, io)
}

fn abort(sh: &dyn Ctx, repo: &Repo) -> Result<i32, String> {
    let work = work_of(repo)?;
    let orig = std::fs::read_to_string(state_dir(repo).join("orig-head"))
        .ok()
        .and_then(|t| parse_hex(t.trim()));
    let (_, head) = repo.head();
    if state_dir(repo).join("dirtyindex").is_file() {
        let _ = std::fs::remove_dir_all(state_dir(repo));
        return Ok(0);
    }
    let Some(orig) = orig.or(head) else {
        let _ = std::fs::remove_dir_all(state_dir(repo));
        return Ok(0);
    };
    let to = head_files(repo, Some(orig))?;
    let mut index = index_map(repo)?;
    hard_reset(repo, &work, head, &to, &mut index)?;
    let _ = read_commit(repo, &orig)?;
    set_head(sh, repo, head, orig, "am --abort")?;
    let _ = std::fs::remove_dir_all(state_dir(repo));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_lose_their_prefixes() {
        assert_eq!(clean_subject("[PATCH 1/2] Dev work"), "Dev work");
        assert_eq!(clean_subject("Re: [X] a"), "a");
    }

    #[test]
    fn a_mail_reads_as_git_reads_it() {
        let m = "From 0b17877641e7ef01f38e4b425cfe2a76e6d43545 Mon Sep 17 00:00:00 2001\nFrom: Ada Lovelace <ada@example.com>\nDate: Tue, 14 Nov 2023 22:15:00 +0000\nSubject: [PATCH] A long\n subject\n\nBody\n---\n a | 1 +\n\ndiff --git a/a b/a\n-- \n2.47.3\n\n";
        let mail = parse(m).unwrap();
        assert_eq!(mail.subject, "A long subject");
        assert_eq!(mail.message, "A long subject\n\nBody\n");
        assert_eq!(mail.date, "1700000100 +0000");
        assert_eq!(mail.patch, "diff --git a/a b/a\n");
    }
}
