//! pip building source distributions and local projects in a session (PEP 517 in the
//! session's python3, PEP 518 build environments, PEP 660 editables), against an index on
//! 127.0.0.1 whose sdists carry their own small build backend (`backend-path`), so the test
//! needs nothing from the internet. The backend tries a C compiler first, as setuptools does
//! for an optional extension, and falls back to pure Python when there is none.
//! Needs the python toolchain (required in CI).

use std::collections::BTreeMap;

use crate::common::sh;
use crate::python::{html_index, sandbox, serve, sha256_hex, toolchains, wheel};

/// The build backend every test project carries in `_build/backend.py`. It reads the
/// project's name and version from `project.json`, asks for `buildextra` on top of its
/// `[build-system]` requirement, and records in the package what the build saw: whether a
/// compiler ran, the build requirement's mark, whether the session's own packages were
/// visible (they must not be, in an isolated build), and the config settings.
const BACKEND: &str = r#"
import importlib.util, json, os, subprocess, zipfile

def _info():
    with open("project.json") as f:
        return json.load(f)

def _wheel(directory, files):
    info = _info()
    stem = info["name"].replace("-", "_")
    dist = f"{stem}-{info['version']}.dist-info"
    name = f"{stem}-{info['version']}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        requires = "".join(f"Requires-Dist: {r}\n" for r in info.get("requires", []))
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {info['name']}\nVersion: {info['version']}\n{requires}")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return name

def get_requires_for_build_wheel(config_settings=None):
    return ["buildextra"]

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = _info()
    try:
        subprocess.run(["cc", "-c", "speedups.c"], check=True, capture_output=True)
        native = True
    except (OSError, subprocess.CalledProcessError):
        if info.get("needs_compiler"):
            raise
        native = False
    import buildhelper, buildextra
    facts = {
        "native": native,
        "helper": buildhelper.MARK,
        "extra": buildextra.MARK,
        "sees_session_packages": importlib.util.find_spec("alpha") is not None,
        "config": config_settings or {},
    }
    pkg = info["name"].replace("-", "_")
    with open(f"{pkg}/__init__.py") as f:
        source = f.read()
    return _wheel(wheel_directory, {f"{pkg}/__init__.py": source + f"FACTS = {facts!r}\n"})

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"__editable__.pth": os.getcwd() + "\n"})
"#;

/// A project's files: pyproject.toml, the backend, project.json and its package.
fn project(name: &str, version: &str, extra: &str) -> Vec<(String, String)> {
    let pkg = name.replace('-', "_");
    vec![
        (
            "pyproject.toml".into(),
            "[build-system]\nrequires = [\"buildhelper>=1\"]\nbuild-backend = \"backend\"\nbackend-path = [\"_build\"]\n".into(),
        ),
        ("_build/backend.py".into(), BACKEND.into()),
        (
            "project.json".into(),
            format!("{{\"name\": \"{name}\", \"version\": \"{version}\"{extra}}}"),
        ),
        (
            format!("{pkg}/__init__.py"),
            format!("HELLO = '{name} {version}'\n"),
        ),
        ("speedups.c".into(), "int speedup(void) { return 1; }\n".into()),
    ]
}

/// An sdist: `name-version/` and the files, as a .tar.gz.
fn sdist(name: &str, version: &str, files: &[(String, String)]) -> (String, Vec<u8>) {
    let stem = format!("{}-{version}", name.replace('-', "_"));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut t = tar::Builder::new(gz);
    for (path, text) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, format!("{stem}/{path}"), text.as_bytes())
            .unwrap();
    }
    let bytes = t.into_inner().unwrap().finish().unwrap();
    (format!("{stem}.tar.gz"), bytes)
}

/// The index: the build requirements (`buildhelper`, `buildextra`), `alpha` (to be seen or
/// not by a build), `delta` (a runtime requirement of a built project), and the sdists
/// `hello-src` 1.0 (builds, falling back to pure Python; an older pure wheel 0.9 beside it)
/// and `needs-c` 1.0 (its build insists on the compiler).
fn index() -> BTreeMap<String, (String, Vec<u8>)> {
    let entries = vec![
        (
            "buildhelper",
            wheel(
                "buildhelper",
                "1.2",
                "py3-none-any",
                &[("buildhelper.py", "MARK = 'helper 1.2'\n")],
                &[],
                None,
            ),
        ),
        (
            "buildextra",
            wheel(
                "buildextra",
                "0.1",
                "py3-none-any",
                &[("buildextra.py", "MARK = 'extra 0.1'\n")],
                &[],
                None,
            ),
        ),
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
            "delta",
            wheel(
                "delta",
                "2.5",
                "py3-none-any",
                &[("delta.py", "D = 2\n")],
                &[],
                None,
            ),
        ),
        (
            "needy",
            wheel(
                "needy",
                "2.0",
                "py3-none-any",
                &[("needy.py", "")],
                &["delta<3"],
                None,
            ),
        ),
        (
            "needy",
            wheel(
                "needy",
                "1.0",
                "py3-none-any",
                &[("needy.py", "")],
                &["delta"],
                None,
            ),
        ),
        (
            "hello-src",
            wheel(
                "hello-src",
                "0.9",
                "py3-none-any",
                &[("hello_src/__init__.py", "HELLO = 'old wheel'\n")],
                &[],
                None,
            ),
        ),
        (
            "hello-src",
            sdist(
                "hello-src",
                "1.0",
                &project("hello-src", "1.0", ", \"requires\": [\"delta\"]"),
            ),
        ),
        (
            "needs-c",
            sdist(
                "needs-c",
                "1.0",
                &project("needs-c", "1.0", ", \"needs_compiler\": true"),
            ),
        ),
    ];
    let mut files = html_index(entries.into_iter().map(|(p, f)| (p.to_string(), f)));
    // A second index with a project the first does not have (`--extra-index-url`).
    let (file, bytes) = wheel(
        "extraonly",
        "0.3",
        "py3-none-any",
        &[("extraonly.py", "WHERE = 'extra index'\n")],
        &[],
        None,
    );
    files.insert(
        "/extra/extraonly/".into(),
        (
            "text/html".into(),
            format!("<a href=\"/files/{file}\">{file}</a>\n").into_bytes(),
        ),
    );
    files.insert(
        format!("/files/{file}"),
        ("application/octet-stream".into(), bytes),
    );
    files
}

#[test]
fn pip_builds_sdists_and_local_projects_without_a_compiler() {
    let Some(tc) = toolchains() else { return };
    let (port, _log) = serve(index());
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    let mut policy = burrow_host::net::NetPolicy::default();
    policy.allow(&[format!("127.0.0.1:{port}")]).unwrap();
    sb.set_net(&id, policy).unwrap();
    let url = format!("http://127.0.0.1:{port}/simple");
    let (code, _, err) = sh(&sb, &id, &format!("pip install -q -i {url} alpha"));
    assert_eq!(code, 0, "{err}");

    // The newest version is an sdist: built in an isolated environment (its requirements
    // installed there, the session's own packages out of sight), the compiler missing, so
    // the pure-Python fallback; its runtime requirement installed beside it.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -i {url} -C mode=fast hello-src && python3 -c 'import hello_src; print(hello_src.HELLO); print(hello_src.FACTS)'"
        ),
    );
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "Collecting hello-src\n",
        "  Downloading hello_src-1.0.tar.gz (",
        "  Installing build dependencies ... done\n",
        "  Getting requirements to build wheel ... done\n",
        "  Building wheel for hello-src (pyproject.toml) ... done\n",
        "  Created wheel for hello-src: filename=hello_src-1.0-py3-none-any.whl size=",
        "Successfully built hello-src\n",
        "Installing collected packages: delta, hello-src\n",
        "Successfully installed delta-3.1 hello-src-1.0\n",
        "hello-src 1.0\n{'native': False, 'helper': 'helper 1.2', 'extra': 'extra 0.1', 'sees_session_packages': False, 'config': {'mode': 'fast'}}\n",
    ] {
        assert!(out.contains(line), "{line:?} missing from:\n{out}");
    }
    // The build requirements went into the build environment only, which is gone; so is
    // everything else the build wrote under /tmp.
    let (_, out, _) = sh(&sb, &id, "pip freeze; ls /tmp | grep -c pip-build");
    assert_eq!(out, "alpha==1.0\ndelta==3.1\nhello-src==1.0\n0\n");

    // --no-build-isolation: the backend sees the session's packages (and needs its build
    // requirements there); --prefer-binary takes the older wheel over the newer sdist;
    // --no-binary builds even where a wheel would do.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -q -i {url} buildhelper buildextra && pip install -q -i {url} --force-reinstall --no-deps --no-build-isolation hello-src && python3 -c 'import hello_src; print(hello_src.FACTS[\"sees_session_packages\"])'"
        ),
    );
    assert_eq!((code, out.as_str()), (0, "True\n"), "{err}");
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -q -i {url} --force-reinstall --prefer-binary hello-src && python3 -c 'import hello_src; print(hello_src.HELLO)'"
        ),
    );
    assert_eq!((code, out.as_str()), (0, "old wheel\n"), "{err}");
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -i {url} --force-reinstall --no-binary :all: --no-deps 'hello-src==1.0' | grep -c 'Building wheel'"
        ),
    );
    assert_eq!((code, out.as_str()), (0, "1\n"), "{err}");

    // A build that insists on the compiler fails with the backend's output in pip's box,
    // pip's closing lines, burrow's reason, and nothing installed.
    let (code, out, err) = sh(&sb, &id, &format!("pip install -i {url} needs-c"));
    assert_eq!(code, 1, "{out}{err}");
    for line in [
        "  error: subprocess-exited-with-error\n",
        "  × Building wheel for needs-c (pyproject.toml) did not run successfully.\n",
        "FileNotFoundError",
        "      [end of output]\n",
        "  ERROR: Failed building wheel for needs-c\n",
        "Failed to build needs-c\nERROR: Could not build wheels for needs-c, which is required to install pyproject.toml-based projects\n",
        "burrow: needs-c's build needs to compile native code",
    ] {
        assert!(err.contains(line), "{line:?} missing from:\n{err}");
    }
    let (_, out, _) = sh(
        &sb,
        &id,
        "pip freeze | grep -c needs; ls /tmp | grep -c pip-build",
    );
    assert_eq!(out, "0\n0\n");

    // A direct reference to the sdist (its hash checked, the URL recorded), a constraints
    // file, and an extra index.
    let sdist_file = index()["/files/hello_src-1.0.tar.gz"].1.clone();
    let direct = format!(
        "http://127.0.0.1:{port}/files/hello_src-1.0.tar.gz#sha256={}",
        sha256_hex(&sdist_file)
    );
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -q -i {url} --force-reinstall --no-deps 'hello-src @ {direct}' && cat ~/.local/lib/python3.12/site-packages/hello_src-1.0.dist-info/direct_url.json"
        ),
    );
    assert_eq!(code, 0, "{out}{err}");
    let recorded: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        recorded,
        serde_json::json!({
            "url": format!("http://127.0.0.1:{port}/files/hello_src-1.0.tar.gz"),
            "archive_info": {"hash": format!("sha256={}", sha256_hex(&sdist_file))},
        })
    );
    let (code, _, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -q -i {url} 'hello-src @ http://127.0.0.1:{port}/files/hello_src-1.0.tar.gz#sha256=00'"
        ),
    );
    assert_eq!(code, 1);
    assert!(err.contains("DO NOT MATCH THE HASHES"), "{err}");
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "echo 'hello-src<1.0' > c.txt && pip install -q -i {url} --force-reinstall -c c.txt hello-src && pip freeze | grep hello"
        ),
    );
    assert_eq!((code, out.as_str()), (0, "hello-src==0.9\n"), "{err}");
    let (code, _, err) = sh(
        &sb,
        &id,
        &format!("pip install -q -i {url} -c c.txt 'hello-src>=1.0'"),
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("The user requested (constraint) hello-src<1.0"),
        "{err}"
    );
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -i {url} --extra-index-url http://127.0.0.1:{port}/extra extraonly && python3 -c 'import extraonly; print(extraonly.WHERE)'"
        ),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "Looking in indexes: {url}, http://127.0.0.1:{port}/extra\n"
        )),
        "{out}"
    );
    assert!(
        out.ends_with("Successfully installed extraonly-0.3\nextra index\n"),
        "{out}"
    );

    // pip download saves the sdist itself, after building it to learn its requirements.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip download -q -i {url} --no-deps -d dl 'hello-src==1.0' && ls dl"),
    );
    assert_eq!((code, out.as_str()), (0, "hello_src-1.0.tar.gz\n"), "{err}");

    // A local project: `pip install ./dir`, then editable (`-e`): an edit to the source is
    // what the next import sees, and pip records where it came from (PEP 610).
    let mut script = String::from("mkdir -p proj");
    for (path, text) in project("local-proj", "2.0", "") {
        if let Some((dir, _)) = path.rsplit_once('/') {
            script.push_str(&format!(" && mkdir -p proj/{dir}"));
        }
        script.push_str(&format!(
            " && printf '%s' '{}' > proj/{path}",
            text.replace('\'', "'\\''")
        ));
    }
    let (code, _, err) = sh(&sb, &id, &script);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -i {url} ./proj && python3 -c 'import local_proj; print(local_proj.HELLO)'"
        ),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("Looking in indexes: ") && out.contains("\nProcessing ./proj\n"),
        "{out}"
    );
    assert!(
        out.ends_with("Successfully installed local-proj-2.0\nlocal-proj 2.0\n"),
        "{out}"
    );
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "cd proj && pip install -q -i {url} -e . && echo \"HELLO = 'edited'\" > local_proj/__init__.py && cd .. && python3 -c 'import local_proj; print(local_proj.HELLO)' && cat ~/.local/lib/python3.12/site-packages/local_proj-2.0.dist-info/direct_url.json"
        ),
    );
    assert_eq!(code, 0, "{out}{err}");
    let (first, json) = out.split_once('\n').unwrap();
    assert_eq!(first, "edited");
    let recorded: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(recorded["dir_info"], serde_json::json!({"editable": true}));
    assert!(
        recorded["url"].as_str().unwrap().starts_with("file:///")
            && recorded["url"].as_str().unwrap().ends_with("/proj"),
        "{json}"
    );

    // What pip refuses is refused, never ignored.
    let (code, _, err) = sh(&sb, &id, "pip install --no-use-pep517 ./proj");
    assert_eq!(code, 1);
    assert!(err.contains("--no-use-pep517"), "{err}");
    let (code, _, err) = sh(&sb, &id, "pip install ./nowhere");
    assert_eq!(code, 1);
    assert!(
        err.contains("ERROR: Invalid requirement: './nowhere'\nHint: It looks like a path. File './nowhere' does not exist.\n"),
        "{err}"
    );
}

#[test]
fn pip_backtracks_to_versions_that_fit_together() {
    let Some(tc) = toolchains() else { return };
    let (port, _log) = serve(index());
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let mut policy = burrow_host::net::NetPolicy::default();
    policy.allow(&[format!("127.0.0.1:{port}")]).unwrap();
    let url = format!("http://127.0.0.1:{port}/simple");
    let session = || {
        let id = sb.create(None).unwrap().id;
        sb.set_net(&id, policy.clone()).unwrap();
        id
    };
    // needy 2.0 needs delta<3: delta is narrowed to 2.5, which every asker accepts.
    let id = session();
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip install -i {url} delta needy && pip freeze"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("INFO: pip is looking at multiple versions of delta to determine which version is compatible with other requirements. This could take a while.\n"), "{out}");
    assert!(
        out.contains("  Using cached needy-2.0-py3-none-any.whl\n"),
        "{out}"
    );
    assert!(out.ends_with("delta==2.5\nneedy==2.0\n"), "{out}");
    // delta>=3 is the user's: needy goes back to 1.0, which takes any delta.
    let id = session();
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip install -i {url} 'delta>=3' needy && pip freeze"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("INFO: pip is looking at multiple versions of needy"),
        "{out}"
    );
    assert!(out.ends_with("delta==3.1\nneedy==1.0\n"), "{out}");
    // A requirement whose marker does not hold here is skipped, as pip skips it.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip install -i {url} \"delta<3; sys_platform == 'win32'\" needy"),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "Ignoring delta: markers 'sys_platform == \"win32\"' don't match your environment\n"
        ),
        "{out}"
    );
    // Nothing fits: the first conflict, in pip's words, and nothing installed.
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("pip install -i {url} 'delta>=3' 'needy>=2'; pip freeze"),
    );
    assert_eq!(out.lines().last(), Some("needy==1.0"), "{out}");
    assert!(
        err.contains("ERROR: Cannot install delta>=3 and needy==2.0 because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested delta>=3\n    needy 2.0 depends on delta<3\n"),
        "{err}"
    );
    let _ = code;
}
