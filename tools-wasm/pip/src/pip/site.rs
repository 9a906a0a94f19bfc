//! The session's site-packages: installed distributions (their `.dist-info` and METADATA),
//! wheels read and unpacked into it with the RECORD pip writes, and distributions removed.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::req::normalize;
use super::{Chosen, PipCx};

/// An installed distribution, from its `.dist-info`.
pub(super) struct Installed {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) dist_info: PathBuf,
    pub(super) metadata: Metadata,
}

#[derive(Default)]
pub(super) struct Metadata {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) fields: Vec<(String, String)>,
    pub(super) requires: Vec<String>,
}

impl Metadata {
    pub(super) fn parse(text: &str) -> Metadata {
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

    pub(super) fn get(&self, k: &str) -> &str {
        self.fields
            .iter()
            .find(|(f, _)| f == k)
            .map_or("", |(_, v)| v.as_str())
    }
}

pub(super) fn installed(site: &Path) -> BTreeMap<String, Installed> {
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

pub(super) fn hex_sha256(b: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

pub(super) fn open_wheel(wheel: &[u8]) -> Result<zip::ZipArchive<std::io::Cursor<&[u8]>>, String> {
    zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| format!("not a valid wheel: {e}"))
}

/// The `.dist-info` directory name inside a wheel.
pub(super) fn dist_info_dir(archive: &zip::ZipArchive<std::io::Cursor<&[u8]>>) -> Option<String> {
    archive
        .file_names()
        .filter_map(|n| n.ok())
        .filter_map(|n| {
            n.split_once(".dist-info/")
                .map(|(d, _)| format!("{d}.dist-info"))
        })
        .find(|d| !d.contains('/'))
}

pub(super) fn wheel_metadata(wheel: &[u8]) -> Option<Metadata> {
    let mut a = open_wheel(wheel).ok()?;
    let dir = dist_info_dir(&a)?;
    let mut text = String::new();
    a.by_name(&format!("{dir}/METADATA"))
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    Some(Metadata::parse(&text))
}

/// A wheel member's path, checked: relative, no `..`, no absolute parts.
pub(super) fn safe_rel(name: &str) -> Option<&str> {
    let ok = !name.starts_with('/')
        && !name.contains('\\')
        && !name.split('/').any(|c| c == ".." || c == ".");
    ok.then_some(name)
}

/// Unpacks a wheel into site-packages (and `.data/scripts` into ~/.local/bin), writes the
/// console scripts, INSTALLER, REQUESTED and the RECORD of everything written.
pub(super) fn unpack(ctx: &PipCx, c: &Chosen) -> Result<(), String> {
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
    if let Some(url) = &c.direct_url {
        write(&di.join("direct_url.json"), url.as_bytes(), &mut record)?;
    }
    if c.requested {
        write(&di.join("REQUESTED"), b"", &mut record)?;
    }
    record.push(format!("{dist_info}/RECORD,,"));
    let mut text = record.join("\n");
    text.push('\n');
    std::fs::write(di.join("RECORD"), text).map_err(|e| format!("RECORD: {e}"))?;
    Ok(())
}

pub(super) fn sha256_raw(b: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(b).to_vec()
}

pub(super) fn urlsafe_b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// `path` relative to `base`, with `..` where it lies outside (as RECORD writes scripts).
pub(super) fn relative_to(path: &Path, base: &Path) -> String {
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
pub(super) fn remove_dist(ctx: &PipCx, d: &Installed) -> Result<Vec<PathBuf>, String> {
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
