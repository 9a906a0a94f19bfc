//! The resolver: for each project asked for, the newest version every requirement seen so
//! far allows, from the index (a pure-Python wheel, or an sdist built here), a file named on
//! the command line, or what is installed; each chosen wheel's requirements asked in turn.
//! One attempt runs here; a conflict is returned with what it teaches ([`Tries::learn`]) and
//! the caller starts again, as pip's backtracking resolver would reach the same answer.

use std::collections::{BTreeMap, HashMap};

use super::direct::Local;
use super::index::{self, File, Kind};
use super::options::InstallOpts;
use super::req::{Requirement, normalize};
use super::site::{Installed, hex_sha256};
use super::version::{self, Specifiers, Version};
use super::{Chosen, PipCx, build, requires_python_ok, take, wheel_requires};

/// Attempts before pip's resolver would give up too (each one downloads at most what it
/// has not downloaded before).
const MAX_ATTEMPTS: u32 = 100;

/// What an attempt resolves with.
pub(super) struct How<'a, 'b> {
    pub opts: &'a InstallOpts,
    pub local: &'a Local,
    pub present: &'a BTreeMap<String, Installed>,
    pub index: &'a str,
    pub extra_index: &'a [String],
    pub build_opts: &'a dyn Fn(bool) -> build::BuildOpts<'b>,
    pub download: bool,
}

/// A requirement that the version chosen for its project (or every version) fails.
pub(super) struct Conflict {
    key: String,
    /// What the requirement allows.
    spec: Specifiers,
    /// Who asked (`name==version`), or the user.
    parent: Option<String>,
    /// Everyone who asked for the project, in pip's words.
    asked: Vec<String>,
    /// Whether some version of the project allows everything asked so far.
    narrowable: bool,
}

/// Why an attempt ended.
pub(super) enum Failed {
    Conflict(Conflict),
    /// Anything else: the messages are printed, this is the status.
    Status(i32),
}

/// What attempts share: the index's pages, fetched files, and what conflicts taught.
#[derive(Default)]
pub(super) struct Tries {
    pages: HashMap<String, Option<Vec<File>>>,
    /// By URL: the wheel to install and, when it was built, its sdist.
    files: HashMap<String, (Vec<u8>, Option<Vec<u8>>)>,
    excluded: HashMap<String, Vec<Version>>,
    narrowed: HashMap<String, Specifiers>,
    learned: Vec<String>,
    first: Option<Vec<String>>,
    attempts: u32,
}

impl Tries {
    /// Takes in a conflict: the project to look at again (for pip's INFO line), or None when
    /// there is nothing left to try.
    pub(super) fn learn(&mut self, c: Conflict) -> Option<String> {
        if self.first.is_none() {
            self.first = Some(c.asked.clone());
        }
        self.attempts += 1;
        if self.attempts > MAX_ATTEMPTS {
            return None;
        }
        // Some version of the project allows everything: ask for it from the start.
        let lesson = format!("{} {}", c.key, c.spec);
        if c.narrowable && !self.learned.contains(&lesson) {
            self.learned.push(lesson);
            self.narrowed
                .entry(c.key.clone())
                .or_default()
                .extend(&c.spec);
            return Some(c.key);
        }
        // Otherwise the package whose requirement failed: another version of it.
        let parent = c.parent?;
        let (name, ver) = parent.split_once("==")?;
        let v = Version::parse(ver)?;
        let list = self.excluded.entry(normalize(name)).or_default();
        if list.contains(&v) {
            return None;
        }
        list.push(v);
        Some(name.to_string())
    }

    /// Whether an attempt has failed on a conflict before.
    pub(super) fn backtracked(&self) -> bool {
        self.first.is_some()
    }

    /// Who asked what in the first conflict.
    pub(super) fn first_conflict(&self) -> &[String] {
        self.first.as_deref().unwrap_or_default()
    }

    fn is_excluded(&self, key: &str, v: &Version) -> bool {
        self.excluded.get(key).is_some_and(|l| l.contains(v))
    }

    /// Whether a known version of `key` satisfies `spec` (true when its page is unknown).
    fn some_version(&self, key: &str, spec: &Specifiers) -> bool {
        match self.pages.get(key) {
            Some(Some(files)) => files.iter().any(|f| {
                index::classify(key, &f.filename)
                    .is_some_and(|(v, _)| spec.contains(&v) && !self.is_excluded(key, &v))
            }),
            Some(None) => false,
            None => true,
        }
    }
}

/// One attempt: the distributions to install (or download), dependencies after the
/// packages that need them.
pub(super) fn resolve(
    ctx: &PipCx,
    how: &How,
    tries: &mut Tries,
    built: &mut Vec<String>,
) -> Result<Vec<Chosen>, Failed> {
    let (o, local, present, download) = (how.opts, how.local, how.present, how.download);
    let (index, extra_index, build_opts) = (how.index.to_string(), how.extra_index, how.build_opts);
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut constraints: HashMap<String, (version::Specifiers, Vec<String>)> = HashMap::new();
    // `-c`: each constraint narrows its project's versions once anything asks for it.
    for c in &o.constraints {
        if c.url.is_some() {
            ctx.io.eprint(&format!(
                "ERROR: Invalid requirement: '{c}': links are not allowed as constraints by burrow's pip\n"
            ));
            return Err(Failed::Status(1));
        }
        if !c.applies(&[]).unwrap_or(false) {
            continue;
        }
        let entry = constraints.entry(c.key()).or_default();
        entry.0.extend(&c.specifiers);
        entry.1.push(format!("The user requested (constraint) {c}"));
    }
    // What earlier attempts learned: projects narrowed to what a requirement allows.
    for (key, spec) in &tries.narrowed {
        constraints.entry(key.clone()).or_default().0.extend(spec);
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
            return Err(Failed::Status(1));
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
                let narrowable = tries.some_version(&key, &spec);
                let asked = constraints[&key].1.clone();
                return Err(Failed::Conflict(Conflict {
                    key,
                    spec: r.specifiers.clone(),
                    parent,
                    asked,
                    narrowable,
                }));
            }
            if !r.extras.is_empty() && !o.no_deps {
                let reqs = wheel_requires(c, present);
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
        if !tries.pages.contains_key(&key) {
            // The main index, then each extra one: their files join (pip ranks them alike).
            let mut found: Option<Vec<File>> = None;
            for idx in std::iter::once(&index).chain(extra_index) {
                match index::project_files(idx, &key) {
                    Ok(Some(files)) => found.get_or_insert_with(Vec::new).extend(files),
                    Ok(None) => {}
                    Err(why) => {
                        ctx.io.eprint(&format!("ERROR: {why}\n"));
                        ctx.io.eprint(&format!(
                            "ERROR: Could not find a version that satisfies the requirement {r} (from versions: none)\nERROR: No matching distribution found for {r}\n"
                        ));
                        return Err(Failed::Status(1));
                    }
                }
            }
            tries.pages.insert(key.clone(), found);
        }
        let files = tries.pages[&key].clone().unwrap_or_default();
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
                        spec.contains(v)
                            && !tries.is_excluded(&key, v)
                            && (pre || !v.is_prerelease())
                            && (yanked || !f.yanked)
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
                return Err(Failed::Conflict(Conflict {
                    key: key.clone(),
                    spec: r.specifiers.clone(),
                    parent,
                    asked: asked.clone(),
                    narrowable: false,
                }));
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
            } else if tries.pages[&key].is_none() {
                ctx.io.eprint(&format!(
                    "burrow: the index {index} has no project named {key}\n"
                ));
            }
            return Err(Failed::Status(1));
        };
        ctx.say(&format!("Collecting {r}"));
        let size = |n: usize| {
            if n >= 1 << 20 {
                format!("{:.1} MB", n as f64 / 1e6)
            } else {
                format!("{} kB", n.div_ceil(1000))
            }
        };
        // Kept between attempts: a file is fetched (and an sdist built) once.
        let (wheel, sdist) = if let Some(hit) = tries.files.get(&file.url) {
            ctx.say(&format!("  Using cached {}", file.filename));
            if hit.1.is_some() {
                built.push(r.name.clone());
            }
            hit.clone()
        } else {
            let wheel = match sh_curl::get(&file.url, "*/*", "pip/24.0 (burrow)") {
                Ok(f) if f.status == 200 => f.body,
                Ok(f) => {
                    ctx.io.eprint(&format!(
                        "ERROR: HTTP error {} while getting {}\n",
                        f.status, file.url
                    ));
                    return Err(Failed::Status(1));
                }
                Err(why) => {
                    ctx.io.eprint(&format!(
                        "ERROR: Could not install packages due to an OSError: {why} ({})\n",
                        file.url
                    ));
                    return Err(Failed::Status(1));
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
                    return Err(Failed::Status(1));
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
                    Err(code) => return Err(Failed::Status(code)),
                };
                let got = made.filename.split('-').nth(1).and_then(Version::parse);
                if got.as_ref() != Some(&v) {
                    ctx.io.eprint(&format!(
                        "ERROR: Requested {key} from {} has inconsistent version: expected '{v}', but metadata has '{}'\n",
                        file.url,
                        got.map(|g| g.to_string()).unwrap_or_default()
                    ));
                    return Err(Failed::Status(1));
                }
                built.push(r.name.clone());
                (made.wheel, Some(wheel))
            } else {
                (wheel, None)
            };
            tries
                .files
                .insert(file.url.clone(), (wheel.clone(), sdist.clone()));
            (wheel, sdist)
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
    Ok(chosen)
}
