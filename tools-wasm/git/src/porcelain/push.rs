//! `git push` over smart HTTP (receive-pack, protocol v0 as every server speaks it for
//! pushes): refspecs (`BRANCH`, `SRC:DST`, `+` to force, `:DST` and `--delete` to delete,
//! `HEAD`), git's `push.default=simple` without one, `-u`, `--force`, `--tags`; the objects
//! the remote lacks sent as one pack of whole objects; git's table of results, and its
//! rejections (non-fast-forward, fetch first) checked before anything is sent.

use std::rc::Rc;

use foldhash::{HashSet, HashSetExt};
use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown};
use super::sync::display_url;
use crate::plumbing::commit::read_commit;
use crate::plumbing::object::{Kind, Oid, hex, parse_tree};
use crate::plumbing::pack;
use crate::plumbing::remote::Receiver;
use crate::plumbing::repo::Repo;
use crate::plumbing::text::abbrev;
use crate::plumbing::walk::reachable;
use crate::plumbing::write::write_file;

/// One ref to update on the remote.
struct Update {
    /// What the table shows on each side (`main`, `HEAD`, `newb`).
    src_name: String,
    dst: String,
    /// None deletes.
    new: Option<Oid>,
    force: bool,
}

#[derive(Default)]
struct PushOpts {
    force: bool,
    set_upstream: bool,
    delete: bool,
    tags: bool,
    quiet: bool,
}

/// push's options, as git's `builtin/push.c` declares them.
const SPEC: Spec<PushOpts> = Spec {
    name: "push",
    usage: "git push [<options>] [<repository> [<refspec>...]]",
    options: &[
        Opt::flag("-f/--force", |o| o.force = true),
        Opt::flag("-u/--set-upstream", |o| o.set_upstream = true),
        Opt::flag("-d/--delete", |o| o.delete = true),
        Opt::flag("--tags", |o| o.tags = true),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::ignored("-v/--verbose"),
        Opt::ignored("--progress"),
        Opt::ignored("--no-progress"),
        Opt::ignored("--no-verify"),
    ],
    refused: "--all --branches --mirror --force-with-lease --atomic -n --dry-run --porcelain --prune --follow-tags -o --push-option --signed --recurse-submodules --thin --no-thin --receive-pack --exec --force-if-includes",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn push(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = PushOpts::default();
    let operands = match SPEC.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let (repo, _) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match do_push(&repo, &operands, &o, io) {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

fn do_push(repo: &Repo, operands: &[String], o: &PushOpts, io: &Io) -> Result<i32, String> {
    let (head_ref, head) = repo.head();
    let branch = head_ref
        .as_deref()
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .map(str::to_string);
    let remote_name = match operands.first() {
        Some(r) => r.clone(),
        None => branch
            .as_ref()
            .and_then(|b| repo.config(&format!("branch.{b}.remote")))
            .unwrap_or_else(|| "origin".into()),
    };
    let url = repo
        .config(&format!("remote.{remote_name}.url"))
        .or_else(|| remote_name.contains("://").then(|| remote_name.clone()))
        .ok_or_else(|| {
            format!(
                "fatal: '{remote_name}' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists."
            )
        })?;

    // What to push.
    let mut updates: Vec<Update> = Vec::new();
    let specs: Vec<String> = operands.iter().skip(1).cloned().collect();
    if specs.is_empty() && !o.tags {
        // push.default=simple: the current branch to its upstream of the same name.
        let Some(b) = &branch else {
            return Err("fatal: You are not currently on a branch.\nTo push the history leading to the current (detached HEAD)\nstate now, use\n\n    git push origin HEAD:<name-of-remote-branch>\n".into());
        };
        let upstream = repo.config(&format!("branch.{b}.merge"));
        if upstream.is_none() && !o.set_upstream {
            return Err(format!(
                "fatal: The current branch {b} has no upstream branch.\nTo push the current branch and set the remote as upstream, use\n\n    git push --set-upstream {remote_name} {b}\n\nTo have this happen automatically for branches without a tracking\nupstream, see 'push.autoSetupRemote' in 'git help config'.\n"
            ));
        }
        let dst = upstream.unwrap_or_else(|| format!("refs/heads/{b}"));
        if dst != format!("refs/heads/{b}") {
            return Err(format!(
                "fatal: The upstream branch of your current branch does not match\nthe name of your current branch.  To push to the upstream branch\non the remote, use\n\n    git push {remote_name} HEAD:{}\n\nTo push to the branch of the same name on the remote, use\n\n    git push {remote_name} HEAD\n",
                dst.trim_start_matches("refs/heads/")
            ));
        }
        updates.push(Update {
            src_name: b.clone(),
            dst,
            new: head,
            force: o.force,
        });
    }
    for s in &specs {
        let (force, s) = match s.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (o.force, s.as_str()),
        };
        let (src, dst) = match s.split_once(':') {
            Some((a, b)) => (a.to_string(), Some(b.to_string())),
            None => (s.to_string(), None),
        };
        if o.delete || src.is_empty() {
            let name = dst.unwrap_or(src);
            let full = if name.starts_with("refs/") {
                name.clone()
            } else {
                format!("refs/heads/{name}")
            };
            updates.push(Update {
                src_name: name,
                dst: full,
                new: None,
                force: true,
            });
            continue;
        }
        // The source: HEAD, a branch, a tag, or any commit.
        let (src_full, id) = if src == "HEAD" {
            (head_ref.clone(), head)
        } else if let Some(id) = repo.resolve_ref(&format!("refs/heads/{src}")) {
            (Some(format!("refs/heads/{src}")), Some(id))
        } else if let Some(id) = repo.resolve_ref(&format!("refs/tags/{src}")) {
            (Some(format!("refs/tags/{src}")), Some(id))
        } else if src.starts_with("refs/") {
            (Some(src.clone()), repo.resolve_ref(&src))
        } else {
            (None, crate::plumbing::rev::resolve(repo, &src))
        };
        let Some(id) = id else {
            return Err(format!(
                "error: src refspec {src} does not match any\nerror: failed to push some refs to '{}'",
                display_url(&url)
            ));
        };
        let dst_full = match (&dst, &src_full) {
            (Some(d), _) if d.starts_with("refs/") => d.clone(),
            (Some(d), Some(sf)) if sf.starts_with("refs/tags/") => format!("refs/tags/{d}"),
            (Some(d), _) => format!("refs/heads/{d}"),
            (None, Some(sf)) => sf.clone(),
            (None, None) => {
                return Err(format!(
                    "error: The destination you provided is not a full refname (i.e.,\nstarting with \"refs/\"). burrow's git needs a destination for '{src}'.\nerror: failed to push some refs to '{}'",
                    display_url(&url)
                ));
            }
        };
        updates.push(Update {
            src_name: src.clone(),
            dst: dst_full,
            new: Some(id),
            force,
        });
    }
    if o.tags {
        for (r, id) in repo.refs_under("refs/tags/") {
            updates.push(Update {
                src_name: r.trim_start_matches("refs/tags/").to_string(),
                dst: r.clone(),
                new: Some(id),
                force: o.force,
            });
        }
    }

    let receiver = Receiver::connect(&url)?;
    let remote_of = |dst: &str| {
        receiver
            .refs
            .iter()
            .find(|(n, _)| n == dst)
            .map(|(_, id)| *id)
    };
    let shown = display_url(&url);
    let short = |r: &str| {
        r.strip_prefix("refs/heads/")
            .or_else(|| r.strip_prefix("refs/tags/"))
            .unwrap_or(r)
            .to_string()
    };
    // Each update's line, and whether it goes to the server.
    let mut lines: Vec<String> = Vec::new();
    let mut commands: Vec<(String, &Update)> = Vec::new();
    let mut rejected: Option<&str> = None;
    for u in &updates {
        let old = remote_of(&u.dst);
        let shown_dst = short(&u.dst);
        match (old, u.new) {
            (None, None) => {
                lines.push(format!(
                    " ! [remote rejected] {} (remote ref does not exist)",
                    shown_dst
                ));
                rejected = Some("");
            }
            (Some(o), None) => {
                lines.push(format!(" - [deleted]         {shown_dst}"));
                commands.push((format!("{} {} {}", hex(&o), hex(&[0; 20]), u.dst), u));
            }
            (Some(o), Some(n)) if o == n => {}
            (Some(o), Some(n)) => {
                let have_old = repo.read(&o).is_ok();
                let ff = have_old && reachable(repo, n)?.contains(&o);
                if ff {
                    lines.push(format!(
                        "   {}..{}  {} -> {shown_dst}",
                        abbrev(&o),
                        abbrev(&n),
                        u.src_name
                    ));
                } else if u.force {
                    lines.push(format!(
                        " + {}...{} {} -> {shown_dst} (forced update)",
                        abbrev(&o),
                        abbrev(&n),
                        u.src_name
                    ));
                } else {
                    let why = if have_old {
                        "non-fast-forward"
                    } else {
                        "fetch first"
                    };
                    lines.push(format!(
                        " ! [rejected]        {} -> {shown_dst} ({why})",
                        u.src_name
                    ));
                    rejected = Some(if have_old { "behind" } else { "fetch" });
                    continue;
                }
                commands.push((format!("{} {} {}", hex(&o), hex(&n), u.dst), u));
            }
            (None, Some(n)) => {
                let what = if u.dst.starts_with("refs/tags/") {
                    "[new tag]         "
                } else {
                    "[new branch]      "
                };
                lines.push(format!(" * {what}{} -> {shown_dst}", u.src_name));
                commands.push((format!("{} {} {}", hex(&[0; 20]), hex(&n), u.dst), u));
            }
        }
    }
    if commands.is_empty() && rejected.is_none() {
        if !o.quiet {
            io.eprint("Everything up-to-date\n");
        }
        return Ok(0);
    }
    // The pack: what the new tips reach that the remote's refs (as far as we have them)
    // do not.
    let mut report: Vec<String> = Vec::new();
    if !commands.is_empty() && rejected.is_none() {
        let tips: Vec<Oid> = commands.iter().filter_map(|(_, u)| u.new).collect();
        let known: Vec<Oid> = receiver
            .refs
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| repo.read(id).is_ok())
            .collect();
        let pack = if tips.is_empty() {
            None
        } else {
            Some(pack::write_pack(&missing_objects(repo, &tips, &known)?)?)
        };
        let cmds: Vec<String> = commands.iter().map(|(c, _)| c.clone()).collect();
        report = receiver.push(&cmds, pack.as_deref())?;
    }
    // Server refusals replace the line shown for their ref.
    let mut failed = rejected.is_some();
    for r in &report {
        if let Some(rest) = r.strip_prefix("ng ") {
            let (name, why) = rest.split_once(' ').unwrap_or((rest, ""));
            failed = true;
            let short_name = short(name);
            if let Some((_, u)) = commands.iter().find(|(_, u)| u.dst == name) {
                let want = format!("-> {short_name}");
                lines.retain(|l| !l.ends_with(&want) && !l.contains(&format!("{want} ")));
                lines.push(format!(
                    " ! [remote rejected] {} -> {short_name} ({why})",
                    u.src_name
                ));
            }
        } else if let Some(why) = r.strip_prefix("unpack ")
            && why != "ok"
        {
            return Err(format!(
                "error: remote unpack failed: {why}\nerror: failed to push some refs to '{shown}'"
            ));
        }
    }
    if !o.quiet || failed {
        io.eprint(&format!("To {shown}\n{}\n", lines.join("\n")));
    }
    // What was pushed: the remote-tracking refs follow, and -u sets upstreams.
    {
        for (_, u) in &commands {
            if report.iter().any(|r| r == &format!("ok {}", u.dst)) {
                let Some(b) = u.dst.strip_prefix("refs/heads/") else {
                    continue;
                };
                let tracking = format!("refs/remotes/{remote_name}/{b}");
                match u.new {
                    Some(n) => {
                        if repo
                            .config(&format!("remote.{remote_name}.fetch"))
                            .is_some()
                        {
                            write_file(
                                &repo.git_dir.join(&tracking),
                                format!("{}\n", hex(&n)).as_bytes(),
                            )?;
                        }
                        if o.set_upstream
                            && repo
                                .resolve_ref(&format!("refs/heads/{}", u.src_name))
                                .is_some()
                        {
                            let path = repo.git_dir.join("config");
                            let mut text = std::fs::read_to_string(&path).unwrap_or_default();
                            text = crate::plumbing::repo::config_set(
                                &text,
                                &format!("branch.{}.remote", u.src_name),
                                &remote_name,
                            );
                            text = crate::plumbing::repo::config_set(
                                &text,
                                &format!("branch.{}.merge", u.src_name),
                                &u.dst,
                            );
                            write_file(&path, text.as_bytes())?;
                            io.print(&format!(
                                "branch '{}' set up to track '{remote_name}/{b}'.\n",
                                u.src_name
                            ));
                        }
                    }
                    None => crate::plumbing::refs::remove_ref(repo, &tracking),
                }
            }
        }
    }
    if failed {
        let mut msg = format!("error: failed to push some refs to '{shown}'");
        match rejected {
            Some("behind") => msg.push_str("\nhint: Updates were rejected because the tip of your current branch is behind\nhint: its remote counterpart. If you want to integrate the remote changes,\nhint: use 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details."),
            Some("fetch") => msg.push_str("\nhint: Updates were rejected because the remote contains work that you do not\nhint: have locally. This is usually caused by another repository pushing to\nhint: the same ref. If you want to integrate the remote changes, use\nhint: 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details."),
            _ => {}
        }
        io.eprint(&format!("{msg}\n"));
        return Ok(1);
    }
    Ok(0)
}

/// An object to pack: its kind and data.
type Packed = (Kind, Rc<Vec<u8>>);

/// Every object `tips` reach that `known` (commits the remote has) do not: commits down to
/// the known ones, and the trees and blobs of those commits not in the boundary commits'
/// trees.
fn missing_objects(repo: &Repo, tips: &[Oid], known: &[Oid]) -> Result<Vec<Packed>, String> {
    let mut have: HashSet<Oid> = HashSet::new();
    for k in known {
        if let Ok(set) = reachable(repo, *k) {
            have.extend(set);
        }
    }
    let mut out: Vec<Packed> = Vec::new();
    let mut seen: HashSet<Oid> = HashSet::new();
    // Trees and blobs the remote has: those of the known tips.
    let mut have_objects: HashSet<Oid> = HashSet::new();
    for k in known {
        if let Ok(data) = repo.read_kind(k, Kind::Commit)
            && let Ok(c) = crate::plumbing::object::parse_commit(&data)
        {
            collect_tree(repo, c.tree, &mut have_objects, &mut |_, _, _| {})?;
        }
    }
    let mut stack: Vec<Oid> = tips.to_vec();
    while let Some(id) = stack.pop() {
        if have.contains(&id) || !seen.insert(id) {
            continue;
        }
        let (kind, data) = repo.read(&id)?;
        if kind == Kind::Tag {
            if let Some(t) = crate::plumbing::object::tag_target(&data) {
                stack.push(t);
            }
            out.push((kind, data));
            continue;
        }
        let c = read_commit(repo, &id)?;
        out.push((Kind::Commit, data));
        stack.extend(c.parents.iter().copied());
        let mut found = Vec::new();
        collect_tree(repo, c.tree, &mut have_objects, &mut |_, k, d| {
            found.push((k, d))
        })?;
        out.extend(found);
    }
    Ok(out)
}

/// Walks tree `t`, calling `f` for each object not yet in `seen` (trees and blobs).
fn collect_tree(
    repo: &Repo,
    t: Oid,
    seen: &mut HashSet<Oid>,
    f: &mut dyn FnMut(Oid, Kind, Rc<Vec<u8>>),
) -> Result<(), String> {
    if !seen.insert(t) {
        return Ok(());
    }
    let data = repo.read_kind(&t, Kind::Tree)?;
    let entries = parse_tree(&data)?;
    f(t, Kind::Tree, data);
    for e in entries {
        if e.mode == 0o160000 {
            continue;
        }
        if e.is_tree() {
            collect_tree(repo, e.oid, seen, f)?;
        } else if seen.insert(e.oid) {
            let d = repo.read_kind(&e.oid, Kind::Blob)?;
            f(e.oid, Kind::Blob, d);
        }
    }
    Ok(())
}
