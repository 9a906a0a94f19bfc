//! Commits as objects: reading one by id or revision, the ident lines of author and
//! committer (from `GIT_*` or `user.*`), a message cleaned as git cleans it, and writing a
//! commit of a tree on a parent.

use std::path::Path;

use sh_utility::Ctx;

use super::object::{Commit, Kind, Oid, hex, parse_commit};
use super::repo::Repo;
use super::rev::resolve;
use super::write::write_object;

/// The commit a revision names (a tag peeled to it), or None.
pub(crate) fn resolve_commit(repo: &Repo, rev: &str) -> Option<Oid> {
    repo.peel_commit(&resolve(repo, rev)?).ok()
}

pub(crate) fn read_commit(repo: &Repo, id: &Oid) -> Result<Commit, String> {
    parse_commit(&repo.read_kind(id, Kind::Commit)?)
}

/// The seconds and zone of an ident line's end (`Name <e> 1700000000 +0100`).
pub(crate) fn ident_time(ident: &str) -> (i64, String) {
    let mut parts = ident.rsplitn(3, ' ');
    let zone = parts.next().unwrap_or("+0000").to_string();
    let secs = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (secs, zone)
}

pub(crate) fn ident_name_email(ident: &str) -> (String, String) {
    let (name, rest) = ident.split_once(" <").unwrap_or((ident, ""));
    let email = rest.split_once('>').map(|(e, _)| e).unwrap_or("");
    (name.to_string(), email.to_string())
}

/// A commit message's subject: its first paragraph, the lines joined by spaces.
pub(crate) fn subject(message: &str) -> String {
    message
        .split("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value of the global config (`$HOME/.gitconfig`).
pub(crate) fn global(sh: &dyn Ctx, key: &str) -> Option<String> {
    let home = sh.get("HOME").unwrap_or("/home/agent");
    let text = std::fs::read_to_string(Path::new(home).join(".gitconfig")).ok()?;
    super::repo::config_get(&text, key)
}

/// An exported variable of the shell (what a git process would see in its environment).
pub(crate) fn env<'a>(sh: &'a dyn Ctx, name: &str) -> Option<&'a str> {
    sh.env(name)
}

/// `Name <email> SECONDS ZONE` for the author or committer.
pub(crate) fn ident(sh: &dyn Ctx, repo: &Repo, who: &str) -> Result<String, String> {
    let var = |k: &str| env(sh, &format!("GIT_{who}_{k}")).map(str::to_string);
    let conf = |k: &str| repo.config(k).or_else(|| global(sh, k));
    let name = var("NAME").or_else(|| conf("user.name"));
    let email = var("EMAIL")
        .or_else(|| env(sh, "EMAIL").map(str::to_string))
        .or_else(|| conf("user.email"));
    let (Some(name), Some(email)) = (name, email) else {
        return Err("Author identity unknown\n\n*** Please tell me who you are.\n\nRun\n\n  git config --global user.email \"you@example.com\"\n  git config --global user.name \"Your Name\"\n\nto set your account's default identity.\nOmit --global to set the identity only in this repository.\n\nfatal: unable to auto-detect email address (got 'agent@burrow.(none)')".into());
    };
    // An empty date is the current time, as in git.
    let date = match var("DATE").filter(|d| !d.is_empty()) {
        Some(d) => super::date::parse_ident_date(&d, sh_utility::time::now())
            .ok_or_else(|| format!("fatal: invalid date format: {d}"))?,
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            format!("{now} +0000")
        }
    };
    Ok(format!("{name} <{email}> {date}"))
}

/// git's `whitespace` cleanup of a `-m` message: trailing spaces off each line, runs of blank
/// lines made one, none at the start or end, one newline at the end.
pub(crate) fn clean_message(m: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut blank = false;
    for line in m.lines() {
        let l = line.trim_end();
        if l.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push("");
            blank = false;
        }
        out.push(l);
    }
    if out.is_empty() {
        return String::new();
    }
    format!("{}\n", out.join("\n"))
}

/// A message without its `#` comment lines (git's `strip` cleanup).
pub(crate) fn strip_comments(m: &str) -> String {
    m.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Writes the commit of a step: `tree` on HEAD, with `author` and `message`.
pub(crate) fn make_commit(
    sh: &dyn Ctx,
    repo: &Repo,
    tree: Oid,
    parent: Option<Oid>,
    author: &str,
    message: &str,
) -> Result<Oid, String> {
    let committer = ident(sh, repo, "COMMITTER")?;
    let mut body = format!("tree {}\n", hex(&tree));
    if let Some(p) = parent {
        body.push_str(&format!("parent {}\n", hex(&p)));
    }
    body.push_str(&format!(
        "author {author}\ncommitter {committer}\n\n{message}"
    ));
    write_object(repo, Kind::Commit, body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cleaned_as_git_does() {
        assert_eq!(
            clean_message("\n\nsubject  \n\n\n\nbody\n\n"),
            "subject\n\nbody\n"
        );
        assert_eq!(clean_message("   \n"), "");
    }
}
