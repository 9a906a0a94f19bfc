//! The package index: PEP 691 (JSON) or PEP 503 (HTML) simple API pages, fetched through the
//! session's network policy, and the wheels on them that burrow's CPython can install.

use super::req::normalize;
use super::version::Version;

/// One distribution file the index lists.
#[derive(Debug, Clone)]
pub struct File {
    pub filename: String,
    pub url: String,
    pub sha256: Option<String>,
    pub requires_python: Option<String>,
    pub yanked: bool,
}

/// What a file is, from its name.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A wheel this interpreter can install (pure Python).
    Pure,
    /// A wheel for some platform (compiled code).
    Binary,
    /// A source distribution (would need building).
    Sdist,
}

/// The version and kind of `filename` of the project `project` (normalised name).
pub fn classify(project: &str, filename: &str) -> Option<(Version, Kind)> {
    if let Some(stem) = filename.strip_suffix(".whl") {
        let parts: Vec<&str> = stem.split('-').collect();
        if parts.len() < 5 || normalize(parts[0]) != project {
            return None;
        }
        let version = Version::parse(parts[1])?;
        let n = parts.len();
        let (py, abi, plat) = (parts[n - 3], parts[n - 2], parts[n - 1]);
        let py_ok = py.split('.').any(|t| {
            matches!(t, "py3" | "py312" | "cp312" | "py31")
                || (t.starts_with("py3") && t.len() <= 5)
        });
        let pure =
            py_ok && abi.split('.').any(|a| a == "none") && plat.split('.').any(|p| p == "any");
        return Some((version, if pure { Kind::Pure } else { Kind::Binary }));
    }
    for ext in [".tar.gz", ".zip", ".tar.bz2", ".tgz"] {
        if let Some(stem) = filename.strip_suffix(ext) {
            // name-version, where the name may itself contain '-'.
            let (name, ver) = stem.rsplit_once('-')?;
            if normalize(name) != project {
                return None;
            }
            return Some((Version::parse(ver)?, Kind::Sdist));
        }
    }
    None
}

/// The project's page on `index` (a simple API base such as `https://pypi.org/simple`).
/// `Ok(None)` when the index does not know the project (404).
pub fn project_files(index: &str, project: &str) -> Result<Option<Vec<File>>, String> {
    let url = format!("{}/{}/", index.trim_end_matches('/'), normalize(project));
    let page = sh_curl::get(
        &url,
        "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01",
        "pip/24.0 (burrow)",
    )
    .map_err(|why| format!("Could not fetch URL {url}: {why}"))?;
    if page.status == 404 {
        return Ok(None);
    }
    if page.status != 200 {
        return Err(format!("HTTP error {} while getting {url}", page.status));
    }
    if page.content_type.contains("json") {
        parse_json(&page.body, &page.url).map(Some)
    } else {
        Ok(Some(parse_html(
            &String::from_utf8_lossy(&page.body),
            &page.url,
        )))
    }
}

fn parse_json(body: &[u8], base: &str) -> Result<Vec<File>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad index page {base}: {e}"))?;
    Ok(v["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            Some(File {
                filename: f["filename"].as_str()?.to_string(),
                url: join(base, f["url"].as_str()?),
                sha256: f["hashes"]["sha256"].as_str().map(str::to_string),
                requires_python: f["requires-python"].as_str().map(str::to_string),
                yanked: f["yanked"].as_bool().unwrap_or(false) || f["yanked"].is_string(),
            })
        })
        .collect())
}

/// `<a href="...#sha256=...">file</a>` anchors, with `data-requires-python` and
/// `data-yanked` (HTML-escaped).
fn parse_html(body: &str, base: &str) -> Vec<File> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<a ") {
        rest = &rest[start + 3..];
        let Some(close) = rest.find('>') else { break };
        let attrs = &rest[..close];
        let after = &rest[close + 1..];
        let text = after.split("</a>").next().unwrap_or_default().trim();
        rest = after;
        let attr = |name: &str| -> Option<String> {
            let i = attrs.find(&format!("{name}="))?;
            let v = &attrs[i + name.len() + 1..];
            let q = v.chars().next()?;
            if q == '"' || q == '\'' {
                v[1..].split(q).next().map(unescape)
            } else {
                v.split_whitespace().next().map(unescape)
            }
        };
        let Some(href) = attr("href") else { continue };
        let (link, frag) = href.split_once('#').unwrap_or((href.as_str(), ""));
        let sha256 = frag.strip_prefix("sha256=").map(str::to_string);
        let filename = if text.is_empty() {
            link.rsplit('/').next().unwrap_or_default().to_string()
        } else {
            unescape(text)
        };
        out.push(File {
            filename,
            url: join(base, link),
            sha256,
            requires_python: attr("data-requires-python"),
            yanked: attrs.contains("data-yanked"),
        });
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// `link` resolved against the page's URL.
fn join(base: &str, link: &str) -> String {
    if link.contains("://") {
        return link.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let host_end = rest.find('/').unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..host_end]);
    if let Some(l) = link.strip_prefix("//") {
        return format!("{scheme}://{l}");
    }
    if link.starts_with('/') {
        return format!("{origin}{link}");
    }
    let dir = match base.rfind('/') {
        Some(i) if i >= scheme.len() + 3 + host_end => &base[..=i],
        _ => return format!("{origin}/{link}"),
    };
    // Resolve `../` segments against the directory.
    let mut segs: Vec<&str> = dir[origin.len()..]
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let mut l = link;
    loop {
        if let Some(r) = l.strip_prefix("../") {
            segs.pop();
            l = r;
        } else if let Some(r) = l.strip_prefix("./") {
            l = r;
        } else {
            break;
        }
    }
    let mut path = segs.join("/");
    if !path.is_empty() {
        path.push('/');
    }
    format!("{origin}/{path}{l}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames() {
        let (v, k) = classify("requests", "requests-2.31.0-py3-none-any.whl").unwrap();
        assert_eq!(v.to_string(), "2.31.0");
        assert_eq!(k, Kind::Pure);
        let (_, k) = classify("six", "six-1.16.0-py2.py3-none-any.whl").unwrap();
        assert_eq!(k, Kind::Pure);
        let (_, k) =
            classify("numpy", "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.whl").unwrap();
        assert_eq!(k, Kind::Binary);
        let (_, k) = classify("foo-bar", "foo_bar-1.0.tar.gz").unwrap();
        assert_eq!(k, Kind::Sdist);
        assert!(classify("foo", "foobar-1.0-py3-none-any.whl").is_none());
    }

    #[test]
    fn html_pages() {
        let page = r#"<html><body><a href="../../packages/a/foo-1.0-py3-none-any.whl#sha256=ab" data-requires-python="&gt;=3.8">foo-1.0-py3-none-any.whl</a>
<a href="foo-0.9.tar.gz">foo-0.9.tar.gz</a></body></html>"#;
        let files = parse_html(page, "http://127.0.0.1:8000/simple/foo/");
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0].url,
            "http://127.0.0.1:8000/packages/a/foo-1.0-py3-none-any.whl"
        );
        assert_eq!(files[0].sha256.as_deref(), Some("ab"));
        assert_eq!(files[0].requires_python.as_deref(), Some(">=3.8"));
        assert_eq!(
            files[1].url,
            "http://127.0.0.1:8000/simple/foo/foo-0.9.tar.gz"
        );
    }
}
