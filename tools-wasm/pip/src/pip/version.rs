//! PEP 440 versions and version specifiers, as pip compares them: epoch, release, pre, post,
//! dev and local parts; `==` (with `.*`), `!=`, `<`, `<=`, `>`, `>=`, `~=`, `===`.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    epoch: u64,
    release: Vec<u64>,
    /// (0 = a, 1 = b, 2 = rc, number)
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Vec<String>,
    text: String,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn num(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// Optional separator then an optional number (PEP 440's normalisation rules).
fn sep_num(s: &str) -> (Option<u64>, &str) {
    let t = s.strip_prefix(['.', '-', '_']).unwrap_or(s);
    match num(t) {
        Some((n, r)) => (Some(n), r),
        None => (None, s),
    }
}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let s = text.trim().to_ascii_lowercase();
        let mut s = s.strip_prefix('v').unwrap_or(&s);
        let mut epoch = 0;
        if let Some((e, r)) = num(s)
            && let Some(r) = r.strip_prefix('!')
        {
            epoch = e;
            s = r;
        }
        let (first, mut rest) = num(s)?;
        let mut release = vec![first];
        while let Some(r) = rest.strip_prefix('.') {
            match num(r) {
                Some((n, r)) => {
                    release.push(n);
                    rest = r;
                }
                None => break,
            }
        }
        let mut pre = None;
        let t = rest.strip_prefix(['.', '-', '_']).unwrap_or(rest);
        for (names, kind) in [
            (&["alpha", "a"][..], 0u8),
            (&["beta", "b"][..], 1),
            (&["preview", "pre", "rc", "c"][..], 2),
        ] {
            if let Some(n) = names.iter().find(|n| t.starts_with(*n)) {
                let (v, r) = sep_num(&t[n.len()..]);
                pre = Some((kind, v.unwrap_or(0)));
                rest = r;
                break;
            }
        }
        let mut post = None;
        let t = rest.strip_prefix(['.', '-', '_']).unwrap_or(rest);
        if let Some(n) = ["post", "rev", "r"].iter().find(|n| t.starts_with(*n)) {
            let (v, r) = sep_num(&t[n.len()..]);
            post = Some(v.unwrap_or(0));
            rest = r;
        } else if let Some(r) = rest.strip_prefix('-')
            && let Some((n, r)) = num(r)
        {
            post = Some(n);
            rest = r;
        }
        let mut dev = None;
        let t = rest.strip_prefix(['.', '-', '_']).unwrap_or(rest);
        if let Some(r) = t.strip_prefix("dev") {
            let (v, r) = sep_num(r);
            dev = Some(v.unwrap_or(0));
            rest = r;
        }
        let mut local = Vec::new();
        if let Some(r) = rest.strip_prefix('+') {
            local = r.split(['.', '-', '_']).map(str::to_string).collect();
            if local
                .iter()
                .any(|p| p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                return None;
            }
            rest = "";
        }
        if !rest.is_empty() {
            return None;
        }
        Some(Version {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
            text: text.trim().to_string(),
        })
    }

    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    fn release_cmp(a: &[u64], b: &[u64]) -> Ordering {
        let n = a.len().max(b.len());
        for i in 0..n {
            let (x, y) = (
                a.get(i).copied().unwrap_or(0),
                b.get(i).copied().unwrap_or(0),
            );
            match x.cmp(&y) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        Ordering::Equal
    }

    /// The ordering without the local part (what specifiers other than `==`+local compare).
    fn public_cmp(&self, other: &Version) -> Ordering {
        // A dev release without pre or post sorts before every pre-release of its release.
        let pre_key = |v: &Version| -> (i8, u64) {
            match (v.pre, v.post, v.dev) {
                (None, None, Some(_)) => (-1, 0),
                (Some((k, n)), _, _) => (k as i8, n),
                (None, _, _) => (3, 0),
            }
        };
        let post_key = |v: &Version| v.post.map_or(-1i128, |p| p as i128);
        let dev_key = |v: &Version| v.dev.map_or(i128::MAX, |d| d as i128);
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| Self::release_cmp(&self.release, &other.release))
            .then_with(|| pre_key(self).cmp(&pre_key(other)))
            .then_with(|| post_key(self).cmp(&post_key(other)))
            .then_with(|| dev_key(self).cmp(&dev_key(other)))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.public_cmp(other).then_with(|| {
            let key = |p: &String| match p.parse::<u64>() {
                Ok(n) => (1, n, String::new()),
                Err(_) => (0, 0, p.clone()),
            };
            let a: Vec<_> = self.local.iter().map(key).collect();
            let b: Vec<_> = other.local.iter().map(key).collect();
            a.cmp(&b)
        })
    }
}

/// One clause of a specifier set, e.g. `>=1.2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    op: String,
    version: String,
}

impl std::fmt::Display for Clause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.op, self.version)
    }
}

/// A comma-separated specifier set; empty matches every version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Specifiers(pub Vec<Clause>);

impl std::fmt::Display for Specifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

impl Specifiers {
    pub fn parse(s: &str) -> Result<Specifiers, String> {
        let mut out = Vec::new();
        for part in s.split(',') {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            let op_len = p
                .find(|c: char| !matches!(c, '=' | '!' | '<' | '>' | '~'))
                .unwrap_or(p.len());
            let (op, v) = (&p[..op_len], p[op_len..].trim());
            if !matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=" | "~=" | "===") || v.is_empty() {
                return Err(format!("Invalid specifier: '{p}'"));
            }
            let ver = v.strip_suffix(".*").unwrap_or(v);
            if op != "===" && Version::parse(ver).is_none() {
                return Err(format!("Invalid specifier: '{p}'"));
            }
            out.push(Clause {
                op: op.into(),
                version: v.into(),
            });
        }
        Ok(Specifiers(out))
    }

    /// Whether a clause names a pre-release (which then allows pre-releases).
    pub fn mentions_prerelease(&self) -> bool {
        self.0.iter().any(|c| {
            Version::parse(c.version.trim_end_matches(".*")).is_some_and(|v| v.is_prerelease())
        })
    }

    pub fn contains(&self, v: &Version) -> bool {
        self.0.iter().all(|c| c.matches(v))
    }

    pub fn extend(&mut self, other: &Specifiers) {
        for c in &other.0 {
            if !self.0.contains(c) {
                self.0.push(c.clone());
            }
        }
    }
}

impl Clause {
    fn matches(&self, v: &Version) -> bool {
        if self.op == "===" {
            return v.text == self.version;
        }
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let Some(p) = Version::parse(prefix) else {
                return false;
            };
            let same = v.epoch == p.epoch
                && (0..p.release.len())
                    .all(|i| v.release.get(i).copied().unwrap_or(0) == p.release[i]);
            return if self.op == "!=" { !same } else { same };
        }
        let Some(s) = Version::parse(&self.version) else {
            return false;
        };
        // Without a local part in the specifier, the candidate's local part is ignored.
        let cmp = if s.local.is_empty() {
            v.public_cmp(&s)
        } else {
            v.cmp(&s)
        };
        match self.op.as_str() {
            "==" => cmp == Ordering::Equal,
            "!=" => cmp != Ordering::Equal,
            "<=" => cmp != Ordering::Greater,
            ">=" => cmp != Ordering::Less,
            // `<V` excludes pre-releases of V; `>V` excludes post-releases of V.
            "<" => {
                cmp == Ordering::Less
                    && !(v.is_prerelease()
                        && !s.is_prerelease()
                        && Version::release_cmp(&v.release, &s.release) == Ordering::Equal)
            }
            ">" => {
                cmp == Ordering::Greater
                    && !(v.post.is_some()
                        && s.post.is_none()
                        && Version::release_cmp(&v.release, &s.release) == Ordering::Equal)
            }
            "~=" => {
                if s.release.len() < 2 {
                    return false;
                }
                let prefix = &s.release[..s.release.len() - 1];
                cmp != Ordering::Less
                    && (0..prefix.len())
                        .all(|i| v.release.get(i).copied().unwrap_or(0) == prefix[i])
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn ordering_follows_pep_440() {
        let order = [
            "1.0.dev1",
            "1.0a1",
            "1.0a2.dev1",
            "1.0a2",
            "1.0b1",
            "1.0rc1",
            "1.0",
            "1.0+local",
            "1.0.post1.dev1",
            "1.0.post1",
            "1.1",
            "2!0.1",
        ];
        for w in order.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("1.0").cmp(&v("1.0.0")), Ordering::Equal);
    }

    #[test]
    fn specifiers() {
        let s = |t: &str| Specifiers::parse(t).unwrap();
        assert!(s(">=1.2,<2").contains(&v("1.5")));
        assert!(!s(">=1.2,<2").contains(&v("2.0")));
        assert!(s("==1.4.*").contains(&v("1.4.9")));
        assert!(!s("==1.4.*").contains(&v("1.5")));
        assert!(s("~=2.2").contains(&v("2.9")));
        assert!(!s("~=2.2").contains(&v("3.0")));
        assert!(s("~=1.4.5").contains(&v("1.4.9")));
        assert!(!s("~=1.4.5").contains(&v("1.5.0")));
        assert!(!s("<2").contains(&v("2.0a1")));
        assert!(s("!=1.0").contains(&v("1.1")));
        assert!(s("==1.0").contains(&v("1.0+abc")));
        assert!(Specifiers::parse("=>1").is_err());
    }
}
