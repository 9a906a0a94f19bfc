//! The web console of `burrow serve` in a real browser: Debian's Chromium, headless, driven
//! over WebDriver (chromedriver) with fantoccini. Sessions, calls and forks are made through
//! the HTTP API and the page must show them; actions taken on the page must show in the API.
//! Screenshots go to `$CARGO_TARGET_TMPDIR/console/`; with `BURROW_UPDATE_SCREENSHOTS=1` the
//! sessions page also replaces `docs/images/console.png`.
//!
//! Without Chromium and chromedriver the test prints one line and passes, unless
//! `BURROW_REQUIRE_CHROMIUM=1` (set by `.ci/run`, which installs them).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common;
use common::start;

/// How long the page may take to show something.
const WAIT: Duration = Duration::from_secs(30);

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// Chromium and chromedriver, or None (after saying what to install) when they are missing.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("BURROW_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path(&["chromium", "chromium-browser", "google-chrome"]));
    let driver = on_path(&["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            assert!(
                std::env::var("BURROW_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
                "BURROW_REQUIRE_CHROMIUM=1 but chromium or chromedriver is missing"
            );
            println!(
                "skipped: the console browser tests need Chromium and chromedriver \
                 (apt-get install chromium chromium-driver)"
            );
            None
        }
    }
}

/// chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn driver(bin: &Path) -> Driver {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

async fn browser_client(driver: &Driver, chromium: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run", "--no-default-browser-check"],
        }),
    );
    let started = Instant::now();
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&driver.url)
            .await
        {
            Ok(c) => return c,
            // chromedriver takes a moment to listen.
            Err(e) if started.elapsed() < WAIT => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot start a WebDriver session: {e}"),
        }
    }
}

/// The API, for setting up and checking what the page did.
struct Api {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Api {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut r = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.expect("API request");
        let status = resp.status();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }
    async fn get(&self, path: &str) -> Value {
        self.send(reqwest::Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> Value {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }
    async fn bash(&self, session: &str, command: &str) {
        let out = self
            .post(
                &format!("/sessions/{session}/call"),
                json!({ "tool": "bash", "input": { "command": command } }),
            )
            .await;
        assert_eq!(out["is_error"], false, "{command}: {out}");
    }
    async fn session_ids(&self) -> Vec<String> {
        let list = self.get("/sessions").await;
        let mut ids: Vec<String> = list["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().unwrap_or_default().to_string())
            .collect();
        ids.sort();
        ids
    }
}

/// The values of attribute `attr` of every element matching `css`, sorted.
async fn attrs(c: &Client, css: &str, attr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in c.find_all(Locator::Css(css)).await.expect("find_all") {
        if let Some(v) = e.attr(attr).await.expect("attr") {
            out.push(v);
        }
    }
    out.sort();
    out
}

/// Waits until `check` holds of the page (polling), or fails with `what`.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until some element matching `css` has `needle` in its text.
async fn until_text(c: &Client, css: &str, needle: &str) {
    until(&format!("'{needle}' in {css}"), || async {
        let Ok(items) = c.find_all(Locator::Css(css)).await else {
            return false;
        };
        for e in items {
            if e.text().await.is_ok_and(|t| t.contains(needle)) {
                return true;
            }
        }
        false
    })
    .await;
}

async fn screenshot(c: &Client, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = c.screenshot().await.expect("screenshot");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    path
}

async fn goto(c: &Client, base: &str, hash: &str) {
    c.goto(&format!("{base}/{hash}")).await.expect("goto");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_shows_sessions_timelines_diffs_and_acts_through_the_api() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(&dir.path().join("s.db"), &[]);
    let api = Api {
        base: server.base.clone(),
        token: None,
        http: reqwest::Client::new(),
    };
    let base = server.base.clone();

    // Sessions, calls and forks made through the API.
    let alpha = api.post("/sessions", json!({ "name": "alpha" })).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    api.bash(
        &alpha,
        "mkdir -p src && printf 'fn main() {\\n    println!(\"hi\");\\n}\\n' > src/main.rs && echo one > a.txt && echo keep > b.txt",
    )
    .await;
    api.post(
        &format!("/sessions/{alpha}/label"),
        json!({ "label": "baseline" }),
    )
    .await;
    let forks = api
        .post(&format!("/sessions/{alpha}/fork"), json!({ "n": 2 }))
        .await;
    let f1 = forks["ids"][0].as_str().expect("fork").to_string();
    let f2 = forks["ids"][1].as_str().expect("fork").to_string();
    api.bash(&f1, "echo two >> a.txt && echo new > new.txt && rm b.txt")
        .await;
    api.bash(&f2, "echo other > other.txt").await;

    let drv = driver(&driver_bin);
    let c = browser_client(&drv, &chromium).await;

    // 1. The list shows exactly the sessions the API lists, and the fork tree one node each.
    goto(&c, &base, "#/").await;
    let want = api.session_ids().await;
    until("the session rows", || async {
        attrs(&c, "#sessions tr[data-session]", "data-session").await == want
    })
    .await;
    assert_eq!(attrs(&c, "#fork-tree a.node", "data-session").await, want);
    let shot = screenshot(&c, "sessions").await;
    if std::env::var("BURROW_UPDATE_SCREENSHOTS").as_deref() == Ok("1") {
        let docs = common::workspace_root().join("docs/images/console.png");
        std::fs::copy(&shot, docs).expect("update docs/images/console.png");
    }

    // 2. A session's timeline shows its calls, with their commands.
    goto(&c, &base, &format!("#/s/{f1}")).await;
    until_text(&c, "#timeline li[data-kind=tool]", "echo new > new.txt").await;
    let kinds = attrs(&c, "#timeline li.event", "data-kind").await;
    assert_eq!(kinds, ["forked", "tool"], "f1's own events");

    // 3. A call made through the API appears live, without a reload.
    c.execute("window.__noReload = 42;", vec![])
        .await
        .expect("mark page");
    api.bash(&f1, "echo live-marker > live.txt").await;
    until_text(&c, "#timeline li[data-kind=tool]", "live-marker").await;
    let marker = c
        .execute("return window.__noReload;", vec![])
        .await
        .expect("read mark");
    assert_eq!(marker, json!(42), "the page was not reloaded");
    screenshot(&c, "timeline").await;

    // 4. The diff of two forks lists exactly the changed files.
    goto(&c, &base, &format!("#/s/{f1}/diff?from={f2}&to={f1}")).await;
    let api_diff = api.get(&format!("/sessions/{f1}/diff?against={f2}")).await;
    let mut want: Vec<String> = api_diff["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|ch| ch["path"].as_str().unwrap_or_default().to_string())
        .collect();
    want.sort();
    assert_eq!(
        want,
        [
            "/workspace/a.txt",
            "/workspace/b.txt",
            "/workspace/live.txt",
            "/workspace/new.txt",
            "/workspace/other.txt"
        ]
    );
    until("the diff's file list", || async {
        attrs(&c, "#diff-files tr[data-path]", "data-path").await == want
    })
    .await;
    let page = c.source().await.expect("source");
    assert!(
        page.contains("two"),
        "the unified diff shows the added line"
    );
    screenshot(&c, "diff").await;

    // The files of a version, with the text of a file.
    goto(
        &c,
        &base,
        &format!("#/s/{alpha}/files?p=/workspace/src/main.rs"),
    )
    .await;
    until_text(&c, "#file-text", "println!(\"hi\");").await;
    screenshot(&c, "file").await;

    // 5. Fork from the page: the API then lists the new session, forked from alpha.
    goto(&c, &base, &format!("#/s/{alpha}")).await;
    let before = api.session_ids().await;
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#fork"))
        .await
        .expect("fork button")
        .click()
        .await
        .expect("click fork");
    let started = Instant::now();
    let new_id = loop {
        let now = api.session_ids().await;
        if let Some(id) = now.iter().find(|id| !before.contains(id)) {
            break id.clone();
        }
        assert!(
            started.elapsed() < WAIT,
            "timed out waiting for the new fork in the API"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let info = api.get(&format!("/sessions/{new_id}")).await;
    assert_eq!(info["parent"].as_str(), Some(alpha.as_str()));
    until("the page to open the fork", || async {
        c.current_url()
            .await
            .is_ok_and(|u| u.as_str().ends_with(&format!("#/s/{new_id}")))
    })
    .await;

    // 5b. Merge a fork back from its page: its file is then in alpha, the page on alpha.
    goto(&c, &base, &format!("#/s/{f2}")).await;
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#merge"))
        .await
        .expect("merge button")
        .click()
        .await
        .expect("click merge");
    until("the page to open the parent", || async {
        c.current_url()
            .await
            .is_ok_and(|u| u.as_str().ends_with(&format!("#/s/{alpha}")))
    })
    .await;
    let merged = api
        .get(&format!("/sessions/{alpha}/tree"))
        .await
        .to_string();
    assert!(merged.contains("other.txt"), "{merged}");

    // 6. With a token, the page without it is refused; with it, the list shows.
    let tdir = tempfile::tempdir().expect("tempdir");
    let guarded = start(&tdir.path().join("t.db"), &["--token", "s3cret-token"]);
    let tapi = Api {
        base: guarded.base.clone(),
        token: Some("s3cret-token".into()),
        http: reqwest::Client::new(),
    };
    tapi.post("/sessions", json!({ "name": "private" })).await;
    goto(&c, &guarded.base, "#/").await;
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#refused"))
        .await
        .expect("the refusal");
    assert!(
        c.find_all(Locator::Css("#sessions tr[data-session]"))
            .await
            .expect("find_all")
            .is_empty(),
        "no session is shown without the token"
    );
    screenshot(&c, "refused").await;
    let input = c
        .find(Locator::Css("#token-input"))
        .await
        .expect("token input");
    input.send_keys("s3cret-token").await.expect("type token");
    c.find(Locator::Css("#token-form button[type=submit]"))
        .await
        .expect("submit")
        .click()
        .await
        .expect("click submit");
    let want = tapi.session_ids().await;
    until("the guarded list with the token", || async {
        attrs(&c, "#sessions tr[data-session]", "data-session").await == want
    })
    .await;

    c.close().await.expect("close the browser");
}
