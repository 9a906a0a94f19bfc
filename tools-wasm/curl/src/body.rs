//! What curl sends and how it writes what comes back: `--data-urlencode` and `-F` bodies,
//! and the output sink that decodes `--compressed` bodies.

use std::io::Write;

use super::FormPart;
use sh_utility::Ctx;
use sh_utility::io::Io;

/// `--data-urlencode`'s forms: `content`, `=content`, `name=content`, `@file`,
/// `name@file`. Returns the unencoded prefix (`name=`) and the content to encode.
pub(super) fn urlencode_source(sh: &dyn Ctx, io: &Io, v: &str) -> Result<(String, Vec<u8>), i32> {
    let eq = v.find('=');
    let at = v.find('@');
    let from_file = match (eq, at) {
        (Some(e), Some(a)) => a < e,
        (None, Some(_)) => true,
        _ => false,
    };
    if from_file {
        let (name, file) = v.split_once('@').unwrap_or(("", v));
        let data = if file == "-" {
            sh_utility::io::read_all(&io.stdin)
        } else {
            match sh_utility::sys::read(sh.path(file)) {
                Ok(d) => d,
                Err(_) => {
                    io.eprint(&format!(
                        "Warning: Couldn't read data from file \"{file}\", this makes an empty POST.\n"
                    ));
                    Vec::new()
                }
            }
        };
        let prefix = if name.is_empty() {
            String::new()
        } else {
            format!("{name}=")
        };
        return Ok((prefix, data));
    }
    match v.split_once('=') {
        Some(("", c)) => Ok((String::new(), c.as_bytes().to_vec())),
        Some((n, c)) => Ok((format!("{n}="), c.as_bytes().to_vec())),
        None => Ok((String::new(), v.as_bytes().to_vec())),
    }
}

/// curl's URL encoding: everything but letters, digits and `-._~` as `%XX`.
pub(super) fn percent_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// A `-F` argument: `name=value`, `name=@file[;type=T][;filename=F]` (an upload),
/// `name=<file` (a file's content as the value). `Err(None)` is a malformed argument,
/// `Err(Some(path))` a file that cannot be read.
pub(super) fn form_part(sh: &dyn Ctx, v: &str) -> Result<FormPart, Option<String>> {
    let (name, rest) = v.split_once('=').ok_or(None)?;
    let mut fields = rest.split(';');
    let value = fields.next().unwrap_or_default();
    let mut content_type = None;
    let mut filename = None;
    for f in fields {
        if let Some(t) = f.strip_prefix("type=") {
            content_type = Some(t.to_string());
        } else if let Some(n) = f.strip_prefix("filename=") {
            filename = Some(n.trim_matches('"').to_string());
        }
    }
    let read =
        |path: &str| sh_utility::sys::read(sh.path(path)).map_err(|_| Some(path.to_string()));
    if let Some(path) = value.strip_prefix('@') {
        let data = read(path)?;
        let base = path.rsplit('/').next().unwrap_or(path).to_string();
        Ok(FormPart {
            name: name.to_string(),
            content_type: content_type.or_else(|| Some(guess_type(&base).to_string())),
            filename: Some(filename.unwrap_or(base)),
            data,
        })
    } else if let Some(path) = value.strip_prefix('<') {
        Ok(FormPart {
            name: name.to_string(),
            filename,
            content_type,
            data: read(path)?,
        })
    } else {
        Ok(FormPart {
            name: name.to_string(),
            filename,
            content_type,
            data: value.as_bytes().to_vec(),
        })
    }
}

/// curl's content type for an uploaded file, by its extension.
pub(super) fn guess_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("gif") => "image/gif",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain",
        Some("htm" | "html") => "text/html",
        Some("pdf") => "application/pdf",
        Some("xml") => "application/xml",
        _ => "application/octet-stream",
    }
}

/// The multipart body of `parts` and its boundary (`-` x 24 and 16 random hex digits).
pub(super) fn multipart(parts: &[FormPart]) -> (Vec<u8>, String) {
    let mut seed = [0u8; 8];
    let _ = getrandom(&mut seed);
    let boundary = format!("------------------------{:016x}", u64::from_le_bytes(seed));
    let mut b = Vec::new();
    for p in parts {
        b.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disp = format!("Content-Disposition: form-data; name=\"{}\"", p.name);
        if let Some(f) = &p.filename {
            disp.push_str(&format!("; filename=\"{f}\""));
        }
        b.extend_from_slice(disp.as_bytes());
        b.extend_from_slice(b"\r\n");
        if let Some(t) = &p.content_type {
            b.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(&p.data);
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (b, boundary)
}

/// Random bytes from the host (wasi:random); zeros where there is none.
pub(super) fn getrandom(buf: &mut [u8]) -> Result<(), ()> {
    #[cfg(target_os = "wasi")]
    {
        let r = wasip2::random::random::get_random_bytes(buf.len() as u64);
        buf.copy_from_slice(&r[..buf.len()]);
        Ok(())
    }
    #[cfg(not(target_os = "wasi"))]
    {
        let _ = buf;
        Err(())
    }
}

/// Where a body goes: a file, or the command's output.
pub(super) struct Out<'a> {
    pub io: &'a Io,
    pub file: Option<std::fs::File>,
}

impl Write for Out<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write_all(buf)?,
            None => self.io.out.write(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// A body on its way out, decoded when `--compressed` asked for it and the server did.
pub(super) enum Decode<W: Write> {
    Plain(W),
    Gzip(flate2::write::GzDecoder<W>),
    Zlib(flate2::write::ZlibDecoder<W>),
}

impl<W: Write> Decode<W> {
    pub fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Decode::Plain(w) => w.write_all(b),
            Decode::Gzip(w) => w.write_all(b),
            Decode::Zlib(w) => w.write_all(b),
        }
    }

    /// Ends the stream: a truncated compressed body is an error here.
    pub fn finish(self) -> std::io::Result<()> {
        match self {
            Decode::Plain(mut w) => w.flush(),
            Decode::Gzip(w) => w.finish().and_then(|mut w| w.flush()),
            Decode::Zlib(w) => w.finish().and_then(|mut w| w.flush()),
        }
    }
}
