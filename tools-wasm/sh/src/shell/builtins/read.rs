//! `read` (-r -a -d -n -N -p -s -t -u, IFS field splitting with bash's rules) and
//! `mapfile`/`readarray`.

use super::*;

/// `read [-ers] [-a ARRAY] [-d DELIM] [-n N] [-N N] [-p PROMPT] [-t T] [-u FD] [NAME...]`.
/// Status 1 at end of input (what was read is still assigned), as bash.
pub(super) fn read(sh: &mut Shell, args: &[String], io: &Io) -> Status {
    let mut raw = false;
    let mut names = Vec::new();
    let mut array: Option<String> = None;
    let mut delim = Some(b'\n');
    let mut max: Option<usize> = None;
    let mut exact = false;
    let mut source = io.stdin.clone();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') || a == "-" || !names.is_empty() {
            names.push(a.clone());
            continue;
        }
        if a == "--" {
            names.extend(args[i..].iter().cloned());
            break;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            match c {
                'r' => raw = true,
                // Not interactive: no line editing, no echo to suppress.
                's' | 'e' => {}
                'a' | 'd' | 'n' | 'N' | 'p' | 't' | 'u' | 'i' => {
                    let rest: String = flags[j..].iter().collect();
                    let v = if !rest.is_empty() {
                        rest
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        io.eprint(&format!(
                            "bash: read: -{c}: option requires an argument\nread: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n"
                        ));
                        return Ok(2);
                    };
                    match c {
                        'a' => array = Some(v),
                        'd' => delim = Some(v.bytes().next().unwrap_or(0)),
                        'n' | 'N' => match v.parse::<usize>() {
                            Ok(n) => {
                                max = Some(n);
                                exact = c == 'N';
                            }
                            Err(_) => {
                                io.eprint(&format!("bash: read: {v}: invalid number\n"));
                                return Ok(1);
                            }
                        },
                        'u' => match v.trim().parse::<i32>().ok().and_then(|n| io.input_fd(n)) {
                            Some(from) => source = from,
                            None => {
                                io.eprint(&format!(
                                    "bash: read: {v}: invalid file descriptor: Bad file descriptor\n"
                                ));
                                return Ok(1);
                            }
                        },
                        // The prompt shows only on a terminal; input here is all there is.
                        _ => {}
                    }
                    break;
                }
                other => {
                    io.eprint(&format!(
                        "bash: read: -{other}: invalid option\nread: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n"
                    ));
                    return Ok(2);
                }
            }
        }
    }
    let (text, found, any) = read_input(&source, delim, max, exact, raw);
    let status = if any && found { 0 } else { 1 };
    let ifs = sh.get("IFS").unwrap_or(" \t\n").to_string();
    let fields = Fields {
        ifs: &ifs,
        text: &text,
    };
    if let Some(name) = array {
        let words = fields.all();
        sh.vars.remove(&name);
        sh.arrays.insert(name, crate::shell::Array::list(words));
        return Ok(status);
    }
    if names.is_empty() {
        sh.set("REPLY", fields.plain(0, text.len()));
        return Ok(status);
    }
    // `read -N`: the characters read go to the first name whole, unsplit.
    let values = if exact {
        let mut v = vec![fields.plain(0, text.len())];
        v.resize(names.len(), String::new());
        v
    } else {
        fields.assign(names.len())
    };
    for (n, v) in names.iter().zip(values) {
        let v = sh.shaped(n, v, None, "read: ", io)?;
        sh.set_shaped(n, v);
    }
    Ok(status)
}

/// What `read` takes from its input: characters up to the delimiter (`-d`, newline by
/// default; none with `-N`) or `-n`/`-N` characters, each marked when a backslash quoted it
/// (without `-r`: the backslash is removed, and a backslash-newline pair is removed whole and
/// the line goes on). Also whether the read ended as asked (delimiter seen or count reached)
/// rather than at the end of the input, and whether there was any input at all.
pub(super) fn read_input(
    input: &crate::shell::io::Input,
    delim: Option<u8>,
    max: Option<usize>,
    exact: bool,
    raw: bool,
) -> (Vec<(u8, bool)>, bool, bool) {
    let mut buf = input.borrow_mut();
    let cur = buf.cursor();
    let pos = cur.position() as usize;
    let data = cur.get_ref();
    let rest = data.get(pos..).unwrap_or_default();
    let any = !rest.is_empty();
    let mut out: Vec<(u8, bool)> = Vec::new();
    let mut chars = 0;
    let mut i = 0;
    let mut found = false;
    // A character starts at any byte that is not a UTF-8 continuation byte.
    let starts = |b: u8| b & 0xc0 != 0x80;
    while i < rest.len() {
        let b = rest[i];
        if max.is_some_and(|m| chars >= m) && starts(b) {
            found = true;
            break;
        }
        i += 1;
        if !raw && b == b'\\' {
            let Some(&next) = rest.get(i) else {
                break;
            };
            i += 1;
            if next == b'\n' {
                continue;
            }
            out.push((next, true));
            chars += usize::from(starts(next));
            continue;
        }
        if !exact && Some(b) == delim {
            found = true;
            break;
        }
        out.push((b, false));
        chars += usize::from(starts(b));
    }
    if !found && max.is_some_and(|m| chars >= m) {
        found = true;
    }
    cur.set_position((pos + i) as u64);
    (out, found, any)
}

/// The words of what `read` read, split by IFS as bash's `read` splits them: quoted
/// characters never separate, IFS whitespace around a field is trimmed, and one other IFS
/// character (with the whitespace around it) ends one field.
pub(super) struct Fields<'a> {
    pub(super) ifs: &'a str,
    pub(super) text: &'a [(u8, bool)],
}

impl Fields<'_> {
    pub(super) fn is_ifs(&self, i: usize) -> bool {
        let (b, quoted) = self.text[i];
        !quoted && b.is_ascii() && self.ifs.contains(b as char)
    }

    pub(super) fn is_ifs_ws(&self, i: usize) -> bool {
        self.is_ifs(i) && matches!(self.text[i].0, b' ' | b'\t' | b'\n')
    }

    /// The text of `start..end` as a string.
    pub(super) fn plain(&self, start: usize, end: usize) -> String {
        // NUL bytes are dropped, as bash's read drops them.
        let bytes: Vec<u8> = self.text[start..end]
            .iter()
            .map(|(b, _)| *b)
            .filter(|b| *b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub(super) fn skip_ws(&self, mut i: usize) -> usize {
        while i < self.text.len() && self.is_ifs_ws(i) {
            i += 1;
        }
        i
    }

    /// The word at `i` (which starts after IFS whitespace) and where the next one starts:
    /// past IFS whitespace, at most one other IFS character, and IFS whitespace again.
    pub(super) fn word(&self, i: usize) -> (usize, usize) {
        let mut end = i;
        while end < self.text.len() && !self.is_ifs(end) {
            end += 1;
        }
        let mut next = self.skip_ws(end);
        if next < self.text.len() && self.is_ifs(next) && !self.is_ifs_ws(next) {
            next = self.skip_ws(next + 1);
        }
        (end, next)
    }

    /// Every word (`read -a`).
    pub(super) fn all(&self) -> Vec<String> {
        let mut words = Vec::new();
        let mut i = self.skip_ws(0);
        while i < self.text.len() {
            let (end, next) = self.word(i);
            words.push(self.plain(i, end));
            i = next;
        }
        words
    }

    /// Values for `n` names: one word each, and the rest of the line for the last (without
    /// its trailing IFS whitespace, or just its one word when nothing follows that).
    pub(super) fn assign(&self, n: usize) -> Vec<String> {
        let mut values = Vec::with_capacity(n);
        let mut i = self.skip_ws(0);
        for k in 0..n {
            if i >= self.text.len() {
                values.push(String::new());
                continue;
            }
            let (end, next) = self.word(i);
            if k + 1 < n || next >= self.text.len() {
                values.push(self.plain(i, end));
                i = next;
            } else {
                let mut last = self.text.len();
                while last > i && self.is_ifs_ws(last - 1) {
                    last -= 1;
                }
                values.push(self.plain(i, last));
                i = self.text.len();
            }
        }
        values
    }
}

/// `mapfile`/`readarray [-t] [-d DELIM] [-n COUNT] [-O ORIGIN] [-s COUNT] [ARRAY]`: the
/// lines of standard input into ARRAY (default MAPFILE).
pub(super) fn mapfile(sh: &mut Shell, cmd: &str, args: &[String], io: &Io) -> i32 {
    let mut strip = false;
    let mut delim = b'\n';
    let (mut count, mut origin, mut skip) = (0usize, 0i64, 0usize);
    let mut name = "MAPFILE".to_string();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') {
            name = a.clone();
            continue;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            if c == 't' {
                strip = true;
                continue;
            }
            if !"dnOs".contains(c) {
                io.eprint(&format!(
                    "bash: {cmd}: -{c}: invalid option\n{cmd}: usage: {cmd} [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]\n"
                ));
                return 2;
            }
            let rest: String = flags[j..].iter().collect();
            let v = if !rest.is_empty() {
                rest
            } else if let Some(v) = args.get(i) {
                i += 1;
                v.clone()
            } else {
                io.eprint(&format!("bash: {cmd}: -{c}: option requires an argument\n"));
                return 2;
            };
            let n = v.parse::<i64>();
            match (c, n) {
                ('d', _) => delim = v.bytes().next().unwrap_or(0),
                ('n', Ok(n)) if n >= 0 => count = n as usize,
                ('O', Ok(n)) if n >= 0 => origin = n,
                ('s', Ok(n)) if n >= 0 => skip = n as usize,
                _ => {
                    io.eprint(&format!("bash: {cmd}: {v}: invalid number\n"));
                    return 1;
                }
            }
            break;
        }
    }
    let data = crate::shell::io::read_all(&io.stdin);
    let mut items: Vec<String> = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let end = data[start..]
            .iter()
            .position(|&b| b == delim)
            .map_or(data.len(), |p| start + p + 1);
        let mut piece = &data[start..end];
        if strip && piece.last() == Some(&delim) {
            piece = &piece[..piece.len() - 1];
        }
        items.push(String::from_utf8_lossy(piece).into_owned());
        start = end;
    }
    let items = items.into_iter().skip(skip);
    let items: Vec<String> = if count > 0 {
        items.take(count).collect()
    } else {
        items.collect()
    };
    sh.vars.remove(&name);
    let mut map = match sh.arrays.remove(&name) {
        Some(crate::shell::Array::Indexed(m)) if origin > 0 => m,
        _ => Default::default(),
    };
    for (k, v) in items.into_iter().enumerate() {
        map.insert(origin + k as i64, v);
    }
    sh.arrays.insert(name, crate::shell::Array::Indexed(map));
    0
}
