//! `git cherry-pick` and `git revert`: their command lines, the commits named (ranges
//! too), the todo list of `.git/sequencer`, and `--continue`, `--skip`, `--abort` and
//! `--quit` as git's `reset --merge` keeps or refuses local edits.

use std::path::Path;

use foldhash::HashSet;
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::{
    Action, Applied, Step, apply, commit_summary, dirty_refusal, failed, first_line,
    mainline_parent, message_of, reset_to, unmerged_refusal,
};
use crate::plumbing::checkout::{move_tree, work_of};
use crate::plumbing::commit::{ident, make_commit, read_commit, subject};
use crate::plumbing::index::{index_dirty, load_conflicts};
use crate::plumbing::object::{Oid, hex};
use crate::plumbing::refs::set_head;
use crate::plumbing::repo::Repo;
use crate::plumbing::rev::resolve;
use crate::plumbing::state::{self, cherry_pick_head, revert_head, sequencer_dir};
use crate::plumbing::text::abbrev;
use crate::plumbing::tree::head_files;
use crate::plumbing::write::write_file;
use crate::porcelain::args::{Help, Opt, Refusal, Spec, Unknown};

/// How the picks were asked for.
#[derive(Clone, Copy, Default)]
struct Opts {
    /// `--continue`, `--skip`, `--abort` or `--quit`.
    sub: Option<&'static str>,
    no_commit: bool,
    /// `-x`: "(cherry picked from commit ...)".
    record_origin: bool,
    /// `--ff`: a commit whose parent is HEAD is taken as it is.
    ff: bool,
    /// `-m N`: a merge is taken against its Nth parent.
    mainline: Option<usize>,
}

const PICK_USAGE: &str = "git cherry-pick [--edit] [-n] [-m <parent-number>] [-s] [-x] [--ff]\n                       [-S[<keyid>]] <commit>...\n   or: git cherry-pick (--continue | --skip | --abort | --quit)";

const REVERT_USAGE: &str = "git revert [--[no-]edit] [-n] [-m <parent-number>] [-s] [-S[<keyid>]] <commit>...\n   or: git revert (--continue | --skip | --abort | --quit)";

/// The options' help cherry-pick and revert share, as git's `builtin/revert.c` declares them.
const SEQUENCER_HELP: &[Help] = &[
    Help("--quit", "end revert or cherry-pick sequence"),
    Help("--continue", "resume revert or cherry-pick sequence"),
    Help("--abort", "cancel revert or cherry-pick sequence"),
    Help("--skip", "skip current commit and continue"),
    Help(
        "--[no-]cleanup <mode>",
        "how to strip spaces and #comments from message",
    ),
    Help("-n, --no-commit", "don't automatically commit"),
    Help("--commit", "opposite of --no-commit"),
    Help("-e, --[no-]edit", "edit the commit message"),
    Help("-s, --[no-]signoff", "add a Signed-off-by trailer"),
    Help(
        "-m, --[no-]mainline <parent-number>",
        "select mainline parent",
    ),
    Help(
        "--[no-]rerere-autoupdate",
        "update the index with reused conflict resolution if possible",
    ),
    Help("--[no-]strategy <strategy>", "merge strategy"),
    Help(
        "-X, --[no-]strategy-option <option>",
        "option for merge strategy",
    ),
    Help("-S, --[no-]gpg-sign[=<key-id>]", "GPG sign commit"),
];

const PICK_HELP: &[Help] = &[
    Help("-x", "append commit name"),
    Help("--[no-]ff", "allow fast-forward"),
    Help("--[no-]allow-empty", "preserve initially empty commits"),
    Help(
        "--[no-]allow-empty-message",
        "allow commits with empty messages",
    ),
    Help(
        "--[no-]keep-redundant-commits",
        "deprecated: use --empty=keep instead",
    ),
    Help(
        "--empty (stop|drop|keep)",
        "how to handle commits that become empty",
    ),
];

const REVERT_HELP: &[Help] = &[Help(
    "--[no-]reference",
    "use the 'reference' format to refer to commits",
)];

/// `git cherry-pick`.
pub fn cherry_pick(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    run(sh, Action::Pick, args, io)
}

/// `git revert`.
pub fn revert(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    run(sh, Action::Revert, args, io)
}

/// The options cherry-pick and revert share, as git's `builtin/revert.c` declares them.
macro_rules! sequencer_options {
    ($($extra:expr,)*) => {
        &[
            Opt::flag("-n/--no-commit", |o| o.no_commit = true),
            Opt::value("-m/--mainline", |o, v| match v.parse::<usize>() {
                Ok(n) if n > 0 => {
                    o.mainline = Some(n);
                    Ok(())
                }
                _ => Err(Refusal::Alone(
                    "error: option `mainline' expects a number greater than zero".into(),
                )),
            }),
            Opt::flag("--commit", |o| o.no_commit = false),
            $($extra,)*
            // burrow is never at a terminal: no editor, as git without one.
            Opt::ignored("--no-edit"),
            Opt::flag("--continue", |o| o.sub = Some("continue")),
            Opt::flag("--abort", |o| o.sub = Some("abort")),
            Opt::flag("--skip", |o| o.sub = Some("skip")),
            Opt::flag("--quit", |o| o.sub = Some("quit")),
        ]
    };
}

const SEQUENCER_REFUSED: &str = "-e --edit -s --signoff -S --gpg-sign --cleanup --strategy -X --strategy-option --allow-empty --allow-empty-message --keep-redundant-commits --empty --rerere-autoupdate --no-rerere-autoupdate --reference";

const PICK: Spec<Opts> = Spec {
    name: "cherry-pick",
    usage: PICK_USAGE,
    options: sequencer_options![
        Opt::flag("-x", |o| o.record_origin = true),
        Opt::flag("--ff", |o| o.ff = true),
        Opt::flag("--no-ff", |o| o.ff = false),
    ],
    refused: SEQUENCER_REFUSED,
    unknown: Unknown::UsageAlone,
    help: &[SEQUENCER_HELP, PICK_HELP],
};

const REVERT: Spec<Opts> = Spec {
    name: "revert",
    usage: REVERT_USAGE,
    options: sequencer_options![],
    refused: SEQUENCER_REFUSED,
    unknown: Unknown::UsageAlone,
    help: &[SEQUENCER_HELP, REVERT_HELP],
};

fn run(sh: &dyn Ctx, action: Action, args: &[String], io: &Io) -> i32 {
    let spec = match action {
        Action::Pick => &PICK,
        Action::Revert => &REVERT,
    };
    let mut o = Opts::default();
    let revs = match spec.parse(args, &mut o, io) {
        Ok(revs) => revs,
        Err(code) => return code,
    };
    let sub = o.sub;
    if sub.is_none() && revs.is_empty() {
        return spec.usage_error(io, "");
    }
    let (repo, _) = match crate::porcelain::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let r = match sub {
        Some("continue") => seq_continue(sh, &repo, action, io),
        Some("skip") => seq_skip(sh, &repo, action, io),
        Some("abort") => seq_abort(sh, &repo, action, io),
        Some(_) => {
            let _ = std::fs::remove_dir_all(sequencer_dir(&repo));
            crate::plumbing::state::clear_state(&repo);
            Ok(0)
        }
        None => start(sh, &repo, action, o, &revs, io),
    };
    match r {
        Ok(c) => c,
        Err(e) if e.starts_with("fatal:") || e.contains("\nfatal:") => {
            crate::porcelain::args::fail(io, &e)
        }
        Err(e) => failed(io, action, &e),
    }
}

/// The commits the revisions name, in the order they are picked: as given (each once),
/// or, with a range, the walk (oldest first for a cherry-pick, newest first for a revert).
fn commits_of(repo: &Repo, action: Action, revs: &[String]) -> Result<Vec<Oid>, String> {
    let named = |r: &str| -> Result<Oid, String> {
        let r = if r == "-" { "@{-1}" } else { r };
        resolve(repo, r)
            .and_then(|id| repo.peel_commit(&id).ok())
            .ok_or_else(|| format!("fatal: bad revision '{r}'"))
    };
    let ranged = revs.iter().any(|r| r.contains("..") || r.starts_with('^'));
    if !ranged {
        let mut out: Vec<Oid> = Vec::new();
        for r in revs {
            let id = named(r)?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
        return Ok(out);
    }
    let (mut plus, mut minus) = (Vec::new(), Vec::new());
    for r in revs {
        if let Some((a, b)) = r.split_once("..") {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            minus.push(named(a)?);
            plus.push(named(b)?);
        } else if let Some(n) = r.strip_prefix('^') {
            minus.push(named(n)?);
        } else {
            plus.push(named(r)?);
        }
    }
    let hidden: HashSet<Oid> = crate::plumbing::walk::walk(repo, &minus)?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut out: Vec<Oid> = crate::plumbing::walk::walk(repo, &plus)?
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !hidden.contains(id))
        .collect();
    if action == Action::Pick {
        out.reverse();
    }
    Ok(out)
}

/// A sequencer's todo line for a step.
fn todo_line(repo: &Repo, action: Action, id: &Oid) -> Result<String, String> {
    let c = read_commit(repo, id)?;
    Ok(format!(
        "{} {} {}\n",
        action.word(),
        hex(id),
        first_line(&c.message)
    ))
}

fn start(
    sh: &dyn Ctx,
    repo: &Repo,
    action: Action,
    o: Opts,
    revs: &[String],
    io: &Io,
) -> Result<i32, String> {
    let ids = commits_of(repo, action, revs)?;
    let single = revs.len() == 1 && ids.len() == 1 && !revs[0].contains("..");
    if !single && sequencer_dir(repo).exists() {
        // Named by the step the sequencer is at; --skip offered when one is stopped.
        let skip = if cherry_pick_head(repo).is_some() || revert_head(repo).is_some() {
            "--skip | "
        } else {
            ""
        };
        return Err(match state::sequencer_command(repo).as_deref() {
            Some("revert") => format!(
                "error: revert is already in progress\nhint: try \"git revert (--continue | {skip}--abort | --quit)\""
            ),
            Some(_) => format!(
                "error: cherry-pick is already in progress\nhint: try \"git cherry-pick (--continue | {skip}--abort | --quit)\""
            ),
            None => "error: a cherry-pick or revert is already in progress".to_string(),
        });
    }
    if !load_conflicts(repo)?.is_empty() {
        return Err(unmerged_refusal(action));
    }
    if ids.is_empty() {
        return Err("error: empty commit set passed".into());
    }
    let steps: Vec<(Action, Oid)> = ids.into_iter().map(|id| (action, id)).collect();
    if !single {
        let dir = sequencer_dir(repo);
        let head = repo.head().1.map(|h| hex(&h)).unwrap_or_default();
        write_file(&dir.join("head"), format!("{head}\n").as_bytes())?;
        write_file(&dir.join("abort-safety"), format!("{head}\n").as_bytes())?;
        save_opts(repo, &o)?;
        save_todo(repo, &steps)?;
    }
    pick_all(sh, repo, o, steps, !single, io)
}

/// The options a continued sequence keeps, in `.git/sequencer/opts` as git writes them.
fn save_opts(repo: &Repo, o: &Opts) -> Result<(), String> {
    let mut t = String::new();
    if o.record_origin {
        t.push_str("\trecord-origin = true\n");
    }
    if let Some(m) = o.mainline {
        t.push_str(&format!("\tmainline = {m}\n"));
    }
    if t.is_empty() {
        return Ok(());
    }
    write_file(
        &sequencer_dir(repo).join("opts"),
        format!("[options]\n{t}").as_bytes(),
    )
}

fn load_opts(repo: &Repo) -> Opts {
    let text = std::fs::read_to_string(sequencer_dir(repo).join("opts")).unwrap_or_default();
    let get = |k: &str| crate::plumbing::repo::config_get(&text, &format!("options.{k}"));
    Opts {
        record_origin: get("record-origin").as_deref() == Some("true"),
        mainline: get("mainline").and_then(|m| m.parse().ok()),
        ..Opts::default()
    }
}

fn save_todo(repo: &Repo, steps: &[(Action, Oid)]) -> Result<(), String> {
    let mut t = String::new();
    for (a, id) in steps {
        t.push_str(&todo_line(repo, *a, id)?);
    }
    write_file(&sequencer_dir(repo).join("todo"), t.as_bytes())
}

fn load_todo(repo: &Repo) -> Result<Vec<(Action, Oid)>, String> {
    let t = std::fs::read_to_string(sequencer_dir(repo).join("todo")).unwrap_or_default();
    let mut out = Vec::new();
    for l in t
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut w = l.split(' ');
        let a = match w.next() {
            Some("revert") => Action::Revert,
            _ => Action::Pick,
        };
        let id = w
            .next()
            .and_then(|r| resolve(repo, r))
            .ok_or_else(|| format!("error: invalid line: {l}"))?;
        out.push((a, id));
    }
    Ok(out)
}

/// Runs the steps; with `multi` the sequencer's todo follows each one, so that a stop can
/// be continued.
fn pick_all(
    sh: &dyn Ctx,
    repo: &Repo,
    o: Opts,
    steps: Vec<(Action, Oid)>,
    multi: bool,
    io: &Io,
) -> Result<i32, String> {
    for k in 0..steps.len() {
        if multi {
            save_todo(repo, &steps[k..])?;
        }
        let (action, id) = steps[k];
        let code = pick_one(sh, repo, action, &id, o, io);
        let code = match code {
            Ok(c) => c,
            Err(e) if multi && k == 0 => {
                let _ = std::fs::remove_dir_all(sequencer_dir(repo));
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if code != 0 {
            return Ok(code);
        }
        if multi && let Some(h) = repo.head().1 {
            write_file(
                &sequencer_dir(repo).join("abort-safety"),
                format!("{}\n", hex(&h)).as_bytes(),
            )?;
        }
    }
    if multi {
        let _ = std::fs::remove_dir_all(sequencer_dir(repo));
    }
    Ok(0)
}

/// One cherry-pick or revert: committed, or left for `--continue` (status 1).
fn pick_one(
    sh: &dyn Ctx,
    repo: &Repo,
    action: Action,
    id: &Oid,
    o: Opts,
    io: &Io,
) -> Result<i32, String> {
    let c = read_commit(repo, id)?;
    let head = repo.head().1;
    if !o.no_commit && index_dirty(repo, head)? {
        return Err(dirty_refusal(action));
    }
    if action == Action::Pick
        && o.ff
        && !o.no_commit
        && head.is_some()
        && mainline_parent(id, &c, o.mainline).ok().flatten() == head
    {
        move_tree(repo, &work_of(repo)?, head, *id, "merge")?;
        set_head(sh, repo, head, *id, "cherry-pick: fast-forward")?;
        return Ok(0);
    }
    let message = message_of(action, id, &c, o.record_origin, o.mainline);
    let step = Step {
        action,
        id,
        commit: &c,
        mainline: o.mainline,
    };
    let applied = apply(repo, &step, head, o.no_commit, io)?;
    let write_head = |name: &str| {
        write_file(
            &repo.git_dir.join(name),
            format!("{}\n", hex(id)).as_bytes(),
        )
    };
    match applied {
        Applied::Conflict(paths) => {
            let mut msg = format!("{message}\n# Conflicts:\n");
            for p in &paths {
                msg.push_str(&format!("#\t{}\n", String::from_utf8_lossy(p)));
            }
            write_file(&repo.git_dir.join("MERGE_MSG"), msg.as_bytes())?;
            match action {
                Action::Pick if !o.no_commit => write_head("CHERRY_PICK_HEAD")?,
                Action::Revert => write_head("REVERT_HEAD")?,
                _ => {}
            }
            let (verb, cmd) = match action {
                Action::Pick => ("apply", "cherry-pick"),
                Action::Revert => ("revert", "revert"),
            };
            let mut err = format!(
                "error: could not {verb} {}... {}\n",
                abbrev(id),
                first_line(&c.message)
            );
            if o.no_commit {
                err.push_str("hint: after resolving the conflicts, mark the corrected paths\nhint: with 'git add <paths>' or 'git rm <paths>'\n");
            } else {
                err.push_str(&format!(
                    "hint: After resolving the conflicts, mark them with\nhint: \"git add/rm <pathspec>\", then run\nhint: \"git {cmd} --continue\".\nhint: You can instead skip this commit with \"git {cmd} --skip\".\nhint: To abort and get back to the state before \"git {cmd}\",\nhint: run \"git {cmd} --abort\".\n"
                ));
            }
            err.push_str(
                "hint: Disable this message with \"git config advice.mergeConflict false\"\n",
            );
            io.eprint(&err);
            Ok(1)
        }
        Applied::Clean(tree) => {
            write_file(&repo.git_dir.join("MERGE_MSG"), message.as_bytes())?;
            if o.no_commit {
                if action == Action::Revert {
                    write_head("REVERT_HEAD")?;
                }
                return Ok(0);
            }
            let head_tree = match head {
                Some(h) => Some(read_commit(repo, &h)?.tree),
                None => None,
            };
            if action == Action::Pick {
                write_head("CHERRY_PICK_HEAD")?;
            }
            if head_tree == Some(tree) {
                // Nothing left to commit: git's commit says so (its advice first, as its
                // stdout is flushed at exit), and the pick waits.
                if action == Action::Pick {
                    io.eprint(crate::porcelain::write::EMPTY_PICK);
                    io.eprint(crate::porcelain::write::EMPTY_PICK_SINGLE);
                }
                crate::porcelain::status::commit_status(repo, Path::new(&sh.cwd()), io)?;
                return Ok(1);
            }
            let author = match action {
                Action::Pick => c.author.clone(),
                Action::Revert => ident(sh, repo, "AUTHOR")?,
            };
            let new = make_commit(sh, repo, tree, head, &author, &message)?;
            let what = match action {
                Action::Pick => "cherry-pick",
                Action::Revert => "revert",
            };
            set_head(
                sh,
                repo,
                head,
                new,
                &format!("{what}: {}", subject(&message)),
            )?;
            let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
            state::post_commit_cleanup(repo);
            io.print(&commit_summary(repo, &new, true)?);
            Ok(0)
        }
    }
}

fn seq_continue(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let todo = sequencer_dir(repo).join("todo");
    let stopped = cherry_pick_head(repo).is_some() || revert_head(repo).is_some();
    if !todo.is_file() {
        if !stopped {
            return Err("error: no cherry-pick or revert in progress".into());
        }
        return crate::porcelain::write::conclude(sh, repo, io);
    }
    let steps = load_todo(repo)?;
    if stopped {
        let code = crate::porcelain::write::conclude(sh, repo, io)?;
        if code != 0 {
            return Ok(code);
        }
    }
    if index_dirty(repo, repo.head().1)? {
        return Err(dirty_refusal(action));
    }
    if !sequencer_dir(repo).exists() {
        // The commit concluded the last step.
        return Ok(0);
    }
    let rest: Vec<(Action, Oid)> = steps.into_iter().skip(1).collect();
    pick_all(sh, repo, load_opts(repo), rest, true, io)
}

/// The HEAD the sequencer left after its last step (`abort-safety`): HEAD moved since
/// means the user committed, and the step is not undone.
fn rollback_is_safe(repo: &Repo) -> bool {
    let saved = std::fs::read_to_string(sequencer_dir(repo).join("abort-safety"))
        .ok()
        .and_then(|t| crate::plumbing::object::parse_hex(t.trim()));
    saved == repo.head().1
}

/// `git reset --merge TO`, which git's sequencer runs to drop a step (`--skip`) or go back
/// (`--abort`): local changes the reset need not touch survive it; the error is git's
/// refusal when they would be lost, nothing changed.
fn merge_to(repo: &Repo, to: Oid) -> Result<(), String> {
    let work = work_of(repo)?;
    let files = head_files(repo, Some(to))?;
    crate::plumbing::checkout::merge_reset(repo, &work, &files, &hex(&to))?;
    // As `git reset` does, whatever the mode.
    if let Some(h) = repo.head().1 {
        write_file(
            &repo.git_dir.join("ORIG_HEAD"),
            format!("{}\n", hex(&h)).as_bytes(),
        )?;
    }
    Ok(())
}

fn seq_skip(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let last = state::sequencer_command(repo);
    let here = match action {
        Action::Pick => cherry_pick_head(repo).is_some(),
        Action::Revert => revert_head(repo).is_some(),
    };
    if !here {
        if last.as_deref() != Some(action.word()) {
            return Err(format!("error: no {} in progress", action.cmd()));
        }
        if !rollback_is_safe(repo) {
            return Err(format!(
                "error: there is nothing to skip\nhint: have you committed already?\nhint: try \"git {} --continue\"",
                action.cmd()
            ));
        }
    }
    if let Some(h) = repo.head().1 {
        merge_to(repo, h).map_err(|e| {
            format!(
                "{e}\nerror: failed to skip the commit\nfatal: {} failed",
                action.cmd()
            )
        })?;
    } else {
        reset_to(repo, None)?;
    }
    crate::plumbing::state::clear_state(repo);
    if !sequencer_dir(repo).join("todo").is_file() {
        return Ok(0);
    }
    let steps = load_todo(repo)?;
    let rest: Vec<(Action, Oid)> = steps.into_iter().skip(1).collect();
    pick_all(sh, repo, load_opts(repo), rest, true, io)
}

fn seq_abort(sh: &dyn Ctx, repo: &Repo, action: Action, io: &Io) -> Result<i32, String> {
    let head_file = std::fs::read_to_string(sequencer_dir(repo).join("head")).ok();
    let Some(orig) = head_file else {
        if cherry_pick_head(repo).is_none() && revert_head(repo).is_none() {
            return Err("error: no cherry-pick or revert in progress".into());
        }
        // A single pick: git's `reset --merge` refusal is all it says (128).
        match repo.head().1 {
            Some(h) => merge_to(repo, h)?,
            None => reset_to(repo, None)?,
        }
        crate::plumbing::state::clear_state(repo);
        return Ok(0);
    };
    let orig = crate::plumbing::object::parse_hex(orig.trim());
    if !rollback_is_safe(repo) {
        io.eprint("warning: You seem to have moved HEAD. Not rewinding, check your HEAD!\n");
    } else if let Some(o) = orig {
        let head = repo.head().1;
        merge_to(repo, o).map_err(|e| format!("{e}\nfatal: {} failed", action.cmd()))?;
        set_head(sh, repo, head, o, &format!("reset: moving to {}", hex(&o)))?;
    }
    let _ = std::fs::remove_dir_all(sequencer_dir(repo));
    crate::plumbing::state::clear_state(repo);
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// rebase
