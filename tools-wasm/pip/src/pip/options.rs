//! `pip install` / `pip download` command lines and requirements files: the options pip
//! has, read as pip reads them, into [`InstallOpts`].

use std::path::{Path, PathBuf};

use super::req::{Requirement, normalize};
use super::{PipCx, usage};

/// Options of `install` / `download`.
#[derive(Default)]
pub(super) struct InstallOpts {
    pub(super) reqs: Vec<Requirement>,
    /// `-c`: versions a project must have if anything asks for it.
    pub(super) constraints: Vec<Requirement>,
    pub(super) index: Option<String>,
    /// `--extra-index-url`: more indexes whose files join the main one's.
    pub(super) extra_index: Vec<String>,
    /// Files named by URL alone (`pip install https://.../x-1.0.tar.gz`).
    pub(super) urls: Vec<String>,
    pub(super) no_deps: bool,
    pub(super) upgrade: bool,
    pub(super) force: bool,
    pub(super) pre: bool,
    pub(super) dest: Option<String>,
    /// Wheel files named on the command line (`pip install dist/x-1.0-py3-none-any.whl`).
    pub(super) local: Vec<String>,
    /// Projects to build named on the command line: a directory or an sdist archive, and
    /// whether editable (`pip install .`, `pip install -e .`, `pip install x-1.0.tar.gz`).
    pub(super) sources: Vec<(String, bool)>,
    /// `--only-binary`: projects (or `:all:`) never built from source.
    pub(super) only_binary: Vec<String>,
    /// `--no-binary`: projects (or `:all:`) always built from source.
    pub(super) no_binary: Vec<String>,
    pub(super) prefer_binary: bool,
    pub(super) no_build_isolation: bool,
    /// `--config-settings` / `-C`: handed to the build backend.
    pub(super) config: serde_json::Map<String, serde_json::Value>,
}

impl InstallOpts {
    /// Whether `key` may be built from a source distribution.
    pub(super) fn may_build(&self, key: &str) -> bool {
        let named = |list: &[String]| list.iter().any(|n| n == ":all:" || normalize(n) == key);
        !named(&self.only_binary) || self.no_binary.iter().any(|n| normalize(n) == key)
    }

    /// Whether `key` must be built from source (its wheels are not wanted).
    pub(super) fn wants_source(&self, key: &str) -> bool {
        let named = |list: &[String]| list.iter().any(|n| n == ":all:" || normalize(n) == key);
        named(&self.no_binary) && !self.only_binary.iter().any(|n| normalize(n) == key)
    }
}

/// `p` with `.` and `..` resolved by name (as pip's `os.path.abspath` does).
pub(super) fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// `--only-binary` / `--no-binary` values: comma-separated names, `:all:` or `:none:`.
pub(super) fn binary_list(list: &mut Vec<String>, value: &str) {
    for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        if v == ":none:" {
            list.clear();
        } else {
            list.push(v.to_string());
        }
    }
}

/// Whether a command-line word names a local project or archive rather than a requirement
/// (pip's rule: it looks like a path).
pub(super) fn looks_like_path(a: &str) -> bool {
    if a.contains("://") {
        return false;
    }
    a == "."
        || a == ".."
        || a.starts_with("./")
        || a.starts_with("../")
        || a.starts_with('/')
        || (a.contains('/') && !a.contains("://"))
        || [".tar.gz", ".zip", ".tgz", ".tar.bz2"]
            .iter()
            .any(|e| a.ends_with(e))
}

pub(super) fn parse_install(
    ctx: &PipCx,
    cmd: &str,
    args: &[String],
    o: &mut InstallOpts,
    quiet: &mut bool,
) -> Result<(), i32> {
    let mut i = 0;
    let io = ctx.io;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a, None),
        };
        let value = |i: &mut usize| -> Result<String, i32> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            if flag.len() > 2 && !flag.starts_with("--") {
                return Ok(flag[2..].to_string());
            }
            match args.get(*i) {
                Some(v) => {
                    *i += 1;
                    Ok(v.clone())
                }
                None => Err(usage(
                    io,
                    cmd,
                    &format!("{flag} option requires 1 argument"),
                )),
            }
        };
        let short = |s: &str| {
            flag == s || (flag.starts_with(s) && !flag.starts_with("--") && flag.len() > 2)
        };
        match flag {
            "-q" | "--quiet" => *quiet = true,
            "--no-deps" => o.no_deps = true,
            "-U" | "--upgrade" => o.upgrade = true,
            "--force-reinstall" => o.force = true,
            "--pre" => o.pre = true,
            "--prefer-binary" => o.prefer_binary = true,
            "--no-build-isolation" => o.no_build_isolation = true,
            // Already how burrow's pip installs: into the user site, no cache; PEP 517 builds.
            "--user"
            | "--no-cache-dir"
            | "--break-system-packages"
            | "--disable-pip-version-check"
            | "--no-input"
            | "--use-pep517"
            | "--no-warn-script-location" => {}
            "--no-use-pep517" => {
                io.eprint("ERROR: --no-use-pep517 (installing with setup.py install) is not supported by burrow's pip; it builds every project through PEP 517 (the default)\n");
                return Err(1);
            }
            "--progress-bar" => {
                value(&mut i)?;
            }
            "--only-binary" => binary_list(&mut o.only_binary, &value(&mut i)?),
            "--no-binary" => binary_list(&mut o.no_binary, &value(&mut i)?),
            "-C" | "--config-settings" | "--config-setting" => {
                let v = value(&mut i)?;
                let Some((k, val)) = v.split_once('=') else {
                    return Err(usage(
                        io,
                        cmd,
                        &format!("Arguments to {flag} must be of the form KEY=VAL"),
                    ));
                };
                // A key given twice becomes a list, as pip makes it.
                let val = serde_json::Value::String(val.to_string());
                match o.config.get_mut(k) {
                    Some(serde_json::Value::Array(a)) => a.push(val),
                    Some(old) => *old = serde_json::Value::Array(vec![old.clone(), val]),
                    None => {
                        o.config.insert(k.to_string(), val);
                    }
                }
            }
            "-e" | "--editable" if cmd == "install" => {
                let v = value(&mut i)?;
                if !looks_like_path(&v) && !std::path::Path::new(&v).is_absolute() {
                    let shown = if ctx.sh.path(&v).is_dir() {
                        v.clone()
                    } else {
                        format!("{v} (VCS and URL editables are not supported by burrow's pip)")
                    };
                    io.eprint(&format!(
                        "ERROR: {shown} is not a valid editable requirement. It should either be a path to a local project or a VCS URL (beginning with bzr+http, bzr+https, bzr+ssh, bzr+sftp, bzr+ftp, bzr+lp, bzr+file, git+http, git+https, git+ssh, git+git, git+file, hg+file, hg+http, hg+https, hg+ssh, hg+static-http, svn+ssh, svn+http, svn+https, svn+svn, svn+file).\n"
                    ));
                    return Err(1);
                }
                o.sources.push((v, true));
            }
            "-i" | "--index-url" => o.index = Some(value(&mut i)?),
            _ if short("-i") => o.index = Some(value(&mut i)?),
            "--extra-index-url" => o.extra_index.push(value(&mut i)?),
            // A requirements file, or a constraints file (`-c`).
            "-r" | "--requirement" | "-c" | "--constraint" => {
                let f = value(&mut i)?;
                let constraint = matches!(flag, "-c" | "--constraint");
                read_requirements(ctx, cmd, &f, o, quiet, 0, constraint)?;
            }
            _ if short("-r") || short("-c") => {
                let f = value(&mut i)?;
                read_requirements(ctx, cmd, &f, o, quiet, 0, short("-c"))?;
            }
            "-d" | "--dest" | "--destination-dir" if cmd == "download" => {
                o.dest = Some(value(&mut i)?)
            }
            _ if cmd == "download" && short("-d") => o.dest = Some(value(&mut i)?),
            _ if a.starts_with('-') => {
                return Err(usage(io, cmd, &format!("no such option: {flag}")));
            }
            _ if ["http://", "https://", "file://"]
                .iter()
                .any(|p| a.starts_with(p)) =>
            {
                o.urls.push(a.to_string())
            }
            _ if a.ends_with(".whl") && cmd == "install" => o.local.push(a.to_string()),
            _ if cmd == "install" && looks_like_path(a) => o.sources.push((a.to_string(), false)),
            _ => match Requirement::parse(a) {
                Ok(r) => o.reqs.push(r),
                Err(why) => {
                    io.eprint(&format!("ERROR: {why}\n"));
                    return Err(1);
                }
            },
        }
    }
    Ok(())
}

pub(super) fn read_requirements(
    ctx: &PipCx,
    cmd: &str,
    file: &str,
    o: &mut InstallOpts,
    quiet: &mut bool,
    depth: u32,
    constraint: bool,
) -> Result<(), i32> {
    let text = match sh_utility::sys::read(ctx.sh.path(file)) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => {
            ctx.io.eprint(&format!(
                "ERROR: Could not open requirements file: [Errno 2] No such file or directory: '{file}'\n"
            ));
            return Err(1);
        }
    };
    // Continuation lines, then one requirement or option per line.
    let joined = text.replace("\\\n", "");
    for line in joined.lines() {
        let line = match line.find(" #") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if line.starts_with('-') {
            if depth > 8 {
                continue;
            }
            // Options in a requirements file are the command line's.
            parse_install(ctx, cmd, &words, o, quiet)?;
        } else {
            match Requirement::parse(line) {
                Ok(r) if constraint => o.constraints.push(r),
                Ok(r) => o.reqs.push(r),
                Err(why) => {
                    ctx.io
                        .eprint(&format!("ERROR: {why} (from line in {file})\n"));
                    return Err(1);
                }
            }
        }
    }
    Ok(())
}
