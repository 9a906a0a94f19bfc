//! The porcelain that writes: `init`, `add` (paths, `.`, `-A`, `-u`), `commit` (`-m`, `-a`,
//! `--allow-empty`, `-q`, author and committer from `GIT_*` or `user.*`), branch creation and
//! deletion, and `checkout -b` / `switch -c` onto a new branch. Objects are loose zlib files
//! and trees are built from the index, so commits made with the same author, dates and
//! content have the ids native git gives them.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::object::{Kind, Oid, hash, hex, loose_path};
use super::porcelain::{Ignores, abbrev, load_index, quote, read_commit, resolve, tree_files};
use super::repo::{IndexEntry, Repo, mtime_of, write_index};
use super::{Args, usage_error};
use sh_utility::Ctx;
use sh_utility::io::Io;

/// Writes `data` as a loose object (nothing when it exists already) and returns its id.
pub fn write_object(repo: &Repo, kind: Kind, data: &[u8]) -> Result<Oid, String> {
    let oid = hash(kind, data);
    let path = loose_path(&repo.objects(), &oid);
    if path.exists() {
        return Ok(oid);
    }
    let fail = |e: std::io::Error| format!("error: unable to write object {}: {e}", hex(&oid));
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(format!("{} {}\0", kind.name(), data.len()).as_bytes())
        .and_then(|_| z.write_all(data))
        .map_err(fail)?;
    let bytes = z.finish().map_err(fail)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(&path, bytes).map_err(fail)?;
    Ok(oid)
}

/// Writes a file of the repository, making its directory first.
pub(super) fn write_file(p: &Path, data: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d)
            .map_err(|e| format!("fatal: cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(p, data).map_err(|e| format!("fatal: cannot write {}: {e}", p.display()))
}

/// The `[core]` section git's `init` writes (file modes off: the sandbox keeps none).
pub(super) const CORE_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = false\n\tbare = false\n\tlogallrefupdates = true\n";

/// The directories, description and info/exclude git's `init` and `clone` write (no hooks
/// or samples).
pub(super) fn skeleton(git: &Path) -> Result<(), String> {
    for d in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
        "hooks",
    ] {
        std::fs::create_dir_all(git.join(d))
            .map_err(|e| format!("fatal: cannot mkdir {}: {e}", git.join(d).display()))?;
    }
    write_file(
        &git.join("description"),
        b"Unnamed repository; edit this file 'description' to name the repository.\n",
    )?;
    write_file(
        &git.join("info/exclude"),
        b"# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with '#' are comments.\n# For a project mostly in C, the following would be a good set of\n# exclude patterns (uncomment them if you want to use them):\n# *.[oa]\n# *~\n",
    )?;
    Ok(())
}

/// A new repository: the skeleton, HEAD on `branch`, the core config.
pub(super) fn init_layout(git: &Path, branch: &str) -> Result<(), String> {
    skeleton(git)?;
    write_file(
        &git.join("HEAD"),
        format!("ref: refs/heads/{branch}\n").as_bytes(),
    )?;
    write_file(&git.join("config"), CORE_CONFIG.as_bytes())
}

/// A value of the global config (`$HOME/.gitconfig`).
fn global(sh: &dyn Ctx, key: &str) -> Option<String> {
    let home = sh.get("HOME").unwrap_or("/home/agent");
    let text = std::fs::read_to_string(Path::new(home).join(".gitconfig")).ok()?;
    super::repo::config_get(&text, key)
}

/// An exported variable of the shell (what a git process would see in its environment).
fn env<'a>(sh: &'a dyn Ctx, name: &str) -> Option<&'a str> {
    sh.env(name)
}

pub fn init(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git init [-q | --quiet] [--bare] [--template=<template-directory>]\n                [--separate-git-dir <git-dir>] [--object-format=<format>]\n                [--ref-format=<format>]\n                [-b <branch-name> | --initial-branch=<branch-name>]\n                [--shared[=<permissions>]] [<directory>]";
    let mut quiet = false;
    let mut branch = None;
    let mut dir = None;
    let mut a = Args::new(args);
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-q" | "--quiet" => a.flag("quiet").map(|_| quiet = true),
            "-b" | "--initial-branch" => a.value("initial-branch").map(|v| branch = Some(v)),
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ if dir.is_none() => {
                dir = Some(arg.clone());
                Ok(())
            }
            _ => Err(String::new()),
        };
        if let Err(e) = r {
            return usage_error(io, &e, USAGE);
        }
    }
    let top = sh.path(dir.as_deref().unwrap_or("."));
    let git = top.join(".git");
    let shown = std::fs::canonicalize(&top).unwrap_or(top.clone());
    if git.join("HEAD").is_file() {
        if !quiet {
            io.print(&format!(
                "Reinitialized existing Git repository in {}/.git/\n",
                shown.display()
            ));
        }
        return 0;
    }
    let configured = sh
        .get("HOME")
        .and_then(|_| global(sh, "init.defaultBranch"));
    let name = branch
        .clone()
        .or(configured.clone())
        .unwrap_or_else(|| "master".into());
    if branch.is_none() && configured.is_none() && !quiet {
        io.eprint(INIT_HINT);
    }
    if let Err(e) = std::fs::create_dir_all(&top)
        .map_err(|e| e.to_string())
        .and_then(|_| init_layout(&git, &name))
    {
        io.eprint(&format!("{e}\n"));
        return 128;
    }
    if !quiet {
        let shown = std::fs::canonicalize(&top).unwrap_or(top);
        io.print(&format!(
            "Initialized empty Git repository in {}/.git/\n",
            shown.display()
        ));
    }
    0
}

const INIT_HINT: &str =
    "hint: Using 'master' as the name for the initial branch. This default branch name
hint: is subject to change. To configure the initial branch name to use in all
hint: of your new repositories, which will suppress this warning, call:
hint:
hint: \tgit config --global init.defaultBranch <name>
hint:
hint: Names commonly chosen instead of 'master' are 'main', 'trunk' and
hint: 'development'. The just-created branch can be renamed via this command:
hint:
hint: \tgit branch -m <name>
";

/// The index as a map by path.
pub(super) fn index_map(repo: &Repo) -> Result<BTreeMap<Vec<u8>, IndexEntry>, String> {
    Ok(load_index(repo)?
        .into_iter()
        .map(|e| (e.path.clone(), e))
        .collect())
}

/// Writes the index: `map`'s entries, and the unmerged entries of paths `map` does not
/// have (staging a path resolves its conflict).
pub(super) fn save_index(repo: &Repo, map: &BTreeMap<Vec<u8>, IndexEntry>) -> Result<(), String> {
    let mut entries: Vec<IndexEntry> = map.values().cloned().collect();
    entries.extend(
        super::porcelain::load_conflicts(repo)?
            .into_iter()
            .filter(|e| !map.contains_key(&e.path)),
    );
    entries.sort_by(|a, b| a.path.cmp(&b.path).then(a.stage.cmp(&b.stage)));
    write_file(&repo.git_dir.join("index"), &write_index(&entries))
}

/// Writes the index as `map` alone: every conflict dropped (reset, a forced checkout).
pub(super) fn save_index_resolved(
    repo: &Repo,
    map: &BTreeMap<Vec<u8>, IndexEntry>,
) -> Result<(), String> {
    let entries: Vec<IndexEntry> = map.values().cloned().collect();
    write_file(&repo.git_dir.join("index"), &write_index(&entries))
}

/// An index entry for the file at `path` (its blob written), or None if it is not a file
/// or symlink.
pub(super) fn stage(
    repo: &Repo,
    path: &Path,
    rel: Vec<u8>,
    old_mode: Option<u32>,
) -> Result<Option<IndexEntry>, String> {
    let Ok(meta) = path.symlink_metadata() else {
        return Ok(None);
    };
    let (data, mode) = if meta.file_type().is_symlink() {
        let t = std::fs::read_link(path)
            .map_err(|e| format!("error: readlink {}: {e}", path.display()))?;
        (t.to_string_lossy().into_owned().into_bytes(), 0o120000)
    } else if meta.is_file() {
        let d = std::fs::read(path).map_err(|e| {
            format!(
                "error: open(\"{}\"): {e}\nerror: unable to index file '{}'",
                String::from_utf8_lossy(&rel),
                String::from_utf8_lossy(&rel)
            )
        })?;
        // The sandbox keeps no permission bits: an executable stays one (core.filemode).
        (
            d,
            if old_mode == Some(0o100755) {
                0o100755
            } else {
                0o100644
            },
        )
    } else {
        return Ok(None);
    };
    let oid = write_object(repo, Kind::Blob, &data)?;
    let mtime = mtime_of(&meta);
    Ok(Some(IndexEntry {
        path: rel,
        mode,
        oid,
        size: meta.len() as u32,
        mtime,
        stage: 0,
    }))
}

/// Files under `dir` (relative `rel`) that are not ignored, or tracked.
fn files_under(
    dir: &Path,
    rel: &[u8],
    index: &BTreeMap<Vec<u8>, IndexEntry>,
    ign: &mut Ignores,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) {
    let pushed = ign.push_dir(dir);
    let names = super::porcelain::dir_entries(dir);
    for (name, is_dir) in names {
        if name == ".git" {
            continue;
        }
        let mut p = rel.to_vec();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(name.as_bytes());
        let full = dir.join(&name);
        if is_dir {
            if !ign.ignored(&full, true)
                || index
                    .keys()
                    .any(|k| k.starts_with(&p) && k.get(p.len()) == Some(&b'/'))
            {
                files_under(&full, &p, index, ign, out);
            }
        } else if index.contains_key(&p) || !ign.ignored(&full, false) {
            out.push((full, p));
        }
    }
    if pushed {
        ign.pop();
    }
}

pub fn add(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git add [<options>] [--] <pathspec>...";
    let mut all = false;
    let mut update = false;
    let mut force = false;
    let mut specs = Vec::new();
    let mut a = Args::new(args);
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-A" | "--all" => a.flag("all").map(|_| all = true),
            "-u" | "--update" => a.flag("update").map(|_| update = true),
            "-f" | "--force" => a.flag("force").map(|_| force = true),
            "--" => {
                specs.extend(a.rest());
                Ok(())
            }
            s if s.starts_with('-') && s.len() > 1 => Err(a.unknown(s)),
            _ => {
                specs.push(arg.clone());
                Ok(())
            }
        };
        if let Err(e) = r {
            return usage_error(io, &e, USAGE);
        }
    }
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let Some(work) = repo.work.clone() else {
        io.eprint("fatal: this operation must be run in a work tree\n");
        return 128;
    };
    if specs.is_empty() && !all && !update {
        io.eprint("Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?\nhint: Disable this message with \"git config advice.addEmptyPathspec false\"\n");
        return 0;
    }
    match add_paths(&repo, &work, &cwd, &specs, update, force, io) {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// A pathspec as a path from the top of the work tree (`.` and `..` resolved lexically).
pub(super) fn spec_path(work: &Path, cwd: &Path, spec: &str) -> Result<Vec<u8>, String> {
    let pre = cwd
        .strip_prefix(work)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut parts: Vec<String> = if spec.starts_with('/') {
        let abs = Path::new(spec);
        match abs.strip_prefix(work) {
            Ok(r) => r
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect(),
            Err(_) => {
                return Err(format!(
                    "fatal: {spec}: '{spec}' is outside repository at '{}'",
                    work.display()
                ));
            }
        }
    } else {
        pre.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    if !spec.starts_with('/') {
        for c in spec.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!(
                            "fatal: {spec}: '{spec}' is outside repository at '{}'",
                            work.display()
                        ));
                    }
                }
                c => parts.push(c.to_string()),
            }
        }
    }
    Ok(parts.join("/").into_bytes())
}

/// Stages `specs` (the whole tree when there are none: `-A`, `-u`).
fn add_paths(
    repo: &Repo,
    work: &Path,
    cwd: &Path,
    specs: &[String],
    update: bool,
    force: bool,
    io: &Io,
) -> Result<i32, String> {
    let mut index = index_map(repo)?;
    // The scopes: the pathspecs, or the whole tree for -A/-u without any.
    let scopes: Vec<(String, Vec<u8>)> = if specs.is_empty() {
        vec![(".".into(), Vec::new())]
    } else {
        specs
            .iter()
            .map(|s| spec_path(work, cwd, s).map(|p| (s.clone(), p)))
            .collect::<Result<_, _>>()?
    };
    let inside = |path: &[u8], scope: &[u8]| {
        scope.is_empty()
            || path == scope
            || (path.starts_with(scope) && path.get(scope.len()) == Some(&b'/'))
    };
    let mut ignored_named = Vec::new();
    for (spec, scope) in &scopes {
        let full = if scope.is_empty() {
            work.to_path_buf()
        } else {
            work.join(String::from_utf8_lossy(scope).as_ref())
        };
        let tracked_inside = index.keys().any(|k| inside(k, scope));
        let exists = full.symlink_metadata().is_ok();
        if !exists && !tracked_inside {
            return Err(format!("fatal: pathspec '{spec}' did not match any files"));
        }
        // Files gone from the tree leave the index (git add . and -A; -u too).
        let gone: Vec<Vec<u8>> = index
            .keys()
            .filter(|k| inside(k, scope))
            .filter(|k| {
                work.join(String::from_utf8_lossy(k).as_ref())
                    .symlink_metadata()
                    .is_err()
            })
            .cloned()
            .collect();
        for k in gone {
            index.remove(&k);
        }
        if !exists {
            continue;
        }
        let mut files = Vec::new();
        if full.is_dir()
            && !full
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        {
            let parent = full.parent().unwrap_or(work);
            let mut ign = Ignores::for_dir(repo, work, parent);
            if force {
                ign = Ignores::none();
            }
            files_under(&full, scope, &index, &mut ign, &mut files);
        } else {
            let parent = full.parent().unwrap_or(work);
            let ign = Ignores::for_dir(repo, work, parent);
            if !force && !index.contains_key(scope) && ign.ignored(&full, false) {
                ignored_named.push(spec.clone());
                continue;
            }
            files.push((full.clone(), scope.clone()));
        }
        for (path, rel) in files {
            if update && !index.contains_key(&rel) {
                continue;
            }
            let old = index.get(&rel).map(|e| e.mode);
            if let Some(e) = stage(repo, &path, rel.clone(), old)? {
                index.insert(rel, e);
            }
        }
    }
    save_index(repo, &index)?;
    if !ignored_named.is_empty() {
        let mut msg =
            String::from("The following paths are ignored by one of your .gitignore files:\n");
        for p in &ignored_named {
            msg.push_str(p);
            msg.push('\n');
        }
        msg.push_str("hint: Use -f if you really want to add them.\nhint: Disable this message with \"git config advice.addIgnoredFile false\"\n");
        io.eprint(&msg);
        return Ok(1);
    }
    Ok(0)
}

/// Builds the trees of `index` (written as loose objects) and returns the root's id.
pub(super) fn write_trees(
    repo: &Repo,
    entries: &[&IndexEntry],
    prefix_len: usize,
) -> Result<Oid, String> {
    build_trees(entries, prefix_len, &mut |_, data| {
        write_object(repo, Kind::Tree, data)
    })
}

/// What [`build_trees`] hands each tree to: its directory and data, returning its id.
pub(super) type EmitTree<'a> = dyn FnMut(&[u8], &[u8]) -> Result<Oid, String> + 'a;

/// The tree objects of index `entries` (sorted, all under the same `prefix_len` bytes), as
/// `git write-tree` makes them: `emit` gets each tree's directory (`dir/` from the top, empty
/// for the top) and data, children before parents, and returns its id.
pub(super) fn build_trees(
    entries: &[&IndexEntry],
    prefix_len: usize,
    emit: &mut EmitTree<'_>,
) -> Result<Oid, String> {
    // (sort key, mode, name, id); a directory sorts as `name/`.
    let mut items: Vec<(Vec<u8>, u32, Vec<u8>, Oid)> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = &entries[i].path[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                items.push((
                    rest.to_vec(),
                    entries[i].mode,
                    rest.to_vec(),
                    entries[i].oid,
                ));
                i += 1;
            }
            Some(slash) => {
                let dir = rest[..slash].to_vec();
                let mut j = i;
                while j < entries.len() {
                    let r = &entries[j].path[prefix_len..];
                    if r.len() > slash && r[..slash] == dir[..] && r[slash] == b'/' {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let id = build_trees(&entries[i..j], prefix_len + slash + 1, emit)?;
                let mut key = dir.clone();
                key.push(b'/');
                items.push((key, 0o40000, dir, id));
                i = j;
            }
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let mut data = Vec::new();
    for (_, mode, name, id) in items {
        data.extend_from_slice(format!("{mode:o} ").as_bytes());
        data.extend_from_slice(&name);
        data.push(0);
        data.extend_from_slice(&id);
    }
    let dir = entries.first().map_or(&[][..], |e| &e.path[..prefix_len]);
    emit(dir, &data)
}

/// `Name <email> SECONDS ZONE` for the author or committer.
pub(super) fn ident(sh: &dyn Ctx, repo: &Repo, who: &str) -> Result<String, String> {
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
pub(super) fn clean_message(m: &str) -> String {
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

pub fn commit(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    const USAGE: &str = "git commit [-a | --interactive | --patch] [-s] [-v] [-u<mode>] [--amend]\n                  [--dry-run] [(-c | -C | --squash) <commit> | --fixup [(amend|reword):]<commit>]\n                  [-F <file> | -m <msg>] [--reset-author] [--allow-empty]\n                  [--allow-empty-message] [--no-verify] [-e] [--author=<author>]\n                  [--date=<date>] [--cleanup=<mode>] [--[no-]status]\n                  [-i | -o] [--pathspec-from-file=<file> [--pathspec-file-nul]]\n                  [(--trailer <token>[(=|:)<value>])...] [-S[<keyid>]]\n                  [--] [<pathspec>...]";
    let mut messages: Vec<String> = Vec::new();
    let mut all = false;
    let mut allow_empty = false;
    let mut quiet = false;
    let mut amend = Amend::default();
    let mut date: Option<String> = None;
    let mut a = Args::with_values(args, "mF");
    while let Some(arg) = a.next() {
        let r = match arg.as_str() {
            "-m" | "--message" => a.value("message").map(|v| messages.push(v)),
            "-F" | "--file" => a.value("file").and_then(|f| {
                std::fs::read_to_string(sh.path(&f))
                    .map(|t| messages.push(t))
                    .map_err(|e| format!("fatal: could not read log file '{f}': {e}"))
            }),
            "-a" | "--all" => a.flag("all").map(|_| all = true),
            "--allow-empty" => a.flag("allow-empty").map(|_| allow_empty = true),
            "-q" | "--quiet" => a.flag("quiet").map(|_| quiet = true),
            "--amend" => a.flag("amend").map(|_| amend.on = true),
            "--no-edit" => a.flag("no-edit").map(|_| amend.no_edit = true),
            "--reset-author" => a.flag("reset-author").map(|_| amend.reset_author = true),
            "--date" => a.value("date").map(|v| date = Some(v)),
            "--fixup" | "--squash" | "-c" | "-C" | "--author" | "-S" | "--signoff" | "-s"
            | "--interactive" | "--patch" | "-p" | "--trailer" => {
                io.eprint(&format!(
                    "fatal: 'git commit {arg}' is not supported in burrow\n"
                ));
                return 128;
            }
            s if s.starts_with('-') => Err(a.unknown(s)),
            _ => {
                io.eprint("fatal: 'git commit <pathspec>' is not supported in burrow\n");
                return 128;
            }
        };
        if let Err(e) = r {
            if e.starts_with("fatal:") {
                io.eprint(&format!("{e}\n"));
                return 128;
            }
            return usage_error(io, &e, USAGE);
        }
    }
    let cwd = PathBuf::from(&sh.cwd());
    let Some(repo) = Repo::discover(&cwd) else {
        io.eprint("fatal: not a git repository (or any of the parent directories): .git\n");
        return 128;
    };
    let date = match date.as_deref().map(forced_date).transpose() {
        Ok(d) => d,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            return 128;
        }
    };
    let r = do_commit(
        sh,
        &repo,
        &messages,
        all,
        allow_empty,
        quiet,
        &amend,
        date.as_deref(),
        io,
    );
    match r {
        Ok(code) => code,
        Err(e) => {
            io.eprint(&format!("{e}\n"));
            128
        }
    }
}

/// `commit --date`: a date as `GIT_AUTHOR_DATE` takes it, else an approximate one
/// (`2 weeks ago`) as `--since` reads it, in UTC, as git's `parse_force_date`.
fn forced_date(d: &str) -> Result<String, String> {
    let now = sh_utility::time::now();
    match super::date::parse_ident_date(d, now) {
        Some(t) => Ok(t),
        None if !super::date::approxidate_reads(d) => {
            Err(format!("fatal: invalid date format: {d}"))
        }
        None => super::date::approxidate(d, now).map(|t| format!("{t} +0000")),
    }
}

/// `commit --amend` and what goes with it.
#[derive(Default)]
pub(super) struct Amend {
    on: bool,
    no_edit: bool,
    reset_author: bool,
    /// `--cleanup=strip`: `#` lines leave the message (`cherry-pick --continue`).
    strip: bool,
}

/// `git commit --no-edit --cleanup=strip`, as `cherry-pick --continue` and `revert
/// --continue` conclude a step that stopped on a conflict.
pub(super) fn conclude(sh: &dyn Ctx, repo: &Repo, io: &Io) -> Result<i32, String> {
    let amend = Amend {
        strip: true,
        ..Amend::default()
    };
    do_commit(sh, repo, &[], false, false, false, &amend, None, io)
}

/// A message without its `#` comment lines (git's `strip` cleanup).
pub(super) fn strip_comments(m: &str) -> String {
    m.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What `commit` says when the cherry-pick it concludes is empty.
pub(super) const EMPTY_PICK: &str = "The previous cherry-pick is now empty, possibly due to conflict resolution.\nIf you wish to commit it anyway, use:\n\n    git commit --allow-empty\n\n";
pub(super) const EMPTY_PICK_SINGLE: &str = "Otherwise, please use 'git cherry-pick --skip'\n";
const EMPTY_PICK_MULTI: &str = "and then use:\n\n    git cherry-pick --continue\n\nto resume cherry-picking the remaining commits.\nIf you wish to skip this commit, use:\n\n    git cherry-pick --skip\n\n";

#[allow(clippy::too_many_arguments)]
fn do_commit(
    sh: &dyn Ctx,
    repo: &Repo,
    messages: &[String],
    all: bool,
    allow_empty: bool,
    quiet: bool,
    amend: &Amend,
    date: Option<&str>,
    io: &Io,
) -> Result<i32, String> {
    let Some(work) = repo.work.clone() else {
        return Err("fatal: this operation must be run in a work tree".into());
    };
    // --amend: the commit HEAD is at is replaced; its parents, author and (with --no-edit)
    // message are kept.
    let amended = match (amend.on, repo.head().1) {
        (false, _) => None,
        (true, None) => return Err("fatal: You have nothing to amend.".into()),
        (true, Some(h)) => Some(read_commit(repo, &h)?),
    };
    // An unfinished merge: the commit concludes it, with MERGE_MSG by default.
    let merging = if amend.on {
        None
    } else {
        super::merge::merge_head(repo)
    };
    // An unfinished cherry-pick or revert: the commit concludes it, with MERGE_MSG by
    // default and (a cherry-pick) the picked commit's author.
    let picking = (!amend.on)
        .then(|| super::state::cherry_pick_head(repo))
        .flatten();
    let reverting = !amend.on && super::state::revert_head(repo).is_some();
    let concluding = merging.is_some() || picking.is_some() || reverting;
    let messages: Vec<String> = match (&amended, concluding) {
        (Some(c), _) if messages.is_empty() && amend.no_edit => vec![c.message.clone()],
        (None, true) if messages.is_empty() => {
            std::fs::read_to_string(repo.git_dir.join("MERGE_MSG"))
                .map(|m| vec![m])
                .unwrap_or_default()
        }
        _ => messages.to_vec(),
    };
    if messages.is_empty() {
        return Err(if amend.on {
            "fatal: burrow's git has no editor: give the message with -m or -F, or keep it with --no-edit".into()
        } else {
            "fatal: burrow's git has no editor: give the message with -m or -F".into()
        });
    }
    if all {
        // -a: every tracked file's current content (deleted ones leave the index).
        let mut index = index_map(repo)?;
        let mut keys: Vec<Vec<u8>> = index.keys().cloned().collect();
        // Unmerged paths are staged as the work tree has them, as git's -a does.
        keys.extend(
            super::porcelain::load_conflicts(repo)?
                .into_iter()
                .map(|e| e.path),
        );
        keys.dedup();
        for k in keys {
            let path = work.join(String::from_utf8_lossy(&k).as_ref());
            let old = index.get(&k).map(|e| e.mode);
            match stage(repo, &path, k.clone(), old)? {
                Some(e) => {
                    index.insert(k, e);
                }
                None => {
                    index.remove(&k);
                }
            }
        }
        save_index(repo, &index)?;
    }
    let conflicts = super::porcelain::load_conflicts(repo)?;
    if !conflicts.is_empty() {
        let mut names: Vec<String> = conflicts
            .iter()
            .map(|e| format!("U\t{}\n", String::from_utf8_lossy(&e.path)))
            .collect();
        names.dedup();
        io.print(&names.concat());
        return Err("error: Committing is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit.\nfatal: Exiting because of an unresolved conflict.".into());
    }
    let index = load_index(repo)?;
    let (head_ref, head_id) = repo.head();
    let entries: Vec<&IndexEntry> = index.iter().collect();
    let tree = write_trees(repo, &entries, 0)?;
    let parents: Vec<Oid> = match &amended {
        Some(c) => c.parents.clone(),
        None => head_id.into_iter().chain(merging).collect(),
    };
    let parent_tree = match parents.first() {
        Some(p) => Some(read_commit(repo, p)?.tree),
        None => None,
    };
    if amended.is_some() && !allow_empty && parent_tree == Some(tree) && parents.len() == 1 {
        io.eprint("You asked to amend the most recent commit, but doing so would make\nit empty. You can repeat your command with --allow-empty, or you can\nremove the commit entirely with \"git reset HEAD^\".\n");
        return Ok(1);
    }
    if amended.is_none()
        && merging.is_none()
        && !allow_empty
        && (parent_tree == Some(tree) || (head_id.is_none() && index.is_empty()))
    {
        // git's status says what there is (or is not) to commit; the status is 1. git's
        // advice reaches stderr first (its stdout is flushed at exit).
        if picking.is_some() {
            io.eprint(EMPTY_PICK);
            if super::state::sequencer_dir(repo).join("todo").is_file() && !amend.strip {
                io.eprint(EMPTY_PICK_MULTI);
            } else {
                io.eprint(EMPTY_PICK_SINGLE);
            }
        }
        super::porcelain::commit_status(repo, Path::new(&sh.cwd()), io)?;
        return Ok(1);
    }
    let joined = messages.join("\n\n");
    let message = if amend.strip {
        clean_message(&strip_comments(&joined))
    } else {
        clean_message(&joined)
    };
    if message.is_empty() {
        io.eprint("Aborting commit due to empty commit message.\n");
        return Ok(1);
    }
    let mut author = match (&amended, picking) {
        (Some(c), _) if !amend.reset_author => c.author.clone(),
        (None, Some(p)) if !amend.reset_author => read_commit(repo, &p)?.author,
        _ => ident(sh, repo, "AUTHOR")?,
    };
    // --date replaces the author's date, an amended commit's too.
    if let Some(d) = date
        && let Some((who, _)) = author.rsplit_once('>')
    {
        author = format!("{who}> {d}");
    }
    let committer = ident(sh, repo, "COMMITTER")?;
    let mut body = format!("tree {}\n", hex(&tree));
    for p in &parents {
        body.push_str(&format!("parent {}\n", hex(p)));
    }
    body.push_str(&format!(
        "author {author}\ncommitter {committer}\n\n{message}"
    ));
    let id = write_object(repo, Kind::Commit, body.as_bytes())?;
    let target = head_ref.clone().unwrap_or_else(|| "HEAD".into());
    write_file(
        &repo.git_dir.join(&target),
        format!("{}\n", hex(&id)).as_bytes(),
    )?;
    if merging.is_some() {
        super::merge::clear_state(repo);
    }
    if picking.is_some() || reverting {
        let _ = std::fs::remove_file(repo.git_dir.join("MERGE_MSG"));
        super::state::post_commit_cleanup(repo);
    }
    if quiet {
        return Ok(0);
    }
    let branch = match &head_ref {
        Some(b) => b.trim_start_matches("refs/heads/").to_string(),
        None => "detached HEAD".into(),
    };
    let root = if head_id.is_none() {
        " (root-commit)"
    } else {
        ""
    };
    let subject = super::porcelain::subject(&message);
    let mut out = format!("[{branch}{root} {}] {subject}\n", abbrev(&id));
    // git names the author when it is not the committer, and the date when it was kept.
    let (an, ae) = super::porcelain::ident_name_email(&author);
    if (an.clone(), ae.clone()) != super::porcelain::ident_name_email(&committer) {
        out.push_str(&format!(" Author: {an} <{ae}>\n"));
    }
    if (amended.is_some() && !amend.reset_author)
        || date.is_some()
        || (picking.is_some() && !amend.reset_author)
    {
        let (secs, zone) = super::porcelain::ident_time(&author);
        out.push_str(&format!(
            " Date: {}\n",
            super::porcelain::git_date(secs, &zone)
        ));
    }
    // A merge commit's summary is its header alone.
    if merging.is_none() {
        out.push_str(&summary(repo, parent_tree, tree)?);
    }
    io.print(&out);
    Ok(0)
}

/// The diffstat summary git prints after a commit: files changed, insertions, deletions,
/// then create/delete mode lines. Exact renames are shown as git shows them.
pub(super) fn summary(repo: &Repo, old: Option<Oid>, new: Oid) -> Result<String, String> {
    let before = match old {
        Some(t) => tree_files(repo, t)?,
        None => BTreeMap::new(),
    };
    let after = tree_files(repo, new)?;
    summary_of(repo, &before, &after, false)
}

/// The diffstat a merge or pull prints: `--stat`'s lines, then the create, delete and
/// rename lines.
pub(super) fn tree_stat(
    repo: &Repo,
    before: &BTreeMap<Vec<u8>, (u32, Oid)>,
    after: &BTreeMap<Vec<u8>, (u32, Oid)>,
) -> Result<String, String> {
    summary_of(repo, before, after, true)
}

fn summary_of(
    repo: &Repo,
    before: &BTreeMap<Vec<u8>, (u32, Oid)>,
    after: &BTreeMap<Vec<u8>, (u32, Oid)>,
    full_stat: bool,
) -> Result<String, String> {
    let mut added: Vec<&Vec<u8>> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let mut deleted: Vec<&Vec<u8>> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    // Exact renames: a deleted path whose blob a new path has.
    let mut renames: Vec<(&Vec<u8>, &Vec<u8>)> = Vec::new();
    deleted.retain(|d| {
        let (mode, id) = before[*d];
        if let Some(pos) = added.iter().position(|a| after[*a] == (mode, id)) {
            renames.push((d, added.remove(pos)));
            false
        } else {
            true
        }
    });
    let mut files = 0;
    let (mut ins, mut del) = (0usize, 0usize);
    let read = |id: &Oid| repo.read_kind(id, Kind::Blob);
    let mut count = |a: Option<&[u8]>, b: Option<&[u8]>| {
        let (i, d) = super::diff::counts(a.unwrap_or(b""), b.unwrap_or(b""));
        ins += i;
        del += d;
    };
    for (path, (mode, id)) in after {
        match before.get(path) {
            Some((m, old)) if old == id && m == mode => {}
            Some((_, old)) => {
                files += 1;
                count(Some(&read(old)?), Some(&read(id)?));
            }
            None => {
                if renames.iter().any(|(_, n)| *n == path) {
                    files += 1;
                } else {
                    files += 1;
                    count(None, Some(&read(id)?));
                }
            }
        }
    }
    for d in &deleted {
        files += 1;
        count(Some(&read(&before[*d].1)?), None);
    }
    if files == 0 {
        // An empty commit: no stat line at all.
        return Ok(String::new());
    }
    let mut out = if full_stat {
        super::diff::stat_of(repo, before, after)?
    } else {
        super::diff::changed_line(files, ins, del)
    };
    // create/delete/rename lines in path order.
    let mut lines: Vec<(Vec<u8>, String)> = Vec::new();
    for p in &added {
        lines.push((
            (*p).clone(),
            format!(" create mode {:06o} {}\n", after[*p].0, quote(p)),
        ));
    }
    for p in &deleted {
        lines.push((
            (*p).clone(),
            format!(" delete mode {:06o} {}\n", before[*p].0, quote(p)),
        ));
    }
    for (a, b) in &renames {
        lines.push((
            (*a).clone(),
            format!(" rename {} (100%)\n", rename_name(a, b)),
        ));
    }
    lines.sort();
    for (_, l) in lines {
        out.push_str(&l);
    }
    Ok(out)
}

/// git's compact form of a rename: `dir/{old => new}/rest`.
pub(super) fn rename_name(a: &[u8], b: &[u8]) -> String {
    let mut pfx = 0;
    let mut i = 0;
    while i < a.len() && i < b.len() && a[i] == b[i] {
        if a[i] == b'/' {
            pfx = i + 1;
        }
        i += 1;
    }
    let mut sfx = 0;
    let adjust = usize::from(pfx > 0);
    let (mut ia, mut ib) = (a.len() as isize, b.len() as isize);
    let limit = pfx as isize - adjust as isize;
    while ia >= limit && ib >= limit {
        let ca = if ia == a.len() as isize {
            0
        } else {
            a[ia as usize]
        };
        let cb = if ib == b.len() as isize {
            0
        } else {
            b[ib as usize]
        };
        if ca != cb {
            break;
        }
        if ca == b'/' {
            sfx = a.len() - ia as usize;
        }
        ia -= 1;
        ib -= 1;
    }
    let amid = a.len().saturating_sub(pfx + sfx);
    let bmid = b.len().saturating_sub(pfx + sfx);
    let s = |x: &[u8]| String::from_utf8_lossy(x).into_owned();
    if pfx + sfx > 0 {
        format!(
            "{}{{{} => {}}}{}",
            s(&a[..pfx]),
            s(&a[pfx..pfx + amid]),
            s(&b[pfx..pfx + bmid]),
            s(&a[a.len() - sfx..])
        )
    } else {
        format!("{} => {}", s(a), s(b))
    }
}

/// Whether `name` is a valid branch name (git check-ref-format's main rules).
pub(super) fn valid_branch(name: &str) -> bool {
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

/// `git branch -d NAME...`.
pub fn delete_branches(repo: &Repo, names: &[String], force: bool, io: &Io) -> i32 {
    let mut code = 0;
    for n in names {
        let r = format!("refs/heads/{n}");
        let Some(id) = repo.resolve_ref(&r) else {
            io.eprint(&format!("error: branch '{n}' not found\n"));
            code = 1;
            continue;
        };
        if repo.head().0.as_deref() == Some(r.as_str()) {
            io.eprint(&format!(
                "error: cannot delete branch '{n}' used by worktree at '{}'\n",
                repo.work.as_deref().unwrap_or(Path::new("")).display()
            ));
            code = 1;
            continue;
        }
        if !force && let Some(h) = repo.head().1 {
            let merged = super::porcelain::reachable(repo, h).is_ok_and(|s| s.contains(&id));
            if !merged {
                io.eprint(&format!(
                    "error: the branch '{n}' is not fully merged\nhint: If you are sure you want to delete it, run 'git branch -D {n}'\nhint: Disable this message with \"git config advice.forceDeleteBranch false\"\n"
                ));
                code = 1;
                continue;
            }
        }
        super::tag::remove_ref(repo, &r);
        io.print(&format!("Deleted branch {n} (was {}).\n", abbrev(&id)));
    }
    code
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

    #[test]
    fn renames_shown_compactly() {
        assert_eq!(
            rename_name(b"src/deep/er/x.txt", b"src/moved.txt"),
            "src/{deep/er/x.txt => moved.txt}"
        );
        assert_eq!(rename_name(b"a.txt", b"b.txt"), "a.txt => b.txt");
        assert_eq!(rename_name(b"a/x.rs", b"b/x.rs"), "{a => b}/x.rs");
    }
}
