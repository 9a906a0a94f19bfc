//! Distributions named on the command line rather than found on an index: local wheels,
//! local projects and sdists (`pip install .`, `-e .`, `x-1.0.tar.gz`), and direct references
//! (`name @ URL`, or a URL alone). Each is read or fetched, checked, built when it is source,
//! and pinned: its requirement becomes `name==version`, and the resolver takes the file
//! instead of asking the index.

use std::collections::HashMap;
use std::path::Path;

use super::index::{self, File, Kind};
use super::options::{InstallOpts, lexical};
use super::req::{Requirement, normalize};
use super::site::hex_sha256;
use super::version::Version;
use super::{PipCx, build};

/// The pinned files by project: version, file, wheel bytes, and PEP 610's `direct_url.json`
/// (for what came from a path or URL rather than a wheel file).
pub(super) type Local = HashMap<String, (Version, File, Vec<u8>, Option<String>)>;

/// Reads, fetches and builds what `o` names directly, adding each one's pinned requirement
/// to `o.reqs` and each project built from source to `built`; on failure the messages are
/// printed and the status returned.
pub(super) fn collect<'a>(
    ctx: &PipCx,
    o: &mut InstallOpts,
    build_opts: &dyn Fn(bool) -> build::BuildOpts<'a>,
    built: &mut Vec<String>,
) -> Result<Local, i32> {
    // A local wheel is read, checked like a downloaded one and pinned: its requirement is
    // `name==version`, and the resolver takes the file instead of asking the index. A local
    // project (a directory or an sdist) is built into such a wheel first.
    let mut local = Local::new();
    for (path, editable) in &o.sources {
        let abs = lexical(&ctx.sh.path(path));
        let abs_s = abs.to_string_lossy().into_owned();
        let is_dir = abs.is_dir();
        if *editable && !is_dir {
            ctx.io.eprint(&format!(
                "ERROR: {path} is not a valid editable requirement. It should either be a path to a local project or a VCS URL (beginning with bzr+http, bzr+https, bzr+ssh, bzr+sftp, bzr+ftp, bzr+lp, bzr+file, git+http, git+https, git+ssh, git+git, git+file, hg+file, hg+http, hg+https, hg+ssh, hg+static-http, svn+ssh, svn+http, svn+https, svn+svn, svn+file).\n"
            ));
            return Err(1);
        }
        let bytes = if is_dir {
            None
        } else {
            match sh_utility::sys::read(&abs) {
                Ok(b) => Some(b),
                Err(_) => {
                    let looks = path.contains('/') || path.starts_with('.');
                    ctx.io.eprint(&if looks {
                        format!("ERROR: Invalid requirement: '{path}'\nHint: It looks like a path. File '{path}' does not exist.\n")
                    } else {
                        format!("ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: '{path}'\n")
                    });
                    return Err(1);
                }
            }
        };
        // pip's display_path: under the working directory, relative to it.
        let shown = match abs_s.strip_prefix(ctx.sh.cwd().trim_end_matches('/')) {
            Some(rest) if rest.starts_with('/') => format!(".{rest}"),
            _ => abs_s.clone(),
        };
        ctx.say(&if *editable {
            format!("Obtaining file://{abs_s}")
        } else {
            format!("Processing {shown}")
        });
        let file_name = abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = match &bytes {
            Some(b) => build::Source::Archive {
                filename: &file_name,
                bytes: b,
            },
            None => build::Source::Dir(&abs),
        };
        let label = file_name
            .split(['-', '.'])
            .next()
            .filter(|n| !n.is_empty())
            .unwrap_or("project")
            .to_string();
        let made = build::build(ctx, &label, source, &build_opts(*editable))?;
        let key = made
            .filename
            .split('-')
            .next()
            .map(normalize)
            .unwrap_or_default();
        let Some(version) = made.filename.split('-').nth(1).and_then(Version::parse) else {
            ctx.io.eprint(&format!(
                "ERROR: {} is not a valid wheel filename.\n",
                made.filename
            ));
            return Err(1);
        };
        pin(ctx, &mut o.reqs, &format!("{key}=={version}"))?;
        built.push(key.clone());
        let direct_url = if is_dir {
            serde_json::json!({"url": format!("file://{abs_s}"), "dir_info": if *editable { serde_json::json!({"editable": true}) } else { serde_json::json!({}) }})
        } else {
            serde_json::json!({"url": format!("file://{abs_s}"), "archive_info": {"hash": format!("sha256={}", hex_sha256(bytes.as_deref().unwrap_or_default()))}})
        };
        let file = File {
            filename: made.filename,
            url: abs_s,
            sha256: None,
            requires_python: None,
            yanked: false,
        };
        local.insert(
            key,
            (version, file, made.wheel, Some(direct_url.to_string())),
        );
    }
    // Direct references (`name @ URL`, or a URL alone): the file is fetched (through the
    // policy, or read for file://), checked against a `#sha256=` fragment, built when it is
    // an sdist, and pinned like a local wheel.
    let mut direct: Vec<(Option<Requirement>, String)> =
        o.urls.iter().map(|u| (None, u.clone())).collect();
    let (with_url, plain): (Vec<Requirement>, Vec<Requirement>) = std::mem::take(&mut o.reqs)
        .into_iter()
        .partition(|r| r.url.is_some());
    o.reqs = plain;
    for r in with_url {
        if r.applies(&[]).unwrap_or(false) {
            let url = r.url.clone().unwrap_or_default();
            direct.push((Some(r), url));
        }
    }
    for (req, url) in direct {
        let (address, fragment) = url.split_once('#').unwrap_or((&url, ""));
        let file_name = address
            .split('?')
            .next()
            .unwrap_or(address)
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let want_hash = fragment
            .split('&')
            .find_map(|f| f.strip_prefix("sha256="))
            .map(str::to_string);
        ctx.say(&match &req {
            Some(r) => format!("Collecting {} @ {url}", r.name),
            None => format!("Collecting {url}"),
        });
        let bytes = if let Some(path) = address.strip_prefix("file://") {
            match sh_utility::sys::read(Path::new(path)) {
                Ok(b) => b,
                Err(_) => {
                    ctx.io.eprint(&format!(
                        "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: '{path}'\n"
                    ));
                    return Err(1);
                }
            }
        } else {
            match sh_curl::get(address, "*/*", "pip/24.0 (burrow)") {
                Ok(f) if f.status == 200 => f.body,
                Ok(f) => {
                    ctx.io.eprint(&format!(
                        "ERROR: HTTP error {} while getting {address}\n",
                        f.status
                    ));
                    return Err(1);
                }
                Err(why) => {
                    ctx.io.eprint(&format!(
                        "ERROR: Could not install packages due to an OSError: {why} ({address})\n"
                    ));
                    return Err(1);
                }
            }
        };
        let got = hex_sha256(&bytes);
        if let Some(want) = &want_hash
            && !got.eq_ignore_ascii_case(want)
        {
            ctx.io.eprint(&format!(
                "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have tampered with them.\n    {} from {url}:\n        Expected sha256 {want}\n             Got        {got}\n",
                req.as_ref().map_or(file_name.as_str(), |r| r.name.as_str())
            ));
            return Err(1);
        }
        let guess = file_name
            .split('-')
            .next()
            .map(normalize)
            .unwrap_or_default();
        let kind = index::classify(&guess, &file_name)
            .map(|(_, k)| k)
            .or_else(|| {
                file_name
                    .rsplit_once('-')
                    .and_then(|(n, _)| index::classify(&normalize(n), &file_name))
                    .map(|(_, k)| k)
            });
        let (filename, wheel) = match kind {
            Some(Kind::Pure) => (file_name.clone(), bytes.clone()),
            Some(Kind::Sdist) => {
                let label = req.as_ref().map_or(guess.clone(), |r| r.key());
                match build::build(
                    ctx,
                    &label,
                    build::Source::Archive {
                        filename: &file_name,
                        bytes: &bytes,
                    },
                    &build_opts(false),
                ) {
                    Ok(m) => (m.filename, m.wheel),
                    Err(code) => return Err(code),
                }
            }
            Some(Kind::Binary) => {
                ctx.io.eprint(&format!(
                    "ERROR: {file_name} is not a supported wheel on this platform.\nburrow: it holds compiled code; burrow's CPython runs as WebAssembly (WASI), so only pure-Python wheels (py3-none-any) can be installed\n"
                ));
                return Err(1);
            }
            None => {
                ctx.io.eprint(&format!(
                    "ERROR: Cannot unpack file {file_name} (downloaded from {address}): not a wheel or a source archive (.tar.gz, .zip) pip recognises\n"
                ));
                return Err(1);
            }
        };
        let key = filename
            .split('-')
            .next()
            .map(normalize)
            .unwrap_or_default();
        let Some(version) = filename.split('-').nth(1).and_then(Version::parse) else {
            ctx.io.eprint(&format!(
                "ERROR: {filename} is not a valid wheel filename.\n"
            ));
            return Err(1);
        };
        if let Some(r) = &req
            && r.key() != key
        {
            ctx.io.eprint(&format!(
                "ERROR: Requested {} from {url} has different name in metadata: '{key}'\n",
                r.name
            ));
            return Err(1);
        }
        let extras = req
            .as_ref()
            .filter(|r| !r.extras.is_empty())
            .map(|r| format!("[{}]", r.extras.join(",")))
            .unwrap_or_default();
        pin(ctx, &mut o.reqs, &format!("{key}{extras}=={version}"))?;
        if kind == Some(Kind::Sdist) {
            built.push(key.clone());
        }
        let direct_url = serde_json::json!({
            "url": address,
            "archive_info": {"hash": format!("sha256={got}")},
        });
        let file = File {
            filename,
            url: address.to_string(),
            sha256: None,
            requires_python: None,
            yanked: false,
        };
        local.insert(key, (version, file, wheel, Some(direct_url.to_string())));
    }
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
            return Err(1);
        };
        if kind != Kind::Pure {
            ctx.io.eprint(&format!(
                "ERROR: {file_name} is not a supported wheel on this platform.\nburrow: it holds compiled code; burrow's CPython runs as WebAssembly (WASI), so only pure-Python wheels (py3-none-any) can be installed\n"
            ));
            return Err(1);
        }
        let bytes = match sh_utility::sys::read(ctx.sh.path(path)) {
            Ok(b) => b,
            Err(_) => {
                ctx.io.eprint(&format!(
                    "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: '{path}'\n"
                ));
                return Err(1);
            }
        };
        pin(ctx, &mut o.reqs, &format!("{key}=={version}"))?;
        let file = File {
            filename: file_name,
            url: path.clone(),
            sha256: None,
            requires_python: None,
            yanked: false,
        };
        local.insert(key, (version, file, bytes, None));
    }
    Ok(local)
}

/// Adds `name==version` (with extras) to the requirements: what a direct file pins.
fn pin(ctx: &PipCx, reqs: &mut Vec<Requirement>, text: &str) -> Result<(), i32> {
    let r = Requirement::parse(text).map_err(|why| {
        ctx.io.eprint(&format!("ERROR: {why}\n"));
        1
    })?;
    reqs.push(r);
    Ok(())
}
