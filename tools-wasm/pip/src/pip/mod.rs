//! `pip` for burrow's CPython: install, uninstall, list, freeze, show and download, resolved
//! from a package index (PEP 691 JSON or PEP 503 HTML; default the public index,
//! `PIP_INDEX_URL` / `--index-url` honoured) through the session's network policy, and
//! unpacked into the session's site-packages (`~/.local/lib/python3.12/site-packages`,
//! persisted, forked and undone with the session) with `.dist-info`, RECORD, INSTALLER and
//! console scripts in `~/.local/bin`. It runs here, in the shell, because the interpreter has
//! no sockets; what it writes goes into the call's transaction like any file.
//!
//! The resolver takes, for each project, the newest version that every requirement seen so
//! far allows; a later requirement that excludes an already chosen version fails with pip's
//! conflict message instead of backtracking. Pure-Python wheels install as they are; source
//! distributions and local projects (`pip install .`, `-e .`) are built into wheels by
//! [`build`] (PEP 517, in the session's python3), which works for every project that needs
//! no compiler. Binary wheels cannot be installed (the interpreter is WebAssembly): pip's
//! "no matching distribution" error, then a line saying why.
//!
//! Here: the commands and the resolver. [`options`] reads command lines, [`direct`] takes what
//! a command line names directly (files, projects, URLs), [`index`] reads the index,
//! [`build`] builds source, [`site`] reads and writes site-packages.

mod build;
mod direct;
mod index;
mod options;
mod req;
mod site;
mod version;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use index::{File, Kind};
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
    let present = installed(&ctx.site);
    let mut pages: HashMap<String, Option<Vec<File>>> = HashMap::new();
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut constraints: HashMap<String, (version::Specifiers, Vec<String>)> = HashMap::new();
    // `-c`: each constraint narrows its project's versions once anything asks for it.
    for c in &o.constraints {
        if c.url.is_some() {
            ctx.io.eprint(&format!(
                "ERROR: Invalid requirement: '{c}': links are not allowed as constraints by burrow's pip\n"
            ));
            return 1;
        }
        if !c.applies(&[]).unwrap_or(false) {
            continue;
        }
        let entry = constraints.entry(c.key()).or_default();
        entry.0.extend(&c.specifiers);
        entry.1.push(format!("The user requested (constraint) {c}"));
    }
    // (requirement, who asked, top level)
    let mut queue: std::collections::VecDeque<(Requirement, Option<String>, bool)> =
        o.reqs.iter().cloned().map(|r| (r, None, true)).collect();
    while let Some((r, parent, top)) = queue.pop_front() {
        let key = r.key();
        if r.url.is_some() {
            // A direct reference reached through another package's metadata.
            ctx.io.eprint(&format!(
                "ERROR: Packages installed from PyPI cannot depend on packages which are not also hosted on PyPI.\n{} depends on {r}\n",
                parent.as_deref().unwrap_or("a package").replace("==", " ")
            ));
            return 1;
        }
        let entry = constraints.entry(key.clone()).or_default();
        entry.0.extend(&r.specifiers);
        entry.1.push(match &parent {
            Some(p) => format!("{} depends on {r}", p.replace("==", " ")),
            None => format!("The user requested {r}"),
        });
        let spec = entry.0.clone();
        let deps_of = |reqs: &[String],
                       name: &str,
                       ver: &str,
                       extras: &[String]|
         -> Vec<(Requirement, Option<String>, bool)> {
            reqs.iter()
                .filter_map(|t| Requirement::parse(t).ok())
                .filter(|d| d.applies(extras).unwrap_or(false))
                .map(|d| (d, Some(format!("{name}=={ver}")), false))
                .collect()
        };
        if let Some(&at) = by_key.get(&key) {
            let c = &chosen[at];
            if !spec.contains(&c.version) {
                conflict(ctx, &constraints[&key].1);
                return 1;
            }
            if !r.extras.is_empty() && !o.no_deps {
                let reqs = wheel_requires(c, &present);
                let v = c.version.to_string();
                let name = c.name.clone();
                queue.extend(
                    deps_of(&reqs, &name, &v, &r.extras)
                        .into_iter()
                        .filter(|(d, _, _)| {
                            d.marker.as_deref().is_some_and(|m| m.contains("extra"))
                        }),
                );
            }
            continue;
        }
        // Installed already and allowed: pip leaves it (unless -U / --force-reinstall).
        if !download
            && local.get(&key).is_none_or(|l| l.3.is_none())
            && let Some(inst) = present.get(&key)
            && let Some(v) = Version::parse(&inst.version)
            && spec.contains(&v)
            && !(o.force || (o.upgrade && top))
        {
            ctx.say(&format!(
                "Requirement already satisfied: {} in {} ({})",
                r,
                ctx.site.display(),
                inst.version
            ));
            by_key.insert(key.clone(), chosen.len());
            chosen.push(Chosen {
                name: inst.name.clone(),
                version: v,
                file: None,
                present: true,
                wheel: Vec::new(),
                requested: top,
                sdist: None,
                direct_url: None,
            });
            if !o.no_deps {
                queue.extend(deps_of(
                    &inst.metadata.requires,
                    &inst.name,
                    &inst.version,
                    &r.extras,
                ));
            }
            continue;
        }
        if let Some((v, file, bytes, direct_url)) = local.get(&key)
            && spec.contains(v)
        {
            if direct_url.is_none() {
                ctx.say(&format!("Processing {}", file.url));
            }
            let c = Chosen {
                name: r.name.clone(),
                version: v.clone(),
                file: Some(file.clone()),
                present: false,
                wheel: bytes.clone(),
                requested: top,
                sdist: None,
                direct_url: direct_url.clone(),
            };
            let (name, reqs) = take(c, &key, &mut chosen, &mut by_key);
            if !o.no_deps {
                queue.extend(deps_of(&reqs, &name, &v.to_string(), &r.extras));
            }
            continue;
        }
        if !pages.contains_key(&key) {
            // The main index, then each extra one: their files join (pip ranks them alike).
            let mut found: Option<Vec<File>> = None;
            for idx in std::iter::once(&index).chain(&extra_index) {
                match index::project_files(idx, &key) {
                    Ok(Some(files)) => found.get_or_insert_with(Vec::new).extend(files),
                    Ok(None) => {}
                    Err(why) => {
                        ctx.io.eprint(&format!("ERROR: {why}\n"));
                        ctx.io.eprint(&format!(
                            "ERROR: Could not find a version that satisfies the requirement {r} (from versions: none)\nERROR: No matching distribution found for {r}\n"
                        ));
                        return 1;
                    }
                }
            }
            pages.insert(key.clone(), found);
        }
        let files = pages[&key].clone().unwrap_or_default();
        // What can be used here: pure-Python wheels, and source distributions to build
        // (unless `--only-binary`); the rest is only named when nothing fits.
        let mut pure: Vec<(Version, File)> = Vec::new();
        let mut sources: Vec<(Version, File)> = Vec::new();
        let mut other: Vec<(Version, Kind)> = Vec::new();
        let may_build = o.may_build(&key);
        let wants_source = o.wants_source(&key);
        for f in &files {
            let Some((v, kind)) = index::classify(&key, &f.filename) else {
                continue;
            };
            if !requires_python_ok(&f.requires_python) {
                continue;
            }
            match kind {
                Kind::Pure if !wants_source => pure.push((v, f.clone())),
                Kind::Sdist if may_build => sources.push((v, f.clone())),
                _ => other.push((v, kind)),
            }
        }
        let allow_pre = o.pre || spec.mentions_prerelease();
        let best_of = |list: &[(Version, File)]| {
            let pick = |pre: bool, yanked: bool| {
                list.iter()
                    .filter(|(v, f)| {
                        spec.contains(v) && (pre || !v.is_prerelease()) && (yanked || !f.yanked)
                    })
                    .max_by(|a, b| a.0.cmp(&b.0))
                    .cloned()
            };
            pick(allow_pre, false)
                .or_else(|| {
                    pick(true, false).filter(|_| !list.iter().any(|(v, _)| !v.is_prerelease()))
                })
                .or_else(|| pick(allow_pre, true))
        };
        // pip's order: the newest version first, a wheel before an sdist of the same version
        // (`--prefer-binary`: any wheel before an sdist).
        let best = match (best_of(&pure), best_of(&sources)) {
            (Some(w), Some(src)) if src.0 > w.0 && !o.prefer_binary => Some(src),
            (Some(w), _) => Some(w),
            (None, src) => src,
        };
        let Some((v, file)) = best else {
            let mut versions: Vec<&Version> = pure.iter().chain(&sources).map(|(v, _)| v).collect();
            // Versions exist, each asker would take some, but not one version for all.
            let asked = &constraints[&key].1;
            if asked.len() > 1 && !versions.is_empty() {
                conflict(ctx, asked);
                return 1;
            }
            versions.sort();
            versions.dedup();
            let listed = if versions.is_empty() {
                "none".to_string()
            } else {
                versions
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            ctx.io.eprint(&format!(
                "ERROR: Could not find a version that satisfies the requirement {r} (from versions: {listed})\nERROR: No matching distribution found for {r}\n"
            ));
            let newest = other
                .iter()
                .filter(|(v, _)| spec.contains(v))
                .max_by(|a, b| a.0.cmp(&b.0));
            if let Some((v, kind)) = newest {
                if *kind == Kind::Sdist {
                    ctx.io.eprint(&format!(
                        "burrow: {key} {v} has only a source distribution, which --only-binary excludes\n"
                    ));
                } else {
                    ctx.io.eprint(&format!(
                        "burrow: {key} {v} has only binary wheels for other platforms (compiled code) and no source distribution; burrow's CPython runs as WebAssembly (WASI) with no compiler, so pip here installs pure-Python wheels and builds sdists that need no compiler\n"
                    ));
                }
            } else if pages[&key].is_none() {
                ctx.io.eprint(&format!(
                    "burrow: the index {index} has no project named {key}\n"
                ));
            }
            return 1;
        };
        ctx.say(&format!("Collecting {r}"));
        let size = |n: usize| {
            if n >= 1 << 20 {
                format!("{:.1} MB", n as f64 / 1e6)
            } else {
                format!("{} kB", n.div_ceil(1000))
            }
        };
        let wheel = match sh_curl::get(&file.url, "*/*", "pip/24.0 (burrow)") {
            Ok(f) if f.status == 200 => f.body,
            Ok(f) => {
                ctx.io.eprint(&format!(
                    "ERROR: HTTP error {} while getting {}\n",
                    f.status, file.url
                ));
                return 1;
            }
            Err(why) => {
                ctx.io.eprint(&format!(
                    "ERROR: Could not install packages due to an OSError: {why} ({})\n",
                    file.url
                ));
                return 1;
            }
        };
        ctx.say(&format!(
            "  Downloading {} ({})",
            file.filename,
            size(wheel.len())
        ));
        if let Some(want) = &file.sha256 {
            let got = hex_sha256(&wheel);
            if !got.eq_ignore_ascii_case(want) {
                ctx.io.eprint(&format!(
                    "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have tampered with them.\n    {key} from {}:\n        Expected sha256 {want}\n             Got        {got}\n",
                    file.url
                ));
                return 1;
            }
        }
        // A source distribution is built into the wheel that is installed (its requirements
        // are the built wheel's); `pip download` saves the sdist itself.
        let (wheel, sdist) = if index::classify(&key, &file.filename)
            .is_some_and(|(_, k)| k == Kind::Sdist)
        {
            let made = match build::build(
                ctx,
                &r.name,
                build::Source::Archive {
                    filename: &file.filename,
                    bytes: &wheel,
                },
                &build_opts(false),
            ) {
                Ok(m) => m,
                Err(code) => return code,
            };
            let got = made.filename.split('-').nth(1).and_then(Version::parse);
            if got.as_ref() != Some(&v) {
                ctx.io.eprint(&format!(
                    "ERROR: Requested {key} from {} has inconsistent version: expected '{v}', but metadata has '{}'\n",
                    file.url,
                    got.map(|g| g.to_string()).unwrap_or_default()
                ));
                return 1;
            }
            built.push(r.name.clone());
            (made.wheel, Some(wheel))
        } else {
            (wheel, None)
        };
        let c = Chosen {
            name: r.name.clone(),
            version: v.clone(),
            file: Some(file),
            present: false,
            wheel,
            requested: top,
            sdist,
            direct_url: None,
        };
        let (name, reqs) = take(c, &key, &mut chosen, &mut by_key);
        if !o.no_deps {
            queue.extend(deps_of(&reqs, &name, &v.to_string(), &r.extras));
        }
    }
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
fn conflict(ctx: &PipCx, asked: &[String]) {
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
