//! More utilities agents use: base64, sha256sum, md5sum, diff (normal, -u, -q); awk lives
//! in its own module.

use std::fs;

use base64::Engine as _;
use sha2::Digest as _;

use crate::builtins::io_msg;
use crate::io::{Io, read_all};
use crate::shell::{Shell, Status};

pub const NAMES: &[&str] = &[
    "base64",
    "sha256sum",
    "md5sum",
    "diff",
    "awk",
    "jq",
    "tar",
    "gzip",
    "gunzip",
    "zcat",
];

pub fn run(sh: &Shell, argv: &[String], io: &Io) -> Option<Status> {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    Some(Ok(match cmd {
        "base64" => base64(sh, args, io),
        "sha256sum" | "md5sum" => digest(sh, cmd, args, io),
        "diff" => diff(sh, args, io),
        "awk" => return Some(crate::awk::run(sh, args, io)),
        "jq" => return Some(crate::jq::run(sh, args, io)),
        _ if crate::archive::NAMES.contains(&cmd) => return crate::archive::run(sh, argv, io),
        _ => return None,
    }))
}

fn input(sh: &Shell, cmd: &str, file: Option<&String>, io: &Io) -> Result<Vec<u8>, i32> {
    match file.map(String::as_str) {
        None | Some("-") => Ok(read_all(&io.stdin)),
        Some(f) => fs::read(sh.path(f)).map_err(|e| {
            io.eprint(&format!("{cmd}: {f}: {}\n", io_msg(&e)));
            1
        }),
    }
}

fn base64(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let decode = args.iter().any(|a| a == "-d" || a == "--decode");
    let file = args
        .iter()
        .find(|a| !a.starts_with('-') || a.as_str() == "-");
    let data = match input(sh, "base64", file, io) {
        Ok(d) => d,
        Err(c) => return c,
    };
    let engine = base64::engine::general_purpose::STANDARD;
    if decode {
        let clean: Vec<u8> = data
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        match engine.decode(&clean) {
            Ok(bytes) => {
                io.out.write(&bytes);
                0
            }
            Err(_) => {
                io.eprint("base64: invalid input\n");
                1
            }
        }
    } else {
        let text = engine.encode(&data);
        let mut out = String::new();
        for chunk in text.as_bytes().chunks(76) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
        io.print(&out);
        0
    }
}

fn digest(sh: &Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    let names: Vec<Option<&String>> = if files.is_empty() {
        vec![None]
    } else {
        files.into_iter().map(Some).collect()
    };
    let mut status = 0;
    for f in names {
        let data = match input(sh, cmd, f, io) {
            Ok(d) => d,
            Err(c) => {
                status = c;
                continue;
            }
        };
        let hex: String = if cmd == "md5sum" {
            md5::Md5::digest(&data)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        } else {
            sha2::Sha256::digest(&data)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        io.print(&format!(
            "{hex}  {}\n",
            f.map(String::as_str).unwrap_or("-")
        ));
    }
    status
}

fn diff(sh: &Shell, args: &[String], io: &Io) -> i32 {
    let unified = args.iter().any(|a| a == "-u" || a.starts_with("-U"));
    let brief = args.iter().any(|a| a == "-q" || a == "--brief");
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    if files.len() != 2 {
        io.eprint(&format!(
            "diff: {} operand after '{}'\ndiff: Try 'diff --help' for more information.\n",
            if files.len() < 2 { "missing" } else { "extra" },
            files.last().map(|s| s.as_str()).unwrap_or("diff")
        ));
        return 2;
    }
    let (a, b) = (files[0], files[1]);
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
    if unified {
        let mtime = |p: &str| {
            fs::metadata(sh.path(p))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| crate::text::strftime(d.as_secs() as i64, "%F %T.000000000 +0000"))
                .unwrap_or_default()
        };
        let header_a = format!("{a}\t{}", mtime(a));
        let header_b = format!("{b}\t{}", mtime(b));
        let text = d
            .unified_diff()
            .context_radius(3)
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
            text.lines()
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
