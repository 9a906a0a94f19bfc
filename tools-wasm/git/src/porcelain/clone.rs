//! `git clone URL [DIR]` over smart HTTP: refs listed, the pack fetched and indexed, the
//! repository written as git writes one (HEAD, config, packed-refs, the pack and its index,
//! `shallow`), then the branch checked out with an index whose entries match the files.

use std::path::{Path, PathBuf};

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Opt, Spec, Unknown, set, usage_error};
use crate::plumbing::object::{Kind, Oid, hex, parse_tree};
use crate::plumbing::pack::{self, Pack};
use crate::plumbing::remote::{Ref, Remote};
use crate::plumbing::repo::{IndexEntry, write_index};

const USAGE: &str = "git clone [<options>] [--] <repo> [<dir>]";

#[derive(Default)]
struct Opts {
    depth: Option<u32>,
    branch: Option<String>,
    single_branch: Option<bool>,
    no_checkout: bool,
    quiet: bool,
    progress: bool,
}

/// clone's options, as git's `builtin/clone.c` declares them.
const SPEC: Spec<Opts> = Spec {
    name: "clone",
    usage: USAGE,
    options: &[
        Opt::value("--depth", |o, v| set(&mut o.depth, Some(positive(&v)?))),
        Opt::value("-b/--branch", |o, v| set(&mut o.branch, Some(v))),
        Opt::flag("--single-branch", |o| o.single_branch = Some(true)),
        Opt::flag("--no-single-branch", |o| o.single_branch = Some(false)),
        Opt::flag("-n/--no-checkout", |o| o.no_checkout = true),
        Opt::flag("-q/--quiet", |o| o.quiet = true),
        Opt::flag("--progress", |o| o.progress = true),
    ],
    refused: "",
    unknown: Unknown::Usage,
    help: &[],
};

pub fn clone(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    let operands = match SPEC.parse(args, &mut o, io) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let Some(url) = operands.first() else {
        io.eprint("fatal: You must specify a repository to clone.\n\n");
        return usage_error(io, "", USAGE);
    };
    if operands.len() > 2 {
        io.eprint("fatal: Too many arguments.\n\n");
        return usage_error(io, "", USAGE);
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        io.eprint(&format!(
            "fatal: burrow's git clones over HTTP(S) only; '{url}' is not supported in burrow\n"
        ));
        return 128;
    }
    let dir_name = match operands.get(1) {
        Some(d) => d.clone(),
        None => humanish(url),
    };
    let dir = sh.path(&dir_name);
    let occupied = match std::fs::read_dir(&dir) {
        Ok(mut rd) => rd.next().is_some(),
        Err(_) => dir.symlink_metadata().is_ok(),
    };
    if occupied {
        io.eprint(&format!(
            "fatal: destination path '{dir_name}' already exists and is not an empty directory.\n"
        ));
        return 128;
    }
    if !o.quiet {
        io.eprint(&format!("Cloning into '{dir_name}'...\n"));
        io.err.flush();
    }
    let existed = dir.is_dir();
    match run(&o, url, &dir, io) {
        Ok(()) => 0,
        Err(e) => {
            // Nothing half-made stays behind, as with git: an empty directory that was there
            // is emptied again, one the clone made is removed.
            if existed {
                for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    let p = entry.path();
                    let _ = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        std::fs::remove_dir_all(&p)
                    } else {
                        std::fs::remove_file(&p)
                    };
                }
            } else {
                let _ = std::fs::remove_dir_all(&dir);
            }
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

fn positive(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(d) if d > 0 => Ok(d),
        _ => Err(format!("fatal: depth {v} is not a positive number")),
    }
}

/// The directory git names a clone after: the URL's last part without `.git`.
fn humanish(url: &str) -> String {
    let u = url.trim_end_matches('/');
    let u = u.strip_suffix("/.git").unwrap_or(u);
    let last = u.rsplit('/').next().unwrap_or(u);
    let last = last.strip_suffix(".git").unwrap_or(last);
    // A URL with no path (`https://host`) is named after its host.
    let last = last.rsplit('@').next().unwrap_or(last);
    let last = last.split(':').next().unwrap_or(last);
    if last.is_empty() {
        "repo".to_string()
    } else {
        last.to_string()
    }
}

fn run(o: &Opts, url: &str, dir: &Path, io: &Io) -> Result<(), String> {
    let remote = Remote::connect(url)?;
    let refs = remote.ls_refs(&["HEAD", "refs/heads/", "refs/tags/"])?;
    let head = refs.iter().find(|r| r.name == "HEAD");
    let remote_head_branch = head
        .and_then(|h| h.symref.as_deref())
        .and_then(|t| t.strip_prefix("refs/heads/"))
        .map(str::to_string);
    let branches: Vec<&Ref> = refs
        .iter()
        .filter(|r| r.name.starts_with("refs/heads/") && r.oid.is_some())
        .collect();
    let tags: Vec<&Ref> = refs
        .iter()
        .filter(|r| r.name.starts_with("refs/tags/") && r.oid.is_some())
        .collect();

    // What to check out: --branch (a branch, or a tag for a detached HEAD), else the
    // remote's HEAD.
    enum Checkout {
        Branch(String, Oid),
        Tag(Oid),
        /// An empty repository: HEAD names this unborn branch.
        Unborn(String),
    }
    let checkout = match &o.branch {
        Some(b) => {
            if let Some(r) = branches
                .iter()
                .find(|r| r.name == format!("refs/heads/{b}"))
            {
                Checkout::Branch(b.clone(), r.oid.unwrap_or_default())
            } else if let Some(r) = tags.iter().find(|r| r.name == format!("refs/tags/{b}")) {
                Checkout::Tag(r.oid.unwrap_or_default())
            } else {
                return Err(format!(
                    "warning: Could not find remote branch {b} to clone.\nfatal: Remote branch {b} not found in upstream origin"
                ));
            }
        }
        None => match (&remote_head_branch, head.and_then(|h| h.oid)) {
            (Some(b), Some(id)) => Checkout::Branch(b.clone(), id),
            (Some(b), None) => Checkout::Unborn(b.clone()),
            (None, Some(id)) => Checkout::Tag(id),
            (None, None) => Checkout::Unborn("master".into()),
        },
    };
    let single = o.single_branch.unwrap_or(o.depth.is_some());

    let mut wants: Vec<Oid> = Vec::new();
    let mut fetched_branches: Vec<(String, Oid)> = Vec::new();
    match &checkout {
        Checkout::Branch(b, id) if single => {
            wants.push(*id);
            fetched_branches.push((b.clone(), *id));
        }
        Checkout::Tag(id) if single => wants.push(*id),
        _ => {
            for r in &branches {
                let id = r.oid.unwrap_or_default();
                wants.push(id);
                fetched_branches.push((r.name.trim_start_matches("refs/heads/").to_string(), id));
            }
            if !single {
                wants.extend(tags.iter().filter_map(|t| t.oid));
            }
            if let Checkout::Tag(id) = &checkout {
                wants.push(*id);
            }
        }
    }
    wants.sort_unstable();
    wants.dedup();

    let git = dir.join(".git");
    let mut pack_bytes = Vec::new();
    let mut index = None;
    let mut shallow = Vec::new();
    if !wants.is_empty() {
        let mut progress = |msg: &[u8]| {
            if !o.quiet && o.progress {
                for line in String::from_utf8_lossy(msg).split_inclusive(['\n', '\r']) {
                    io.eprint(&format!("remote: {line}"));
                }
            }
        };
        let fetched = remote.fetch(&wants, &[], o.depth, &mut progress, o.quiet || !o.progress)?;
        index = Some(pack::index(&fetched.pack)?);
        pack_bytes = fetched.pack;
        shallow = fetched.shallow;
    }

    // The repository.
    let w = crate::plumbing::write::write_file;
    crate::plumbing::write::skeleton(&git)?;
    let have = |id: &Oid| {
        index
            .as_ref()
            .is_some_and(|ix| ix.entries.binary_search_by(|e| e.0.cmp(id)).is_ok())
    };
    if let Some(ix) = &index {
        let name = hex(&ix.checksum);
        w(
            &git.join(format!("objects/pack/pack-{name}.idx")),
            &pack::write_idx(ix),
        )?;
        w(
            &git.join(format!("objects/pack/pack-{name}.pack")),
            &pack_bytes,
        )?;
    }
    if !shallow.is_empty() {
        let mut s = shallow.iter().map(hex).collect::<Vec<_>>();
        s.sort();
        w(
            &git.join("shallow"),
            format!("{}\n", s.join("\n")).as_bytes(),
        )?;
    }

    // Refs: the remote's branches and tags in packed-refs, the local branch loose.
    let mut packed: Vec<(String, Oid, Option<Oid>)> = fetched_branches
        .iter()
        .map(|(b, id)| (format!("refs/remotes/origin/{b}"), *id, None))
        .collect();
    for t in &tags {
        let id = t.oid.unwrap_or_default();
        if have(&id) {
            packed.push((t.name.clone(), id, t.peeled));
        }
    }
    packed.sort_by(|a, b| a.0.cmp(&b.0));
    if !packed.is_empty() {
        let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        for (n, id, peeled) in &packed {
            text.push_str(&format!("{} {n}\n", hex(id)));
            if let Some(p) = peeled {
                text.push_str(&format!("^{}\n", hex(p)));
            }
        }
        w(&git.join("packed-refs"), text.as_bytes())?;
    }
    if let Some(b) = &remote_head_branch
        && fetched_branches.iter().any(|(n, _)| n == b)
    {
        w(
            &git.join("refs/remotes/origin/HEAD"),
            format!("ref: refs/remotes/origin/{b}\n").as_bytes(),
        )?;
    }
    let mut config = String::from(crate::plumbing::write::CORE_CONFIG);
    config.push_str(&format!("[remote \"origin\"]\n\turl = {url}\n"));
    let target = match &checkout {
        Checkout::Branch(b, _) | Checkout::Unborn(b) => Some(b.clone()),
        Checkout::Tag(_) => None,
    };
    match (&target, single) {
        (Some(b), true) => config.push_str(&format!(
            "\tfetch = +refs/heads/{b}:refs/remotes/origin/{b}\n"
        )),
        _ => config.push_str("\tfetch = +refs/heads/*:refs/remotes/origin/*\n"),
    }
    let commit = match &checkout {
        Checkout::Branch(b, id) => {
            config.push_str(&format!(
                "[branch \"{b}\"]\n\tremote = origin\n\tmerge = refs/heads/{b}\n"
            ));
            w(
                &git.join(format!("refs/heads/{b}")),
                format!("{}\n", hex(id)).as_bytes(),
            )?;
            w(
                &git.join("HEAD"),
                format!("ref: refs/heads/{b}\n").as_bytes(),
            )?;
            Some(*id)
        }
        Checkout::Tag(id) => {
            w(&git.join("HEAD"), format!("{}\n", hex(id)).as_bytes())?;
            Some(*id)
        }
        Checkout::Unborn(b) => {
            w(
                &git.join("HEAD"),
                format!("ref: refs/heads/{b}\n").as_bytes(),
            )?;
            None
        }
    };
    w(&git.join("config"), config.as_bytes())?;

    let Some(commit) = commit else {
        io.eprint("warning: You appear to have cloned an empty repository.\n");
        return Ok(());
    };
    let Some(ix) = index else {
        return Err("fatal: the remote sent no objects".into());
    };
    let pack = Pack::new(
        pack_bytes,
        ix.entries.iter().map(|(id, _, off)| (*id, *off)).collect(),
    );
    // A tag's commit, for the detached HEAD.
    let read = |id: &Oid, kind: Kind| -> Result<std::rc::Rc<Vec<u8>>, String> {
        let mut id = *id;
        loop {
            let (k, data) = pack
                .read(&id)
                .unwrap_or_else(|| Err(format!("fatal: missing object {}", hex(&id))))?;
            if k == kind {
                return Ok(data);
            }
            match (k, crate::plumbing::object::tag_target(&data)) {
                (Kind::Tag, Some(t)) => id = t,
                _ => return Err(format!("fatal: {} is not a {}", hex(&id), kind.name())),
            }
        }
    };
    let commit_data = read(&commit, Kind::Commit)?;
    if let Checkout::Tag(_) = &checkout {
        // HEAD must name the commit, not the tag object.
        let c = crate::plumbing::object::hash(Kind::Commit, &commit_data);
        w(&git.join("HEAD"), format!("{}\n", hex(&c)).as_bytes())?;
    }
    if o.no_checkout {
        return Ok(());
    }
    let tree = crate::plumbing::object::parse_commit(&commit_data)?.tree;
    let mut entries = Vec::new();
    checkout_tree(
        &|id| read(id, Kind::Tree),
        &pack,
        &tree,
        dir,
        b"",
        &mut entries,
    )?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    w(&git.join("index"), &write_index(&entries))?;
    Ok(())
}

/// Reads a tree object by id.
type ReadTree<'a> = &'a dyn Fn(&Oid) -> Result<std::rc::Rc<Vec<u8>>, String>;

/// Whether a tree entry's name may be written: git refuses these as well.
fn safe_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name != b"."
        && name != b".."
        && !name.eq_ignore_ascii_case(b".git")
        && !name.contains(&b'/')
        && !name.contains(&0)
}

/// Writes `tree` under `dir` and adds an index entry for each file written.
fn checkout_tree(
    read_tree: ReadTree<'_>,
    pack: &Pack,
    tree: &Oid,
    dir: &Path,
    prefix: &[u8],
    out: &mut Vec<IndexEntry>,
) -> Result<(), String> {
    let entries = parse_tree(&read_tree(tree)?)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("fatal: cannot create {}: {e}", dir.display()))?;
    for e in entries {
        if !safe_name(&e.name) {
            return Err(format!(
                "fatal: invalid path '{}{}'",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(&e.name)
            ));
        }
        let name = String::from_utf8_lossy(&e.name).into_owned();
        let path: PathBuf = dir.join(&name);
        let mut full = prefix.to_vec();
        full.extend_from_slice(&e.name);
        let fail = |err: std::io::Error| format!("error: unable to create file {name}: {err}");
        match e.mode {
            0o40000 => {
                let mut p = full.clone();
                p.push(b'/');
                checkout_tree(read_tree, pack, &e.oid, &path, &p, out)?;
                continue;
            }
            0o160000 => {
                // A submodule: an empty directory, as a clone without --recurse-submodules.
                std::fs::create_dir_all(&path).map_err(fail)?;
                out.push(IndexEntry {
                    path: full,
                    mode: e.mode,
                    oid: e.oid,
                    size: 0,
                    mtime: (0, 0),
                    stage: 0,
                });
                continue;
            }
            _ => {}
        }
        let (kind, data) = pack
            .read(&e.oid)
            .unwrap_or_else(|| Err(format!("fatal: missing blob {}", hex(&e.oid))))?;
        if kind != Kind::Blob {
            return Err(format!("fatal: {} is not a blob", hex(&e.oid)));
        }
        let meta = if e.mode == 0o120000 {
            let target = String::from_utf8_lossy(&data).into_owned();
            sh_utility::sys::symlink(&target, &path).map_err(fail)?;
            path.symlink_metadata().map_err(fail)?
        } else {
            std::fs::write(&path, &data[..]).map_err(fail)?;
            path.metadata().map_err(fail)?
        };
        let mtime = crate::plumbing::repo::mtime_of(&meta);
        out.push(IndexEntry {
            path: full,
            mode: if e.mode == 0o120000 || e.mode == 0o100755 {
                e.mode
            } else {
                0o100644
            },
            oid: e.oid,
            size: meta.len() as u32,
            mtime,
            stage: 0,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_directory_names() {
        assert_eq!(
            humanish("https://github.com/tensorlakeai/tensorlake"),
            "tensorlake"
        );
        assert_eq!(humanish("https://host/a/b.git"), "b");
        assert_eq!(humanish("https://host/a/b/.git/"), "b");
        assert_eq!(humanish("http://127.0.0.1:8080/repo.git/"), "repo");
    }
}
