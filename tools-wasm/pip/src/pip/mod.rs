//! `pip` for burrow's CPython: install, uninstall, list, freeze, show and download of
//! pure-Python wheels, resolved from a package index (PEP 691 JSON or PEP 503 HTML; default
//! the public index, `PIP_INDEX_URL` / `--index-url` honoured) through the session's network
//! policy, and unpacked into the session's site-packages (`~/.local/lib/python3.12/
//! site-packages`, persisted, forked and undone with the session) with `.dist-info`, RECORD,
//! INSTALLER and console scripts in `~/.local/bin`. It runs here, in the shell, because the
//! interpreter has no sockets; what it writes goes into the call's transaction like any file.
//!
//! The resolver takes, for each project, the newest version that every requirement seen so
//! far allows; a later requirement that excludes an already chosen version fails with pip's
//! conflict message instead of backtracking. Binary wheels and source distributions cannot be
//! installed (the interpreter is WebAssembly and there is no compiler): pip's "no matching
//! distribution" error, then a line saying why.

mod index;
mod req;
mod version;

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use index::{File, Kind};
use req::{Requirement, normalize};
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
                    "pip 24.0 (burrow: pure-Python wheels only) from {} (python 3.12)\n",
                    crate::layout::PYTHON_DIR
                ));
                return 0;
            }
            "-h" | "--help" => {
                io.print("\nUsage:   \n  pip <command> [options]\n\nCommands:\n  install                     Install packages.\n  download                    Download packages.\n  uninstall                   Uninstall packages.\n  freeze                      Output installed packages in requirements format.\n  list                        List installed packages.\n  show                        Show information about installed packages.\n\nburrow's pip installs pure-Python wheels into ~/.local of the session.\n");
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

/// An installed distribution, from its `.dist-info`.
struct Installed {
    name: String,
    version: String,
    dist_info: PathBuf,
    metadata: Metadata,
}

#[derive(Default)]
struct Metadata {
    name: String,
    version: String,
    fields: Vec<(String, String)>,
    requires: Vec<String>,
}

impl Metadata {
    fn parse(text: &str) -> Metadata {
        let mut m = Metadata::default();
        for line in text.lines() {
            if line.is_empty() {
                break; // the description follows
            }
            if line.starts_with([' ', '\t']) {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim().to_string();
            match k {
                "Name" => m.name = v.clone(),
                "Version" => m.version = v.clone(),
                "Requires-Dist" => m.requires.push(v.clone()),
                _ => {}
            }
            m.fields.push((k.to_string(), v));
        }
        m
    }

    fn get(&self, k: &str) -> &str {
        self.fields
            .iter()
            .find(|(f, _)| f == k)
            .map_or("", |(_, v)| v.as_str())
    }
}

fn installed(site: &Path) -> BTreeMap<String, Installed> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(site) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".dist-info") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path().join("METADATA")) else {
            continue;
        };
        let metadata = Metadata::parse(&text);
        out.insert(
            normalize(&metadata.name),
            Installed {
                name: metadata.name.clone(),
                version: metadata.version.clone(),
                dist_info: e.path(),
                metadata,
            },
        );
    }
    out
}

/// Options of `install` / `download`.
#[derive(Default)]
struct InstallOpts {
    reqs: Vec<Requirement>,
    index: Option<String>,
    no_deps: bool,
    upgrade: bool,
    force: bool,
    pre: bool,
    dest: Option<String>,
    /// Wheel files named on the command line (`pip install dist/x-1.0-py3-none-any.whl`).
    local: Vec<String>,
}

fn parse_install(
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
            // Already how burrow's pip installs: into the user site, from wheels, no cache.
            "--user"
            | "--no-cache-dir"
            | "--break-system-packages"
            | "--disable-pip-version-check"
            | "--no-input"
            | "--prefer-binary"
            | "--no-warn-script-location" => {}
            "--only-binary" | "--no-binary" | "--progress-bar" => {
                value(&mut i)?;
            }
            "-i" | "--index-url" => o.index = Some(value(&mut i)?),
            _ if short("-i") => o.index = Some(value(&mut i)?),
            "-d" | "--dest" | "--destination-dir" if cmd == "download" => {
                o.dest = Some(value(&mut i)?)
            }
            _ if cmd == "download" && short("-d") => o.dest = Some(value(&mut i)?),
            "-r" | "--requirement" => {
                let f = value(&mut i)?;
                read_requirements(ctx, cmd, &f, o, quiet, 0)?;
            }
            _ if short("-r") => {
                let f = value(&mut i)?;
                read_requirements(ctx, cmd, &f, o, quiet, 0)?;
            }
            _ if a.starts_with('-') => {
                return Err(usage(io, cmd, &format!("no such option: {flag}")));
            }
            _ if a.ends_with(".whl") && cmd == "install" => o.local.push(a.to_string()),
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

fn read_requirements(
    ctx: &PipCx,
    cmd: &str,
    file: &str,
    o: &mut InstallOpts,
    quiet: &mut bool,
    depth: u32,
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

/// A chosen distribution to install.
struct Chosen {
    name: String,
    version: Version,
    file: Option<File>,
    /// Already installed at this version.
    present: bool,
    wheel: Vec<u8>,
    requested: bool,
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
    // A local wheel is read, checked like a downloaded one and pinned: its requirement is
    // `name==version`, and the resolver takes the file instead of asking the index.
    let mut local: HashMap<String, (Version, File, Vec<u8>)> = HashMap::new();
    for path in &o.local {
        let file_name = path.rsplit('/').next().unwrap_or(path).to_string();
        let parsed = file_name
            .split('-')
            .next()
            .map(normalize)
            .and_then(|key| index::classify(&key, &file_name).map(|(v, k)| (key, v, k)));
        let Some((key, version, kind)) = parsed else {
            ctx.io.eprint(&format!(
                "ERROR: {file_name} is not a valid wheel filename.\n"
            ));
            return 1;
        };
        if kind != Kind::Pure {
            ctx.io.eprint(&format!(
                "ERROR: {file_name} is not a supported wheel on this platform.\nburrow: it holds compiled code; burrow's CPython runs as WebAssembly (WASI), so only pure-Python wheels (py3-none-any) can be installed\n"
            ));
            return 1;
        }
        let bytes = match sh_utility::sys::read(ctx.sh.path(path)) {
            Ok(b) => b,
            Err(_) => {
                ctx.io.eprint(&format!(
                    "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: '{path}'\n"
                ));
                return 1;
            }
        };
        match Requirement::parse(&format!("{key}=={version}")) {
            Ok(r) => o.reqs.push(r),
            Err(why) => {
                ctx.io.eprint(&format!("ERROR: {why}\n"));
                return 1;
            }
        }
        let file = File {
            filename: file_name,
            url: path.clone(),
            sha256: None,
            requires_python: None,
            yanked: false,
        };
        local.insert(key, (version, file, bytes));
    }
    if o.reqs.is_empty() {
        ctx.io.eprint(&format!(
            "ERROR: You must give at least one requirement to {cmd} (see \"pip help {cmd}\")\n"
        ));
        return 1;
    }
    let index = o
        .index
        .clone()
        .or_else(|| ctx.sh.get("PIP_INDEX_URL").map(str::to_string))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_INDEX.to_string());
    if index != DEFAULT_INDEX {
        ctx.say(&format!("Looking in indexes: {index}"));
    }
    let present = installed(&ctx.site);
    let mut pages: HashMap<String, Option<Vec<File>>> = HashMap::new();
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut constraints: HashMap<String, (version::Specifiers, Vec<String>)> = HashMap::new();
    // (requirement, who asked, top level)
    let mut queue: std::collections::VecDeque<(Requirement, Option<String>, bool)> =
        o.reqs.iter().cloned().map(|r| (r, None, true)).collect();
    while let Some((r, parent, top)) = queue.pop_front() {
        let key = r.key();
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
                let asked = &constraints[&key].1;
                let who: Vec<String> = asked
                    .iter()
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
        if let Some((v, file, bytes)) = local.get(&key)
            && spec.contains(v)
        {
            ctx.say(&format!("Processing {}", file.url));
            let c = Chosen {
                name: r.name.clone(),
                version: v.clone(),
                file: Some(file.clone()),
                present: false,
                wheel: bytes.clone(),
                requested: top,
            };
            let (name, reqs) = take(c, &key, &mut chosen, &mut by_key);
            if !o.no_deps {
                queue.extend(deps_of(&reqs, &name, &v.to_string(), &r.extras));
            }
            continue;
        }
        if !pages.contains_key(&key) {
            match index::project_files(&index, &key) {
                Ok(p) => {
                    pages.insert(key.clone(), p);
                }
                Err(why) => {
                    ctx.io.eprint(&format!("ERROR: {why}\n"));
                    ctx.io.eprint(&format!(
                        "ERROR: Could not find a version that satisfies the requirement {r} (from versions: none)\nERROR: No matching distribution found for {r}\n"
                    ));
                    return 1;
                }
            }
        }
        let files = pages[&key].clone().unwrap_or_default();
        let mut pure: Vec<(Version, File)> = Vec::new();
        let mut other: Vec<(Version, Kind)> = Vec::new();
        for f in &files {
            let Some((v, kind)) = index::classify(&key, &f.filename) else {
                continue;
            };
            if !requires_python_ok(&f.requires_python) {
                continue;
            }
            if kind == Kind::Pure {
                pure.push((v, f.clone()));
            } else {
                other.push((v, kind));
            }
        }
        let allow_pre = o.pre || spec.mentions_prerelease();
        let pick = |list: &[(Version, File)], pre: bool, yanked: bool| {
            list.iter()
                .filter(|(v, f)| {
                    spec.contains(v) && (pre || !v.is_prerelease()) && (yanked || !f.yanked)
                })
                .max_by(|a, b| a.0.cmp(&b.0))
                .cloned()
        };
        let best = pick(&pure, allow_pre, false)
            .or_else(|| {
                pick(&pure, true, false).filter(|_| !pure.iter().any(|(v, _)| !v.is_prerelease()))
            })
            .or_else(|| pick(&pure, allow_pre, true));
        let Some((v, file)) = best else {
            let mut versions: Vec<&Version> = pure.iter().map(|(v, _)| v).collect();
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
                let what = if *kind == Kind::Sdist {
                    "only a source distribution, which would have to be built"
                } else {
                    "only binary wheels for other platforms (compiled code)"
                };
                ctx.io.eprint(&format!(
                    "burrow: {key} {v} has {what}; burrow's CPython runs as WebAssembly (WASI) with no compiler, so pip here installs pure-Python wheels (py3-none-any) only\n"
                ));
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
        let c = Chosen {
            name: r.name.clone(),
            version: v.clone(),
            file: Some(file),
            present: false,
            wheel,
            requested: top,
        };
        let (name, reqs) = take(c, &key, &mut chosen, &mut by_key);
        if !o.no_deps {
            queue.extend(deps_of(&reqs, &name, &v.to_string(), &r.extras));
        }
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

fn hex_sha256(b: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn open_wheel(wheel: &[u8]) -> Result<zip::ZipArchive<std::io::Cursor<&[u8]>>, String> {
    zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| format!("not a valid wheel: {e}"))
}

/// The `.dist-info` directory name inside a wheel.
fn dist_info_dir(archive: &zip::ZipArchive<std::io::Cursor<&[u8]>>) -> Option<String> {
    archive
        .file_names()
        .filter_map(|n| n.ok())
        .filter_map(|n| {
            n.split_once(".dist-info/")
                .map(|(d, _)| format!("{d}.dist-info"))
        })
        .find(|d| !d.contains('/'))
}

fn wheel_metadata(wheel: &[u8]) -> Option<Metadata> {
    let mut a = open_wheel(wheel).ok()?;
    let dir = dist_info_dir(&a)?;
    let mut text = String::new();
    a.by_name(&format!("{dir}/METADATA"))
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    Some(Metadata::parse(&text))
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
        if let Err(e) = std::fs::write(&path, &c.wheel) {
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

/// A wheel member's path, checked: relative, no `..`, no absolute parts.
fn safe_rel(name: &str) -> Option<&str> {
    let ok = !name.starts_with('/')
        && !name.contains('\\')
        && !name.split('/').any(|c| c == ".." || c == ".");
    ok.then_some(name)
}

/// Unpacks a wheel into site-packages (and `.data/scripts` into ~/.local/bin), writes the
/// console scripts, INSTALLER, REQUESTED and the RECORD of everything written.
fn unpack(ctx: &PipCx, c: &Chosen) -> Result<(), String> {
    let mut a = open_wheel(&c.wheel)?;
    let dist_info = dist_info_dir(&a).ok_or("the wheel has no .dist-info directory")?;
    let data_dir = format!("{}.data/", dist_info.trim_end_matches(".dist-info"));
    let mut record: Vec<String> = Vec::new();
    let site = ctx.site.clone();
    let write = |path: &Path, bytes: &[u8], record: &mut Vec<String>| -> Result<(), String> {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let rel = relative_to(path, &site);
        record.push(format!(
            "{rel},sha256={},{}",
            urlsafe_b64(&sha256_raw(bytes)),
            bytes.len()
        ));
        Ok(())
    };
    for i in 0..a.len() {
        let mut f = a
            .by_index(i)
            .map_err(|e| format!("bad wheel member: {e}"))?;
        if f.is_dir() {
            continue;
        }
        let name = f
            .name()
            .map_err(|e| format!("bad wheel member name: {e}"))?
            .to_string();
        let Some(rel) = safe_rel(&name) else {
            return Err(format!(
                "refusing the wheel member {name}: it would land outside site-packages"
            ));
        };
        if rel == format!("{dist_info}/RECORD") {
            continue;
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(|e| format!("{name}: {e}"))?;
        let target = if let Some(sub) = rel.strip_prefix(&data_dir) {
            let (scheme, path) = sub.split_once('/').unwrap_or((sub, ""));
            match scheme {
                "purelib" | "platlib" => site.join(path),
                "scripts" => ctx.bin.join(path),
                // headers and data files have no place in a session's site: kept beside it.
                _ => site.join(format!("{data_dir}{sub}")),
            }
        } else {
            site.join(rel)
        };
        write(&target, &bytes, &mut record)?;
    }
    // Console scripts, as pip writes them.
    let mut entry = String::new();
    if let Ok(mut f) = a.by_name(&format!("{dist_info}/entry_points.txt")) {
        let _ = f.read_to_string(&mut entry);
    }
    let mut section = "";
    for line in entry.lines() {
        let line = line.trim();
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = if s == "console_scripts" {
                "console"
            } else {
                ""
            };
            continue;
        }
        if section != "console" {
            continue;
        }
        let Some((name, target)) = line.split_once('=') else {
            continue;
        };
        let (name, target) = (name.trim(), target.trim());
        let target = target.split('[').next().unwrap_or(target).trim();
        let Some((module, func)) = target.split_once(':') else {
            continue;
        };
        if safe_rel(name).is_none() || name.contains('/') {
            continue;
        }
        let attr = func.trim();
        let import = attr.split('.').next().unwrap_or(attr);
        let script = format!(
            "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {} import {import}\nif __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit({attr}())\n",
            module.trim()
        );
        write(&ctx.bin.join(name), script.as_bytes(), &mut record)?;
    }
    let di = site.join(&dist_info);
    write(&di.join("INSTALLER"), b"pip\n", &mut record)?;
    if c.requested {
        write(&di.join("REQUESTED"), b"", &mut record)?;
    }
    record.push(format!("{dist_info}/RECORD,,"));
    let mut text = record.join("\n");
    text.push('\n');
    std::fs::write(di.join("RECORD"), text).map_err(|e| format!("RECORD: {e}"))?;
    Ok(())
}

fn sha256_raw(b: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(b).to_vec()
}

fn urlsafe_b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// `path` relative to `base`, with `..` where it lies outside (as RECORD writes scripts).
fn relative_to(path: &Path, base: &Path) -> String {
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".into(); b.len() - common];
    parts.extend(
        p[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// Removes the files a distribution's RECORD lists, emptied directories, and its .dist-info.
fn remove_dist(ctx: &PipCx, d: &Installed) -> Result<Vec<PathBuf>, String> {
    let record = std::fs::read_to_string(d.dist_info.join("RECORD")).unwrap_or_default();
    let mut removed = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for line in record.lines() {
        let rel = line.split(',').next().unwrap_or_default();
        if rel.is_empty() || rel.starts_with('/') {
            continue;
        }
        let path = sh_utility::path::lexical(&ctx.site.join(rel));
        let home = ctx.bin.parent().map(Path::to_path_buf).unwrap_or_default();
        if !(path.starts_with(&ctx.site) || path.starts_with(&home)) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path.clone());
        }
        // The interpreter's compiled copies of a module go with it, as pip removes them.
        if let (Some(dir), Some(stem)) = (path.parent(), rel.strip_suffix(".py"))
            && let Some(stem) = stem.rsplit('/').next()
        {
            let cache = dir.join("__pycache__");
            for tag in ["", ".opt-1", ".opt-2"] {
                let _ = std::fs::remove_file(cache.join(format!("{stem}.cpython-312{tag}.pyc")));
            }
            let _ = std::fs::remove_dir(&cache);
        }
        let mut p = path.parent();
        while let Some(dir) = p {
            if dir == ctx.site || !dir.starts_with(&ctx.site) {
                break;
            }
            dirs.insert(dir.to_path_buf());
            p = dir.parent();
        }
    }
    // Deepest first; compiled caches left by the interpreter go with their directory.
    for dir in dirs.iter().rev() {
        let _ = std::fs::remove_dir_all(dir.join("__pycache__"));
        let _ = std::fs::remove_dir(dir);
    }
    match std::fs::remove_dir_all(&d.dist_info) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", d.dist_info.display()));
        }
        _ => {}
    }
    Ok(removed)
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
                if let Err(c) = read_requirements(ctx, "uninstall", f, &mut o, &mut q, 0) {
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
