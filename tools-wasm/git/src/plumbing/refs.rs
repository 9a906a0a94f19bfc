//! Refs that commands move: branch names as git checks them, creating and removing refs,
//! moving HEAD with its reflog, and where a detached HEAD came from.

use sh_utility::Ctx;

use super::object::{Oid, hex, parse_hex};
use super::repo::Repo;
use super::rev::resolve;
use super::text::abbrev;
use super::write::write_file;

/// Whether `name` is a valid branch name (git check-ref-format's main rules).
pub(crate) fn valid_branch(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with(".lock")
        && !name.ends_with('.')
        && !name.contains("..")
        && !name.contains("@{")
        && !name.contains("//")
        && name != "@"
        && !name
            .bytes()
            .any(|b| b < 0x20 || b == 0x7f || b" ~^:?*[\\".contains(&b))
}

/// Creates branch `name` at `start` (HEAD by default).
pub fn create_branch(repo: &Repo, name: &str, start: Option<&str>) -> Result<Oid, String> {
    if !valid_branch(name) {
        return Err(format!(
            "fatal: '{name}' is not a valid branch name\nhint: See `man git check-ref-format`\nhint: Disable this message with \"git config advice.refSyntax false\""
        ));
    }
    if repo.resolve_ref(&format!("refs/heads/{name}")).is_some() {
        return Err(format!("fatal: a branch named '{name}' already exists"));
    }
    let id = match start {
        Some(s) => {
            resolve(repo, s).ok_or_else(|| format!("fatal: not a valid object name: '{s}'"))?
        }
        None => repo.head().1.ok_or_else(|| {
            format!(
                "fatal: not a valid object name: '{}'",
                repo.head()
                    .0
                    .unwrap_or_default()
                    .trim_start_matches("refs/heads/")
            )
        })?,
    };
    let id = repo.peel_commit(&id)?;
    write_file(
        &repo.git_dir.join(format!("refs/heads/{name}")),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    Ok(id)
}

/// Removes a ref, loose and from `packed-refs` (with its peeled line).
pub(crate) fn remove_ref(repo: &Repo, r: &str) {
    let _ = std::fs::remove_file(repo.git_dir.join(r));
    let packed = repo.git_dir.join("packed-refs");
    if let Ok(text) = std::fs::read_to_string(&packed) {
        let mut out = String::new();
        let mut skip_peel = false;
        for line in text.lines() {
            if skip_peel && line.starts_with('^') {
                continue;
            }
            skip_peel = line.ends_with(&format!(" {r}"));
            if !skip_peel {
                out.push_str(line);
                out.push('\n');
            }
        }
        let _ = std::fs::write(&packed, out);
    }
}

/// Moves HEAD (the branch it is on, or HEAD itself when detached) to `id`.
pub(crate) fn set_head(
    sh: &dyn Ctx,
    repo: &Repo,
    old: Option<Oid>,
    id: Oid,
    msg: &str,
) -> Result<(), String> {
    let target = repo.head().0.unwrap_or_else(|| "HEAD".into());
    write_file(
        &repo.git_dir.join(&target),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    reflog(sh, repo, old, id, msg);
    Ok(())
}

/// Appends to HEAD's reflog, as git does on every move of HEAD (`checkout: moving from A
/// to B` is how `@{-1}` and "HEAD detached at" find their way back).
pub(crate) fn reflog(sh: &dyn Ctx, repo: &Repo, old: Option<Oid>, new: Oid, msg: &str) {
    let ident = super::commit::ident(sh, repo, "COMMITTER").unwrap_or_else(|_| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!("agent <agent@burrow> {now} +0000")
    });
    let line = format!(
        "{} {} {ident}\t{msg}\n",
        hex(&old.unwrap_or([0; 20])),
        hex(&new)
    );
    let path = repo.git_dir.join("logs/HEAD");
    let mut text = std::fs::read(&path).unwrap_or_default();
    text.extend_from_slice(line.as_bytes());
    let _ = write_file(&path, &text);
}

/// What a detached HEAD was checked out from, as git finds it: the last `checkout: moving
/// from A to B` in HEAD's reflog names B, and HEAD is "at" it while it still names the commit
/// then checked out. None without such an entry (a clone of a tag writes none here).
pub(crate) fn detached_from(repo: &Repo, head: &Oid) -> Option<(bool, String)> {
    let log = std::fs::read_to_string(repo.git_dir.join("logs/HEAD")).ok()?;
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("\tcheckout: moving from "))?;
    let new = parse_hex(line.split(' ').nth(1)?)?;
    let target = line.rsplit_once(" to ")?.1;
    // The name is shown when it is a ref still at the commit checked out (tags and
    // remote-tracking branches shortened), else that commit's abbreviated id.
    let candidates = [
        target.to_string(),
        format!("refs/{target}"),
        format!("refs/tags/{target}"),
        format!("refs/heads/{target}"),
        format!("refs/remotes/{target}"),
        format!("refs/remotes/{target}/HEAD"),
    ];
    let found = candidates
        .iter()
        .filter(|n| n.starts_with("refs/") || repo.git_dir.join(n).is_file())
        .find_map(|n| Some((n.clone(), repo.resolve_ref(n)?)));
    let name = match found {
        Some((full, id)) if id == new || repo.peel_commit(&id).is_ok_and(|c| c == new) => full
            .strip_prefix("refs/tags/")
            .or_else(|| full.strip_prefix("refs/remotes/"))
            .unwrap_or(&full)
            .to_string(),
        _ => abbrev(&new),
    };
    Some((new == *head, name))
}
