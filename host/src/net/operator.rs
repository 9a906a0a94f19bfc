//! The operator's side of egress, set once per process and never visible to guests: extra TLS
//! roots (`--ca-file` / `BURROW_CA_FILE`), where secrets' values come from (`--secrets-file` /
//! `BURROW_SECRETS_FILE`, else the environment), and the proxy burrow's own connections go
//! through (`HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The TLS client configuration: webpki's roots, plus the PEM certificates of `ca_file`
/// (a private CA; the tests use their own).
pub fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    if let Some(path) = ca_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read CA file {}: {e}", path.display()))?;
        let mut n = 0;
        for c in certs {
            let c = c.map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
            roots
                .add(c)
                .map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
            n += 1;
        }
        if n == 0 {
            return Err(format!("no certificate in CA file {}", path.display()));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

type Tls = Result<Arc<rustls::ClientConfig>, String>;

fn tls_slot() -> &'static RwLock<Option<Tls>> {
    static TLS: RwLock<Option<Tls>> = RwLock::new(None);
    &TLS
}

/// Makes `ca_file`'s certificates trusted roots for guests' HTTPS (in addition to webpki's),
/// for the rest of the process. Checked now: a bad file is an error here, not at the first
/// request.
pub fn set_ca_file(ca_file: Option<&Path>) -> Result<(), String> {
    let config = tls_config(ca_file).map(Arc::new)?;
    *tls_slot().write().unwrap_or_else(|p| p.into_inner()) = Some(Ok(config));
    Ok(())
}

/// The process's TLS configuration: what [`set_ca_file`] set, else webpki's roots plus
/// `BURROW_CA_FILE` (built on first use).
pub fn shared_tls() -> Tls {
    if let Some(t) = tls_slot()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        return t.clone();
    }
    let ca = std::env::var_os("BURROW_CA_FILE").map(PathBuf::from);
    let t = tls_config(ca.as_deref()).map(Arc::new);
    tls_slot()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert(t)
        .clone()
}

fn secrets_slot() -> &'static RwLock<Option<PathBuf>> {
    static FILE: RwLock<Option<PathBuf>> = RwLock::new(None);
    &FILE
}

/// Reads secrets' values from `path` (one `NAME=VALUE` a line; blank lines and `#` comments
/// skipped) instead of the environment, for the rest of the process. The file must be
/// readable by its owner only (mode 0600 or stricter); it is read again at each request, so a
/// rotated value takes effect at once. Checked now.
pub fn set_secrets_file(path: Option<&Path>) -> Result<(), String> {
    if let Some(p) = path {
        read_secrets_file(p)?;
    }
    *secrets_slot().write().unwrap_or_else(|p| p.into_inner()) = path.map(Path::to_path_buf);
    Ok(())
}

fn read_secrets_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read secrets file {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "secrets file {} is readable by others (mode {mode:04o}); run `chmod 600 {}`",
                path.display(),
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read secrets file {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!(
                "secrets file {} line {}: expected NAME=VALUE",
                path.display(),
                i + 1
            ));
        };
        out.push((k.trim().to_string(), v.to_string()));
    }
    Ok(out)
}

/// The value of secret `name`: from the secrets file when one is set (read now), else from
/// this process's environment variable `name`.
pub fn secret_value(name: &str) -> Result<String, String> {
    let file = secrets_slot()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .or_else(|| std::env::var_os("BURROW_SECRETS_FILE").map(PathBuf::from));
    if let Some(path) = file {
        return read_secrets_file(&path)?
            .into_iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("secret {name} is not in {}", path.display()));
    }
    std::env::var(name).map_err(|_| format!("secret {name} is not set in burrow's environment"))
}

/// An HTTP proxy burrow's own connections go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// `user:password` for `Proxy-Authorization: Basic`.
    pub auth: Option<String>,
}

/// The proxy for a request to `scheme://host:port`, from the operator's `HTTPS_PROXY` /
/// `HTTP_PROXY` (either case; `ALL_PROXY` as a fallback) unless `NO_PROXY` names the host.
/// Only `http://` proxies are supported; anything else is an error naming the variable.
pub fn proxy_for(scheme: &str, host: &str, port: u16) -> Result<Option<Proxy>, String> {
    proxy_from(|k| std::env::var(k).ok(), scheme, host, port)
}

/// [`proxy_for`] with the variables `get` returns.
pub fn proxy_from(
    get: impl Fn(&str) -> Option<String>,
    scheme: &str,
    host: &str,
    port: u16,
) -> Result<Option<Proxy>, String> {
    let var = |name: &str| {
        get(&name.to_ascii_lowercase())
            .or_else(|| get(name))
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name.to_string(), v))
    };
    let chosen = if scheme == "https" {
        var("HTTPS_PROXY")
    } else {
        var("HTTP_PROXY")
    }
    .or_else(|| var("ALL_PROXY"));
    let Some((name, url)) = chosen else {
        return Ok(None);
    };
    if let Some((_, no)) = var("NO_PROXY")
        && no_proxy_matches(&no, host, port)
    {
        return Ok(None);
    }
    parse_proxy(&url)
        .map(Some)
        .ok_or_else(|| format!("{name}={url}: expected http://[user:password@]host[:port]"))
}

fn parse_proxy(url: &str) -> Option<Proxy> {
    let rest = match url.split_once("://") {
        Some((s, r)) if s.eq_ignore_ascii_case("http") => r,
        Some(_) => return None,
        None => url,
    };
    let authority = rest.split('/').next()?;
    let (auth, hostport) = match authority.rsplit_once('@') {
        Some((a, h)) => (Some(percent_decode(a)), h),
        None => (None, authority),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, p) = v6.split_once(']')?;
        (h.to_string(), p.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => 80,
    };
    (!host.is_empty()).then_some(Proxy { host, port, auth })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `NO_PROXY` (comma-separated: `*`, `host`, `.domain`, `domain` matching its
/// subdomains, `host:port`, an address, or a CIDR range) covers `host:port`.
pub fn no_proxy_matches(list: &str, host: &str, port: u16) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: Option<std::net::IpAddr> = host.parse().ok();
    list.split(',').map(str::trim).any(|entry| {
        if entry.is_empty() {
            return false;
        }
        if entry == "*" {
            return true;
        }
        if let (Some(ip), Ok(net)) = (ip, entry.parse::<ipnet::IpNet>()) {
            return net.contains(&ip);
        }
        let (name, want_port) = match entry.rsplit_once(':') {
            Some((n, p)) if !n.contains(':') => (n, p.parse::<u16>().ok()),
            _ => (entry, None),
        };
        if want_port.is_some_and(|p| p != port) {
            return false;
        }
        let name = name
            .trim_start_matches("*.")
            .trim_start_matches('.')
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let host = host.to_ascii_lowercase();
        host == name || host.ends_with(&format!(".{name}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: Vec<(String, String)> = list
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn proxies_by_scheme_with_no_proxy_exceptions() {
        let env = vars(&[
            ("HTTPS_PROXY", "http://u%40x:p@proxy.corp:3128"),
            ("http_proxy", "proxy2:8080"),
            (
                "NO_PROXY",
                "internal.corp, .svc,10.0.0.0/8,example.com:8443",
            ),
        ]);
        let p = proxy_from(&env, "https", "api.github.com", 443)
            .unwrap()
            .unwrap();
        assert_eq!(
            p,
            Proxy {
                host: "proxy.corp".into(),
                port: 3128,
                auth: Some("u@x:p".into())
            }
        );
        let p = proxy_from(&env, "http", "pypi.org", 80).unwrap().unwrap();
        assert_eq!((p.host.as_str(), p.port, p.auth), ("proxy2", 8080, None));
        for (host, port) in [
            ("internal.corp", 443),
            ("a.internal.corp", 443),
            ("x.svc", 443),
            ("10.1.2.3", 443),
            ("example.com", 8443),
        ] {
            assert_eq!(
                proxy_from(&env, "https", host, port).unwrap(),
                None,
                "{host}"
            );
        }
        assert!(
            proxy_from(&env, "https", "example.com", 443)
                .unwrap()
                .is_some()
        );
        assert!(
            proxy_from(&env, "https", "notinternal.corp", 443)
                .unwrap()
                .is_some()
        );
        assert_eq!(proxy_from(vars(&[]), "https", "x", 443).unwrap(), None);
        let bad = proxy_from(
            vars(&[("HTTPS_PROXY", "socks5://p:1080")]),
            "https",
            "x",
            443,
        );
        assert!(bad.unwrap_err().contains("HTTPS_PROXY=socks5://p:1080"));
    }
}
