//! A session's network policy: which destinations its guests may reach, and which secrets
//! may travel to which hosts. Deny is the default: a session with no rule has no network.
//!
//! A rule is written `[METHODS@][SCHEME://]HOST[:PORT]`, where HOST is `example.com`,
//! `*.example.com` (any subdomain, not the domain itself), an IP address (`1.2.3.4`,
//! `[::1]`) or a CIDR range (`10.0.0.0/8`). Without a port a rule allows the scheme's
//! default port (80 for http, 443 for https; both when no scheme is given). Presets (`@pypi`,
//! `@npm`, `@crates`, `@github`) expand to those services' hosts.
//!
//! Hostname rules are checked twice: on the name before resolving it, and on every address it
//! resolves to. An address that is not public (loopback, private, link-local, unique local,
//! carrier-grade NAT, the cloud metadata address, ...) is reachable only through a rule that
//! names that address or a range containing it, so a DNS answer cannot route a hostname rule
//! to the host's own network.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// Hosts of the presets, as those services document them.
pub const PRESETS: &[(&str, &[&str])] = &[
    ("@pypi", &["pypi.org", "files.pythonhosted.org"]),
    ("@npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    (
        "@crates",
        &["crates.io", "index.crates.io", "static.crates.io"],
    ),
    (
        "@github",
        &[
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "objects.githubusercontent.com",
            "raw.githubusercontent.com",
            "release-assets.githubusercontent.com",
        ],
    ),
];

/// An error in a rule as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid network rule '{rule}': {why}")]
pub struct RuleError {
    pub rule: String,
    pub why: String,
}

/// A session's policy, as stored in its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetPolicy {
    /// Allow rules, as written (presets already expanded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Secrets: an environment variable of the burrow process, and the hosts it may go to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretRule>,
}

/// `--secret NAME@HOST[,HOST...]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecretRule {
    pub name: String,
    pub hosts: Vec<String>,
    /// What the guest sees in `$NAME` instead of the value: `burrow-secret-<random>`, made
    /// when the secret is added (not a secret itself; forks keep it).
    #[serde(default)]
    pub placeholder: String,
}

impl SecretRule {
    /// Whether the secret may travel to `d`: only where the scheme, the host and the port all
    /// match one of the secret's hosts as written. No scheme written means `https` only
    /// (plain `http` must be written `http://HOST`), and no port written means the scheme's
    /// default port, so `TOKEN@api.example.com` goes to `https://api.example.com:443` and
    /// nowhere else. Methods, when written (`GET@HOST`), restrict it further.
    pub fn allows(&self, d: &Dest) -> bool {
        self.hosts
            .iter()
            .any(|h| Rule::parse(h).is_ok_and(|r| r.names_exactly(d)))
    }
}

/// A new placeholder: `burrow-secret-` and 32 random hex digits.
pub fn new_placeholder() -> String {
    let mut b = [0u8; 16];
    // The OS's CSPRNG; a fixed fallback would only make placeholders guessable, never leak.
    let _ = getrandom::fill(&mut b);
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("burrow-secret-{hex}")
}

impl SecretRule {
    /// Parses `NAME@HOST[,HOST...]`.
    pub fn parse(s: &str) -> Result<SecretRule, RuleError> {
        let err = |why: &str| RuleError {
            rule: s.to_string(),
            why: why.to_string(),
        };
        let (name, hosts) = s
            .split_once('@')
            .ok_or_else(|| err("expected NAME@HOST[,HOST...]"))?;
        let valid_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid_name {
            return Err(err("the name must be an environment variable name"));
        }
        let hosts: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        if hosts.is_empty() {
            return Err(err("no host"));
        }
        for h in &hosts {
            Rule::parse(h).map_err(|e| err(&e.why))?;
        }
        Ok(SecretRule {
            name: name.to_string(),
            hosts,
            placeholder: new_placeholder(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPat {
    Name(String),
    /// `*.example.com`: stored as `.example.com`.
    Suffix(String),
    Net(IpNet),
}

/// A parsed allow rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    methods: Option<Vec<String>>,
    scheme: Option<String>,
    host: HostPat,
    port: Option<u16>,
}

/// What a request is, for the policy.
#[derive(Debug, Clone, Copy)]
pub struct Dest<'a> {
    pub method: &'a str,
    /// `http` or `https`.
    pub scheme: &'a str,
    /// Lower case; an IP literal without brackets.
    pub host: &'a str,
    pub port: u16,
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

impl Rule {
    /// Parses one rule (not a preset).
    pub fn parse(s: &str) -> Result<Rule, RuleError> {
        let err = |why: &str| RuleError {
            rule: s.to_string(),
            why: why.to_string(),
        };
        let mut rest = s.trim();
        let mut methods = None;
        if let Some((m, r)) = rest.split_once('@')
            && !m.is_empty()
            && m.chars().all(|c| c.is_ascii_uppercase() || c == ',')
        {
            methods = Some(
                m.split(',')
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
            rest = r;
        }
        let mut scheme = None;
        if let Some((sc, r)) = rest.split_once("://") {
            let sc = sc.to_ascii_lowercase();
            if default_port(&sc).is_none() {
                return Err(err("the scheme must be http or https"));
            }
            scheme = Some(sc);
            rest = r;
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() {
            return Err(err("no host"));
        }
        // A CIDR range.
        if let Ok(net) = rest.parse::<IpNet>() {
            return Ok(Rule {
                text: s.to_string(),
                methods,
                scheme,
                host: HostPat::Net(net),
                port: None,
            });
        }
        if rest.contains('/') {
            return Err(err("a rule names a host, not a path"));
        }
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, after) = r.split_once(']').ok_or_else(|| err("unclosed '['"))?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| err("bad port"))?),
            };
            (h, port)
        } else if rest.matches(':').count() > 1 {
            (rest, None) // a bare IPv6 address
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| err("bad port"))?,
            ),
            None => None,
        };
        let host = host.to_ascii_lowercase();
        let pat = if let Ok(ip) = host.parse::<IpAddr>() {
            HostPat::Net(IpNet::from(ip))
        } else if let Some(d) = host.strip_prefix("*.") {
            if !valid_name(d) {
                return Err(err("bad host name"));
            }
            HostPat::Suffix(format!(".{d}"))
        } else {
            if !valid_name(&host) {
                return Err(err("bad host name"));
            }
            HostPat::Name(host)
        };
        Ok(Rule {
            text: s.to_string(),
            methods,
            scheme,
            host: pat,
            port,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn allows_port_scheme_method(&self, d: &Dest) -> bool {
        if let Some(m) = &self.methods
            && !m.iter().any(|m| m.eq_ignore_ascii_case(d.method))
        {
            return false;
        }
        if let Some(s) = &self.scheme
            && s != d.scheme
        {
            return false;
        }
        match self.port {
            Some(p) => p == d.port,
            None => match &self.scheme {
                Some(s) => default_port(s) == Some(d.port),
                None => default_port(d.scheme) == Some(d.port),
            },
        }
    }

    /// Whether the rule allows the destination by name (before resolving it).
    pub fn allows(&self, d: &Dest) -> bool {
        self.allows_port_scheme_method(d) && self.host_matches(d.host)
    }

    /// Whether the rule names the destination's scheme, host and port themselves, as a
    /// secret's host must: a rule without a scheme names `https` only, a rule without a port
    /// the scheme's default port. (An allow rule without a scheme allows both schemes; a
    /// secret must never follow it to plain `http`.)
    fn names_exactly(&self, d: &Dest) -> bool {
        if let Some(m) = &self.methods
            && !m.iter().any(|m| m.eq_ignore_ascii_case(d.method))
        {
            return false;
        }
        let scheme = self.scheme.as_deref().unwrap_or("https");
        if scheme != d.scheme || self.port.or(default_port(scheme)) != Some(d.port) {
            return false;
        }
        self.host_matches(d.host)
    }

    fn host_matches(&self, host: &str) -> bool {
        match &self.host {
            HostPat::Name(n) => n == host,
            HostPat::Suffix(s) => host.ends_with(s.as_str()),
            HostPat::Net(net) => host.parse::<IpAddr>().is_ok_and(|ip| net.contains(&ip)),
        }
    }

    /// Whether the rule names `addr` itself (an address or range rule containing it).
    pub fn names_address(&self, d: &Dest, addr: IpAddr) -> bool {
        matches!(&self.host, HostPat::Net(net) if net.contains(&addr))
            && self.allows_port_scheme_method(d)
    }
}

fn valid_name(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Whether `ip` is an ordinary public address: not loopback, private, link-local, unique
/// local, carrier-grade NAT, benchmarking, documentation, multicast, unspecified or
/// broadcast (169.254.169.254, the cloud metadata address, is link-local).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18.0.0/15
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0.0/24
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // fc00::/7 unique local
                || (s[0] & 0xffc0) == 0xfe80 // fe80::/10 link-local
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x64 && s[1] == 0xff9b)) // NAT64 (can reach private v4)
        }
    }
}

/// The verdict on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed by this rule.
    Allow(String),
    /// Denied; the reason, for the guest and the log.
    Deny(String),
}

impl NetPolicy {
    /// Adds rules (presets expanded), checking each; repeated rules are kept once.
    pub fn allow(&mut self, patterns: &[String]) -> Result<(), RuleError> {
        for p in patterns {
            let expanded: Vec<String> = match PRESETS.iter().find(|(n, _)| n == p) {
                Some((_, hosts)) => hosts.iter().map(|h| h.to_string()).collect(),
                None if p.starts_with('@') => {
                    return Err(RuleError {
                        rule: p.clone(),
                        why: format!(
                            "unknown preset (known: {})",
                            PRESETS
                                .iter()
                                .map(|(n, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
                None => vec![p.clone()],
            };
            for e in expanded {
                Rule::parse(&e)?;
                if !self.allow.contains(&e) {
                    self.allow.push(e);
                }
            }
        }
        Ok(())
    }

    /// Removes rules (a preset removes its hosts); true if any was there.
    pub fn revoke(&mut self, patterns: &[String]) -> bool {
        let before = self.allow.len();
        for p in patterns {
            match PRESETS.iter().find(|(n, _)| n == p) {
                Some((_, hosts)) => self.allow.retain(|r| !hosts.contains(&r.as_str())),
                None => self.allow.retain(|r| r != p),
            }
        }
        self.allow.len() != before
    }

    /// Adds or replaces a secret (a replaced one keeps its placeholder).
    pub fn set_secret(&mut self, mut s: SecretRule) {
        if let Some(old) = self.secrets.iter().find(|x| x.name == s.name) {
            s.placeholder = old.placeholder.clone();
        }
        self.secrets.retain(|x| x.name != s.name);
        self.secrets.push(s);
    }

    /// Checks a policy that came from outside (the HTTP API, a settings file): expands
    /// presets, rejects bad rules and secrets, and gives secrets without one a placeholder.
    pub fn normalise(&mut self) -> Result<(), RuleError> {
        let rules = std::mem::take(&mut self.allow);
        self.allow(&rules)?;
        for s in &mut self.secrets {
            let mut checked = SecretRule::parse(&format!("{}@{}", s.name, s.hosts.join(",")))?;
            if !s.placeholder.is_empty() {
                if !s.placeholder.starts_with("burrow-secret-") || s.placeholder.len() < 30 {
                    return Err(RuleError {
                        rule: s.name.clone(),
                        why: "a placeholder is burrow-secret- and 32 hex digits".into(),
                    });
                }
                checked.placeholder = s.placeholder.clone();
            }
            *s = checked;
        }
        Ok(())
    }

    fn rules(&self) -> Vec<Rule> {
        // Stored rules were checked when they were added.
        self.allow
            .iter()
            .filter_map(|r| Rule::parse(r).ok())
            .collect()
    }

    /// The verdict on a destination by name, before it is resolved.
    pub fn check(&self, d: &Dest) -> Verdict {
        match self.rules().into_iter().find(|r| r.allows(d)) {
            Some(r) => Verdict::Allow(r.text),
            None if self.allow.is_empty() => Verdict::Deny(format!(
                "network access to {} is denied: this session has no network rule (allow it with `burrow net SESSION --allow {}`)",
                d.host,
                shown_rule(d)
            )),
            None => Verdict::Deny(format!(
                "network access to {}:{} ({} {}) is denied by the session's policy (allow it with `burrow net SESSION --allow {}`)",
                d.host,
                d.port,
                d.method,
                d.scheme,
                shown_rule(d)
            )),
        }
    }

    /// The verdict on one address `d.host` resolved to: a public address passes; any other
    /// only through a rule naming it.
    pub fn check_address(&self, d: &Dest, addr: IpAddr) -> Verdict {
        if is_public(addr) {
            return Verdict::Allow(String::new());
        }
        match self.rules().into_iter().find(|r| r.names_address(d, addr)) {
            Some(r) => Verdict::Allow(r.text),
            None => Verdict::Deny(format!(
                "network access to {} is denied: it resolves to {addr}, a non-public address that only a rule naming it allows (e.g. `--allow {}`)",
                d.host,
                match addr {
                    IpAddr::V6(a) => format!("[{a}]:{}", d.port),
                    IpAddr::V4(a) => format!("{a}:{}", d.port),
                }
            )),
        }
    }
}

/// The narrowest rule that would allow `d`.
fn shown_rule(d: &Dest) -> String {
    let host = if d.host.contains(':') {
        format!("[{}]", d.host)
    } else {
        d.host.to_string()
    };
    if default_port(d.scheme) == Some(d.port) {
        host
    } else {
        format!("{host}:{}", d.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest<'a>(method: &'a str, scheme: &'a str, host: &'a str, port: u16) -> Dest<'a> {
        Dest {
            method,
            scheme,
            host,
            port,
        }
    }

    fn policy(rules: &[&str]) -> NetPolicy {
        let mut p = NetPolicy::default();
        p.allow(&rules.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
        p
    }

    fn allowed(p: &NetPolicy, d: Dest) -> bool {
        matches!(p.check(&d), Verdict::Allow(_))
    }

    #[test]
    fn deny_by_default() {
        let p = NetPolicy::default();
        let v = p.check(&dest("GET", "https", "example.com", 443));
        assert!(
            matches!(&v, Verdict::Deny(m) if m.contains("example.com") && m.contains("--allow example.com")),
            "{v:?}"
        );
    }

    #[test]
    fn hosts_ports_schemes_methods() {
        let p = policy(&[
            "example.com",
            "*.example.org",
            "api.test:8443",
            "https://secure.test",
            "GET,HEAD@pypi.test",
        ]);
        assert!(allowed(&p, dest("GET", "https", "example.com", 443)));
        assert!(allowed(&p, dest("POST", "http", "example.com", 80)));
        assert!(!allowed(&p, dest("GET", "https", "example.com", 8443)));
        assert!(!allowed(&p, dest("GET", "https", "sub.example.com", 443)));
        assert!(allowed(&p, dest("GET", "https", "a.b.example.org", 443)));
        assert!(!allowed(&p, dest("GET", "https", "example.org", 443)));
        assert!(!allowed(&p, dest("GET", "https", "badexample.org", 443)));
        assert!(allowed(&p, dest("GET", "https", "api.test", 8443)));
        assert!(!allowed(&p, dest("GET", "https", "api.test", 443)));
        assert!(allowed(&p, dest("GET", "https", "secure.test", 443)));
        assert!(!allowed(&p, dest("GET", "http", "secure.test", 80)));
        assert!(allowed(&p, dest("HEAD", "https", "pypi.test", 443)));
        assert!(!allowed(&p, dest("POST", "https", "pypi.test", 443)));
    }

    #[test]
    fn addresses_and_ranges() {
        let p = policy(&["1.2.3.4", "10.0.0.0/8", "127.0.0.1:8080", "[::1]:9000"]);
        assert!(allowed(&p, dest("GET", "https", "1.2.3.4", 443)));
        assert!(allowed(&p, dest("GET", "http", "10.9.8.7", 80)));
        assert!(allowed(&p, dest("GET", "http", "127.0.0.1", 8080)));
        assert!(!allowed(&p, dest("GET", "http", "127.0.0.1", 8081)));
        assert!(allowed(&p, dest("GET", "http", "::1", 9000)));
        // A hostname rule never matches an address literal.
        let q = policy(&["localhost"]);
        assert!(!allowed(&q, dest("GET", "http", "127.0.0.1", 80)));
    }

    #[test]
    fn resolved_addresses_need_a_rule_naming_them_unless_public() {
        let p = policy(&["example.com", "127.0.0.1:8080"]);
        let d = dest("GET", "http", "example.com", 80);
        assert!(matches!(
            p.check_address(&d, "93.184.216.34".parse().unwrap()),
            Verdict::Allow(_)
        ));
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            let v = p.check_address(&d, bad.parse().unwrap());
            assert!(matches!(v, Verdict::Deny(_)), "{bad}: {v:?}");
        }
        // Named explicitly (port included): allowed.
        let d = dest("GET", "http", "localhost", 8080);
        assert!(matches!(
            p.check_address(&d, "127.0.0.1".parse().unwrap()),
            Verdict::Allow(r) if r == "127.0.0.1:8080"
        ));
    }

    #[test]
    fn presets_and_bad_rules() {
        let mut p = policy(&["@pypi"]);
        assert_eq!(p.allow, ["pypi.org", "files.pythonhosted.org"]);
        assert!(p.revoke(&["@pypi".into()]));
        assert!(p.allow.is_empty());
        for bad in [
            "",
            "ftp://x.com",
            "x.com/path",
            "x.com:0",
            "x.com:99999",
            "@nope",
            "a b",
        ] {
            assert!(p.allow(&[bad.to_string()]).is_err(), "{bad}");
        }
        assert!(SecretRule::parse("GITHUB_TOKEN@github.com,api.github.com").is_ok());
        assert!(SecretRule::parse("1X@github.com").is_err());
        assert!(SecretRule::parse("X@").is_err());
    }
}
