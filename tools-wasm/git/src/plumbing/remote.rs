//! git's smart HTTP protocol, version 2 (what GitHub, GitLab and `git http-backend` speak):
//! pkt-lines, the capability advertisement, `ls-refs` and `fetch`. Requests go out through
//! curl's wire (`wasi:http`), so the session's network policy, secret swap and audit apply to
//! git exactly as to curl; credentials in the URL travel as HTTP Basic, as git sends them.

use sh_curl as curl;

use super::object::{Oid, parse_hex};

const AGENT: &str = "git/2.47.3.burrow";

/// Encodes one pkt-line.
pub fn pkt(line: &str) -> Vec<u8> {
    let mut v = format!("{:04x}", line.len() + 4).into_bytes();
    v.extend_from_slice(line.as_bytes());
    v
}

/// A decoded pkt-line: data, or one of the special packets.
#[derive(Debug, PartialEq, Eq)]
pub enum Pkt<'a> {
    Data(&'a [u8]),
    Flush,
    Delim,
    End,
}

/// Reads pkt-lines from a whole response body.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// The next packet; None at the end of the body.
    pub fn next(&mut self) -> Result<Option<Pkt<'a>>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let len = self
            .buf
            .get(self.pos..self.pos + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or("fatal: protocol error: bad line length character")?;
        self.pos += 4;
        Ok(Some(match len {
            0 => Pkt::Flush,
            1 => Pkt::Delim,
            2 => Pkt::End,
            3 => return Err("fatal: protocol error: bad line length 3".into()),
            n => {
                let d = self
                    .buf
                    .get(self.pos..self.pos + n - 4)
                    .ok_or("fatal: the remote end hung up unexpectedly")?;
                self.pos += n - 4;
                Pkt::Data(d)
            }
        }))
    }

    /// The next data line as text without its newline (None at a special packet or the end).
    pub fn line(&mut self) -> Result<Option<String>, String> {
        match self.next()? {
            Some(Pkt::Data(d)) => Ok(Some(
                String::from_utf8_lossy(d.strip_suffix(b"\n").unwrap_or(d)).into_owned(),
            )),
            _ => Ok(None),
        }
    }
}

/// A remote as burrow's git talks to it: its URL and what the server advertised.
pub struct Remote {
    /// The repository URL as given (for messages), without a trailing slash.
    pub url: String,
    /// Where requests go: the URL after redirects of the discovery request.
    base: String,
    caps: Vec<String>,
}

/// One advertised ref.
#[derive(Clone, Debug)]
pub struct Ref {
    pub name: String,
    /// None for an unborn HEAD.
    pub oid: Option<Oid>,
    pub symref: Option<String>,
    pub peeled: Option<Oid>,
}

/// What a fetch brought: the pack and the shallow boundary.
pub struct Fetched {
    pub pack: Vec<u8>,
    pub shallow: Vec<Oid>,
}

/// git's message for a failed request: `unable to access` with curl's reason.
fn unable(url: &str, why: &str) -> String {
    format!("fatal: unable to access '{url}/': {why}")
}

/// What git says when the server wants credentials.
fn auth_failed(url: &str) -> String {
    match curl::url_parts(url) {
        Some((scheme, authority, false)) => format!(
            "fatal: could not read Username for '{scheme}://{authority}': terminal prompts disabled"
        ),
        _ => format!("fatal: Authentication failed for '{url}/'"),
    }
}

/// git's message for an HTTP status other than 200 from the server at `url`.
fn http_status(status: u16, url: &str) -> Result<(), String> {
    match status {
        200 => Ok(()),
        401 | 403 => Err(auth_failed(url)),
        404 => Err(format!("fatal: repository '{url}/' not found")),
        s => Err(unable(
            url,
            &format!("The requested URL returned error: {s}"),
        )),
    }
}

impl Remote {
    /// Discovers the server: `GET info/refs?service=git-upload-pack` asking for protocol v2.
    pub fn connect(url: &str) -> Result<Remote, String> {
        let url = url.trim_end_matches('/').to_string();
        let first = format!("{url}/info/refs?service=git-upload-pack");
        let resp = curl::send(
            "GET",
            &first,
            &[
                ("Accept", "*/*"),
                ("User-Agent", AGENT),
                ("Git-Protocol", "version=2"),
                ("Pragma", "no-cache"),
            ],
            None,
        )
        .map_err(|why| unable(&url, &why))?;
        http_status(resp.status, &url)?;
        let base = resp
            .url
            .strip_suffix("/info/refs?service=git-upload-pack")
            .unwrap_or(&url)
            .to_string();
        if !resp
            .content_type
            .starts_with("application/x-git-upload-pack-advertisement")
        {
            return Err(format!(
                "fatal: {url}/info/refs not valid: is this a git repository?\n\
                 (burrow's git speaks the smart HTTP protocol only; this server answered as a dumb HTTP server)"
            ));
        }
        let mut r = Reader::new(&resp.body);
        let mut first = r.line()?;
        // A v0 server (and some v2 ones) start with the service line and a flush.
        if first.as_deref() == Some("# service=git-upload-pack") {
            let _ = r.next()?;
            first = r.line()?;
        }
        if first.as_deref() != Some("version 2") {
            return Err(format!(
                "fatal: {url}: the server does not speak git protocol version 2, which burrow's git needs \
                 (burrow's git does not implement protocol versions 0 and 1)"
            ));
        }
        let mut caps = Vec::new();
        while let Some(l) = r.line()? {
            caps.push(l);
        }
        Ok(Remote { url, base, caps })
    }

    /// The value of capability `name` (`fetch=shallow filter` gives `shallow filter`).
    fn cap(&self, name: &str) -> Option<&str> {
        self.caps.iter().find_map(|c| {
            if c == name {
                Some("")
            } else {
                c.strip_prefix(name)?.strip_prefix('=')
            }
        })
    }

    fn command(&self, command: &str, args: &[String]) -> Result<Vec<u8>, String> {
        let mut body = pkt(&format!("command={command}\n"));
        if self.cap("agent").is_some() {
            body.extend(pkt(&format!("agent={AGENT}\n")));
        }
        if self.cap("object-format").is_some() {
            body.extend(pkt("object-format=sha1\n"));
        }
        body.extend_from_slice(b"0001");
        for a in args {
            body.extend(pkt(&format!("{a}\n")));
        }
        body.extend_from_slice(b"0000");
        let resp = curl::send(
            "POST",
            &format!("{}/git-upload-pack", self.base),
            &[
                ("Accept", "application/x-git-upload-pack-result"),
                ("Content-Type", "application/x-git-upload-pack-request"),
                ("User-Agent", AGENT),
                ("Git-Protocol", "version=2"),
            ],
            Some(&body),
        )
        .map_err(|why| unable(&self.url, &why))?;
        http_status(resp.status, &self.url)?;
        Ok(resp.body)
    }

    /// `ls-refs`: HEAD, branches and tags (with symref targets and peeled tags).
    pub fn ls_refs(&self, prefixes: &[&str]) -> Result<Vec<Ref>, String> {
        let mut args = vec!["symrefs".to_string(), "peel".to_string()];
        if self
            .cap("ls-refs")
            .is_some_and(|v| v.split(' ').any(|c| c == "unborn"))
        {
            args.push("unborn".into());
        }
        for p in prefixes {
            args.push(format!("ref-prefix {p}"));
        }
        let body = self.command("ls-refs", &args)?;
        let mut r = Reader::new(&body);
        let mut out = Vec::new();
        while let Some(line) = r.line()? {
            let mut parts = line.split(' ');
            let (Some(id), Some(name)) = (parts.next(), parts.next()) else {
                return Err(format!("fatal: invalid ls-refs response: {line}"));
            };
            let oid = if id == "unborn" {
                None
            } else {
                Some(
                    parse_hex(id)
                        .ok_or_else(|| format!("fatal: invalid ls-refs response: {line}"))?,
                )
            };
            let mut rf = Ref {
                name: name.to_string(),
                oid,
                symref: None,
                peeled: None,
            };
            for attr in parts {
                if let Some(t) = attr.strip_prefix("symref-target:") {
                    rf.symref = Some(t.to_string());
                } else if let Some(p) = attr.strip_prefix("peeled:") {
                    rf.peeled = parse_hex(p);
                }
            }
            out.push(rf);
        }
        Ok(out)
    }

    /// `fetch` of `wants` (with `depth`, when given): the pack, progress messages passed to
    /// `progress` as the server sends them.
    pub fn fetch(
        &self,
        wants: &[Oid],
        haves: &[Oid],
        depth: Option<u32>,
        progress: &mut dyn FnMut(&[u8]),
        quiet: bool,
    ) -> Result<Fetched, String> {
        let fetch_caps = self.cap("fetch").unwrap_or("");
        let mut args = vec!["ofs-delta".to_string()];
        if quiet {
            args.push("no-progress".into());
        }
        args.push("include-tag".into());
        for w in wants {
            args.push(format!("want {}", super::object::hex(w)));
        }
        // What we have: the server leaves out what these reach (no thin pack is asked
        // for, so the pack stays self-contained).
        for h in haves {
            args.push(format!("have {}", super::object::hex(h)));
        }
        if let Some(d) = depth {
            if !fetch_caps.split(' ').any(|c| c == "shallow") {
                return Err("fatal: Server does not support shallow clients".into());
            }
            args.push(format!("deepen {d}"));
        }
        args.push("done".into());
        let body = self.command("fetch", &args)?;
        let mut r = Reader::new(&body);
        let mut pack = Vec::new();
        let mut shallow = Vec::new();
        loop {
            let Some(section) = r.line()? else {
                return Err("fatal: expected 'packfile'".into());
            };
            match section.as_str() {
                "shallow-info" => {
                    while let Some(l) = r.line()? {
                        if let Some(s) = l.strip_prefix("shallow ") {
                            shallow.extend(parse_hex(s));
                        }
                    }
                }
                "packfile" => break,
                // acknowledgments, wanted-refs, packfile-uris: read past them.
                _ => while r.line()?.is_some() {},
            }
        }
        while let Some(p) = r.next()? {
            let Pkt::Data(d) = p else { break };
            match d.first() {
                Some(1) => pack.extend_from_slice(&d[1..]),
                Some(2) => progress(&d[1..]),
                Some(3) => {
                    return Err(format!(
                        "remote: {}\nfatal: early EOF",
                        String::from_utf8_lossy(&d[1..]).trim_end()
                    ));
                }
                _ => return Err("fatal: protocol error: bad band".into()),
            }
        }
        Ok(Fetched { pack, shallow })
    }
}

/// A receive-pack endpoint (what `push` talks to): its refs and capabilities.
pub struct Receiver {
    pub url: String,
    base: String,
    pub refs: Vec<(String, Oid)>,
    pub caps: Vec<String>,
}

impl Receiver {
    /// `GET info/refs?service=git-receive-pack`: the protocol v0 advertisement.
    pub fn connect(url: &str) -> Result<Receiver, String> {
        let url = url.trim_end_matches('/').to_string();
        let first = format!("{url}/info/refs?service=git-receive-pack");
        let resp = curl::send(
            "GET",
            &first,
            &[
                ("Accept", "*/*"),
                ("User-Agent", AGENT),
                ("Pragma", "no-cache"),
            ],
            None,
        )
        .map_err(|why| unable(&url, &why))?;
        http_status(resp.status, &url)?;
        if !resp
            .content_type
            .starts_with("application/x-git-receive-pack-advertisement")
        {
            return Err(format!(
                "fatal: {url}/info/refs not valid: is this a git repository?"
            ));
        }
        let base = resp
            .url
            .strip_suffix("/info/refs?service=git-receive-pack")
            .unwrap_or(&url)
            .to_string();
        let mut r = Reader::new(&resp.body);
        let mut line = r.line()?;
        if line.as_deref() == Some("# service=git-receive-pack") {
            let _ = r.next()?;
            line = r.line()?;
        }
        let mut refs = Vec::new();
        let mut caps = Vec::new();
        while let Some(l) = line {
            let (head, c) = l.split_once('\0').unwrap_or((&l, ""));
            if !c.is_empty() {
                caps = c.split(' ').map(str::to_string).collect();
            }
            if let Some((id, name)) = head.split_once(' ')
                && name != "capabilities^{}"
            {
                let oid =
                    parse_hex(id).ok_or_else(|| format!("fatal: invalid advertisement: {head}"))?;
                refs.push((name.to_string(), oid));
            }
            line = r.line()?;
        }
        Ok(Receiver {
            url,
            base,
            refs,
            caps,
        })
    }

    /// Sends `commands` (`old new ref`) and the pack; the server's report lines
    /// (`unpack ok`, `ok REF`, `ng REF REASON`).
    pub fn push(&self, commands: &[String], pack: Option<&[u8]>) -> Result<Vec<String>, String> {
        let side_band = self.caps.iter().any(|c| c == "side-band-64k");
        let mut body = Vec::new();
        for (i, c) in commands.iter().enumerate() {
            if i == 0 {
                let mut caps = String::from("report-status");
                if side_band {
                    caps.push_str(" side-band-64k");
                }
                caps.push_str(&format!(" agent={AGENT}"));
                body.extend(pkt(&format!("{c}\0{caps}\n")));
            } else {
                body.extend(pkt(&format!("{c}\n")));
            }
        }
        body.extend_from_slice(b"0000");
        if let Some(p) = pack {
            body.extend_from_slice(p);
        }
        let resp = curl::send(
            "POST",
            &format!("{}/git-receive-pack", self.base),
            &[
                ("Accept", "application/x-git-receive-pack-result"),
                ("Content-Type", "application/x-git-receive-pack-request"),
                ("User-Agent", AGENT),
            ],
            Some(&body),
        )
        .map_err(|why| unable(&self.url, &why))?;
        http_status(resp.status, &self.url)?;
        // The report, inside band 1 when side-band is on.
        let report = if side_band {
            let mut r = Reader::new(&resp.body);
            let mut data = Vec::new();
            while let Some(p) = r.next()? {
                let Pkt::Data(d) = p else { break };
                match d.first() {
                    Some(1) => data.extend_from_slice(&d[1..]),
                    Some(3) => {
                        return Err(format!(
                            "remote: {}",
                            String::from_utf8_lossy(&d[1..]).trim_end()
                        ));
                    }
                    _ => {}
                }
            }
            data
        } else {
            resp.body
        };
        let mut r = Reader::new(&report);
        let mut out = Vec::new();
        while let Some(l) = r.line()? {
            out.push(l);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkt_lines_round_trip() {
        let mut b = pkt("version 2\n");
        b.extend_from_slice(b"0001");
        b.extend(pkt("ls-refs=unborn\n"));
        b.extend_from_slice(b"0000");
        assert_eq!(&b[..4], b"000e");
        let mut r = Reader::new(&b);
        assert_eq!(r.line().unwrap().as_deref(), Some("version 2"));
        assert_eq!(r.next().unwrap(), Some(Pkt::Delim));
        assert_eq!(r.next().unwrap(), Some(Pkt::Data(b"ls-refs=unborn\n")));
        assert_eq!(r.next().unwrap(), Some(Pkt::Flush));
        assert_eq!(r.next().unwrap(), None);
    }
}
