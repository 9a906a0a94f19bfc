//! PEP 508 requirements (`name[extra1,extra2] (>=1.0,<2) ; python_version >= "3.8"`) and
//! their environment markers, evaluated for burrow's interpreter: CPython 3.12.0 on WASI.

use super::version::{Specifiers, Version};

/// PEP 503 name normalisation: lower case, runs of `-_.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::new();
    let mut sep = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[derive(Debug, Clone)]
pub struct Requirement {
    /// As written.
    pub name: String,
    pub extras: Vec<String>,
    pub specifiers: Specifiers,
    pub marker: Option<String>,
    /// A direct reference (PEP 440 `name @ https://...`): the file to install.
    pub url: Option<String>,
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if !self.extras.is_empty() {
            write!(f, "[{}]", self.extras.join(","))?;
        }
        if let Some(u) = &self.url {
            return write!(f, " @ {u}");
        }
        write!(f, "{}", self.specifiers)
    }
}

impl Requirement {
    pub fn parse(text: &str) -> Result<Requirement, String> {
        let invalid = || format!("Invalid requirement: '{}'", text.trim());
        // `name @ URL ; marker`: the marker follows the URL after whitespace.
        let (body, url, marker) = match text.split_once('@') {
            Some((name, rest)) if rest.trim_start().contains("://") => {
                let rest = rest.trim();
                let (url, marker) = match rest.split_once(" ;").or_else(|| rest.split_once("; ")) {
                    Some((u, m)) => (u.trim(), Some(m.trim().to_string())),
                    None => (rest, None),
                };
                (name, Some(url.to_string()), marker)
            }
            _ => match text.split_once(';') {
                Some((b, m)) => (b, None, Some(m.trim().to_string())),
                None => (text, None, None),
            },
        };
        let body = body.trim();
        if body.contains("://") {
            return Err(invalid());
        }
        if let Some(u) = &url {
            let scheme = u.split("://").next().unwrap_or("");
            if scheme.contains('+') || !matches!(scheme, "http" | "https" | "file") {
                return Err(format!(
                    "{}: {scheme} references (version control) are not supported by burrow's pip; only http(s) and file URLs of wheels and sdists",
                    invalid()
                ));
            }
        }
        let end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(body.len());
        let name = &body[..end];
        if name.is_empty() {
            return Err(invalid());
        }
        let mut rest = body[end..].trim_start();
        let mut extras = Vec::new();
        if let Some(r) = rest.strip_prefix('[') {
            let (list, after) = r.split_once(']').ok_or_else(invalid)?;
            extras = list
                .split(',')
                .map(normalize)
                .filter(|e| !e.is_empty())
                .collect();
            rest = after.trim_start();
        }
        let spec = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(rest);
        let specifiers = Specifiers::parse(spec).map_err(|_| invalid())?;
        if url.is_some() && !spec.trim().is_empty() {
            return Err(invalid());
        }
        Ok(Requirement {
            name: name.to_string(),
            extras,
            specifiers,
            marker,
            url,
        })
    }

    pub fn key(&self) -> String {
        normalize(&self.name)
    }

    /// Whether the marker holds here, with `extra` set to each of `extras` in turn (or "").
    pub fn applies(&self, extras: &[String]) -> Result<bool, String> {
        let Some(m) = &self.marker else {
            return Ok(true);
        };
        if extras.is_empty() {
            return evaluate(m, "");
        }
        for e in extras {
            if evaluate(m, e)? {
                return Ok(true);
            }
        }
        evaluate(m, "")
    }
}

/// The marker variables of burrow's interpreter.
fn variable(name: &str, extra: &str) -> Option<String> {
    Some(
        match name {
            "python_version" => "3.12",
            "python_full_version" => "3.12.0",
            "os_name" => "posix",
            "sys_platform" => "wasi",
            "platform_system" => "",
            "platform_machine" => "wasm32",
            "platform_release" | "platform_version" => "",
            "platform_python_implementation" => "CPython",
            "implementation_name" => "cpython",
            "implementation_version" => "3.12.0",
            "extra" => extra,
            _ => return None,
        }
        .to_string(),
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Var(String),
    Op(String),
    And,
    Or,
    Open,
    Close,
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let bad = || format!("Invalid marker: '{s}'");
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Tok::Open);
            i += 1;
        } else if c == ')' {
            out.push(Tok::Close);
            i += 1;
        } else if c == '"' || c == '\'' {
            let end = s[i + 1..].find(c).ok_or_else(bad)? + i + 1;
            out.push(Tok::Str(s[i + 1..end].to_string()));
            i = end + 1;
        } else if "<>=!~".contains(c) {
            let end = s[i..]
                .find(|ch: char| !"<>=!~".contains(ch))
                .map_or(s.len(), |e| e + i);
            out.push(Tok::Op(s[i..end].to_string()));
            i = end;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = s[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
                .map_or(s.len(), |e| e + i);
            let w = &s[i..end];
            out.push(match w {
                "and" => Tok::And,
                "or" => Tok::Or,
                "in" => Tok::Op("in".into()),
                "not" => {
                    // `not in`
                    let rest = s[end..].trim_start();
                    if let Some(r) = rest.strip_prefix("in") {
                        i = s.len() - r.len();
                        out.push(Tok::Op("not in".into()));
                        continue;
                    }
                    return Err(bad());
                }
                _ => Tok::Var(w.replace('.', "_")),
            });
            i = end;
        } else {
            return Err(bad());
        }
    }
    Ok(out)
}

/// Evaluates a marker expression with `extra` bound.
pub fn evaluate(marker: &str, extra: &str) -> Result<bool, String> {
    let toks = lex(marker)?;
    let mut p = Parser {
        toks: &toks,
        i: 0,
        extra,
        text: marker,
    };
    let v = p.or()?;
    if p.i != toks.len() {
        return Err(format!("Invalid marker: '{marker}'"));
    }
    Ok(v)
}

struct Parser<'a> {
    toks: &'a [Tok],
    i: usize,
    extra: &'a str,
    text: &'a str,
}

impl Parser<'_> {
    fn bad(&self) -> String {
        format!("Invalid marker: '{}'", self.text)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.toks.get(self.i) == Some(&Tok::Or) {
            self.i += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.atom()?;
        while self.toks.get(self.i) == Some(&Tok::And) {
            self.i += 1;
            let r = self.atom()?;
            v = v && r;
        }
        Ok(v)
    }

    fn value(&mut self) -> Result<(String, bool), String> {
        let t = self.toks.get(self.i).cloned().ok_or_else(|| self.bad())?;
        self.i += 1;
        match t {
            Tok::Str(s) => Ok((s, false)),
            Tok::Var(v) => Ok((
                variable(&v, self.extra).ok_or_else(|| self.bad())?,
                v == "extra",
            )),
            _ => Err(self.bad()),
        }
    }

    fn atom(&mut self) -> Result<bool, String> {
        if self.toks.get(self.i) == Some(&Tok::Open) {
            self.i += 1;
            let v = self.or()?;
            if self.toks.get(self.i) != Some(&Tok::Close) {
                return Err(self.bad());
            }
            self.i += 1;
            return Ok(v);
        }
        let (l, l_extra) = self.value()?;
        let Some(Tok::Op(op)) = self.toks.get(self.i).cloned() else {
            return Err(self.bad());
        };
        self.i += 1;
        let (r, r_extra) = self.value()?;
        let (l, r) = if l_extra || r_extra {
            (super::req::normalize(&l), super::req::normalize(&r))
        } else {
            (l, r)
        };
        Ok(match op.as_str() {
            "in" => r.contains(&l),
            "not in" => !r.contains(&l),
            _ => match (Version::parse(&l), Specifiers::parse(&format!("{op}{r}"))) {
                (Some(v), Ok(spec)) if !l.is_empty() => spec.contains(&v),
                _ => match op.as_str() {
                    "==" | "===" => l == r,
                    "!=" => l != r,
                    "<" => l < r,
                    "<=" => l <= r,
                    ">" => l > r,
                    ">=" => l >= r,
                    _ => return Err(self.bad()),
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_and_markers() {
        let r = Requirement::parse("Foo_Bar[Security, socks] (>=2.0,<3) ; python_version >= '3.8'")
            .unwrap();
        assert_eq!(r.key(), "foo-bar");
        assert_eq!(r.extras, ["security", "socks"]);
        assert!(r.applies(&[]).unwrap());
        let r = Requirement::parse("colorama; sys_platform == 'win32'").unwrap();
        assert!(!r.applies(&[]).unwrap());
        let r = Requirement::parse("pysocks!=1.5.7; extra == 'socks'").unwrap();
        assert!(!r.applies(&[]).unwrap());
        assert!(r.applies(&["socks".into()]).unwrap());
        assert!(
            evaluate(
                "python_version < '3.10' or (os_name == 'posix' and 'wasi' in sys_platform)",
                ""
            )
            .unwrap()
        );
        assert!(!evaluate("python_full_version < '3.9.1'", "").unwrap());
    }
}
