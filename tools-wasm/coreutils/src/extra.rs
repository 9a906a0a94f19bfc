//! More utilities agents use: base64, sha256sum, md5sum, diff (normal, -u, -q); awk lives
//! in its own module.

use std::fs;

use base64::Engine as _;
use sha2::Digest as _;

use sh_utility::Command;
use sh_utility::Ctx;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, read_all};

/// The commands this module runs, for the shell's registry.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "base64",
        run: |sh, argv, io| Ok(base64(sh, &argv[1..], io)),
    },
    Command {
        name: "sha256sum",
        run: |sh, argv, io| Ok(digest(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "md5sum",
        run: |sh, argv, io| Ok(digest(sh, argv[0].as_str(), &argv[1..], io)),
    },
    Command {
        name: "diff",
        run: |sh, argv, io| Ok(diff(sh, &argv[1..], io)),
    },
    Command {
        name: "rg",
        run: |sh, argv, io| Ok(rg(sh, &argv[1..], io)),
    },
    Command {
        name: "patch",
        run: |sh, argv, io| Ok(crate::patch::run(sh, &argv[1..], io)),
    },
    Command {
        name: "od",
        run: |sh, argv, io| Ok(crate::od::od(sh, &argv[1..], io)),
    },
];

/// A file operand's bytes (stdin for none or `-`, nothing for /dev/null), or the utility's
/// `cmd: FILE: reason` message and status 1.
pub fn input(sh: &dyn Ctx, cmd: &str, file: Option<&String>, io: &Io) -> Result<Vec<u8>, i32> {
    match file.map(String::as_str) {
        None | Some("-") => Ok(read_all(&io.stdin)),
        Some("/dev/null") => Ok(Vec::new()),
        Some(f) => sh_utility::sys::read(sh.path(f)).map_err(|e| {
            io.eprint(&format!("{cmd}: {f}: {}\n", io_msg(&e)));
            1
        }),
    }
}

/// `base64 [-d] [-i] [-w COLS] [FILE]`.
fn base64(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut decode = false;
    let mut ignore_garbage = false;
    let mut wrap = 76usize;
    let mut file: Option<&String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        // The gate hands each option on alone, its value as the next argument.
        match a.as_str() {
            "-w" => {
                let c = args.get(i).cloned().unwrap_or_default();
                i += 1;
                match c.parse::<usize>() {
                    Ok(n) => wrap = n,
                    Err(_) => {
                        io.eprint(&format!("base64: invalid wrap size: '{c}'\n"));
                        return 1;
                    }
                }
            }
            "-d" => decode = true,
            "-i" => ignore_garbage = true,
            _ => file = Some(a),
        }
    }
    let data = match input(sh, "base64", file, io) {
        Ok(d) => d,
        Err(c) => return c,
    };
    let engine = base64::engine::general_purpose::STANDARD;
    // Decoding is as lenient as GNU's about the unused bits of the last character.
    let config = base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true);
    let lenient = base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, config);
    // What decodes of a group cut short by a bad character (no padding there).
    let unpadded = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        config.with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    if decode {
        // Newlines are never data; with -i nothing outside the alphabet is.
        let alphabet = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
        let clean: Vec<u8> = data
            .into_iter()
            .filter(|&b| !(b == b'\n' || ignore_garbage && !alphabet(b)))
            .collect();
        match lenient.decode(&clean) {
            Ok(bytes) => {
                io.out.write(&bytes);
                0
            }
            Err(_) => {
                // GNU writes what decodes before the first bad character, then fails.
                let good = clean
                    .iter()
                    .position(|&b| !alphabet(b) || b == b'=')
                    .unwrap_or(clean.len());
                let full = good / 4 * 4;
                let mut out = lenient.decode(&clean[..full]).unwrap_or_default();
                let rest = &clean[full..good];
                if rest.len() >= 2 {
                    out.extend(unpadded.decode(rest).unwrap_or_default());
                }
                io.out.write(&out);
                io.eprint("base64: invalid input\n");
                1
            }
        }
    } else {
        let text = engine.encode(&data);
        let mut out = String::new();
        // -w 0: one line, without a final newline (as GNU's).
        if wrap == 0 {
            out.push_str(&text);
        }
        for chunk in text.as_bytes().chunks(wrap.max(1)).filter(|_| wrap > 0) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
        io.print(&out);
        0
    }
}

fn hex_digest(cmd: &str, data: &[u8]) -> String {
    let bytes: Vec<u8> = if cmd == "md5sum" {
        md5::Md5::digest(data).to_vec()
    } else {
        sha2::Sha256::digest(data).to_vec()
    };
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// GNU's count wording: "1 line is", "2 lines are".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `sha256sum`/`md5sum`: print checksums (`HEX  NAME`, `*NAME` with -b, BSD style with
/// --tag), or check them (-c) with GNU's report and warnings (--quiet, --status).
fn digest(sh: &dyn Ctx, cmd: &str, args: &[String], io: &Io) -> i32 {
    let mut files: Vec<&String> = Vec::new();
    let (mut check, mut binary, mut tag, mut quiet, mut status_only) =
        (false, false, false, false, false);
    let mut only_files = false;
    for a in args {
        if only_files || a == "-" || !a.starts_with('-') {
            files.push(a);
            continue;
        }
        match a.as_str() {
            "--" => only_files = true,
            "--quiet" => quiet = true,
            "--status" => status_only = true,
            "--tag" => tag = true,
            s if !s.starts_with("--") => {
                for c in s[1..].chars() {
                    match c {
                        'c' => check = true,
                        'b' => binary = true,
                        't' => binary = false,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if !check && (quiet || status_only) {
        let which = if quiet { "--quiet" } else { "--status" };
        io.eprint(&format!(
            "{cmd}: the {which} option is meaningful only when verifying checksums\nTry '{cmd} --help' for more information.\n"
        ));
        return 1;
    }
    let names: Vec<Option<&String>> = if files.is_empty() {
        vec![None]
    } else {
        files.into_iter().map(Some).collect()
    };
    let algo = if cmd == "md5sum" { "MD5" } else { "SHA256" };
    let hex_len = if cmd == "md5sum" { 32 } else { 64 };
    let mut status = 0;
    for f in names {
        let data = match input(sh, cmd, f, io) {
            Ok(d) => d,
            Err(c) => {
                status = c;
                continue;
            }
        };
        let name = f.map(String::as_str).unwrap_or("-");
        if !check {
            let hex = hex_digest(cmd, &data);
            if tag {
                io.print(&format!("{algo} ({name}) = {hex}\n"));
            } else {
                io.print(&format!("{hex} {}{name}\n", if binary { '*' } else { ' ' }));
            }
            continue;
        }
        // Check mode: each line names a file and its expected checksum.
        let text = String::from_utf8_lossy(&data).into_owned();
        let (mut bad_lines, mut failed, mut unreadable, mut good_lines) = (0, 0, 0, 0);
        for line in crate::text::lines(&text) {
            let parsed = if let Some(rest) = line.strip_prefix(&format!("{algo} (")) {
                rest.rsplit_once(") = ")
                    .map(|(n, h)| (h.to_string(), n.to_string()))
            } else {
                let h = line.get(..hex_len).unwrap_or("");
                let sep = line.get(hex_len..hex_len + 2).unwrap_or("");
                (matches!(sep, "  " | " *") && h.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| (h.to_string(), line[hex_len + 2..].to_string()))
            };
            let Some((want, file)) = parsed.filter(|(h, _)| h.len() == hex_len) else {
                bad_lines += 1;
                continue;
            };
            good_lines += 1;
            let got = match sh_utility::sys::read(sh.path(&file)) {
                Ok(d) => hex_digest(cmd, &d),
                Err(e) => {
                    unreadable += 1;
                    if !status_only {
                        io.eprint(&format!("{cmd}: {file}: {}\n", io_msg(&e)));
                        io.print(&format!("{file}: FAILED open or read\n"));
                    }
                    continue;
                }
            };
            if got.eq_ignore_ascii_case(&want) {
                if !quiet && !status_only {
                    io.print(&format!("{file}: OK\n"));
                }
            } else {
                failed += 1;
                if !status_only {
                    io.print(&format!("{file}: FAILED\n"));
                }
            }
        }
        if good_lines == 0 {
            io.eprint(&format!(
                "{cmd}: {name}: no properly formatted checksum lines found\n"
            ));
            status = 1;
            continue;
        }
        if !status_only {
            if bad_lines > 0 {
                io.eprint(&format!(
                    "{cmd}: WARNING: {} improperly formatted\n",
                    plural(bad_lines, "line is", "lines are")
                ));
            }
            if unreadable > 0 {
                io.eprint(&format!(
                    "{cmd}: WARNING: {} not be read\n",
                    plural(unreadable, "listed file could", "listed files could")
                ));
            }
            if failed > 0 {
                io.eprint(&format!(
                    "{cmd}: WARNING: {} NOT match\n",
                    plural(failed, "computed checksum did", "computed checksums did")
                ));
            }
        }
        if failed > 0 || unreadable > 0 {
            status = 1;
        }
    }
    status
}

fn diff(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    // Short options may be combined (`-ru`, `-rq`).
    let short = |c: char| {
        args.iter().any(|a| {
            a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].starts_with(|x: char| x.is_ascii_alphabetic())
                && a[1..].contains(c)
        })
    };
    // -u (3 lines of context), -U NUM / --unified[=NUM]; the files are the other operands.
    let mut unified: Option<usize> = short('u').then_some(3);
    let mut files: Vec<&String> = Vec::new();
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        k += 1;
        let num = if let Some(v) = a.strip_prefix("--unified") {
            Some(v.strip_prefix('=').unwrap_or("3").to_string())
        } else if a.starts_with('-') && !a.starts_with("--") && a.contains('U') {
            let rest = &a[a.find('U').map_or(a.len(), |i| i + 1)..];
            if rest.is_empty() {
                k += 1;
                args.get(k - 1).cloned()
            } else {
                Some(rest.to_string())
            }
        } else {
            if !a.starts_with('-') || a == "-" {
                files.push(a);
            }
            continue;
        };
        match num.as_deref().map(str::parse::<usize>) {
            Some(Ok(n)) => unified = Some(n),
            _ => {
                io.eprint(&format!(
                    "diff: invalid context length '{}'\ndiff: Try 'diff --help' for more information.\n",
                    num.unwrap_or_default()
                ));
                return 2;
            }
        }
    }
    // The gate hands --brief and --recursive on as -q and -r.
    let brief = short('q');
    if files.len() != 2 {
        io.eprint(&format!(
            "diff: {} operand after '{}'\ndiff: Try 'diff --help' for more information.\n",
            if files.len() < 2 { "missing" } else { "extra" },
            files.last().map(|s| s.as_str()).unwrap_or("diff")
        ));
        return 2;
    }
    let (a, b) = (files[0].clone(), files[1].clone());
    let is_dir = |p: &str| p != "-" && sh.path(p).is_dir();
    let recursive = short('r');
    // A directory and a file: the file of the same name in the directory.
    let inside = |d: &str, f: &str| {
        let name = f.rsplit('/').next().unwrap_or(f);
        format!("{}/{name}", d.trim_end_matches('/'))
    };
    match (is_dir(&a), is_dir(&b)) {
        (true, true) => {
            // The options as given, for the `diff ...` line before each pair of files.
            let opts: Vec<&str> = args
                .iter()
                .filter(|o| o.starts_with('-') && o.as_str() != "-")
                .map(String::as_str)
                .collect();
            diff_dirs(sh, &a, &b, &opts, recursive, unified, brief, io)
        }
        (true, false) => diff_pair(sh, &inside(&a, &b), &b, unified, brief, io),
        (false, true) => diff_pair(sh, &a, &inside(&b, &a), unified, brief, io),
        _ => diff_pair(sh, &a, &b, unified, brief, io),
    }
}

/// Two directories: names only in one (`Only in DIR: NAME`), files that differ (each after a
/// `diff OPTIONS A B` line), subdirectories compared with -r or listed as common without.
#[allow(clippy::too_many_arguments)]
fn diff_dirs(
    sh: &dyn Ctx,
    a: &str,
    b: &str,
    opts: &[&str],
    recursive: bool,
    unified: Option<usize>,
    brief: bool,
    io: &Io,
) -> i32 {
    let names = |d: &str| -> std::collections::BTreeSet<String> {
        fs::read_dir(sh.path(d))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (na, nb) = (names(a), names(b));
    let join = |d: &str, n: &str| format!("{}/{n}", d.trim_end_matches('/'));
    let mut status = 0;
    for n in na.union(&nb) {
        let (pa, pb) = (join(a, n), join(b, n));
        match (na.contains(n), nb.contains(n)) {
            (true, false) => {
                io.print(&format!("Only in {a}: {n}\n"));
                status = status.max(1);
            }
            (false, true) => {
                io.print(&format!("Only in {b}: {n}\n"));
                status = status.max(1);
            }
            _ => {
                let (da, db) = (sh.path(&pa).is_dir(), sh.path(&pb).is_dir());
                if da && db {
                    if recursive {
                        status = status
                            .max(diff_dirs(sh, &pa, &pb, opts, recursive, unified, brief, io));
                    } else {
                        io.print(&format!("Common subdirectories: {pa} and {pb}\n"));
                    }
                } else if da != db {
                    let kind = |d: bool| if d { "directory" } else { "regular file" };
                    io.print(&format!(
                        "File {pa} is a {} while file {pb} is a {}\n",
                        kind(da),
                        kind(db)
                    ));
                    status = status.max(1);
                } else {
                    let same = matches!(
                        (sh_utility::sys::read(sh.path(&pa)), sh_utility::sys::read(sh.path(&pb))),
                        (Ok(x), Ok(y)) if x == y
                    );
                    if !same {
                        if !brief {
                            io.print(
                                &format!("diff {} {pa} {pb}\n", opts.join(" "))
                                    .replace("diff  ", "diff "),
                            );
                        }
                        status = status.max(diff_pair(sh, &pa, &pb, unified, brief, io));
                    }
                }
            }
        }
    }
    status
}

/// Two files: normal, unified (-u) or brief (-q) output; 0 same, 1 different, 2 trouble.
fn diff_pair(sh: &dyn Ctx, a: &str, b: &str, unified: Option<usize>, brief: bool, io: &Io) -> i32 {
    let (a, b) = (&a.to_string(), &b.to_string());
    let (Ok(old), Ok(new)) = (
        input(sh, "diff", Some(a), io),
        input(sh, "diff", Some(b), io),
    ) else {
        return 2;
    };
    if old == new {
        return 0;
    }
    if brief {
        io.print(&format!("Files {a} and {b} differ\n"));
        return 1;
    }
    let (old, new) = (
        String::from_utf8_lossy(&old).into_owned(),
        String::from_utf8_lossy(&new).into_owned(),
    );
    let d = similar::TextDiff::from_lines(&old, &new);
    if let Some(radius) = unified {
        let mtime = |p: &str| {
            fs::metadata(sh.path(p))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| sh_utility::time::strftime(d.as_secs() as i64, "%F %T.000000000 +0000"))
                .unwrap_or_default()
        };
        let header_a = format!("{a}\t{}", mtime(a));
        let header_b = format!("{b}\t{}", mtime(b));
        let text = d
            .unified_diff()
            .context_radius(radius)
            .header(&header_a, &header_b)
            .to_string();
        io.print(&text);
        return 1;
    }
    // Normal format: `NaM`, `NcM`, `NdM` hunks with `<` and `>` lines.
    let mut out = String::new();
    let range = |s: usize, e: usize| {
        if e - s <= 1 {
            format!("{}", s + 1)
        } else {
            format!("{},{}", s + 1, e)
        }
    };
    for op in d.ops() {
        let (tag, o, n) = op.as_tag_tuple();
        let lines = |r: std::ops::Range<usize>, text: &str| -> Vec<String> {
            crate::text::lines(text)
                .skip(r.start)
                .take(r.len())
                .map(String::from)
                .collect()
        };
        match tag {
            similar::DiffTag::Equal => {}
            similar::DiffTag::Delete => {
                out.push_str(&format!("{}d{}\n", range(o.start, o.end), n.start));
                for l in lines(o, &old) {
                    out.push_str(&format!("< {l}\n"));
                }
            }
            similar::DiffTag::Insert => {
                out.push_str(&format!("{}a{}\n", o.start, range(n.start, n.end)));
                for l in lines(n, &new) {
                    out.push_str(&format!("> {l}\n"));
                }
            }
            similar::DiffTag::Replace => {
                out.push_str(&format!(
                    "{}c{}\n",
                    range(o.start, o.end),
                    range(n.start, n.end)
                ));
                for l in lines(o, &old) {
                    out.push_str(&format!("< {l}\n"));
                }
                out.push_str("---\n");
                for l in lines(n, &new) {
                    out.push_str(&format!("> {l}\n"));
                }
            }
        }
    }
    io.print(&out);
    1
}

/// rg: ripgrep's common flags on top of the shell's grep. Recursive by default, hidden files
/// and directories skipped (`--hidden` keeps them), binary files skipped, paths printed
/// without `./`, line numbers only with `-n` (ripgrep's behaviour when its output is not a
/// terminal, as in a tool call). Ignore files are honoured as ripgrep does (see
/// `ignore_walk.rs`): `.ignore`/`.rgignore` always, `.gitignore` inside a git repository;
/// `--no-ignore`/`-u` turns them off, `--no-ignore-vcs` only `.gitignore`, `--no-require-git`
/// applies `.gitignore` outside a repository too.
pub fn rg(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let mut g: Vec<String> = vec!["-r".into(), "-I".into(), "-E".into()];
    let mut hidden = false;
    let (mut no_ignore, mut no_vcs, mut no_require_git) = (false, false, false);
    let mut list_files = false;
    let mut smart = false;
    let mut pattern: Option<String> = None;
    let mut paths: Vec<String> = Vec::new();
    let mut i = 0;
    let value = |i: &mut usize| -> Option<String> {
        *i += 1;
        args.get(*i).cloned()
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-i" | "--ignore-case" => g.push("-i".into()),
            "-S" | "--smart-case" => smart = true,
            "-s" | "--case-sensitive" => {}
            "-n" | "--line-number" => g.push("-n".into()),
            "-N" | "--no-line-number" | "--no-heading" | "-H" | "--with-filename" => {}
            "-l" | "--files-with-matches" => g.push("-l".into()),
            "-c" | "--count" => g.push("-c".into()),
            "-w" | "--word-regexp" => g.push("-w".into()),
            "-v" | "--invert-match" => g.push("-v".into()),
            "-o" | "--only-matching" => g.push("-o".into()),
            "-F" | "--fixed-strings" => g.push("-F".into()),
            "-u" | "--no-ignore" => no_ignore = true,
            "--no-ignore-vcs" => no_vcs = true,
            "--no-require-git" => no_require_git = true,
            "-uu" | "-uuu" => {
                no_ignore = true;
                hidden = true;
            }
            "--hidden" | "-." => hidden = true,
            "--files" => list_files = true,
            "-A" | "-B" | "-C" | "-m" => {
                let Some(v) = value(&mut i) else {
                    io.eprint(&format!("rg: flag {a} requires a value\n"));
                    return 2;
                };
                g.push(a.into());
                g.push(v);
            }
            "-e" | "--regexp" => pattern = value(&mut i),
            "-g" | "--glob" => {
                let Some(v) = value(&mut i) else {
                    io.eprint("rg: flag -g requires a value\n");
                    return 2;
                };
                match v.strip_prefix('!') {
                    Some(ex) => g.push(format!("--exclude={ex}")),
                    None => g.push(format!("--include={v}")),
                }
            }
            "-t" | "--type" => {
                let Some(t) = value(&mut i) else {
                    io.eprint("rg: flag -t requires a value\n");
                    return 2;
                };
                let exts: &[&str] = match t.as_str() {
                    "rust" => &["rs"],
                    "py" => &["py", "pyi"],
                    "js" => &["js", "jsx", "mjs", "cjs"],
                    "ts" => &["ts", "tsx"],
                    "go" => &["go"],
                    "java" => &["java"],
                    "c" => &["c", "h"],
                    "cpp" => &["cpp", "cc", "cxx", "hpp", "hh", "h"],
                    "md" | "markdown" => &["md", "markdown"],
                    "json" => &["json"],
                    "yaml" => &["yaml", "yml"],
                    "toml" => &["toml"],
                    "sh" => &["sh", "bash"],
                    "html" => &["html", "htm"],
                    "css" => &["css"],
                    "txt" => &["txt"],
                    other => {
                        io.eprint(&format!("rg: unrecognized file type: {other}\n"));
                        return 2;
                    }
                };
                for e in exts {
                    g.push(format!("--include=*.{e}"));
                }
            }
            _ if a.starts_with("-A") || a.starts_with("-B") || a.starts_with("-C") => {
                g.push(a.into())
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                io.eprint(&format!("rg: unrecognized flag {a}\n"));
                return 2;
            }
            _ => {
                if pattern.is_none() && !list_files {
                    pattern = Some(a.to_string());
                } else {
                    paths.push(a.to_string());
                }
            }
        }
        i += 1;
    }
    let ignore = (!no_ignore).then(|| {
        let first = sh.path(paths.first().map_or(".", |p| p.as_str()));
        !no_vcs && (no_require_git || in_git_repo(&first))
    });
    if let Some(vcs) = ignore {
        g.push(format!(
            "--burrow-ignore={}",
            if vcs { "all" } else { "dot" }
        ));
    }
    if !hidden {
        // `.[!.]*`: hidden names, but not the `.` operand itself.
        g.push("--exclude-dir=.[!.]*".into());
        g.push("--exclude=.[!.]*".into());
    }
    if list_files {
        let mut out = Vec::new();
        let roots = if paths.is_empty() {
            vec![".".to_string()]
        } else {
            paths
        };
        for root in roots {
            list(&sh.path(&root), &root, hidden, ignore, &mut out);
        }
        out.sort();
        for f in &out {
            io.print(&format!("{f}\n"));
        }
        return i32::from(out.is_empty());
    }
    let Some(mut pattern) = pattern else {
        io.eprint("rg: no pattern given\n");
        return 2;
    };
    if smart && !pattern.chars().any(char::is_uppercase) {
        g.push("-i".into());
    }
    if pattern.starts_with('-') {
        g.push("-e".into());
    } else {
        g.push("--".into());
    }
    g.push(std::mem::take(&mut pattern));
    if paths.is_empty() {
        // ripgrep searches the current directory and names files without `./`.
        g.push(".".into());
        let (sink, buf) = sh_utility::io::Sink::buffer();
        let inner = Io {
            stdin: io.stdin.clone(),
            out: sink,
            err: io.err.clone(),
            fds: io.fds.clone(),
        };
        let status = crate::text::grep(sh, "rg", &g, &inner);
        // One write of the whole answer (a write per line is a host call per line), its
        // bytes as grep found them (a line need not be UTF-8).
        let found = buf.borrow();
        let mut out = Vec::with_capacity(found.len());
        for line in found.split_inclusive(|&b| b == b'\n') {
            out.extend_from_slice(line.strip_prefix(b"./").unwrap_or(line));
        }
        io.out.write(&out);
        return status;
    }
    // One file operand: ripgrep prints the lines alone.
    if paths.len() == 1 && sh.path(&paths[0]).is_file() {
        g.insert(0, "-h".into());
    }
    g.extend(paths);
    crate::text::grep(sh, "rg", &g, io)
}

/// Whether `path` is inside a git repository: a `.git` in it or an ancestor (within the
/// workspace).
fn in_git_repo(path: &std::path::Path) -> bool {
    let path = sh_utility::path::lexical(path);
    path.ancestors()
        .take_while(|a| a.starts_with("/workspace"))
        .any(|a| a.join(".git").exists())
}

/// Files under `dir` for `rg --files`, named as `shown/...` (or bare when shown is ".").
fn list(
    dir: &std::path::Path,
    shown: &str,
    hidden: bool,
    ignore: Option<bool>,
    out: &mut Vec<String>,
) {
    if dir.is_file() {
        out.push(shown.to_string());
        return;
    }
    let mut all = Vec::new();
    let root = if shown == "." {
        ""
    } else {
        shown.trim_end_matches('/')
    };
    match ignore {
        Some(vcs) => crate::ignore_walk::walk(dir, root, vcs, &mut all),
        None => crate::text::walk_typed(dir, root, &mut all),
    }
    for (disp, _, kind) in all {
        let disp = disp.strip_prefix('/').unwrap_or(&disp).to_string();
        let rel = disp.strip_prefix(root).unwrap_or(&disp);
        if !hidden && rel.split('/').any(|c| c.starts_with('.')) {
            continue;
        }
        if kind == crate::text::Kind::File {
            out.push(disp);
        }
    }
}
