//! Python in sessions (the `python` toolchain: CPython 3.12 for WASI).
//!
//! - The corpus `fixtures/python-corpus.py` runs under burrow's `python3` and under a native
//!   CPython 3.12 in the same starting tree; stdout, stderr and status must be identical
//!   except for the cases listed in `fixtures/python-known-differences.txt`. Without a native
//!   3.12 the outputs recorded from one (`fixtures/python-corpus.expected.json`) stand in;
//!   with one, the recording is checked against it (`BURROW_RECORD_PYTHON_CORPUS=1` rewrites
//!   it).
//! - pip against a package index served by the test on 127.0.0.1 (generated wheels).
//! - Limits: a runaway loop is stopped by the call's timeout and rolled back; a memory bomb
//!   hits the memory limit.
//!
//! Needs the toolchain (`burrow toolchain install python`); without it each test prints one
//! line and passes, unless `BURROW_REQUIRE_PYTHON=1` (set by .ci/run).

use crate::common;

use common::sh;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use burrow_host::SandboxConfig;
use burrow_host::session::Sandbox;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The installed toolchains directory, or None (after saying so) when python is missing.
pub(crate) fn toolchains() -> Option<PathBuf> {
    let dir = burrow_host::toolchain::default_dir();
    if dir.join("python/toolchain.json").is_file() {
        return Some(dir);
    }
    let msg = format!(
        "skipping: the python toolchain is not installed in {} (run: burrow toolchain install python)",
        dir.display()
    );
    if std::env::var("BURROW_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("{msg}; BURROW_REQUIRE_PYTHON=1");
    }
    println!("{msg}");
    None
}

pub(crate) fn sandbox(dir: &Path, toolchains: PathBuf) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            // Shared with the CLI: `toolchain install` compiled the interpreter into it.
            cache_dir: Some(burrow_host::session::default_cache_dir()),
            toolchains: Some(toolchains),
            ..Default::default()
        },
    )
    .expect("sandbox")
}

/// One snippet of the corpus.
struct Case {
    name: String,
    stdin: String,
    code: String,
}

impl Case {
    /// Where the snippet is written: a name no standard module has (a file named `math.py`
    /// would shadow the module it imports).
    fn file(&self) -> String {
        format!(".corpus/case_{}.py", self.name.replace('-', "_"))
    }
}

fn corpus() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("fixtures/python-corpus.py")).expect("corpus");
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            out.push(Case {
                name: name.trim().to_string(),
                stdin: String::new(),
                code: String::new(),
            });
        } else if let Some(c) = out.last_mut() {
            if let Some(s) = line.strip_prefix("## stdin: ")
                && c.code.is_empty()
            {
                c.stdin = s.replace("\\n", "\n");
            } else {
                c.code.push_str(line);
                c.code.push('\n');
            }
        }
    }
    out
}

/// The corpus's starting tree (relative path, contents).
fn data_files() -> Vec<(&'static str, String)> {
    let mut log = String::new();
    for i in 0..40 {
        let level = ["INFO", "WARN", "ERROR", "INFO", "DEBUG"][i % 5];
        log.push_str(&format!(
            "2024-03-{:02} 10:{:02}:00 [worker-{}] {level}: event number {i}\n",
            1 + i % 28,
            i % 60,
            i % 3
        ));
    }
    let csv = "name,age,city\nalice,30,Paris\nbob,25,\"Berlin, DE\"\ncarol,41,Oslo\n".to_string();
    let json =
        r#"{"service": {"name": "api", "port": 8080}, "features": ["a", "b"], "debug": false}"#
            .to_string()
            + "\n";
    let notes = "The quick brown fox. The lazy dog; the END.\nIt's the fox's den.\n".to_string();
    vec![
        ("data/app.log", log),
        ("data/people.csv", csv),
        ("data/config.json", json),
        ("data/notes.txt", notes),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A native CPython 3.12 (the same minor version as the toolchain), if this machine has one.
fn native_python() -> Option<PathBuf> {
    let works = |p: &Path| {
        std::process::Command::new(p)
            .args(["-c", "import sys; assert sys.version_info[:2] == (3, 12)"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut candidates = vec![PathBuf::from("python3.12"), PathBuf::from("python3")];
    if let Some(home) = std::env::var_os("HOME") {
        let versions = Path::new(&home).join(".pyenv/versions");
        if let Ok(rd) = std::fs::read_dir(versions) {
            let mut v: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("3.12"))
                .map(|e| e.path().join("bin/python3.12"))
                .collect();
            v.sort();
            candidates.extend(v);
        }
    }
    candidates.into_iter().find(|p| works(p))
}

/// Runs every case with native CPython in a scratch tree, with paths shown as in burrow.
fn run_native(python: &Path, cases: &[Case]) -> BTreeMap<String, Outcome> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    for (p, text) in data_files() {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(dir.join(".corpus")).unwrap();
    let mut out = BTreeMap::new();
    for c in cases {
        let rel = c.file();
        std::fs::write(dir.join(&rel), &c.code).unwrap();
        let mut child = std::process::Command::new(python)
            .arg(&rel)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", "/home/agent")
            .env("LANG", "C.UTF-8")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(c.stdin.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let shown =
            |b: &[u8]| String::from_utf8_lossy(b).replace(dir.to_str().unwrap(), "/workspace");
        out.insert(
            c.name.clone(),
            Outcome {
                code: o.status.code().unwrap_or(-1),
                stdout: shown(&o.stdout),
                stderr: shown(&o.stderr),
            },
        );
    }
    out
}

fn known_differences() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root().join("fixtures/python-known-differences.txt"))
        .expect("known differences");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(": "))
        .map(|(n, r)| (n.trim().to_string(), r.trim().to_string()))
        .collect()
}

#[test]
fn corpus_matches_cpython() {
    let Some(tc) = toolchains() else { return };
    let cases = corpus();
    assert!(cases.len() >= 80, "the corpus has {} snippets", cases.len());
    let expected_path = root().join("fixtures/python-corpus.expected.json");
    let recorded: Option<BTreeMap<String, Outcome>> = std::fs::read(&expected_path)
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("python-corpus.expected.json"));
    let expected = match native_python() {
        Some(py) => {
            let native = run_native(&py, &cases);
            if std::env::var("BURROW_RECORD_PYTHON_CORPUS").as_deref() == Ok("1") {
                let text = serde_json::to_string_pretty(&native).unwrap() + "\n";
                std::fs::write(&expected_path, text).unwrap();
            } else {
                assert_eq!(
                    recorded.as_ref(),
                    Some(&native),
                    "fixtures/python-corpus.expected.json is out of date with {} \
                     (rerun with BURROW_RECORD_PYTHON_CORPUS=1)",
                    py.display()
                );
            }
            println!("reference: {} (native)", py.display());
            native
        }
        None => {
            println!(
                "reference: fixtures/python-corpus.expected.json (no native CPython 3.12 here)"
            );
            recorded.expect("fixtures/python-corpus.expected.json")
        }
    };

    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    for (p, text) in data_files() {
        sb.put_file(&id, p, text.as_bytes()).unwrap();
    }
    let known = known_differences();
    let mut failed = Vec::new();
    let mut known_passing = Vec::new();
    let mut passed = 0;
    for c in &cases {
        sb.put_file(&id, &c.file(), c.code.as_bytes()).unwrap();
        // A trap (the interpreter overflowing its stack, say) fails the call: recorded as
        // status -1 with the error, so it can only pass as a listed difference.
        let got = match sb.sh_with(
            &id,
            &format!("cd /workspace && python3 {}", c.file()),
            c.stdin.as_bytes(),
            "bash",
        ) {
            Ok(r) => Outcome {
                code: r.report.exit_code,
                stdout: String::from_utf8_lossy(&r.report.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&r.report.stderr).into_owned(),
            },
            Err(e) => Outcome {
                code: -1,
                stdout: String::new(),
                stderr: e.to_string(),
            },
        };
        let want = &expected[&c.name];
        if &got == want {
            passed += 1;
            if known.contains_key(&c.name) {
                known_passing.push(c.name.clone());
            }
        } else if !known.contains_key(&c.name) {
            failed.push(format!("--- {}\nwant: {want:?}\ngot:  {got:?}", c.name));
        }
    }
    println!(
        "python corpus: {passed}/{} snippets identical to CPython 3.12; {} known differences listed",
        cases.len(),
        known.len()
    );
    assert!(
        failed.is_empty(),
        "{} snippets differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(
        known_passing.is_empty(),
        "listed as known differences but identical now: {}",
        known_passing.join(", ")
    );
    for name in known.keys() {
        assert!(
            cases.iter().any(|c| &c.name == name),
            "known difference {name} names no snippet"
        );
    }
}

#[test]
fn interpreter_basics_in_the_shell() {
    let Some(tc) = toolchains() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    // Every name, -c, -m, stdin, argv, exit codes, the working directory, PYTHONPATH.
    let (code, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import sys; print(sys.version_info[:3])'; python -c 'print(1)'; \
         python3.12 -c 'print(2)'; echo 'print(6*7)' | python3; \
         mkdir -p /tmp/proj/lib && cd /tmp/proj && echo 'X = 5' > lib/m.py && \
         printf 'import sys, m\\nprint(sys.argv, m.X)\\nsys.exit(m.X)\\n' > s.py && \
         PYTHONPATH=lib python3 s.py a 'b c'; echo \"rc=$?\"; \
         python3 -m json.tool <<< '{\"k\": [1]}'; python3 -c 'raise SystemExit(300)'; echo $?",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "(3, 12, 0)\n1\n2\n42\n['s.py', 'a', 'b c'] 5\nrc=5\n{\n    \"k\": [\n        1\n    ]\n}\n44\n"
    );
    // A shebang script, `which`, a traceback on stderr with status 1.
    let (_, out, err) = sh(
        &sb,
        &id,
        "cd /workspace && printf '#!/usr/bin/env python3\\nimport sys\\nprint(\"script\", sys.argv[1:])\\n' > run.py && \
         chmod +x run.py && ./run.py x; which python3; python3 -c 'import nosuch'; echo $?",
    );
    assert_eq!(out, "script ['x']\n/usr/bin/python3\n1\n");
    assert!(
        err.contains("ModuleNotFoundError: No module named 'nosuch'"),
        "{err}"
    );
}

#[test]
fn without_the_toolchain_python_says_how_to_install_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tmp.path().join("no-toolchains"));
    let id = sb.create(None).unwrap().id;
    let (code, out, err) = sh(&sb, &id, "python3 -c 1; echo $?; pip list; echo $?");
    assert_eq!(code, 0);
    assert_eq!(out, "127\n127\n");
    assert_eq!(
        err,
        "python3: not installed in this burrow; run: burrow toolchain install python\n\
         pip: not installed in this burrow; run: burrow toolchain install python\n"
    );
}

#[test]
fn limits_stop_python_and_roll_back() {
    let Some(tc) = toolchains() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    sb.put_file(&id, "keep.txt", b"before\n").unwrap();
    let before = sb.info(&id).unwrap().version;
    // A runaway loop: the call's timeout ends it and nothing it wrote stays.
    let r = sb.sh_limited(
        &id,
        "echo changed > keep.txt; python3 -c 'open(\"spin.txt\", \"w\").write(\"x\")\nwhile True: pass'",
        b"",
        "bash",
        Some(Duration::from_secs(3)),
    );
    match r {
        Ok(r) => assert_eq!(r.report.exit_code, 124, "a timed-out call reports 124"),
        Err(e) => assert!(e.to_string().contains("time"), "{e}"),
    }
    assert_eq!(sb.info(&id).unwrap().version, before);
    assert_eq!(sb.cat(&id, "keep.txt").unwrap(), b"before\n");
    assert!(sb.cat(&id, "spin.txt").is_err());
    // A memory bomb hits the memory limit (the call fails, the session is unchanged).
    let (code, _, err) = sh(
        &sb,
        &id,
        "python3 -c 'x = [bytearray(1 << 20) for _ in range(100000)]'; echo rc=$?",
    );
    let stopped = code != 0 || err.contains("MemoryError");
    assert!(stopped, "status {code}: {err}");
    assert_eq!(sb.cat(&id, "keep.txt").unwrap(), b"before\n");
}

// ---------------------------------------------------------------------------------------
// pip against a package index on 127.0.0.1.

/// A wheel: (file name, bytes).
pub(crate) fn wheel(
    name: &str,
    version: &str,
    tag: &str,
    files: &[(&str, &str)],
    requires: &[&str],
    entry_points: Option<&str>,
) -> (String, Vec<u8>) {
    let stem = name.replace('-', "_");
    let file = format!("{stem}-{version}-{tag}.whl");
    let dist = format!("{stem}-{version}.dist-info");
    let mut meta = format!(
        "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: the {name} test package\n"
    );
    for r in requires {
        meta.push_str(&format!("Requires-Dist: {r}\n"));
    }
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut add = |path: &str, text: &str| {
            z.start_file(path, opts).unwrap();
            z.write_all(text.as_bytes()).unwrap();
        };
        for (p, t) in files {
            add(p, t);
        }
        add(&format!("{dist}/METADATA"), &meta);
        add(
            &format!("{dist}/WHEEL"),
            &format!("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: {tag}\n"),
        );
        if let Some(e) = entry_points {
            add(&format!("{dist}/entry_points.txt"), e);
        }
        add(&format!("{dist}/RECORD"), "");
        z.finish().unwrap();
    }
    (file, buf.into_inner())
}

pub(crate) fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// A PEP 503 index of `entries` (project, (file name, bytes)): `/simple/PROJECT/` pages
/// linking `/files/NAME#sha256=...`, and the files.
pub(crate) fn html_index(
    entries: impl IntoIterator<Item = (String, (String, Vec<u8>))>,
) -> BTreeMap<String, (String, Vec<u8>)> {
    let mut files = BTreeMap::new();
    let mut pages: BTreeMap<String, String> = BTreeMap::new();
    for (project, (file, bytes)) in entries {
        pages.entry(project).or_default().push_str(&format!(
            "<a href=\"/files/{file}#sha256={}\">{file}</a><br/>\n",
            sha256_hex(&bytes)
        ));
        files.insert(
            format!("/files/{file}"),
            ("application/octet-stream".to_string(), bytes),
        );
    }
    for (project, links) in pages {
        files.insert(
            format!("/simple/{project}/"),
            (
                "text/html".into(),
                format!("<html><body>\n{links}</body></html>\n").into_bytes(),
            ),
        );
    }
    files
}

/// Serves `files` (path -> (content type, bytes)) over HTTP/1.1 on 127.0.0.1 until the
/// process ends; returns the port and a log of requested paths.
pub(crate) fn serve(
    files: BTreeMap<String, (String, Vec<u8>)>,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let text = String::from_utf8_lossy(&head);
            let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
            seen.lock().unwrap().push(path.clone());
            let reply = match files.get(&path) {
                Some((ct, body)) => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found".to_vec(),
            };
            let _ = s.write_all(&reply);
        }
    });
    (port, log)
}

/// The index: `alpha` 1.0 and 2.0; `beta` 0.5 (needs alpha<2, has a console script);
/// `gamma` 1.0 (needs beta, and delta for its extra `fast` only) served as a PEP 691 JSON
/// page; `natively` with only a binary wheel; `sourcey` with only an sdist.
fn index() -> BTreeMap<String, (String, Vec<u8>)> {
    let wheels = vec![
        (
            "alpha",
            wheel(
                "alpha",
                "1.0",
                "py3-none-any",
                &[("alpha/__init__.py", "VERSION = '1.0'\n")],
                &[],
                None,
            ),
        ),
        (
            "alpha",
            wheel(
                "alpha",
                "2.0",
                "py3-none-any",
                &[("alpha/__init__.py", "VERSION = '2.0'\n")],
                &[],
                None,
            ),
        ),
        (
            "beta",
            wheel(
                "beta",
                "0.5",
                "py2.py3-none-any",
                &[(
                    "beta.py",
                    "import alpha\ndef main():\n    print('beta uses alpha', alpha.VERSION)\n",
                )],
                &["alpha<2"],
                Some("[console_scripts]\nbeta-cli = beta:main\n"),
            ),
        ),
        (
            "gamma",
            wheel(
                "gamma",
                "1.0",
                "py3-none-any",
                &[("gamma/__init__.py", "import beta\n")],
                &[
                    "beta>=0.5",
                    "delta; extra == 'fast'",
                    "colorama; sys_platform == 'win32'",
                ],
                None,
            ),
        ),
        (
            "delta",
            wheel(
                "delta",
                "3.1",
                "py3-none-any",
                &[("delta.py", "D = 3\n")],
                &[],
                None,
            ),
        ),
        (
            "natively",
            wheel(
                "natively",
                "1.0",
                "cp312-cp312-manylinux_2_17_x86_64",
                &[("natively.py", "")],
                &[],
                None,
            ),
        ),
    ];
    let mut files = BTreeMap::new();
    let mut pages: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
    for (project, (file, bytes)) in wheels {
        pages
            .entry(project)
            .or_default()
            .push((file.clone(), sha256_hex(&bytes)));
        files.insert(
            format!("/files/{file}"),
            ("application/octet-stream".to_string(), bytes),
        );
    }
    pages
        .entry("sourcey")
        .or_default()
        .push(("sourcey-1.0.tar.gz".into(), sha256_hex(b"sdist")));
    files.insert(
        "/files/sourcey-1.0.tar.gz".into(),
        ("application/gzip".into(), b"sdist".to_vec()),
    );
    for (project, list) in pages {
        if project == "gamma" {
            let json = serde_json::json!({
                "meta": {"api-version": "1.0"},
                "name": project,
                "files": list.iter().map(|(f, h)| serde_json::json!({
                    "filename": f, "url": format!("../../files/{f}"), "hashes": {"sha256": h},
                    "requires-python": ">=3.8"
                })).collect::<Vec<_>>(),
            });
            files.insert(
                format!("/simple/{project}/"),
                (
                    "application/vnd.pypi.simple.v1+json".into(),
                    json.to_string().into_bytes(),
                ),
            );
        } else {
            let links: String = list
                .iter()
                .map(|(f, h)| format!("<a href=\"/files/{f}#sha256={h}\">{f}</a><br/>\n"))
                .collect();
            files.insert(
                format!("/simple/{project}/"),
                (
                    "text/html".into(),
                    format!("<html><body>\n{links}</body></html>\n").into_bytes(),
                ),
            );
        }
    }
    files
}

#[test]
fn pip_installs_pure_python_wheels_from_an_index() {
    let Some(tc) = toolchains() else { return };
    let (port, log) = serve(index());
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    let url = format!("http://127.0.0.1:{port}/simple");

    // The index's host is not allowed yet: refused by the policy, nothing installed.
    let (code, _, err) = sh(&sb, &id, &format!("pip install -i {url} alpha"));
    assert_eq!(code, 1);
    assert!(
        err.contains("network access to 127.0.0.1 is denied"),
        "{err}"
    );
    assert!(log.lock().unwrap().is_empty());

    let mut policy = burrow_host::net::NetPolicy::default();
    policy.allow(&[format!("127.0.0.1:{port}")]).unwrap();
    sb.set_net(&id, policy).unwrap();

    // Dependencies resolved (beta needs alpha<2), installed in dependency order.
    let (code, out, err) = sh(&sb, &id, &format!("PIP_INDEX_URL={url} pip install beta"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Installing collected packages: alpha, beta\n"),
        "{out}"
    );
    assert!(
        out.ends_with("Successfully installed alpha-1.0 beta-0.5\n"),
        "{out}"
    );
    let (_, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import alpha, beta; beta.main()'; beta-cli; pip list; pip freeze; pip show beta | head -2",
    );
    assert_eq!(
        out,
        "beta uses alpha 1.0\nbeta uses alpha 1.0\nPackage Version\n------- -------\nalpha   1.0\nbeta    0.5\n\
         alpha==1.0\nbeta==0.5\nName: beta\nVersion: 0.5\n",
        "{err}"
    );
    let (_, record, _) = sh(
        &sb,
        &id,
        "cat ~/.local/lib/python3.12/site-packages/beta-0.5.dist-info/RECORD",
    );
    assert!(record.contains("beta.py,sha256="), "{record}");
    assert!(record.contains("../../../bin/beta-cli,sha256="), "{record}");
    assert!(record.contains("beta-0.5.dist-info/INSTALLER,"), "{record}");

    // A conflict is refused with pip's message; nothing changes.
    let version = sb.info(&id).unwrap().version;
    let (code, _, err) = sh(&sb, &id, &format!("pip install -i {url} 'alpha>=2' beta"));
    assert_eq!(code, 1);
    assert!(
        err.contains("ERROR: Cannot install alpha>=2 and beta==0.5 because these package versions have conflicting dependencies."),
        "{err}"
    );
    assert!(err.contains("    beta 0.5 depends on alpha<2"), "{err}");
    // Upgrading alpha alone replaces 1.0 with 2.0.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -i {url} -U alpha && python3 -c 'import alpha; print(alpha.VERSION)'"
        ),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Successfully uninstalled alpha-1.0"), "{out}");
    assert!(
        out.ends_with("Successfully installed alpha-2.0\n2.0\n"),
        "{out}"
    );
    // As pip does, it says what this broke.
    assert!(
        err.contains("beta 0.5 requires alpha<2, but you have alpha 2.0 which is incompatible."),
        "{err}"
    );
    assert!(sb.info(&id).unwrap().version > version);

    // A JSON (PEP 691) page, relative URLs, markers and extras: gamma[fast] brings delta;
    // colorama (win32 only) is skipped. -r reads a requirements file. The installed beta's
    // own requirement (alpha<2) brings alpha back to 1.0, as pip's resolver does.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "printf 'gamma[fast]  # comment\\n' > req.txt && pip install -q -i {url} -r req.txt && pip list --format=freeze"
        ),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "alpha==1.0\nbeta==0.5\ndelta==3.1\ngamma==1.0\n");

    // Binary-only, sdist-only (when sdists are excluded) and missing projects fail with
    // pip's wording and burrow's why.
    for (project, why) in [
        ("natively", "only binary wheels for other platforms"),
        (
            "--only-binary :all: sourcey",
            "only a source distribution, which --only-binary excludes",
        ),
        ("missing-one", "has no project named missing-one"),
    ] {
        let (code, _, err) = sh(&sb, &id, &format!("pip install -i {url} {project}"));
        let project = project.rsplit(' ').next().unwrap();
        assert_eq!(code, 1, "{project}");
        assert!(
            err.contains(&format!(
                "ERROR: Could not find a version that satisfies the requirement {project} (from versions: none)\nERROR: No matching distribution found for {project}\n"
            )),
            "{err}"
        );
        assert!(err.contains(why), "{project}: {err}");
    }

    // pip download saves wheels without installing them.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip download -q -i {url} --no-deps -d wheels delta && ls wheels"),
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "delta-3.1-py3-none-any.whl\n"),
        "{err}"
    );
    // A local wheel file installs without the index; `python3 -m pip` is pip.
    let (code, out, err) = sh(
        &sb,
        &id,
        "pip uninstall -q -y delta && pip install wheels/delta-3.1-py3-none-any.whl && \
         python3 -m pip list --format=freeze | grep delta",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Processing wheels/delta-3.1-py3-none-any.whl\n"),
        "{out}"
    );
    assert!(
        out.ends_with("Successfully installed delta-3.1\ndelta==3.1\n"),
        "{out}"
    );

    // Installed packages are the session's: a new process resuming it has them, forks have
    // them, undo removes them.
    let resumed = sandbox(tmp.path(), burrow_host::toolchain::default_dir());
    let (_, out, err) = sh(
        &resumed,
        &id,
        "python3 -c 'import gamma, delta, beta; print(delta.D)' && pip freeze",
    );
    assert_eq!(
        out, "3\nalpha==1.0\nbeta==0.5\ndelta==3.1\ngamma==1.0\n",
        "{err}"
    );
    drop(resumed);
    let fork = sb.fork(&id, 1).unwrap().remove(0);
    let (_, out, _) = sh(
        &sb,
        &fork,
        "python3 -c 'import gamma, delta; print(delta.D)'",
    );
    assert_eq!(out, "3\n");
    let (code, out, _) = sh(&sb, &id, "pip uninstall -y delta gamma && pip freeze");
    assert_eq!(code, 0);
    assert!(out.contains("Successfully uninstalled delta-3.1"), "{out}");
    assert!(out.ends_with("alpha==1.0\nbeta==0.5\n"), "{out}");
    let (_, out, _) = sh(&sb, &id, "ls ~/.local/lib/python3.12/site-packages");
    assert_eq!(
        out,
        "__pycache__\nalpha\nalpha-1.0.dist-info\nbeta-0.5.dist-info\nbeta.py\n"
    );
    sb.undo(&id).unwrap();
    let (_, out, _) = sh(&sb, &id, "pip freeze");
    assert!(out.contains("gamma==1.0"), "{out}");
    let (_, out, _) = sh(&sb, &fork, "pip freeze");
    assert!(out.contains("delta==3.1"), "{out}");
}

/// What the HTTP snippet's server answers: `/hello`, `HEAD /hello`, `POST /echo` (the
/// request's method, path, chosen headers and body), `/missing` (404), `/redirect` (302 to
/// `/hello`), `/chunked` (a chunked body), `/json`. Every response closes its connection and
/// carries no date, so native CPython and burrow's see the same bytes.
fn http_answer<S: std::io::Read + std::io::Write>(s: &mut S) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut words = text.split_whitespace();
    let (method, path) = (
        words.next().unwrap_or("").to_string(),
        words.next().unwrap_or("/").to_string(),
    );
    let header = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = s.read_exact(&mut body);
    let plain = |status: &str, ct: &str, body: &[u8]| {
        let mut r = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if method != "HEAD" {
            r.extend_from_slice(body);
        }
        r
    };
    let reply = match path.as_str() {
        "/hello" => plain("200 OK", "text/plain", b"hello\n"),
        "/echo" => {
            let mut b = format!("{method} {path}\n").into_bytes();
            for h in ["content-type", "content-length", "x-test", "user-agent"] {
                b.extend_from_slice(format!("{h}: {:?}\n", header(h)).as_bytes());
            }
            b.extend_from_slice(&body);
            b.push(b'\n');
            plain("200 OK", "text/plain", &b)
        }
        "/redirect" => {
            b"HTTP/1.1 302 Found\r\nlocation: /hello\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_vec()
        }
        "/chunked" => b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n7\r\n chunks\r\n0\r\n\r\n".to_vec(),
        "/json" => plain("200 OK", "application/json", br#"{"ok": true, "n": [1, 2]}"#),
        _ => plain("404 Not Found", "text/plain", b"not found"),
    };
    let _ = s.write_all(&reply);
    let _ = s.flush();
}

/// An HTTP server ([`http_answer`]) on 127.0.0.1, and an HTTPS one with a certificate for
/// 127.0.0.1 from a throwaway CA: (http port, https port, the CA's PEM).
pub(crate) fn serve_http_and_https() -> (u16, u16, String) {
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http_port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in plain.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || http_answer(&mut conn));
        }
    });
    let (config, ca_pem) = common::tls_server_config();
    let tls = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let https_port = tls.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in tls.incoming() {
            let Ok(tcp) = conn else { continue };
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(c) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut s = rustls::StreamOwned::new(c, tcp);
                http_answer(&mut s);
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    (http_port, https_port, ca_pem)
}

/// What the HTTP test runs, natively and in burrow, with the two servers' base URLs as
/// arguments: urllib and http.client over HTTP and HTTPS.
const HTTP_SNIPPET: &str = r#"
import http.client, json, ssl, sys, urllib.error, urllib.parse, urllib.request
for base in sys.argv[1:]:
    print("--", base.split(":")[0])
    with urllib.request.urlopen(base + "/hello", timeout=30) as r:
        print(r.status, r.reason, r.headers["content-type"], r.read())
    req = urllib.request.Request(base + "/echo", data=b"payload",
                                 headers={"X-Test": "1", "Content-Type": "text/plain"})
    print(urllib.request.urlopen(req).read().decode(), end="")
    try:
        urllib.request.urlopen(base + "/missing")
    except urllib.error.HTTPError as e:
        print("HTTPError", e.code, e.reason, e.read())
    with urllib.request.urlopen(base + "/redirect") as r:
        print(r.status, r.url == base + "/hello", r.read())
    print(urllib.request.urlopen(base + "/chunked").read())
    print(json.load(urllib.request.urlopen(base + "/json")))
    u = urllib.parse.urlsplit(base)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    c = cls(u.hostname, u.port, timeout=30)
    c.request("HEAD", "/hello")
    r = c.getresponse()
    print(r.status, r.getheader("content-length"), r.read())
    c.request("PUT", "/echo", body="put body", headers={"Content-Type": "text/x"})
    r = c.getresponse()
    print(r.status, r.read().decode(), end="")
    c.close()
print(ssl.create_default_context().verify_mode == ssl.CERT_REQUIRED)
"#;

#[test]
fn urllib_and_http_client_through_the_egress() {
    let Some(tc) = toolchains() else { return };
    let (http_port, https_port, ca_pem) = serve_http_and_https();
    let tmp = tempfile::tempdir().unwrap();
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, &ca_pem).unwrap();
    let operator = burrow_host::net::Operator::new(Some(ca.as_path()), None).unwrap();
    let sb = Sandbox::open_with(
        tmp.path().join("s.db"),
        SandboxConfig {
            cache_dir: Some(burrow_host::session::default_cache_dir()),
            toolchains: Some(tc),
            limits: burrow_host::Limits {
                egress: std::sync::Arc::new(operator),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .expect("sandbox");
    let id = sb.create(None).unwrap().id;
    sb.put_file(&id, "http_snippet.py", HTTP_SNIPPET.as_bytes())
        .unwrap();
    let urls = format!("http://127.0.0.1:{http_port} https://127.0.0.1:{https_port}");
    let cmd = format!("python3 http_snippet.py {urls}");

    // Denied by default, as curl is: urllib's URLError carries the policy's reason.
    let (code, _, err) = sh(&sb, &id, &cmd);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "urllib.error.URLError: <urlopen error [Errno 2] burrow: network access to 127.0.0.1 is denied: this session has no network rule (allow it with `burrow net SESSION --allow 127.0.0.1:{http_port}`)>"
        )),
        "{err}"
    );

    let mut policy = burrow_host::net::NetPolicy::default();
    policy
        .allow(&[
            format!("127.0.0.1:{http_port}"),
            format!("127.0.0.1:{https_port}"),
        ])
        .unwrap();
    sb.set_net(&id, policy).unwrap();
    let (code, out, err) = sh(&sb, &id, &cmd);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("-- http\n200 OK text/plain b'hello\\n'\nPOST /echo\n"),
        "{out}"
    );
    assert!(
        out.contains("-- https\n200 OK text/plain b'hello\\n'\n"),
        "{out}"
    );
    if let Some(py) = native_python() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("http_snippet.py");
        std::fs::write(&script, HTTP_SNIPPET).unwrap();
        let o = std::process::Command::new(&py)
            .arg(&script)
            .args(urls.split(' '))
            .env("SSL_CERT_FILE", &ca)
            .output()
            .unwrap();
        let native = String::from_utf8_lossy(&o.stdout).into_owned();
        // The user agent names the version: 3.12.0 here, the native one's there.
        let agent = |s: &str| {
            s.lines()
                .map(|l| {
                    if l.starts_with("user-agent:") {
                        "user-agent: ..."
                    } else {
                        l
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        // The plain-HTTP half is compared with native CPython. The HTTPS half is asserted on
        // burrow's side above: this machine's native CPython refuses the test's certificate
        // even with SSL_CERT_FILE naming it (not yet understood), so its half is left out.
        let http = |s: &str| s.split("-- https").next().unwrap_or("").to_string();
        assert_eq!(
            http(&agent(&out)),
            http(&agent(&native)),
            "native stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // One `net` event per request, allowed, with the rule: the requests went through the
    // session's egress as curl's do.
    let events = sb.log(&id, 0, 1000).unwrap();
    let net: Vec<_> = events.iter().filter(|e| e.kind == "net").collect();
    assert!(
        net.iter().any(|e| e.data.contains(r#""scheme":"https""#)
            && e.data.contains(r#""allowed":true"#)
            && e.data.contains(r#""path":"/json""#)),
        "{net:?}"
    );
    assert!(net.iter().any(|e| e.data.contains(r#""allowed":false"#)));
}

#[test]
fn subprocess_runs_in_the_call_and_refuses_what_it_cannot_do() {
    let Some(tc) = toolchains() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    sb.put_file(&id, "keep.txt", b"before\n").unwrap();
    // What a child writes is the call's: seen by python at once, kept with the call.
    let (code, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import subprocess; subprocess.run(\"echo made > made.txt\", shell=True); print(open(\"made.txt\").read(), end=\"\")'; cat made.txt",
    );
    assert_eq!((code, out.as_str()), (0, "made\nmade\n"), "{err}");
    // A child of a child: python started from python, through the shell.
    let (code, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import subprocess; print(subprocess.check_output([\"python3\", \"-c\", \"print(6 * 7)\"]))'",
    );
    assert_eq!((code, out.as_str()), (0, "b'42\\n'\n"), "{err}");
    // What cannot be done is refused by name, never ignored.
    for (arg, name) in [
        ("preexec_fn=lambda: None", "preexec_fn"),
        ("start_new_session=True", "start_new_session"),
        ("pass_fds=(3,)", "pass_fds"),
        ("user=0", "user"),
    ] {
        let (_, out, err) = sh(
            &sb,
            &id,
            &format!(
                "python3 -c 'import subprocess\ntry: subprocess.run([\"true\"], {arg})\nexcept OSError as e: print(e)'"
            ),
        );
        assert_eq!(
            out,
            format!(
                "[Errno 58] burrow: subprocess does not support {name} (a child is not an operating-system process)\n"
            ),
            "{err}"
        );
    }
    let (_, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import subprocess\np = subprocess.Popen([\"true\"])\ntry: p.kill()\nexcept OSError as e: print(e)\nprint(p.wait())'",
    );
    assert_eq!(
        out,
        "[Errno 58] burrow: subprocess does not support signals to a child that has not run (it runs when waited for)\n0\n",
        "{err}"
    );
    // A timeout the script gives stops the child, as on Linux; the call goes on.
    let (code, out, err) = sh(
        &sb,
        &id,
        "python3 -c 'import subprocess\ntry: subprocess.run([\"sleep\", \"30\"], timeout=0.5)\nexcept subprocess.TimeoutExpired as e: print(\"timed out\", e.timeout)'",
    );
    assert_eq!((code, out.as_str()), (0, "timed out 0.5\n"), "{err}");
    // The call's own timeout ends everything, children included, and rolls it all back.
    let before = sb.info(&id).unwrap().version;
    let r = sb.sh_limited(
        &id,
        "python3 -c 'import subprocess; subprocess.run(\"echo changed > keep.txt; sleep 60\", shell=True)'",
        b"",
        "bash",
        Some(Duration::from_secs(3)),
    );
    match r {
        Ok(r) => assert_eq!(r.report.exit_code, 124, "a timed-out call reports 124"),
        Err(e) => assert!(e.to_string().contains("time"), "{e}"),
    }
    assert_eq!(sb.info(&id).unwrap().version, before);
    assert_eq!(sb.cat(&id, "keep.txt").unwrap(), b"before\n");
}
