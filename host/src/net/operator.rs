//! The operator's side of egress, never visible to guests: extra TLS roots (`--ca-file` /
//! `BURROW_CA_FILE`) and where secrets' values come from (`--secrets-file` /
//! `BURROW_SECRETS_FILE`, else the environment), carried as an [`Operator`] value; and the
//! proxy burrow's own connections go through (`HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`, read
//! from the process's environment as every HTTP client reads them).

use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// The operator's egress settings, as a value: the TLS roots guests' HTTPS trusts
/// (`--ca-file` / `BURROW_CA_FILE`, besides the public web's) and where secrets' values come
/// from (`--secrets-file` / `BURROW_SECRETS_FILE`, else burrow's own environment). A sandbox
/// holds one ([`crate::Limits::egress`]) and every run's egress layer uses it; nothing of it
/// is process-wide, so two sandboxes in one process may trust different roots.
#[derive(Clone)]
pub struct Operator {
    tls: Arc<rustls::ClientConfig>,
    secrets_file: Option<PathBuf>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("secrets_file", &self.secrets_file)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Operator {
    /// The same roots (one configuration, shared) and the same secrets file.
    fn eq(&self, other: &Operator) -> bool {
        Arc::ptr_eq(&self.tls, &other.tls) && self.secrets_file == other.secrets_file
    }
}

impl Eq for Operator {}

impl Default for Operator {
    /// The public web's roots; secrets from burrow's environment.
    fn default() -> Self {
        // Built once: parsing webpki's roots is not free, and the result never changes.
        static WEB: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
        let tls = WEB
            .get_or_init(|| {
                Arc::new(tls_config(None).expect("webpki's roots make a TLS configuration"))
            })
            .clone();
        Operator {
            tls,
            secrets_file: None,
        }
    }
}

impl Operator {
    /// Trusts `ca_file`'s certificates too, and reads secrets from `secrets_file`. Both are
    /// checked now: a bad file is an error here, not at the first request.
    pub fn new(ca_file: Option<&Path>, secrets_file: Option<&Path>) -> Result<Operator, String> {
        let tls = match ca_file {
            Some(_) => Arc::new(tls_config(ca_file)?),
            None => Operator::default().tls,
        };
        if let Some(p) = secrets_file {
            read_secrets_file(p)?;
        }
        Ok(Operator {
            tls,
            secrets_file: secrets_file.map(Path::to_path_buf),
        })
    }

    /// From `BURROW_CA_FILE` and `BURROW_SECRETS_FILE` (each optional).
    pub fn from_env() -> Result<Operator, String> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Operator::new(
            var("BURROW_CA_FILE").as_deref(),
            var("BURROW_SECRETS_FILE").as_deref(),
        )
    }

    /// The TLS client configuration of guests' HTTPS.
    pub fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    /// The value of secret `name`: from the secrets file when there is one (read now, so a
    /// rotated value applies at once), else from this process's environment variable `name`.
    pub fn secret_value(&self, name: &str) -> Result<String, String> {
        if let Some(path) = &self.secrets_file {
            return read_secrets_file(path)?
                .into_iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
                .ok_or_else(|| format!("secret {name} is not in {}", path.display()));
        }
        std::env::var(name).map_err(|_| format!("secret {name} is not set in burrow's environment"))
    }
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
