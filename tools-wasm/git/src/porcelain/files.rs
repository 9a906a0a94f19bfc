//! `git rm` and `git mv`: tracked files removed or moved in the work tree and the index
//! together, with git's checks (local modifications, staged content, sources that are not
//! tracked, destinations that exist) made before anything changes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, usage_error};
use crate::plumbing::checkout::{remove_entry, work_of};
use crate::plumbing::index::{Index, index_map, save_index, worktree_change};
use crate::plumbing::pathspec::{match_specs, spec_path};
use crate::plumbing::repo::Repo;
use crate::plumbing::tree::head_files;

#[derive(Default)]
struct Rm {
    recursive: bool,
    force: bool,
    cached: bool,
    quiet: bool,
    dry: bool,
    ignore_unmatch: bool,
}

/// rm's options, as git's `builtin/rm.c` declares them.
const RM: Spec<Rm> = Spec {
    name: "rm",
    usage: "git rm [-f | --force] [-n] [-r] [--cached] [--ignore-unmatch]\n              [--quiet] [--pathspec-from-file=<file> [--pathspec-file-nul]]\n              [--] [<pathspec>...]",
    options: &[
        Opt::flag("-r", |o| o.recursive = true),
        Opt::flag("-f/--force", |o| o.force = true),
        Opt::flag("--cached", |o| o.cached = true),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("-n/--dry-run", |o| o.dry = true),
        Opt::flag("--ignore-unmatch", |o| o.ignore_unmatch = true),
    ],
    refused: "--pathspec-from-file --pathspec-file-nul --sparse",
    unknown: Unknown::Usage,
    help: &[],
};

/// `git rm [-r] [-f] [--cached] [-q] [-n] [--ignore-unmatch] [--] PATHS`.
pub fn rm(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Rm::default();
    let specs = match RM.parse(args, &mut o, io) {
        Ok(specs) => specs,
        Err(code) => return code,
    };
    let Rm {
        recursive,
        force,
        cached,
        quiet,
        dry,
        ignore_unmatch,
    } = o;
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if specs.is_empty() {
        io.eprint("fatal: No pathspec was given. Which files should I remove?\n");
        return 128;
    }
    let o = RmOpts {
        recursive,
        force,
        cached,
        quiet,
        dry,
        ignore_unmatch,
    };
    match do_rm(&repo, &cwd, &specs, &o, io) {
        Ok(c) => c,
        Err(e) => super::args::fail(io, &e),
    }
}

struct RmOpts {
    recursive: bool,
    force: bool,
    cached: bool,
    quiet: bool,
    dry: bool,
    ignore_unmatch: bool,
}

fn do_rm(repo: &Repo, cwd: &Path, specs: &[String], o: &RmOpts, io: &Io) -> Result<i32, String> {
    let work = work_of(repo)?;
    let mut index = index_map(repo)?;
    let mut hits: BTreeSet<Vec<u8>> = BTreeSet::new();
    for s in specs {
        let unmatched = |s: &str| format!("fatal: pathspec '{s}' did not match any files");
        match match_specs(
            &work,
            cwd,
            std::slice::from_ref(s),
            index.keys(),
            &unmatched,
        ) {
            Ok(h) => {
                let exact = spec_path(&work, cwd, s)?;
                if !o.recursive && !h.contains(&exact) && !s.contains(['*', '?', '[']) {
                    return Err(format!(
                        "fatal: not removing '{}' recursively without -r",
                        s.trim_end_matches('/')
                    ));
                }
                hits.extend(h);
            }
            Err(_) if o.ignore_unmatch => {}
            Err(e) => return Err(e),
        }
    }
    if !o.force {
        let head = head_files(repo, repo.head().1)?;
        let (mut both, mut local, mut staged) = (Vec::new(), Vec::new(), Vec::new());
        let mut tree = sh_utility::sys::TreeStat::new(&work);
        for p in &hits {
            let e = &index[p];
            let in_index = head.get(p) != Some(&(e.mode, e.oid));
            let in_tree = matches!(worktree_change(&mut tree, e), Some('M') | Some('T'));
            let name = String::from_utf8_lossy(p).into_owned();
            if in_index && in_tree {
                both.push(name);
            } else if !o.cached && in_tree {
                local.push(name);
            } else if !o.cached && in_index {
                // A new file only in the index counts as staged content too.
                staged.push(name);
            }
        }
        let mut msg = String::new();
        let block = |v: &[String], one: &str, many: &str, hint: &str| -> String {
            if v.is_empty() {
                return String::new();
            }
            let head = if v.len() == 1 { one } else { many };
            let list: String = v.iter().map(|p| format!("    {p}\n")).collect();
            format!("error: {head}\n{list}{hint}\n")
        };
        msg.push_str(&block(
            &both,
            "the following file has staged content different from both the\nfile and the HEAD:",
            "the following files have staged content different from both the\nfile and the HEAD:",
            "(use -f to force removal)",
        ));
        msg.push_str(&block(
            &staged,
            "the following file has changes staged in the index:",
            "the following files have changes staged in the index:",
            "(use --cached to keep the file, or -f to force removal)",
        ));
        msg.push_str(&block(
            &local,
            "the following file has local modifications:",
            "the following files have local modifications:",
            "(use --cached to keep the file, or -f to force removal)",
        ));
        if !msg.is_empty() {
            return Err(msg.trim_end().to_string());
        }
    }
    let mut out = String::new();
    for p in &hits {
        if !o.quiet {
            out.push_str(&format!("rm '{}'\n", String::from_utf8_lossy(p)));
        }
        if o.dry {
            continue;
        }
        index.remove(p);
        if !o.cached {
            remove_entry(&work, p);
        }
    }
    if !o.dry {
        save_index(repo, &index)?;
    }
    io.print(&out);
    Ok(0)
}

#[derive(Default)]
struct Mv {
    force: bool,
    skip: bool,
    dry: bool,
    verbose: bool,
}

/// mv's options, as git's `builtin/mv.c` declares them.
const MV: Spec<Mv> = Spec {
    name: "mv",
    usage: MV_USAGE,
    options: &[
        Opt::flag("-f/--force", |o| o.force = true),
        Opt::flag("-k", |o| o.skip = true),
        Opt::flag("-n/--dry-run", |o| o.dry = true),
        Opt::flag("-v/--verbose", |o| o.verbose = true),
    ],
    refused: "--sparse",
    unknown: Unknown::Usage,
    help: &[],
};

const MV_USAGE: &str = "git mv [-v] [-f] [-n] [-k] <source> <destination>\n   or: git mv [-v] [-f] [-n] [-k] <source>... <destination-directory>";

/// `git mv [-f] [-k] [-n] [-v] SOURCE... DESTINATION`.
pub fn mv(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Mv::default();
    let operands = match MV.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let Mv {
        force,
        skip,
        dry,
        verbose,
    } = o;
    if operands.len() < 2 {
        return usage_error(io, "", MV_USAGE);
    }
    let (repo, cwd) = match super::args::open_repo(sh, io) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let o = MvOpts {
        force,
        skip,
        dry,
        verbose,
    };
    match do_mv(&repo, &cwd, &operands, &o, io) {
        Ok(c) => c,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

struct MvOpts {
    force: bool,
    skip: bool,
    dry: bool,
    verbose: bool,
}

fn do_mv(repo: &Repo, cwd: &Path, operands: &[String], o: &MvOpts, io: &Io) -> Result<i32, String> {
    let work = work_of(repo)?;
    let mut index: Index = index_map(repo)?;
    let (dst_spec, srcs) = operands.split_last().ok_or("fatal: nothing to move")?;
    let dst = spec_path(&work, cwd, dst_spec)?;
    let dst_path = work.join(String::from_utf8_lossy(&dst).as_ref());
    let into_dir = dst_path.is_dir();
    if srcs.len() > 1 && !into_dir {
        return Err(format!(
            "fatal: destination '{dst_spec}' is not a directory"
        ));
    }
    // (source, destination) of each tracked path, checked before anything moves.
    let mut moves: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut tops: Vec<(PathBuf, PathBuf, String, String)> = Vec::new();
    for s in srcs {
        let src = spec_path(&work, cwd, s)?;
        let name = src.rsplit(|b| *b == b'/').next().unwrap_or(&src).to_vec();
        let target = if into_dir {
            let mut t = dst.clone();
            if !t.is_empty() {
                t.push(b'/');
            }
            t.extend_from_slice(&name);
            t
        } else {
            dst.clone()
        };
        let shown_dst = if into_dir {
            format!(
                "{}/{}",
                dst_spec.trim_end_matches('/'),
                String::from_utf8_lossy(&name)
            )
        } else {
            dst_spec.clone()
        };
        let fail = |what: &str| format!("fatal: {what}, source={s}, destination={shown_dst}");
        let src_path = work.join(String::from_utf8_lossy(&src).as_ref());
        let target_path = work.join(String::from_utf8_lossy(&target).as_ref());
        let r = (|| {
            if src_path.symlink_metadata().is_err() {
                return Err(fail("bad source"));
            }
            let under: Vec<Vec<u8>> = index
                .keys()
                .filter(|k| k.starts_with(&src) && k.get(src.len()) == Some(&b'/'))
                .cloned()
                .collect();
            let entries = if index.contains_key(&src) {
                vec![(src.clone(), target.clone())]
            } else if src_path.is_dir() && !under.is_empty() {
                under
                    .into_iter()
                    .map(|k| {
                        let mut t = target.clone();
                        t.extend_from_slice(&k[src.len()..]);
                        (k, t)
                    })
                    .collect()
            } else {
                return Err(fail("not under version control"));
            };
            if target == src || target.starts_with(&[src.as_slice(), b"/"].concat()) {
                return Err(fail("can not move directory into itself"));
            }
            if target_path.symlink_metadata().is_ok() && (!o.force || target_path.is_dir()) {
                return Err(fail("destination exists"));
            }
            if let Some(parent) = target_path.parent()
                && !parent.is_dir()
            {
                // git finds this out from rename(2).
                return Err(format!(
                    "fatal: renaming '{s}' failed: No such file or directory"
                ));
            }
            Ok(entries)
        })();
        match r {
            Ok(entries) => {
                moves.extend(entries);
                tops.push((src_path, target_path, s.clone(), shown_dst));
            }
            Err(_) if o.skip => {}
            Err(e) => return Err(e),
        }
    }
    let mut out = String::new();
    for (from, to, s, d) in &tops {
        if o.dry {
            out.push_str(&format!("Checking rename of '{s}' to '{d}'\n"));
        }
        if o.dry || o.verbose {
            out.push_str(&format!("Renaming {s} to {d}\n"));
        }
        if o.dry {
            continue;
        }
        if o.force && to.is_file() {
            let _ = std::fs::remove_file(to);
        }
        std::fs::rename(from, to).map_err(|e| format!("fatal: renaming '{s}' failed: {e}"))?;
    }
    if !o.dry {
        for (from, to) in moves {
            if let Some(mut e) = index.remove(&from) {
                e.path = to.clone();
                index.insert(to, e);
            }
        }
        save_index(repo, &index)?;
    }
    io.print(&out);
    Ok(0)
}
