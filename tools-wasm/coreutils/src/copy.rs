//! `cp` and `mv` as GNU coreutils do them: into a directory or onto a name (`-t DIR`, `-T`),
//! trees with -r/-R/-a (symlinks copied as symlinks), and the options that decide whether a
//! target is replaced: -n (never), -i (ask on stderr, read stdin), -u (only when the source is
//! newer), with -v's report and -p/-a keeping the modification time.

use std::fs;
use std::path::{Path, PathBuf};

use super::coreutils::confirm;
use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::Io;
use sh_utility::path::lexical;

/// The options, after the registry's gate (each short option alone).
#[derive(Default)]
struct Opts {
    recursive: bool,
    preserve: bool,
    no_clobber: bool,
    interactive: bool,
    update: bool,
    verbose: bool,
    no_target_dir: bool,
    target_dir: Option<String>,
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    fs::symlink_metadata(p).ok()?.modified().ok()
}

/// Whether an existing `target` stays as it is: -n, -u with a target not older than `src`,
/// or -i answered no to `question`.
fn keeps_existing(o: &Opts, src: &Path, target: &Path, question: &str, io: &Io) -> bool {
    o.no_clobber
        || o.update && modified(target) >= modified(src)
        || o.interactive && !confirm(io, question)
}

pub fn cp_mv(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    let mut operands: Vec<String> = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only_operands || a == "-" || !a.starts_with('-') {
            operands.push(a.clone());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        match a.as_str() {
            "-r" | "-R" => o.recursive = true,
            "-a" => {
                o.recursive = true;
                o.preserve = true;
            }
            "-p" => o.preserve = true,
            // The last of -f, -i and -n wins, as in GNU.
            "-f" => (o.interactive, o.no_clobber) = (false, false),
            "-i" => (o.interactive, o.no_clobber) = (true, false),
            "-n" => (o.interactive, o.no_clobber) = (false, true),
            "-u" => o.update = true,
            "-v" => o.verbose = true,
            "-T" => o.no_target_dir = true,
            "-t" => {
                o.target_dir = args.get(i).cloned();
                i += 1;
            }
            _ => {}
        }
    }
    if o.target_dir.is_some() && o.no_target_dir {
        io.eprint(&format!(
            "{cmd}: cannot combine --target-directory (-t) and --no-target-directory (-T)\nTry '{cmd} --help' for more information.\n"
        ));
        return 1;
    }
    let (srcs, dst): (Vec<String>, String) = match &o.target_dir {
        Some(t) => (operands.clone(), t.clone()),
        None => match operands.split_last() {
            Some((d, s)) => (s.to_vec(), d.clone()),
            None => (Vec::new(), String::new()),
        },
    };
    if srcs.is_empty() {
        let msg = if operands.is_empty() || o.target_dir.is_some() {
            "missing file operand".to_string()
        } else {
            format!("missing destination file operand after '{}'", operands[0])
        };
        io.eprint(&format!(
            "{cmd}: {msg}\nTry '{cmd} --help' for more information.\n"
        ));
        return 1;
    }
    let dpath = sh.path(&dst);
    if o.no_target_dir && srcs.len() > 1 {
        io.eprint(&format!(
            "{cmd}: extra operand '{}'\nTry '{cmd} --help' for more information.\n",
            srcs[srcs.len() - 1]
        ));
        return 1;
    }
    let into = !o.no_target_dir && dpath.is_dir();
    if o.target_dir.is_some() && !into {
        io.eprint(&format!(
            "{cmd}: target directory '{dst}': Not a directory\n"
        ));
        return 1;
    }
    if srcs.len() > 1 && !into {
        io.eprint(&format!("{cmd}: target '{dst}' is not a directory\n"));
        return 1;
    }
    let mut status = 0;
    for s in &srcs {
        if !one(sh, cmd, s, &dst, &dpath, into, &o, io) {
            status = 1;
        }
    }
    status
}

/// Copies or moves one source; false on an error (reported).
#[allow(clippy::too_many_arguments)]
fn one(
    sh: &dyn Ctx,
    cmd: &str,
    s: &str,
    dst: &str,
    dpath: &Path,
    into: bool,
    o: &Opts,
    io: &Io,
) -> bool {
    let sp = sh.path(s);
    let base = Path::new(s.trim_end_matches('/'))
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    // `cp -r src/. dst`: the contents of src go into dst itself.
    let contents = cmd == "cp" && (s == "." || s.ends_with("/."));
    let (target, shown) = if into && contents {
        (dpath.to_path_buf(), dst.to_string())
    } else if into {
        (
            dpath.join(&base),
            format!("{}/{base}", dst.trim_end_matches('/')),
        )
    } else {
        (dpath.to_path_buf(), dst.to_string())
    };
    let meta = match fs::symlink_metadata(&sp) {
        Ok(m) => m,
        Err(e) => {
            io.eprint(&format!("{cmd}: cannot stat '{s}': {}\n", io_msg(&e)));
            return false;
        }
    };
    let (ls, lt) = (lexical(&sp), lexical(&target));
    if ls == lt {
        io.eprint(&format!("{cmd}: '{s}' and '{shown}' are the same file\n"));
        return false;
    }
    if meta.is_dir() && lt.starts_with(&ls) {
        if cmd == "mv" {
            io.eprint(&format!(
                "mv: cannot move '{s}' to a subdirectory of itself, '{shown}'\n"
            ));
        } else {
            // Like GNU cp: the tree as it was is copied once, then the error.
            if o.recursive {
                let _ = copy_tree(&sp, &target, s, &shown, o, io);
            }
            io.eprint(&format!(
                "cp: cannot copy a directory, '{s}', into itself, '{shown}'\n"
            ));
        }
        return false;
    }
    if cmd == "cp" && meta.is_dir() && !o.recursive {
        io.eprint(&format!("cp: -r not specified; omitting directory '{s}'\n"));
        return false;
    }
    // Whether an existing target is replaced (directories merge when copying).
    if let Ok(t) = fs::symlink_metadata(&target)
        && !(cmd == "cp" && t.is_dir() && meta.is_dir())
        && keeps_existing(
            o,
            &sp,
            &target,
            &format!("{cmd}: overwrite '{shown}'? "),
            io,
        )
    {
        return true;
    }
    let r = if cmd == "mv" {
        fs::rename(&sp, &target).map(|()| {
            if o.verbose {
                io.print(&format!("renamed '{s}' -> '{shown}'\n"));
            }
        })
    } else if meta.is_dir() {
        copy_tree(&sp, &target, s, &shown, o, io)
    } else {
        copy_entry(&sp, &target, &meta, o).map(|()| {
            if o.verbose {
                io.print(&format!("'{s}' -> '{shown}'\n"));
            }
        })
    };
    match r {
        Ok(()) => true,
        Err(e) => {
            if cmd == "mv" {
                io.eprint(&format!(
                    "mv: cannot move '{s}' to '{shown}': {}\n",
                    io_msg(&e)
                ));
            } else {
                io.eprint(&format!(
                    "cp: cannot create regular file '{shown}': {}\n",
                    io_msg(&e)
                ));
            }
            false
        }
    }
}

/// Copies a file or a symlink (as a symlink: cp -r and -a do not follow them inside trees),
/// keeping its modification time with -p/-a.
fn copy_entry(from: &Path, to: &Path, meta: &fs::Metadata, o: &Opts) -> std::io::Result<()> {
    if meta.file_type().is_symlink() && o.recursive {
        let target = fs::read_link(from)?;
        if fs::symlink_metadata(to).is_ok() {
            fs::remove_file(to)?;
        }
        return sh_utility::sys::symlink(&target.to_string_lossy(), to);
    }
    fs::copy(from, to)?;
    if o.preserve
        && let Ok(t) = meta.modified()
    {
        fs::OpenOptions::new()
            .write(true)
            .open(to)?
            .set_modified(t)?;
    }
    Ok(())
}

/// A tree copy in progress: the directories it created (never copied again: `cp -r d d/sub`
/// must not descend into its own copy).
struct Tree<'a> {
    o: &'a Opts,
    io: &'a Io,
    created: std::collections::HashSet<PathBuf>,
}

/// Copies the tree at `from` to `to` (merging into an existing directory), entries in name
/// order, reporting each with -v.
fn copy_tree(
    from: &Path,
    to: &Path,
    shown_from: &str,
    shown_to: &str,
    o: &Opts,
    io: &Io,
) -> std::io::Result<()> {
    let mut t = Tree {
        o,
        io,
        created: Default::default(),
    };
    t.copy(from, to, shown_from, shown_to)
}

impl Tree<'_> {
    fn copy(
        &mut self,
        from: &Path,
        to: &Path,
        shown_from: &str,
        shown_to: &str,
    ) -> std::io::Result<()> {
        let (o, io) = (self.o, self.io);
        let mut names: Vec<String> = fs::read_dir(from)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if !to.is_dir() {
            fs::create_dir_all(to)?;
            self.created.insert(lexical(to));
            if o.verbose {
                io.print(&format!("'{shown_from}' -> '{shown_to}'\n"));
            }
        }
        for n in names {
            let (f, t) = (from.join(&n), to.join(&n));
            if self.created.contains(&lexical(&f)) {
                continue;
            }
            let (sf, st) = (format!("{shown_from}/{n}"), format!("{shown_to}/{n}"));
            let m = fs::symlink_metadata(&f)?;
            if m.is_dir() {
                self.copy(&f, &t, &sf, &st)?;
                continue;
            }
            if fs::symlink_metadata(&t).is_ok()
                && keeps_existing(o, &f, &t, &format!("cp: overwrite '{st}'? "), io)
            {
                continue;
            }
            copy_entry(&f, &t, &m, o)?;
            if o.verbose {
                io.print(&format!("'{sf}' -> '{st}'\n"));
            }
        }
        if o.preserve
            && let Ok(t) = fs::metadata(from).and_then(|m| m.modified())
            && let Ok(d) = fs::File::open(to)
        {
            let _ = d.set_modified(t);
        }
        Ok(())
    }
}

/// cp and mv, for the shell's registry.
pub static COMMANDS: &[sh_utility::Command] = &[
    sh_utility::Command {
        name: "cp",
        run: |sh, argv, io| Ok(cp_mv(sh, argv[0].as_str(), &argv[1..], io)),
    },
    sh_utility::Command {
        name: "mv",
        run: |sh, argv, io| Ok(cp_mv(sh, argv[0].as_str(), &argv[1..], io)),
    },
];
