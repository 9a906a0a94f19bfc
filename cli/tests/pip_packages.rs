//! Real packages from PyPI whose native part is optional, built from their sdists in a
//! session with the real setuptools (and PyYAML's own backend with Cython), then used:
//! `pip install jinja2 pyyaml` brings MarkupSafe and PyYAML as pure Python. The files are
//! pinned by hash in fixtures/pypi/*.txt and downloaded by .ci/run into
//! `target/pypi-fixtures` (or `BURROW_PYPI_FIXTURES`); the test serves them as an index on
//! 127.0.0.1. Without them it skips with a line, or fails with BURROW_REQUIRE_PYPI_FIXTURES=1.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::sh;
use crate::python::{html_index, sandbox, serve, toolchains};

fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("BURROW_PYPI_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pypi-fixtures")
        });
    if dir.join("markupsafe-3.0.2.tar.gz").is_file() {
        return Some(dir);
    }
    let msg = format!(
        "skipping: no PyPI fixtures in {} (download them as .ci/run does: pip download --require-hashes -r fixtures/pypi/sdists.txt ...)",
        dir.display()
    );
    if std::env::var("BURROW_REQUIRE_PYPI_FIXTURES").as_deref() == Ok("1") {
        panic!("{msg}; BURROW_REQUIRE_PYPI_FIXTURES=1");
    }
    println!("{msg}");
    None
}

/// PEP 503's normalised project name of a distribution file.
fn project_of(file: &str) -> String {
    let name = if file.ends_with(".whl") {
        file.split('-').next().unwrap_or(file)
    } else {
        file.rsplit_once('-').map_or(file, |(n, _)| n)
    };
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A PEP 503 index of every file in `dir`.
fn index(dir: &std::path::Path) -> BTreeMap<String, (String, Vec<u8>)> {
    html_index(std::fs::read_dir(dir).unwrap().flatten().map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        (project_of(&name), (name, std::fs::read(e.path()).unwrap()))
    }))
}

#[test]
fn markupsafe_and_pyyaml_build_from_sdists_and_jinja2_renders() {
    let Some(tc) = toolchains() else { return };
    let Some(dir) = fixtures() else { return };
    let (port, _log) = serve(index(&dir));
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), tc);
    let id = sb.create(None).unwrap().id;
    let mut policy = burrow_host::net::NetPolicy::default();
    policy.allow(&[format!("127.0.0.1:{port}")]).unwrap();
    sb.set_net(&id, policy).unwrap();
    let url = format!("http://127.0.0.1:{port}/simple");

    let (code, out, err) = sh(&sb, &id, &format!("pip install -i {url} jinja2 pyyaml"));
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "  Building wheel for MarkupSafe (pyproject.toml) ... done\n",
        "  Created wheel for MarkupSafe: filename=MarkupSafe-3.0.2-py3-none-any.whl size=",
        "  Building wheel for pyyaml (pyproject.toml) ... done\n",
        // Tagged for this interpreter (PyYAML declares its optional extension), holding
        // only Python: the extension's build failed and fell back.
        "  Created wheel for pyyaml: filename=PyYAML-6.0.2-cp312-cp312-wasi_0_0_0_wasm32.whl size=",
        "Successfully built pyyaml MarkupSafe\n",
        "Successfully installed ",
        "MarkupSafe-3.0.2",
        "PyYAML-6.0.2",
        "-3.1.6",
    ] {
        assert!(out.contains(line), "{line:?} missing from:\n{out}");
    }
    let (code, out, err) = sh(
        &sb,
        &id,
        "python3 -c '
import jinja2, markupsafe, yaml
t = jinja2.Environment(autoescape=True).from_string(\"Hello {{ who }}: {% for x in xs %}{{ x * 2 }} {% endfor %}\")
print(t.render(who=\"<agent>\", xs=[1, 2, 3]))
print(markupsafe.escape(\"<a href=x>\"), markupsafe.Markup(\"<b>%s</b>\") % \"<i>\")
doc = yaml.safe_load(\"name: burrow\\nitems: [1, 2.5, null, true]\\nnested: {a: b}\\n\")
print(doc)
print(yaml.safe_dump(doc, sort_keys=True), end=\"\")
print(yaml.__with_libyaml__)
' && pip list --format=freeze",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "Hello &lt;agent&gt;: 2 4 6 \n\
         &lt;a href=x&gt; <b>&lt;i&gt;</b>\n\
         {'name': 'burrow', 'items': [1, 2.5, None, True], 'nested': {'a': 'b'}}\n\
         items:\n- 1\n- 2.5\n- null\n- true\nname: burrow\nnested:\n  a: b\n\
         False\n\
         Jinja2==3.1.6\nMarkupSafe==3.0.2\nPyYAML==6.0.2\n",
        "{err}"
    );
}

/// requests and httpx against the loopback servers python.rs's urllib test uses: each client
/// opens its own connection, which burrow gives the host to carry (the policy, the host's
/// TLS with the test's CA).
const CLIENTS_SNIPPET: &str = r#"
import sys, requests, httpx
for base in sys.argv[1:]:
    print("--", base.split(":")[0])
    r = requests.get(base + "/hello", timeout=30)
    print(r.status_code, r.reason, r.headers["content-type"], r.content)
    with requests.Session() as s:
        print(s.post(base + "/echo", data=b"payload", headers={"X-Test": "1", "Content-Type": "text/plain"}).text, end="")
        print(s.get(base + "/json").json())
        print(s.get(base + "/missing").status_code, s.get(base + "/redirect").url == base + "/hello")
    print(requests.get(base + "/chunked").content)
    r = httpx.get(base + "/hello")
    print(r.status_code, r.reason_phrase, r.headers["content-type"], r.content)
    with httpx.Client(base_url=base, follow_redirects=True) as c:
        print(c.post("/echo", content=b"payload", headers={"X-Test": "1", "Content-Type": "text/plain"}).text, end="")
        print(c.get("/json").json(), c.get("/missing").status_code, c.get("/redirect").text, end="")
try:
    requests.get("http://127.0.0.1:9/denied", timeout=5)
except requests.ConnectionError as e:
    print("requests refused:", "denied" in str(e))
try:
    httpx.get("http://127.0.0.1:9/denied")
except httpx.TransportError as e:
    print("httpx refused:", "denied" in str(e))
"#;

#[test]
fn requests_and_httpx_fetch_through_the_egress() {
    let Some(tc) = toolchains() else { return };
    let Some(dir) = fixtures() else { return };
    let (port, _log) = serve(index(&dir));
    let (http_port, https_port, ca_pem) = crate::python::serve_http_and_https();
    let tmp = tempfile::tempdir().unwrap();
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, &ca_pem).unwrap();
    let operator = burrow_host::net::Operator::new(Some(ca.as_path()), None).unwrap();
    let sb = burrow_host::session::Sandbox::open_with(
        tmp.path().join("s.db"),
        burrow_host::SandboxConfig {
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
    let mut policy = burrow_host::net::NetPolicy::default();
    policy
        .allow(&[
            format!("127.0.0.1:{port}"),
            format!("127.0.0.1:{http_port}"),
            format!("127.0.0.1:{https_port}"),
        ])
        .unwrap();
    sb.set_net(&id, policy).unwrap();
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!(
            "pip install -q -i http://127.0.0.1:{port}/simple requests httpx && pip list --format=freeze | tr '\\n' ' '"
        ),
    );
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "anyio==4.8.0 certifi==2025.1.31 charset-normalizer==3.4.1 h11==0.14.0 httpcore==1.0.7 httpx==0.28.1 idna==3.10 requests==2.32.3 sniffio==1.3.1 typing_extensions==4.12.2 urllib3==2.3.0 "
        ),
        "{err}"
    );
    sb.put_file(&id, "clients.py", CLIENTS_SNIPPET.as_bytes())
        .unwrap();
    let (code, out, err) = sh(
        &sb,
        &id,
        &format!("python3 clients.py http://127.0.0.1:{http_port} https://127.0.0.1:{https_port}"),
    );
    assert_eq!(code, 0, "{out}{err}");
    let block = "200 OK text/plain b'hello\\n'\nPOST /echo\n";
    assert!(out.starts_with(&format!("-- http\n{block}")), "{out}");
    assert!(out.contains(&format!("-- https\n{block}")), "{out}");
    assert!(
        out.ends_with("requests refused: True\nhttpx refused: True\n"),
        "{out}"
    );
}
