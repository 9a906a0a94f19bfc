//! `pip` for burrow's CPython: install, uninstall, list, freeze, show and download, resolved
//! from a package index (PEP 691 JSON or PEP 503 HTML; default the public index,
//! `PIP_INDEX_URL` / `--index-url` honoured) through the session's network policy, and
//! unpacked into the session's site-packages (`~/.local/lib/python3.12/site-packages`,
//! persisted, forked and undone with the session) with `.dist-info`, RECORD, INSTALLER and
//! console scripts in `~/.local/bin`. It runs here, in the shell, because the interpreter has
//! no sockets; what it writes goes into the call's transaction like any file.
//!
//! The resolver ([`resolve`]) takes, for each project, the newest version that every
//! requirement seen so far allows, and backtracks on a conflict. Pure-Python wheels install
//! as they are; source distributions and local projects (`pip install .`, `-e .`) are built
//! into wheels by [`build`] (PEP 517, in the session's python3), which works for every
//! project that needs no compiler. Binary wheels cannot be installed (the interpreter is
//! WebAssembly): pip's "no matching distribution" error, then a line saying why.
//!
//! Here: the commands. [`options`] reads command lines, [`direct`] takes what a command line
//! names directly (files, projects, URLs), [`index`] reads the index, [`resolve`] chooses
//! versions, [`build`] builds source, [`site`] reads and writes site-packages.

mod build;
mod direct;
mod index;
mod options;
mod req;
mod resolve;
mod site;
mod version;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use index::File;
use options::{InstallOpts, parse_install, read_requirements};
use req::{Requirement, normalize};
use site::{Installed, hex_sha256, installed, open_wheel, remove_dist, unpack, wheel_metadata};
use version::Version;

use sh_utility::Ctx;
use sh_utility::io::{Io, read_all};

const DEFAULT_INDEX: &str = "https://pypi.org/simple";

/// pip's usage error: the command's usage and the problem, status 2.
fn usage(io: &Io, cmd: &str, what: &str) -> i32 {
    let line = match cmd {
        "install" => {
            "pip install [options] <requirement specifier> [package-index-options] ...\n  pip install [options] -r <requirements file> [package-index-options] ..."
        }
        "uninstall" => {
            "pip uninstall [options] <package> ...\n  pip uninstall [options] -r <requirements file> ..."
        }
        "download" => {
            "pip download [options] <requirement specifier> [package-index-options] ...\n  pip download [options] -r <requirements file> [package-index-options] ..."
        }
        "show" => "pip show [options] <package> ...",
        "list" => "pip list [options]",
        "freeze" => "pip freeze [options]",
        _ => "pip <command> [options]",
    };
    io.eprint(&format!("\nUsage:   \n  {line}\n\n{what}\n"));
    2
}

struct PipCx<'a> {
    sh: &'a dyn Ctx,
    io: &'a Io,
    quiet: bool,
    site: PathBuf,
    bin: PathBuf,
    /// How deep in build environments this pip runs (0: the user's own).
    depth: u32,
}

impl PipCx<'_> {
    fn say(&self, s: &str) {
        if !self.quiet {
            self.io.print(&format!("{s}\n"));
        }
    }
}

pub fn run(sh: &mut dyn Ctx, argv: &[String], io: &Io) -> i32 {
    let args = &argv[1..];
    let mut quiet = false;
    let mut i = 0;
    // General options before the command.
    while i < args.len() && args[i].starts_with('-') {
        match args[i].as_str() {
            "-q" | "--quiet" => quiet = true,
            "-V" | "--version" => {
                io.print(&format!(
                    "pip 24.0 (burrow: pure-Python wheels and sdists that need no compiler) from {} (python 3.12)\n",
                    crate::layout::PYTHON_DIR
                ));
                return 0;
            }
            "-h" | "--help" => {
                io.print("\nUsage:   \n  pip <command> [options]\n\nCommands:\n  install                     Install packages.\n  download                    Download packages.\n  uninstall                   Uninstall packages.\n  freeze                      Output installed packages in requirements format.\n  list                        List installed packages.\n  show                        Show information about installed packages.\n\nburrow's pip installs pure-Python wheels, and builds sdists that need no compiler, into ~/.local of the session.\n");
                return 0;
            }
            "--disable-pip-version-check" | "--no-cache-dir" | "--no-input" | "--isolated" => {}
            other => return usage(io, "", &format!("no such option: {other}")),
        }
        i += 1;
    }
    let Some(cmd) = args.get(i) else {
        return usage(
            io,
            "",
            "ERROR: You must give a command (use \"pip help\" to see a list of commands)",
        );
    };
    let rest = &args[i + 1..];
    let site = PathBuf::from(crate::layout::site_packages(sh));
    let home = sh
        .get("HOME")
        .filter(|h| !h.is_empty())
        .unwrap_or("/home/agent")
        .to_string();
    let mut ctx = PipCx {
        sh,
        io,
        quiet,
        site,
        bin: PathBuf::from(home).join(".local/bin"),
        depth: 0,
    };
    match cmd.as_str() {
        "install" => install(&mut ctx, rest, false),
        "download" => install(&mut ctx, rest, true),
        "uninstall" => uninstall(&mut ctx, rest),
        "list" => list(&ctx, rest, false),
        "freeze" => list(&ctx, rest, true),
        "show" => show(&ctx, rest),
        "help" => run(sh, &["pip".into(), "--help".into()], io),
        other => {
            io.eprint(&format!("ERROR: unknown command \"{other}\"\n"));
            1
        }
    }
}

/// A chosen distribution to install.
struct Chosen {
    name: String,
    version: Version,
    file: Option<File>,
    /// Already installed at this version.
    present: bool,
    wheel: Vec<u8>,
    requested: bool,
    /// The source distribution the wheel was built from (what `pip download` saves).
    sdist: Option<Vec<u8>>,
    /// PEP 610's `direct_url.json` for a project installed from a local path.
    direct_url: Option<String>,
}

/// Records a wheel the resolver chose, under the name its METADATA gives; returns that name
/// and the wheel's requirements.
fn take(
    c: Chosen,
    key: &str,
    chosen: &mut Vec<Chosen>,
    by_key: &mut HashMap<String, usize>,
) -> (String, Vec<String>) {
    let meta = wheel_metadata(&c.wheel);
    let reqs = meta
        .as_ref()
        .map(|m| m.requires.clone())
        .unwrap_or_default();
    let name = meta
        .map(|m| m.name)
        .filter(|n| !n.is_empty())
        .unwrap_or(c.name.clone());
    by_key.insert(key.to_string(), chosen.len());
    chosen.push(Chosen {
        name: name.clone(),
        ..c
    });
    (name, reqs)
}

fn requires_python_ok(spec: &Option<String>) -> bool {
    match spec {
        None => true,
        Some(s) => version::Specifiers::parse(s)
            .map(|s| s.contains(&Version::parse("3.12.0").expect("valid")))
            .unwrap_or(true),
    }
}

fn install(ctx: &mut PipCx, args: &[String], download: bool) -> i32 {
    let cmd = if download { "download" } else { "install" };
    let mut o = InstallOpts::default();
    let mut quiet = ctx.quiet;
    if let Err(code) = parse_install(ctx, cmd, args, &mut o, &mut quiet) {
        return code;
    }
    ctx.quiet = quiet;
    let index = o
        .index
        .clone()
        .or_else(|| ctx.sh.get("PIP_INDEX_URL").map(str::to_string))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_INDEX.to_string());
    let mut extra_index = o.extra_index.clone();
    if let Some(env) = ctx.sh.get("PIP_EXTRA_INDEX_URL") {
        extra_index.extend(env.split_whitespace().map(str::to_string));
    }
    let mut seen = std::collections::HashSet::new();
    extra_index.retain(|u| *u != index && seen.insert(u.clone()));
    if index != DEFAULT_INDEX || !extra_index.is_empty() {
        let mut all = vec![index.clone()];
        all.extend(extra_index.iter().cloned());
        ctx.say(&format!("Looking in indexes: {}", all.join(", ")));
    }
    let config = serde_json::Value::Object(o.config.clone()).to_string();
    let isolate = !o.no_build_isolation;
    let build_opts = |editable: bool| build::BuildOpts {
        index: &index,
        extra_index: &extra_index,
        isolate,
        editable,
        config: &config,
    };
    // Projects built from source, by the names they were asked for, for "Successfully built".
    let mut built: Vec<String> = Vec::new();
    let local = match direct::collect(ctx, &mut o, &build_opts, &mut built) {
        Ok(l) => l,
        Err(code) => return code,
    };
    if o.reqs.is_empty() {
        ctx.io.eprint(&format!(
            "ERROR: You must give at least one requirement to {cmd} (see \"pip help {cmd}\")\n"
        ));
        return 1;
    }
    // A requirement whose environment marker does not hold here is skipped, as pip says.
    o.reqs.retain(|r| {
        let holds = r.applies(&[]).unwrap_or(false);
        if !holds {
            ctx.say(&format!(
                "Ignoring {}: markers '{}' don't match your environment",
                r.name,
                r.marker.as_deref().unwrap_or_default().replace('\'', "\"")
            ));
        }
        holds
    });
    let present = installed(&ctx.site);
    // pip's resolver backtracks; burrow's starts again with what a conflict taught it: the
    // version of the package whose requirement could not be met is set aside, or the project
    // is narrowed to what the requirement allows when some version allows everything asked.
    // Downloads and builds are kept between attempts; what cannot be solved is reported as
    // the first conflict, in pip's words.
    let mut tries = resolve::Tries::default();
    let chosen = loop {
        let (sink, buffered) = sh_utility::io::Sink::buffer();
        let io = Io::new(ctx.io.stdin.clone(), ctx.io.out.clone(), sink);
        let attempt_ctx = PipCx {
            sh: ctx.sh,
            io: &io,
            quiet: ctx.quiet,
            site: ctx.site.clone(),
            bin: ctx.bin.clone(),
            depth: ctx.depth,
        };
        let mut attempt_built = built.clone();
        let how = resolve::How {
            opts: &o,
            local: &local,
            present: &present,
            index: &index,
            extra_index: &extra_index,
            build_opts: &build_opts,
            download,
        };
        let outcome = resolve::resolve(&attempt_ctx, &how, &mut tries, &mut attempt_built);
        let errors = std::mem::take(&mut *buffered.borrow_mut());
        match outcome {
            Ok(chosen) => {
                ctx.io.err.write(&errors);
                built = attempt_built;
                break chosen;
            }
            Err(resolve::Failed::Conflict(conflict)) => {
                if let Some(project) = tries.learn(conflict) {
                    ctx.say(&format!("INFO: pip is looking at multiple versions of {project} to determine which version is compatible with other requirements. This could take a while."));
                    continue;
                }
                conflict_message(ctx, tries.first_conflict());
                return 1;
            }
            Err(resolve::Failed::Status(code)) => {
                if tries.backtracked() {
                    conflict_message(ctx, tries.first_conflict());
                    return 1;
                }
                ctx.io.err.write(&errors);
                return code;
            }
        }
    };
    if !built.is_empty() {
        ctx.say(&format!("Successfully built {}", built.join(" ")));
    }
    if download {
        return save_downloads(ctx, &chosen, o.dest.as_deref());
    }
    // Dependencies before the packages that need them, as pip orders them.
    let new: Vec<&Chosen> = chosen.iter().rev().filter(|c| !c.present).collect();
    if new.is_empty() {
        return 0;
    }
    ctx.say(&format!(
        "Installing collected packages: {}",
        new.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for c in &new {
        if let Some(old) = present.get(&normalize(&c.name)) {
            ctx.say(&format!("  Attempting uninstall: {}", old.name));
            ctx.say(&format!(
                "    Found existing installation: {} {}",
                old.name, old.version
            ));
            ctx.say(&format!("    Uninstalling {}-{}:", old.name, old.version));
            if let Err(why) = remove_dist(ctx, old) {
                ctx.io.eprint(&format!(
                    "ERROR: Could not install packages due to an OSError: {why}\n"
                ));
                return 1;
            }
            ctx.say(&format!(
                "      Successfully uninstalled {}-{}",
                old.name, old.version
            ));
        }
        if let Err(why) = unpack(ctx, c) {
            ctx.io.eprint(&format!(
                "ERROR: Could not install packages due to an OSError: {why}\n"
            ));
            return 1;
        }
    }
    warn_broken(ctx);
    ctx.say(&format!(
        "Successfully installed {}",
        new.iter()
            .map(|c| format!("{}-{}", c.name, c.version))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    0
}

/// pip's `ResolutionImpossible`, naming who asked for what (`asked`: "The user requested
/// X", "P depends on X", "The user requested (constraint) X").
fn conflict_message(ctx: &PipCx, asked: &[String]) {
    let who: Vec<String> = asked
        .iter()
        .filter(|a| !a.starts_with("The user requested (constraint) "))
        .map(|a| match a.split_once(" depends on ") {
            Some((p, _)) => p.replace(' ', "=="),
            None => a.trim_start_matches("The user requested ").to_string(),
        })
        .collect();
    ctx.io.eprint(&format!(
        "ERROR: Cannot install {} because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n{}\n\nTo fix this you could try to:\n1. loosen the range of package versions you've specified\n2. remove package versions to allow pip to attempt to solve the dependency conflict\n\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts\n",
        who.join(" and "),
        asked.iter().map(|a| format!("    {a}")).collect::<Vec<_>>().join("\n")
    ));
}

/// pip's warning after an install that left an installed package's requirement unmet.
fn warn_broken(ctx: &PipCx) {
    let now = installed(&ctx.site);
    let mut lines = Vec::new();
    for d in now.values() {
        for text in &d.metadata.requires {
            let Ok(r) = Requirement::parse(text) else {
                continue;
            };
            if !r.applies(&[]).unwrap_or(false) {
                continue;
            }
            match now.get(&r.key()) {
                Some(dep) => {
                    if let Some(v) = Version::parse(&dep.version)
                        && !r.specifiers.contains(&v)
                    {
                        lines.push(format!(
                            "{} {} requires {r}, but you have {} {} which is incompatible.",
                            d.name, d.version, dep.name, dep.version
                        ));
                    }
                }
                None => lines.push(format!(
                    "{} {} requires {}, which is not installed.",
                    d.name, d.version, r.name
                )),
            }
        }
    }
    if !lines.is_empty() {
        ctx.io.eprint(&format!(
            "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This behaviour is the source of the following dependency conflicts.\n{}\n",
            lines.join("\n")
        ));
    }
}

fn wheel_requires(c: &Chosen, present: &BTreeMap<String, Installed>) -> Vec<String> {
    if c.present {
        return present
            .get(&normalize(&c.name))
            .map(|i| i.metadata.requires.clone())
            .unwrap_or_default();
    }
    wheel_metadata(&c.wheel)
        .map(|m| m.requires)
        .unwrap_or_default()
}

fn save_downloads(ctx: &PipCx, chosen: &[Chosen], dest: Option<&str>) -> i32 {
    let dir = ctx.sh.path(dest.unwrap_or("."));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        ctx.io
            .eprint(&format!("ERROR: cannot create {}: {e}\n", dir.display()));
        return 1;
    }
    for c in chosen {
        let Some(f) = &c.file else { continue };
        let path = dir.join(&f.filename);
        if let Err(e) = std::fs::write(&path, c.sdist.as_ref().unwrap_or(&c.wheel)) {
            ctx.io
                .eprint(&format!("ERROR: cannot write {}: {e}\n", path.display()));
            return 1;
        }
        let shown = match dest {
            Some(d) => format!("{}/{}", d.trim_end_matches('/'), f.filename),
            None => format!("./{}", f.filename),
        };
        ctx.say(&format!("Saved {shown}"));
    }
    ctx.say(&format!(
        "Successfully downloaded {}",
        chosen
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    0
}

fn uninstall(ctx: &mut PipCx, args: &[String]) -> i32 {
    let mut yes = false;
    let mut names = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        match a.as_str() {
            "-y" | "--yes" => yes = true,
            "-q" | "--quiet" => ctx.quiet = true,
            "--break-system-packages" | "--no-input" => {}
            "-r" | "--requirement" => {
                let Some(f) = args.get(i) else {
                    return usage(
                        ctx.io,
                        "uninstall",
                        &format!("{a} option requires 1 argument"),
                    );
                };
                i += 1;
                let mut o = InstallOpts::default();
                let mut q = ctx.quiet;
                if let Err(c) = read_requirements(ctx, "uninstall", f, &mut o, &mut q, 0, false) {
                    return c;
                }
                names.extend(o.reqs.iter().map(|r| r.name.clone()));
            }
            _ if a.starts_with('-') => {
                return usage(ctx.io, "uninstall", &format!("no such option: {a}"));
            }
            _ => match Requirement::parse(a) {
                Ok(r) => names.push(r.name),
                Err(why) => {
                    ctx.io.eprint(&format!("ERROR: {why}\n"));
                    return 1;
                }
            },
        }
    }
    if names.is_empty() {
        ctx.io.eprint("ERROR: You must give at least one requirement to uninstall (see \"pip help uninstall\")\n");
        return 1;
    }
    let present = installed(&ctx.site);
    for n in names {
        let Some(d) = present.get(&normalize(&n)) else {
            ctx.io
                .eprint(&format!("WARNING: Skipping {n} as it is not installed.\n"));
            continue;
        };
        ctx.say(&format!(
            "Found existing installation: {} {}",
            d.name, d.version
        ));
        ctx.say(&format!("Uninstalling {}-{}:", d.name, d.version));
        if !yes {
            ctx.io.print("  Would remove:\n");
            ctx.io.print(&format!("    {}/*\n", d.dist_info.display()));
            ctx.io.print("Proceed (Y/n)? ");
            let answer = String::from_utf8_lossy(&read_all(&ctx.io.stdin)).into_owned();
            let Some(line) = answer.lines().next() else {
                ctx.io
                    .eprint("ERROR: Exception: EOFError: EOF when reading a line\n");
                return 1;
            };
            if !matches!(line.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes") {
                continue;
            }
        }
        if let Err(why) = remove_dist(ctx, d) {
            ctx.io.eprint(&format!("ERROR: {why}\n"));
            return 1;
        }
        ctx.say(&format!(
            "  Successfully uninstalled {}-{}",
            d.name, d.version
        ));
    }
    0
}

fn list(ctx: &PipCx, args: &[String], freeze: bool) -> i32 {
    let cmd = if freeze { "freeze" } else { "list" };
    let mut format = if freeze { "freeze" } else { "columns" }.to_string();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        match a.as_str() {
            "--format" if !freeze => match args.get(i) {
                Some(v) => {
                    format = v.clone();
                    i += 1;
                }
                None => return usage(ctx.io, cmd, "--format option requires 1 argument"),
            },
            f if !freeze && f.starts_with("--format=") => {
                format = f["--format=".len()..].to_string()
            }
            "--user" | "-l" | "--local" | "--disable-pip-version-check" => {}
            _ => return usage(ctx.io, cmd, &format!("no such option: {a}")),
        }
    }
    let present = installed(&ctx.site);
    let mut rows: Vec<(&str, &str)> = present
        .values()
        .map(|d| (d.name.as_str(), d.version.as_str()))
        .collect();
    rows.sort_by_key(|(n, _)| n.to_ascii_lowercase());
    match format.as_str() {
        "freeze" => {
            for (n, v) in rows {
                ctx.io.print(&format!("{n}=={v}\n"));
            }
        }
        "json" => {
            let v: Vec<serde_json::Value> = rows
                .iter()
                .map(|(n, v)| serde_json::json!({"name": n, "version": v}))
                .collect();
            ctx.io.print(&format!("{}\n", serde_json::Value::Array(v)));
        }
        "columns" => {
            if rows.is_empty() {
                return 0;
            }
            let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(7);
            let wv = rows.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(7);
            ctx.io.print(&format!(
                "{:<w$} {}\n{} {}\n",
                "Package",
                "Version",
                "-".repeat(w),
                "-".repeat(wv)
            ));
            for (n, v) in rows {
                ctx.io.print(&format!("{n:<w$} {v}\n"));
            }
        }
        other => {
            return usage(
                ctx.io,
                cmd,
                &format!(
                    "option --format: invalid choice: '{other}' (choose from 'columns', 'freeze', 'json')"
                ),
            );
        }
    }
    0
}

fn show(ctx: &PipCx, args: &[String]) -> i32 {
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(bad) = args.iter().find(|a| a.starts_with('-')) {
        return usage(ctx.io, "show", &format!("no such option: {bad}"));
    }
    if names.is_empty() {
        ctx.io
            .eprint("ERROR: Please provide a package name or names.\n");
        return 1;
    }
    let present = installed(&ctx.site);
    let mut missing = Vec::new();
    let mut first = true;
    for n in names {
        let Some(d) = present.get(&normalize(n)) else {
            missing.push(n.as_str());
            continue;
        };
        if !first {
            ctx.io.print("---\n");
        }
        first = false;
        let requires: Vec<String> = d
            .metadata
            .requires
            .iter()
            .filter_map(|r| Requirement::parse(r).ok())
            .filter(|r| r.applies(&[]).unwrap_or(false))
            .map(|r| r.name)
            .collect();
        let key = normalize(&d.name);
        let required_by: Vec<&str> = present
            .values()
            .filter(|o| {
                o.metadata.requires.iter().any(|r| {
                    Requirement::parse(r)
                        .is_ok_and(|r| r.key() == key && r.applies(&[]).unwrap_or(false))
                })
            })
            .map(|o| o.name.as_str())
            .collect();
        let m = &d.metadata;
        let mut out = format!(
            "Name: {}\nVersion: {}\nSummary: {}\nHome-page: {}\nAuthor: {}\nAuthor-email: {}\nLicense: {}\nLocation: {}\nRequires: {}\nRequired-by: {}\n",
            d.name,
            d.version,
            m.get("Summary"),
            m.get("Home-page"),
            m.get("Author"),
            m.get("Author-email"),
            m.get("License"),
            ctx.site.display(),
            requires.join(", "),
            required_by.join(", ")
        );
        if m.name.is_empty() {
            out = format!("Name: {}\n", d.name);
        }
        ctx.io.print(&out);
    }
    if !missing.is_empty() {
        ctx.io.eprint(&format!(
            "WARNING: Package(s) not found: {}\n",
            missing.join(", ")
        ));
        return 1;
    }
    0
}
