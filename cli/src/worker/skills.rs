//! Installs the session agent's skills into the burrow session at `/workspace/skills/<name>/`
//! (the SDK's `{workdir}/skills/<name>/`, `lib/tools/_skills.py`), with the SDK's archive
//! safety rules: zip or tar (plain or gzip); absolute or `..` members refuse the whole
//! archive; members that are not regular files or directories (links, devices) are skipped;
//! one wrapping directory is stripped; files are 0755 when executable in the archive, else
//! 0644; skill directories 0700. A bad skill is logged and skipped, the others still land.
//!
//! Past the SDK: skills land once per burrow session, all in one version (event
//! `skills_installed`), and a skill already present at the same version is not downloaded
//! again when the session resumes in a later work item (the installed versions are kept in
//! the session's metadata `managed_agents_skills`).

use std::collections::BTreeMap;
use std::io::Read;

use reqwest::Method;
use serde_json::{Value, json};

use super::Item;
use super::api::Req;

const META_KEY: &str = burrow_host::session::MA_SKILLS_KEY;
/// Where skills land, relative to the workspace root.
const SKILLS_DIR: &str = "skills";
/// Largest skill archive accepted, and largest unpacked size.
const MAX_ARCHIVE: usize = 256 << 20;
const MAX_UNPACKED: u64 = 1 << 30;

/// One member to write.
#[derive(Debug, PartialEq)]
enum Member {
    Dir(String),
    File(String, Vec<u8>, bool),
}

/// A member name as a confined relative path: `.` components dropped; absolute paths and
/// `..` components refused (only hostile archives have them). `""` for the root itself.
fn safe_name(name: &str) -> Result<String, String> {
    let norm = name.replace('\\', "/");
    if norm.starts_with('/') {
        return Err(format!(
            "refusing archive member with absolute path '{name}'"
        ));
    }
    let parts: Vec<&str> = norm
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(format!(
            "refusing archive member with '..' component: '{name}'"
        ));
    }
    Ok(parts.join("/"))
}

/// The one top-level directory every member lives under, if there is one (and something is
/// nested in it): the skill's wrapper, stripped on extraction.
fn wrapper(names: &[String]) -> Option<String> {
    let mut top: Option<&str> = None;
    let mut nested = false;
    for n in names.iter().filter(|n| !n.is_empty()) {
        let (first, rest) = n.split_once('/').unwrap_or((n, ""));
        match top {
            None => top = Some(first),
            Some(t) if t != first => return None,
            _ => {}
        }
        nested |= !rest.is_empty();
    }
    top.filter(|_| nested).map(str::to_string)
}

fn strip(safe: &str, top: Option<&str>) -> String {
    match top {
        Some(t) if safe == t => String::new(),
        Some(t) => safe
            .strip_prefix(t)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(safe)
            .to_string(),
        None => safe.to_string(),
    }
}

/// Unpacks a skill archive (zip, tar, tar.gz) into members, wrapper stripped.
fn unpack(bytes: &[u8]) -> Result<Vec<Member>, String> {
    // (name, is_dir, data, executable), for plain members only; every name is screened.
    let mut raw: Vec<(String, bool, Vec<u8>, bool)> = Vec::new();
    let mut total = 0u64;
    let mut budget = |n: u64| {
        total += n;
        if total > MAX_UNPACKED {
            Err("the skill archive unpacks to more than 1 GiB".to_string())
        } else {
            Ok(())
        }
    };
    if bytes.starts_with(b"PK") {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| format!("unreadable zip archive: {e}"))?;
        for i in 0..zip.len() {
            let mut f = zip
                .by_index(i)
                .map_err(|e| format!("unreadable zip member: {e}"))?;
            let name = f
                .name()
                .map_err(|e| format!("unreadable zip member name: {e}"))?
                .to_string();
            safe_name(&name)?;
            let mode = f.unix_mode();
            let kind = mode.map(|m| m & 0o170000);
            // Links, devices, FIFOs and sockets recorded by a Unix host are skipped.
            if kind.is_some_and(|k| k != 0 && k != 0o100000 && k != 0o040000) {
                continue;
            }
            let is_dir = f.is_dir() || kind == Some(0o040000);
            let mut data = Vec::new();
            if !is_dir {
                budget(f.size())?;
                f.read_to_end(&mut data)
                    .map_err(|e| format!("unreadable zip member '{name}': {e}"))?;
            }
            raw.push((name, is_dir, data, mode.is_some_and(|m| m & 0o111 != 0)));
        }
    } else {
        let reader: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::GzDecoder::new(bytes))
        } else {
            Box::new(bytes)
        };
        let mut ar = tar::Archive::new(reader);
        let entries = ar
            .entries()
            .map_err(|e| format!("unreadable archive: {e}"))?;
        for entry in entries {
            let mut e = entry.map_err(|e| format!("unreadable tar member: {e}"))?;
            let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
            safe_name(&name)?;
            let kind = e.header().entry_type();
            if !(kind.is_file() || kind.is_dir()) {
                continue;
            }
            let mode = e.header().mode().unwrap_or(0o644);
            let mut data = Vec::new();
            if kind.is_file() {
                budget(e.size())?;
                e.read_to_end(&mut data)
                    .map_err(|err| format!("unreadable tar member '{name}': {err}"))?;
            }
            raw.push((name, kind.is_dir(), data, mode & 0o111 != 0));
        }
    }
    let safe: Vec<String> = raw
        .iter()
        .map(|(n, ..)| safe_name(n))
        .collect::<Result<_, _>>()?;
    let top = wrapper(&safe);
    let mut out = Vec::new();
    for ((_, is_dir, data, exec), s) in raw.into_iter().zip(&safe) {
        let rel = strip(s, top.as_deref());
        if rel.is_empty() {
            continue;
        }
        out.push(if is_dir {
            Member::Dir(rel)
        } else {
            Member::File(rel, data, exec)
        });
    }
    Ok(out)
}

/// A skill's directory name: its name reduced to one safe path component, else its id.
fn dir_name(name: &str, skill_id: &str) -> String {
    let base = name.trim().rsplit(['/', '\\']).next().unwrap_or("").trim();
    if base.is_empty() || base == "." || base == ".." {
        skill_id.to_string()
    } else {
        base.to_string()
    }
}

/// One skill fetched and unpacked, ready to write.
struct Fetched {
    skill_id: String,
    version: String,
    dir: String,
    members: Vec<Member>,
}

/// Fetches and unpacks a skill; `None` when the version it resolves to is already
/// installed in the session (nothing downloaded).
async fn fetch(
    it: &Item,
    skill: &Value,
    installed: &BTreeMap<String, Value>,
) -> Result<Option<Fetched>, String> {
    let skill_id = skill["skill_id"]
        .as_str()
        .ok_or("a skill without skill_id")?;
    let version = skill["version"].as_str().unwrap_or("latest");
    let v = it
        .api
        .json(
            Method::GET,
            &format!("/v1/skills/{skill_id}/versions/{version}"),
            &it.token,
            Req::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
    // `version` may be the alias "latest": download by the concrete id.
    let concrete = v["id"]
        .as_str()
        .or(v["version"].as_str())
        .unwrap_or(version)
        .to_string();
    let dir = dir_name(v["name"].as_str().unwrap_or(""), skill_id);
    if installed
        .get(skill_id)
        .is_some_and(|h| h["version"] == concrete.as_str() && h["dir"] == dir.as_str())
        && present(it, &dir).await
    {
        return Ok(None);
    }
    let resp = it
        .api
        .send(
            Method::GET,
            &format!("/v1/skills/{skill_id}/versions/{concrete}/content"),
            &it.token,
            Req {
                headers: &[("accept", "application/binary")],
                ..Req::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| format!("download broke: {e}"))?;
    if bytes.len() > MAX_ARCHIVE {
        return Err("the skill archive is larger than 256 MiB".into());
    }
    let members = unpack(&bytes)?;
    Ok(Some(Fetched {
        skill_id: skill_id.to_string(),
        version: concrete,
        dir,
        members,
    }))
}

/// Installs the agent's skills (best effort: every failure is logged, none is fatal).
/// The skills of the session's agent and of its subagents (a coordinator's member agents;
/// a `multiagent_20261001` agent's enabled predefined subagents and workflows), the first
/// version of each skill id winning (the SDK's `skills_with_subagents`).
pub fn skills_with_subagents(agent: &Value) -> Vec<Value> {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let mut skills = list(&agent["skills"]);
    let multi = &agent["multiagent"];
    match multi["type"].as_str() {
        Some("coordinator") => {
            for member in multi["agents"].as_array().into_iter().flatten() {
                if member["type"] == "agent" {
                    skills.extend(list(&member["skills"]));
                }
            }
        }
        Some("multiagent_20261001") => {
            for group in [&multi["subagents"], &multi["workflows"]] {
                if group["type"] == "enabled" {
                    for member in group["predefined_agents"].as_array().into_iter().flatten() {
                        skills.extend(list(&member["skills"]));
                    }
                }
            }
        }
        _ => {}
    }
    let mut seen = std::collections::HashSet::new();
    skills
        .into_iter()
        .filter(|s| seen.insert(s["skill_id"].as_str().unwrap_or("").to_string()))
        .collect()
}

pub async fn install(it: &Item, session: &Value) {
    let skills = skills_with_subagents(&session["agent"]);
    if skills.is_empty() {
        return;
    }
    let id = it.burrow_id.clone();
    let installed: BTreeMap<String, Value> = it
        .core
        .blocking(move |sb| Ok(sb.store().meta(&id)?.get(META_KEY).cloned()))
        .await
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut fetched = Vec::new();
    let mut skipped = Vec::new();
    for skill in &skills {
        let sid = skill["skill_id"].as_str().unwrap_or("");
        // Already here at this exact version (not an alias): nothing to download.
        if let (Some(want), Some(have)) = (skill["version"].as_str(), installed.get(sid))
            && want != "latest"
            && have["version"] == want
            && present(it, have["dir"].as_str().unwrap_or("")).await
        {
            skipped.push(json!({"skill_id": sid, "version": want, "reason": "already installed"}));
            continue;
        }
        match fetch(it, skill, &installed).await {
            // Two skills whose names sanitise alike: the first keeps the folder.
            Ok(Some(f)) if fetched.iter().any(|g: &Fetched| g.dir == f.dir) => {
                tracing::warn!(skill_id = sid, name = %f.dir, "an earlier skill has the name; skipping it");
                skipped.push(json!({"skill_id": sid, "reason": "an earlier skill has the name"}));
            }
            Ok(Some(f)) => fetched.push(f),
            Ok(None) => {
                skipped.push(json!({"skill_id": sid, "reason": "already installed"}));
            }
            Err(e) => {
                tracing::warn!(skill_id = sid, error = %e, "failed to download skill; skipping it");
                skipped.push(json!({"skill_id": sid, "error": e}));
            }
        }
    }
    if fetched.is_empty() {
        if skipped.iter().any(|s| s.get("error").is_some()) {
            it.log("skills_failed", json!({"skipped": skipped})).await;
        }
        return;
    }
    let id = it.burrow_id.clone();
    let summary: Vec<Value> = fetched
        .iter()
        .map(|f| json!({"skill_id": f.skill_id, "version": f.version, "dir": format!("/workspace/{SKILLS_DIR}/{}", f.dir), "files": f.members.iter().filter(|m| matches!(m, Member::File(..))).count()}))
        .collect();
    let event = json!({"installed": summary, "skipped": skipped}).to_string();
    let r = it
        .core
        .serialised(&it.burrow_id, move |sb| {
            let mut installed = installed;
            let mut txn = sb.store().begin(&id)?;
            for f in &fetched {
                let root = format!("{SKILLS_DIR}/{}", f.dir);
                txn.remove_all(&root)?;
                let ino = txn.mkdir_all(&root)?;
                txn.set_mode(ino, 0o700)?;
                for m in &f.members {
                    match m {
                        Member::Dir(d) => {
                            txn.mkdir_all(&format!("{root}/{d}"))?;
                        }
                        Member::File(p, data, exec) => {
                            if let Some((parent, _)) = p.rsplit_once('/') {
                                txn.mkdir_all(&format!("{root}/{parent}"))?;
                            }
                            let ino = txn.write_file(&format!("{root}/{p}"), data)?;
                            txn.set_mode(ino, if *exec { 0o755 } else { 0o644 })?;
                        }
                    }
                }
                installed.insert(
                    f.skill_id.clone(),
                    json!({"version": f.version, "dir": f.dir}),
                );
            }
            txn.set_message("skills");
            txn.commit_with_event("skills_installed", &event)?;
            let text = serde_json::to_string(&installed).unwrap_or_default();
            sb.store().set_meta(&id, META_KEY, Some(&text))?;
            Ok(())
        })
        .await;
    match r {
        Ok(()) => tracing::info!(skills = summary.len(), "installed skills"),
        Err(e) => tracing::warn!(error = %e, "could not write the skills into the session"),
    }
}

/// Whether `/workspace/skills/DIR` exists in the session now.
async fn present(it: &Item, dir: &str) -> bool {
    if dir.is_empty() {
        return false;
    }
    let (id, path) = (it.burrow_id.clone(), format!("{SKILLS_DIR}/{dir}"));
    it.core
        .blocking(move |sb| {
            let mut txn = sb.store().begin(&id)?;
            Ok(txn.resolve(burrow_store::ROOT_INO, &path, false).is_ok())
        })
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data, mode) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(*mode);
            h.set_entry_type(tar::EntryType::Regular);
            // set_path refuses `..`; write the raw name as a hostile archive would.
            let raw = &mut h.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn subagents_skills_come_after_the_agents_the_first_version_winning() {
        let agent = json!({
            "skills": [{"skill_id": "a", "version": "1"}],
            "multiagent": {"type": "coordinator", "agents": [
                {"type": "agent", "skills": [{"skill_id": "b", "version": "2"}, {"skill_id": "a", "version": "9"}]},
                {"type": "advisor", "skills": [{"skill_id": "c", "version": "3"}]},
            ]},
        });
        let ids: Vec<String> = skills_with_subagents(&agent)
            .iter()
            .map(|s| {
                format!(
                    "{}@{}",
                    s["skill_id"].as_str().unwrap(),
                    s["version"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(ids, ["a@1", "b@2"]);
        let agent = json!({
            "skills": [],
            "multiagent": {"type": "multiagent_20261001",
                "subagents": {"type": "enabled", "predefined_agents": [{"skills": [{"skill_id": "s", "version": "1"}]}]},
                "workflows": {"type": "disabled", "predefined_agents": [{"skills": [{"skill_id": "w", "version": "1"}]}]}},
        });
        let skills = skills_with_subagents(&agent);
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0]["skill_id"], "s");
    }

    #[test]
    fn wrapper_stripped_modes_kept() {
        let t = tar_of(&[
            ("pdf/SKILL.md", b"# pdf", 0o644),
            ("pdf/scripts/run.sh", b"#!/bin/sh", 0o755),
        ]);
        assert_eq!(
            unpack(&t).unwrap(),
            vec![
                Member::File("SKILL.md".into(), b"# pdf".to_vec(), false),
                Member::File("scripts/run.sh".into(), b"#!/bin/sh".to_vec(), true),
            ]
        );
        // Two top-level entries: nothing stripped.
        let t = tar_of(&[("a.md", b"a", 0o644), ("b/c.md", b"c", 0o644)]);
        assert_eq!(unpack(&t).unwrap().len(), 2);
        assert!(matches!(&unpack(&t).unwrap()[1], Member::File(p, ..) if p == "b/c.md"));
    }

    #[test]
    fn hostile_members_refuse_the_archive() {
        let t = tar_of(&[
            ("ok/SKILL.md", b"x", 0o644),
            ("ok/../../etc/x", b"y", 0o644),
        ]);
        assert!(unpack(&t).unwrap_err().contains("'..'"));
        let t = tar_of(&[("/abs", b"y", 0o644)]);
        assert!(unpack(&t).unwrap_err().contains("absolute"));
        assert_eq!(dir_name("../../evil", "sk_1"), "evil");
        assert_eq!(dir_name("..", "sk_1"), "sk_1");
        assert_eq!(dir_name("  ", "sk_1"), "sk_1");
    }

    #[test]
    fn zip_archives() {
        use std::io::Write as _;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        w.start_file("tool/run.py", opts).unwrap();
        w.write_all(b"print(1)").unwrap();
        w.start_file("tool/README", opts.unix_permissions(0o644))
            .unwrap();
        w.write_all(b"hi").unwrap();
        let bytes = w.finish().unwrap().into_inner();
        assert_eq!(
            unpack(&bytes).unwrap(),
            vec![
                Member::File("run.py".into(), b"print(1)".to_vec(), true),
                Member::File("README".into(), b"hi".to_vec(), false),
            ]
        );
    }
}
