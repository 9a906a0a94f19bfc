//! fs-tools: the file tools every tool family shares, as one WASI component.
//!
//! Protocol: a JSON [`Request`] on stdin, a JSON [`Response`] on stdout, exit code 0 (even
//! for tool errors: those are data). Paths are relative to the workspace root, which is the
//! working directory; the host has already resolved the caller's path and checked it stays
//! inside. This component does the operation and reports facts (sizes, counts, matches,
//! error kinds); each family's exact wording is the host adapter's job, so the semantics are
//! implemented once.

use std::fs;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::time::UNIX_EPOCH;

use base64::Engine as _;

use fs_proto::{
    EditReply, Entry, Failure, Found, GlobReply, Grep, GrepFile, GrepLine, GrepReply, InsertReply,
    ListReply, ReadReply, Request, Response, WriteReply,
};

fn io(e: std::io::Error) -> Failure {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => Failure::NotFound,
        K::NotADirectory => Failure::NotADirectory,
        K::IsADirectory => Failure::IsADirectory,
        K::PermissionDenied => Failure::PermissionDenied,
        K::AlreadyExists => Failure::Exists,
        _ if e.raw_os_error() == Some(32) => Failure::Loop, // wasi ELOOP
        _ => Failure::Io {
            message: e.to_string(),
        },
    }
}

fn mtime_ns(m: &fs::Metadata) -> i128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

fn regular(path: &str) -> Result<fs::Metadata, Failure> {
    let m = fs::metadata(path).map_err(io)?;
    if !m.is_file() {
        return Err(Failure::NotRegular);
    }
    Ok(m)
}

fn read(path: &str, max: Option<u64>) -> Result<ReadReply, Failure> {
    let m = regular(path)?;
    if let Some(limit) = max
        && m.len() > limit
    {
        return Err(Failure::TooLarge {
            size: m.len(),
            limit,
        });
    }
    let bytes = fs::read(path).map_err(io)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => ReadReply {
            size: m.len(),
            text: Some(text),
            base64: None,
        },
        Err(e) => ReadReply {
            size: m.len(),
            text: None,
            base64: Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
        },
    })
}

fn write(path: &str, content: &str, mkdirs: bool) -> Result<WriteReply, Failure> {
    let existed = match fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(Failure::IsADirectory),
        Ok(_) => true,
        Err(_) => false,
    };
    if mkdirs
        && let Some(parent) = Path::new(path).parent()
        && !parent.as_os_str().is_empty()
    {
        fs::create_dir_all(parent).map_err(io)?;
    }
    fs::write(path, content).map_err(io)?;
    Ok(WriteReply {
        existed,
        bytes: content.len(),
    })
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

fn edit(
    path: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    max: Option<u64>,
    crlf: bool,
) -> Result<EditReply, Failure> {
    let m = regular(path)?;
    if let Some(limit) = max
        && m.len() > limit
    {
        return Err(Failure::TooLarge {
            size: m.len(),
            limit,
        });
    }
    let bytes = fs::read(path).map_err(io)?;
    let text = String::from_utf8(bytes).map_err(|_| Failure::NotUtf8)?;
    let uses_crlf = crlf && text.contains("\r\n");
    let work = if uses_crlf {
        text.replace("\r\n", "\n")
    } else {
        text
    };
    let positions: Vec<usize> = if old.is_empty() {
        Vec::new()
    } else {
        work.match_indices(old).map(|(i, _)| i).collect()
    };
    let count = positions.len();
    if count == 0 {
        return Err(Failure::StringNotFound);
    }
    if count > 1 && !replace_all {
        let lines = positions.iter().map(|&p| line_of(&work, p)).collect();
        return Err(Failure::Multiple { count, lines });
    }
    if let Some(limit) = max
        && replace_all
        && count > 1
    {
        let grown = m.len() as i128 + count as i128 * (new.len() as i128 - old.len() as i128);
        if grown > limit as i128 {
            return Err(Failure::Grows {
                count,
                size: grown.max(0) as u64,
                limit,
            });
        }
    }
    let first_line = line_of(&work, positions[0]);
    let updated = if replace_all {
        work.replace(old, new)
    } else {
        work.replacen(old, new, 1)
    };
    let out = if uses_crlf {
        updated.replace('\n', "\r\n")
    } else {
        updated.clone()
    };
    fs::write(path, &out).map_err(io)?;
    Ok(EditReply {
        count,
        replaced: if replace_all { count } else { 1 },
        first_line,
        text: updated,
    })
}

fn insert(path: &str, line: u64, text: &str) -> Result<InsertReply, Failure> {
    regular(path)?;
    let content = fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => Failure::NotUtf8,
        _ => io(e),
    })?;
    let mut lines: Vec<&str> = content.split('\n').collect();
    let n = if content.is_empty() { 0 } else { lines.len() };
    if line as usize > n {
        return Err(Failure::InvalidLine { lines: n });
    }
    if content.is_empty() {
        lines.clear();
    }
    let inserted: Vec<&str> = text.split('\n').collect();
    let at = line as usize;
    let mut out: Vec<&str> = lines[..at].to_vec();
    out.extend(inserted.iter());
    out.extend(lines[at..].iter());
    let updated = out.join("\n");
    fs::write(path, &updated).map_err(io)?;
    Ok(InsertReply {
        text: updated,
        lines: n,
    })
}

/// Walks `root` (not following symlinked directories), calling `f` for every regular file,
/// and every directory too with `dirs` (symlinks are skipped: a link must not widen what the
/// tools read). `f` returns false to stop.
fn walk(
    root: &str,
    skip: &[String],
    dirs: bool,
    f: &mut dyn FnMut(&str, &fs::Metadata) -> bool,
) -> Result<(), Failure> {
    let mut stack = vec![root.to_string()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        // Name order: a directory's files, then its subdirectories depth first.
        let mut subdirs = Vec::new();
        for e in entries.iter() {
            let name = e.file_name().to_string_lossy().into_owned();
            let p = if dir == "." {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if skip.contains(&name) {
                    continue;
                }
                if dirs
                    && let Ok(m) = e.metadata()
                    && !f(&p, &m)
                {
                    return Ok(());
                }
                subdirs.push(p);
            } else if ft.is_file() {
                let Ok(m) = e.metadata() else { continue };
                if !f(&p, &m) {
                    return Ok(());
                }
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

fn glob(pattern: &str, path: &str, limit: usize, files_only: bool) -> Result<GlobReply, Failure> {
    let m = fs::metadata(path).map_err(io)?;
    if !m.is_dir() {
        return Err(Failure::NotADirectory);
    }
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| Failure::InvalidPattern {
            message: e.to_string(),
        })?
        .compile_matcher();
    let mut found: Vec<(i128, String)> = Vec::new();
    walk(path, &[], !files_only, &mut |p, m| {
        let rel = p
            .strip_prefix(path)
            .map(|r| r.trim_start_matches('/'))
            .unwrap_or(p);
        let rel = if path == "." { p } else { rel };
        if matcher.is_match(rel) {
            found.push((mtime_ns(m), p.to_string()));
        }
        found.len() < 50_000
    })?;
    // Newest first; ties by path so the order is stable.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    found.truncate(limit);
    let matches: Vec<_> = found
        .into_iter()
        .map(|(t, p)| Found {
            path: p,
            mtime_ns: t.to_string(),
        })
        .collect();
    Ok(GlobReply { total, matches })
}

/// The `.gitignore` files found so far, by the directory they are in, matched with git's
/// rules by the `ignore` crate (ripgrep's own matcher: negations, anchoring, directory-only
/// patterns, `**`).
type Ignores = Vec<(String, ignore::gitignore::Gitignore)>;

/// Whether `path` is ignored: the deepest `.gitignore` above it with an opinion decides (a
/// `!pattern` there un-ignores), as git does.
fn gitignored(path: &str, is_dir: bool, rules: &Ignores) -> bool {
    let mut applicable: Vec<&(String, ignore::gitignore::Gitignore)> = rules
        .iter()
        .filter(|(base, _)| base == "." || path.starts_with(&format!("{base}/")))
        .collect();
    applicable.sort_by_key(|(base, _)| std::cmp::Reverse(base.len()));
    for (_, g) in applicable {
        match g.matched_path_or_any_parents(path, is_dir) {
            ignore::Match::Ignore(_) => return true,
            ignore::Match::Whitelist(_) => return false,
            ignore::Match::None => {}
        }
    }
    false
}

fn load_gitignore(dir: &str, rules: &mut Ignores) {
    let file = if dir == "." {
        ".gitignore".to_string()
    } else {
        format!("{dir}/.gitignore")
    };
    if !Path::new(&file).is_file() {
        return;
    }
    let mut b = ignore::gitignore::GitignoreBuilder::new(dir);
    // A line git cannot read is skipped, as git skips it; the rest still apply.
    let _ = b.add(&file);
    if let Ok(g) = b.build() {
        rules.push((dir.to_string(), g));
    }
}

/// Lines touched by matches of `rx` over the whole text (a match may span lines).
fn multiline_hits(rx: &regex::Regex, lines: &[String]) -> Vec<usize> {
    let text = lines.join("\n");
    let mut starts = Vec::with_capacity(lines.len());
    let mut at = 0;
    for l in lines {
        starts.push(at);
        at += l.len() + 1;
    }
    let line_at = |b: usize| starts.partition_point(|&s| s <= b).saturating_sub(1);
    let mut hit = std::collections::BTreeSet::new();
    for m in rx.find_iter(&text) {
        let end = if m.end() > m.start() {
            m.end() - 1
        } else {
            m.start()
        };
        for i in line_at(m.start())..=line_at(end) {
            hit.insert(i);
        }
    }
    hit.into_iter().collect()
}

fn grep(r: Grep) -> Result<GrepReply, Failure> {
    let rx = regex::RegexBuilder::new(&r.pattern)
        .case_insensitive(r.ignore_case)
        .multi_line(true)
        .dot_matches_new_line(r.multiline)
        .build()
        .map_err(|e| Failure::InvalidPattern {
            message: e.to_string(),
        })?;
    let compile = |globs: &[String]| -> Result<Vec<globset::GlobMatcher>, Failure> {
        globs
            .iter()
            .map(|g| {
                globset::Glob::new(g)
                    .map(|g| g.compile_matcher())
                    .map_err(|e| Failure::InvalidPattern {
                        message: e.to_string(),
                    })
            })
            .collect()
    };
    let all: Vec<String> = r.glob.iter().chain(r.globs.iter()).cloned().collect();
    let filters = compile(&all)?;
    let any = compile(&r.any_globs)?;
    let not = compile(&r.not_globs)?;
    let meta = fs::metadata(&r.path).map_err(io)?;
    let mut files: Vec<GrepFile> = Vec::new();
    let mut total = 0usize;
    let mut truncated = false;
    let rules = std::cell::RefCell::new(Vec::new());
    if r.gitignore && meta.is_dir() {
        load_gitignore(&r.path, &mut rules.borrow_mut());
    }
    let mut scan = |p: &str, m: &fs::Metadata| -> bool {
        let name = p.rsplit('/').next().unwrap_or(p);
        let hit = |f: &globset::GlobMatcher| f.is_match(p) || f.is_match(name);
        if filters.iter().any(|f| !hit(f))
            || (!any.is_empty() && !any.iter().any(hit))
            || not.iter().any(hit)
        {
            return true;
        }
        if r.gitignore && gitignored(p, false, &rules.borrow()) {
            return true;
        }
        let Ok(file) = fs::File::open(p) else {
            return true;
        };
        let mut head = Vec::new();
        let mut reader = std::io::BufReader::new(file);
        if reader.by_ref().take(512).read_to_end(&mut head).is_err() || head.contains(&0) {
            return true;
        }
        let Ok(file) = fs::File::open(p) else {
            return true;
        };
        let lines: Vec<String> = std::io::BufReader::new(file)
            .split(b'\n')
            .map_while(Result::ok)
            .map(|l| {
                let mut s = String::from_utf8_lossy(&l).into_owned();
                if !r.keep_cr && s.ends_with('\r') {
                    s.pop();
                }
                s
            })
            .collect();
        let mut hits: Vec<GrepLine> = Vec::new();
        let mut shown = std::collections::BTreeSet::new();
        let mut matched = Vec::new();
        let mut candidates: Vec<usize> = if r.multiline {
            multiline_hits(&rx, &lines)
        } else {
            (0..lines.len())
                .filter(|&i| rx.is_match(&lines[i]))
                .collect()
        };
        candidates.retain(|&i| r.max_line.is_none_or(|max| lines[i].len() <= max));
        for i in candidates {
            matched.push(i);
            total += 1;
            if r.max_matches.is_some_and(|max| total >= max) {
                truncated = true;
                break;
            }
        }
        if matched.is_empty() {
            return !truncated;
        }
        for &i in &matched {
            let lo = i.saturating_sub(r.before);
            let hi = (i + r.after).min(lines.len().saturating_sub(1));
            for j in lo..=hi {
                shown.insert(j);
            }
        }
        let matched: std::collections::HashSet<usize> = matched.into_iter().collect();
        for j in shown {
            let count = if matched.contains(&j) {
                rx.find_iter(&lines[j]).count()
            } else {
                0
            };
            hits.push(GrepLine {
                line: j + 1,
                text: lines[j].strip_suffix('\r').unwrap_or(&lines[j]).to_string(),
                is_match: matched.contains(&j),
                count,
            });
        }
        files.push(GrepFile {
            path: p.to_string(),
            mtime_ns: mtime_ns(m).to_string(),
            lines: hits,
        });
        !truncated
    };
    if meta.is_file() {
        scan(&r.path, &meta);
    } else {
        walk(&r.path, &r.skip_dirs, false, &mut |p, m| {
            if r.gitignore {
                let dir = p.rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
                let known = rules.borrow().iter().any(|(b, _)| b == dir);
                if !known && Path::new(&format!("{dir}/.gitignore")).exists() {
                    load_gitignore(dir, &mut rules.borrow_mut());
                }
            }
            scan(p, m)
        })?;
    }
    Ok(GrepReply {
        files,
        total,
        truncated,
    })
}

fn list(path: &str, depth: usize) -> Result<ListReply, Failure> {
    let m = fs::metadata(path).map_err(io)?;
    if !m.is_dir() {
        return Err(Failure::NotADirectory);
    }
    let mut out = Vec::new();
    let mut stack = vec![(path.to_string(), 0usize)];
    while let Some((dir, d)) = stack.pop() {
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let p = if dir == "." {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            let size = e.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(Entry {
                path: p.clone(),
                dir: is_dir,
                size,
            });
            if is_dir && d + 1 < depth {
                stack.push((p, d + 1));
            }
        }
    }
    Ok(ListReply { entries: out })
}

fn main() {
    if let Ok(pwd) = std::env::var("PWD") {
        let _ = std::env::set_current_dir(pwd);
    }
    let mut input = String::new();
    let request = match std::io::stdin().read_to_string(&mut input) {
        Err(e) => Err(io(e)),
        Ok(_) => serde_json::from_str::<Request>(&input).map_err(|e| Failure::Io {
            message: format!("bad request: {e}"),
        }),
    };
    fn answer<T: serde::Serialize>(r: Result<T, Failure>) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&match r {
            Ok(t) => Response::Ok(t),
            Err(f) => Response::Err(f),
        })
    }
    let out = match request {
        Err(f) => answer::<()>(Err(f)),
        Ok(Request::Read(r)) => answer(read(&r.path, r.max_bytes)),
        Ok(Request::Write(w)) => answer(write(&w.path, &w.content, w.mkdirs)),
        Ok(Request::Edit(e)) => answer(edit(
            &e.path,
            &e.old,
            &e.new,
            e.replace_all,
            e.max_bytes,
            e.crlf,
        )),
        Ok(Request::Insert(i)) => answer(insert(&i.path, i.line, &i.text)),
        Ok(Request::Glob(g)) => answer(glob(&g.pattern, &g.path, g.limit, g.files_only)),
        Ok(Request::Grep(g)) => answer(grep(g)),
        Ok(Request::List(l)) => answer(list(&l.path, l.depth)),
    }
    .unwrap_or_else(|_| b"{\"err\":{\"kind\":\"io\",\"message\":\"unencodable\"}}".to_vec());
    let _ = std::io::stdout().write_all(&out);
}
