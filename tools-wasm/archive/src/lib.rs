//! tar (-c -x -t with -z, -f, -C, -v) on the `tar` crate, and gzip/gunzip/zcat on `flate2`
//! (pure-Rust backend). Paths inside archives are checked by the tar crate on extraction
//! (no `..`, no absolute paths), and everything stays inside the workspace anyway.

use std::fs;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use sh_utility::Command;
use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, read_all};

/// The commands this module runs, for the shell's registry.
static ARCHIVE: &[Command] = &[
    Command {
        name: "tar",
        run: |sh, argv, io| Ok(tar(sh, &argv[1..], io)),
    },
    Command {
        name: "gzip",
        run: |sh, argv, io| Ok(gzip(sh, "gzip", &argv[1..], io)),
    },
    Command {
        name: "gunzip",
        run: |sh, argv, io| Ok(gzip(sh, "gunzip", &argv[1..], io)),
    },
    Command {
        name: "zcat",
        run: |sh, argv, io| Ok(gzip(sh, "zcat", &argv[1..], io)),
    },
];

fn gunzip_bytes(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    MultiGzDecoder::new(data).read_to_end(&mut out)?;
    Ok(out)
}

fn gzip_bytes(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    let mut e = GzEncoder::new(Vec::new(), Compression::new(level));
    e.write_all(data)?;
    e.finish()
}

fn gzip(sh: &dyn Ctx, invoked: &str, args: &[String], io: &Io) -> i32 {
    let mut decompress = invoked != "gzip";
    let mut to_stdout = invoked == "zcat";
    // gunzip and zcat are gzip underneath, and say so in their messages.
    let cmd = "gzip";
    let (mut keep, mut force) = (false, false);
    let mut level = 6;
    let mut files = Vec::new();
    let mut only_files = false;
    for a in args {
        if !only_files && a == "--" {
            only_files = true;
        } else if !only_files && a.starts_with('-') && a.len() > 1 {
            for c in a[1..].chars() {
                match c {
                    'd' => decompress = true,
                    'c' => to_stdout = true,
                    'k' => keep = true,
                    'f' => force = true,
                    'q' | 'n' | 'N' => {}
                    '1'..='9' => level = c.to_digit(10).unwrap_or(6),
                    other => {
                        io.eprint(&format!(
                            "gzip: invalid option -- '{other}'\nTry `gzip --help' for more information.\n"
                        ));
                        return 1;
                    }
                }
            }
        } else {
            // (The gate hands gzip's long options on as their short forms.)
            files.push(a.clone());
        }
    }
    if files.is_empty() || files == ["-"] {
        let data = read_all(&io.stdin);
        let r = if decompress {
            gunzip_bytes(&data)
        } else {
            gzip_bytes(&data, level)
        };
        return match r {
            Ok(out) => {
                io.out.write(&out);
                0
            }
            Err(e) => {
                io.eprint(&format!("{cmd}: stdin: {}\n", gz_msg(&e)));
                1
            }
        };
    }
    let mut status = 0;
    for f in &files {
        let path = sh.path(f);
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) => {
                io.eprint(&format!("{cmd}: {f}: {}\n", io_msg(&e)));
                status = 1;
                continue;
            }
        };
        let (out, target) = if decompress {
            let target = if let Some(stem) = f.strip_suffix(".tgz") {
                format!("{stem}.tar")
            } else if let Some(stem) = f.strip_suffix(".gz") {
                stem.to_string()
            } else if to_stdout {
                f.clone()
            } else {
                io.eprint(&format!("{cmd}: {f}: unknown suffix -- ignored\n"));
                status = 2;
                continue;
            };
            (gunzip_bytes(&data), target)
        } else {
            if f.ends_with(".gz") && !to_stdout && !force {
                io.eprint(&format!("{cmd}: {f} already has .gz suffix -- unchanged\n"));
                status = 2;
                continue;
            }
            (gzip_bytes(&data, level), format!("{f}.gz"))
        };
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                io.eprint(&format!("{cmd}: {f}: {}\n", gz_msg(&e)));
                status = 1;
                continue;
            }
        };
        if to_stdout {
            io.out.write(&out);
            continue;
        }
        let tpath = sh.path(&target);
        if tpath.exists() && !force {
            io.eprint(&format!(
                "{cmd}: {target} already exists;\tnot overwritten\n"
            ));
            status = 2;
            continue;
        }
        if let Err(e) = fs::write(&tpath, &out) {
            io.eprint(&format!("{cmd}: {target}: {}\n", io_msg(&e)));
            status = 1;
            continue;
        }
        if !keep {
            let _ = fs::remove_file(&path);
        }
    }
    status
}

/// Appends `path` as `name` (a directory with everything under it, in name order). Headers
/// are built here: the tar crate's metadata import is not available on wasm32.
#[derive(Clone, Copy)]
enum Verbose {
    Off,
    /// GNU tar lists to stdout, unless the archive itself goes there.
    Stdout,
    Stderr,
}

/// Adds `path` to the archive as `name` (directories recursively, in name order).
fn append(
    b: &mut tar::Builder<Vec<u8>>,
    path: &std::path::Path,
    name: &str,
    verbose: Verbose,
    io: &Io,
) -> std::io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let mut h = tar::Header::new_gnu();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    h.set_mtime(mtime);
    // The sandbox's user owns what it archives.
    h.set_uid(1000);
    h.set_gid(1000);
    let _ = h.set_username("agent");
    let _ = h.set_groupname("agent");
    let line = format!("{name}{}\n", if meta.is_dir() { "/" } else { "" });
    match verbose {
        Verbose::Off => {}
        Verbose::Stdout => io.print(&line),
        Verbose::Stderr => io.eprint(&line),
    }
    if meta.is_dir() {
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, format!("{name}/"), std::io::empty())?;
        let mut entries: Vec<_> = fs::read_dir(path)?.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let child = format!("{name}/{}", e.file_name().to_string_lossy());
            append(b, &e.path(), &child, verbose, io)?;
        }
    } else if meta.file_type().is_symlink() {
        let target = fs::read_link(path)?;
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_mode(0o777);
        h.set_size(0);
        b.append_link(&mut h, name, target)?;
    } else {
        let data = fs::read(path)?;
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, name, &data[..])?;
    }
    Ok(())
}

/// Writes one entry under `base`. Done here rather than with the crate's `unpack_in`, whose
/// permission and time handling is not implemented on wasm32. Paths that are absolute or
/// climb out with `..` are refused, as GNU tar does.
fn extract(
    entry: &mut tar::Entry<'_, &[u8]>,
    base: &std::path::Path,
    name: &str,
) -> Result<(), String> {
    use std::path::Component;
    let rel = std::path::Path::new(name);
    if rel.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Err("Member name contains '..' or is absolute; skipped".into());
    }
    let dst = base.join(rel);
    let kind = entry.header().entry_type();
    let mtime = entry.header().mtime().ok();
    let msg = |e: std::io::Error| format!("Cannot open: {}", io_msg(&e));
    if let Some(parent) = dst.parent() {
        fs::create_dir_all(parent).map_err(msg)?;
    }
    match kind {
        tar::EntryType::Directory => fs::create_dir_all(&dst).map_err(msg)?,
        tar::EntryType::Symlink => {
            let target = entry
                .link_name()
                .ok()
                .flatten()
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = fs::remove_file(&dst);
            sh_utility::sys::symlink(&target, &dst).map_err(msg)?;
        }
        tar::EntryType::Link => return Err("hard links are not supported; skipped".into()),
        _ => {
            let mut data = Vec::new();
            entry.read_to_end(&mut data).map_err(msg)?;
            fs::write(&dst, &data).map_err(msg)?;
            if let Some(t) = mtime
                && let Ok(f) = fs::File::options().write(true).open(&dst)
            {
                let _ = f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(t));
            }
        }
    }
    Ok(())
}

fn gz_msg(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::InvalidInput
        | std::io::ErrorKind::InvalidData
        | std::io::ErrorKind::UnexpectedEof => "not in gzip format".into(),
        _ => io_msg(e),
    }
}

/// `tar -tv`'s line for an entry, as GNU tar prints it: mode, owner/group, size (the two
/// padded to 19 columns together), modification time in minutes, name (`-> target` for a
/// symlink).
fn long_listing<R: std::io::Read>(entry: &tar::Entry<'_, R>, name: &str) -> String {
    let h = entry.header();
    let kind = match h.entry_type() {
        tar::EntryType::Directory => 'd',
        tar::EntryType::Symlink => 'l',
        tar::EntryType::Link => 'h',
        _ => '-',
    };
    let mode = h.mode().unwrap_or(0o644);
    let mut perms = String::from(kind);
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        perms.push(if bits & 4 != 0 { 'r' } else { '-' });
        perms.push(if bits & 2 != 0 { 'w' } else { '-' });
        perms.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    let user = match h.username() {
        Ok(Some(u)) if !u.is_empty() => u.to_string(),
        _ => h.uid().unwrap_or(0).to_string(),
    };
    let group = match h.groupname() {
        Ok(Some(g)) if !g.is_empty() => g.to_string(),
        _ => h.gid().unwrap_or(0).to_string(),
    };
    let size = h.size().unwrap_or(0).to_string();
    let width = 19usize
        .max(user.len() + 1 + group.len() + size.len())
        .saturating_sub(user.len() + group.len() + 1);
    let when = sh_utility::time::strftime(h.mtime().unwrap_or(0) as i64, "%Y-%m-%d %H:%M");
    let target = match (kind, h.link_name()) {
        ('l', Ok(Some(t))) => format!(" -> {}", t.to_string_lossy()),
        _ => String::new(),
    };
    format!("{perms} {user}/{group} {size:>width$} {when} {name}{target}\n")
}

fn tar(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut mode: Option<char> = None;
    let (mut gz, mut verbose) = (false, false);
    let mut file: Option<String> = None;
    let mut dir: Option<String> = None;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        // The first word may be bundled flags without a dash (tar czf x.tgz dir).
        let flags = if let Some(f) = a.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            Some(f.to_string())
        } else if i == 0 && !a.starts_with('-') {
            Some(a.clone())
        } else {
            None
        };
        match (flags, a.as_str()) {
            (_, "--gzip" | "--gunzip") => gz = true,
            (_, "--verbose") => verbose = true,
            (_, "--create") => mode = Some('c'),
            (_, "--extract") => mode = Some('x'),
            (_, "--list") => mode = Some('t'),
            (_, s) if s.starts_with("--file=") => file = Some(s["--file=".len()..].to_string()),
            (_, s) if s.starts_with("--directory=") => {
                dir = Some(s["--directory=".len()..].to_string())
            }
            (_, "--file" | "--directory") => {
                i += 1;
                let v = args.get(i).cloned();
                if a == "--file" {
                    file = v;
                } else {
                    dir = v;
                }
            }
            (_, s) if s.starts_with("--") && s.len() > 2 => {
                io.eprint(&format!("tar: unrecognized option '{s}'\nTry 'tar --help' or 'tar --usage' for more information.\n"));
                return 64;
            }
            (Some(f), _) => {
                for c in f.chars() {
                    match c {
                        'c' | 'x' | 't' => mode = Some(c),
                        'z' => gz = true,
                        'v' => verbose = true,
                        'f' => {
                            i += 1;
                            file = args.get(i).cloned();
                        }
                        'C' => {
                            i += 1;
                            dir = args.get(i).cloned();
                        }
                        'p' | 'o' => {}
                        other => {
                            io.eprint(&format!("tar: invalid option -- '{other}'\nTry 'tar --help' or 'tar --usage' for more information.\n"));
                            // GNU tar's usage-error status.
                            return 64;
                        }
                    }
                }
            }
            (None, _) => operands.push(a.clone()),
        }
        i += 1;
    }
    let Some(mode) = mode else {
        io.eprint("tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\nTry 'tar --help' for more information.\n");
        return 2;
    };
    let base = dir.map(|d| sh.path(&d)).unwrap_or_else(|| sh.path(""));
    let to_stdout = file.as_deref().is_none_or(|f| f == "-");
    let gz = gz
        || file
            .as_deref()
            .is_some_and(|f| f.ends_with(".gz") || f.ends_with(".tgz"));
    match mode {
        'c' => {
            if operands.is_empty() {
                io.eprint("tar: Cowardly refusing to create an empty archive\nTry 'tar --help' for more information.\n");
                return 2;
            }
            let mut b = tar::Builder::new(Vec::new());
            let mut status = 0;
            for op in &operands {
                let name = op.trim_end_matches('/');
                let v = match (verbose, to_stdout) {
                    (false, _) => Verbose::Off,
                    (true, false) => Verbose::Stdout,
                    (true, true) => Verbose::Stderr,
                };
                if let Err(e) = append(&mut b, &base.join(name), name, v, io) {
                    io.eprint(&format!("tar: {op}: Cannot stat: {}\n", io_msg(&e)));
                    status = 2;
                }
            }
            let data = match b.into_inner() {
                Ok(d) => d,
                Err(e) => {
                    io.eprint(&format!("tar: {}\n", io_msg(&e)));
                    return 2;
                }
            };
            let data = if gz {
                gzip_bytes(&data, 6).unwrap_or_default()
            } else {
                data
            };
            if to_stdout {
                io.out.write(&data);
            } else if let Some(f) = &file
                && let Err(e) = fs::write(sh.path(f), &data)
            {
                io.eprint(&format!("tar: {f}: Cannot open: {}\n", io_msg(&e)));
                return 2;
            }
            status
        }
        'x' | 't' => {
            let raw = if to_stdout {
                read_all(&io.stdin)
            } else {
                let f = file.clone().unwrap_or_default();
                match fs::read(sh.path(&f)) {
                    Ok(d) => d,
                    Err(e) => {
                        io.eprint(&format!("tar: {f}: Cannot open: {}\ntar: Error is not recoverable: exiting now\n", io_msg(&e)));
                        return 2;
                    }
                }
            };
            // gzip is detected by its magic bytes, as GNU tar does.
            let data = if gz || raw.starts_with(&[0x1f, 0x8b]) {
                match gunzip_bytes(&raw) {
                    Ok(d) => d,
                    Err(_) => {
                        io.eprint("tar: This does not look like a tar archive\n");
                        return 2;
                    }
                }
            } else {
                raw
            };
            let mut archive = tar::Archive::new(&data[..]);
            let entries = match archive.entries() {
                Ok(e) => e,
                Err(e) => {
                    io.eprint(&format!("tar: {}\n", io_msg(&e)));
                    return 2;
                }
            };
            let mut status = 0;
            for entry in entries {
                let mut entry = match entry {
                    Ok(e) => e,
                    Err(_) => {
                        io.eprint("tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors\n");
                        return 2;
                    }
                };
                let name = entry
                    .path()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let wanted = operands.is_empty()
                    || operands.iter().any(|o| {
                        name == *o || name.starts_with(&format!("{}/", o.trim_end_matches('/')))
                    });
                if !wanted {
                    continue;
                }
                if mode == 't' && verbose {
                    io.print(&long_listing(&entry, &name));
                } else if mode == 't' || verbose {
                    io.print(&format!("{name}\n"));
                }
                if mode == 'x'
                    && let Err(msg) = extract(&mut entry, &base, &name)
                {
                    io.eprint(&format!("tar: {name}: {msg}\n"));
                    status = 2;
                }
            }
            status
        }
        _ => 2,
    }
}

/// tar, gzip, gunzip and zcat, for the shell's registry.
pub static COMMANDS: &[&[Command]] = &[ARCHIVE];
