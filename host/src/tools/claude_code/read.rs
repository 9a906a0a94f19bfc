//! Read, as Claude Code reads: numbered lines (`N<TAB>text`, numbered from the offset given),
//! the 256 KB cap on unwindowed reads, the 25,000-token cap with its partial first page for a
//! whole-file read, `allow_large` to read past both, images as image blocks.
//!
//! Tokens are estimated as Claude Code estimates them without the API: UTF-16 length / 4,
//! rounded. (Claude Code asks the API's count_tokens for files its estimate puts over a
//! quarter of the cap; burrow has no tokenizer, so its count is that estimate.)

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    Call, Failure, Field, Kind, READ_LARGE_BYTES, READ_LARGE_TOKENS, READ_MAX_BYTES,
    READ_MAX_TOKENS, ReadMark, Reads, ToolOutput, human_size, input, js_len, missing_text, opt,
    refuse, req, resolve_file,
};
use crate::RunError;

/// Claude Code's advice when a read is over a cap that `allow_large` would lift...
const ANYWAY: &str = " To read it anyway, up to what still fits in your context, call Read again with allow_large: true \u{2014} only if you genuinely need all of it or the user asked for the whole file.";
/// ...and when even `allow_large` would not fit it (or was given).
const EVEN_LARGE: &str = " Even with allow_large, this is more than fits in the context you have left this turn (other large reads in the same turn share that room).";

/// The advice appended to a cap's error: `fits` says whether the read fits the lifted caps.
fn advice(allow_large: bool, fits: bool) -> &'static str {
    if fits && !allow_large {
        ANYWAY
    } else {
        EVEN_LARGE
    }
}

/// Extensions Claude Code refuses to read as text (images and PDFs excepted).
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "tif", "mp4", "mov", "avi", "mkv",
    "webm", "wmv", "flv", "m4v", "mpeg", "mpg", "mp3", "wav", "ogg", "flac", "aac", "m4a", "wma",
    "aiff", "opus", "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz", "iso", "exe", "dll",
    "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm", "pdf", "doc", "docx",
    "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "ttf", "otf", "woff", "woff2", "eot", "pyc",
    "pyo", "class", "jar", "war", "ear", "node", "wasm", "rlib", "sqlite", "sqlite3", "db", "mdb",
    "idx", "psd", "ai", "eps", "sketch", "fig", "xd", "blend", "3ds", "max", "swf", "fla", "lockb",
    "dat", "data",
];

/// Read a file: numbered lines, or an image as an image block.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The absolute path to the file to read.
    pub file_path: String,
    /// The line number to start reading from (1-indexed). Only for files too large to read
    /// at once.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// The number of lines to read. Only for files too large to read at once.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// Page range for PDF files (e.g. "1-5"). burrow returns whole PDFs and refuses this.
    #[serde(default)]
    pub pages: Option<String>,
    /// Set to true to read a text file, or a line range of one, that is over the usual size
    /// limits, up to what still fits in your context. Only use this when you genuinely need
    /// all of it or the user asked for the whole file; otherwise read it in parts with offset
    /// and limit, or search it.
    #[serde(default)]
    pub allow_large: Option<bool>,
}

const FIELDS: &[Field] = &[
    req("file_path", Kind::Str),
    opt("offset", Kind::Whole { min: 0 }),
    opt("limit", Kind::Whole { min: 1 }),
    opt("pages", Kind::Str),
    opt("allow_large", Kind::Bool),
];

/// The extension as Claude Code's path.extname gives it, lower-cased, without the dot.
fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => Some(name[i + 1..].to_ascii_lowercase()),
        _ => None,
    }
}

fn is_image(ext: &str) -> bool {
    matches!(ext, "png" | "jpg" | "jpeg" | "gif" | "webp")
}

pub(super) fn read(
    c: &mut Call<'_>,
    args: &Value,
    reads: &mut Reads,
) -> Result<ToolOutput, RunError> {
    let i: ReadInput = match input("Read", args, FIELDS) {
        Ok(i) => i,
        Err(e) => return Ok(e),
    };
    let (rel, abs) = match resolve_file(c, &i.file_path) {
        Ok(p) => p,
        Err(e) => return Ok(e),
    };
    let ext = extension(&rel);
    if let Some(e) = &ext
        && BINARY_EXTENSIONS.contains(&e.as_str())
        && !is_image(e)
        && e != "pdf"
    {
        return Ok(refuse(format!(
            "This tool cannot read binary files. The file appears to be a binary .{e} file. Use a skill for this file type if one is available, or a shell command or script that can read the format."
        )));
    }
    let offset = i.offset.unwrap_or(1);
    let large = i.allow_large.unwrap_or(false);
    let st = c.stat(&rel);
    let mtime = st.as_ref().map(|s| s.mtime);
    if st.is_some_and(|s| s.kind == burrow_store::Kind::Dir) {
        return Ok(ToolOutput::error(format!(
            "EISDIR: illegal operation on a directory, read '{abs}'"
        )));
    }
    if let Some(e) = ext.as_deref().filter(|e| is_image(e) || *e == "pdf") {
        return media(c, &rel, &abs, e, i.pages.as_deref(), mtime, reads);
    }
    let max_bytes = if large {
        READ_LARGE_BYTES
    } else {
        READ_MAX_BYTES
    };
    let max_tokens = if large {
        READ_LARGE_TOKENS
    } else {
        READ_MAX_TOKENS
    };
    let v = match c.op(super::super::proto::Read {
        path: rel.clone(),
        max_bytes: i.limit.is_none().then_some(max_bytes),
    })? {
        Ok(v) => v,
        Err(Failure::NotFound | Failure::NotADirectory) => {
            return Ok(ToolOutput::error(missing_text(c, &rel)));
        }
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(ToolOutput::error(format!(
                "File content ({}) exceeds maximum allowed size ({}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.{}",
                human_size(size),
                human_size(limit),
                advice(large, size <= READ_LARGE_BYTES)
            )));
        }
        Err(f) => return Ok(refuse(format!("{abs}: {}", f.reason()))),
    };
    // Claude Code reads every file as UTF-8, invalid bytes becoming U+FFFD.
    let decoded;
    let text = match (v.text.as_deref(), &v.base64) {
        (Some(t), _) => t,
        (None, Some(b)) => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b)
                .unwrap_or_default();
            decoded = String::from_utf8_lossy(&bytes).into_owned();
            &decoded
        }
        _ => "",
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let page = window(text, offset, i.limit);
    let whole = offset <= 1 && i.limit.is_none() && i.pages.is_none();
    let (content, shown_lines, banner) = match over_token_cap(&page.content, &rel, max_tokens) {
        None => (page.content, page.lines, None),
        Some(tokens) if whole => {
            let p = partial_view(&page.content, page.total, tokens, &abs, large);
            (p.content, p.lines, Some(p.banner))
        }
        Some(tokens) => {
            return Ok(ToolOutput::error(format!(
                "File content ({tokens} tokens) exceeds maximum allowed tokens ({max_tokens}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.{}",
                advice(large, tokens <= READ_LARGE_TOKENS)
            )));
        }
    };
    if let Some(m) = mtime {
        // Claude Code's "full view": read from the start, not cut by the token cap, and
        // either without a limit or with one the file ended before.
        let known = offset <= 1
            && banner.is_none()
            && i.limit
                .is_none_or(|l| !content.is_empty() && (shown_lines as u64) < l);
        reads.insert(
            rel,
            ReadMark {
                mtime: m,
                known,
                partial: banner.is_some(),
            },
        );
    }
    // Lines are numbered from the offset given (a partial view from line 1).
    let start = if banner.is_some() {
        offset.max(1)
    } else {
        offset
    };
    if content.is_empty() {
        return Ok(ToolOutput::text(if shown_lines >= 1 && page.total > 1 {
            // The window holds only the empty line after the file's last line break.
            format!("{start}\t")
        } else if shown_lines >= 1 {
            "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
                .to_string()
        } else {
            format!(
                "<system-reminder>Warning: the file exists but is shorter than the provided offset ({start}). The file has {} lines.</system-reminder>",
                page.total
            )
        }));
    }
    let mut out = String::new();
    if let Some(b) = banner {
        out.push_str(&format!("<system-reminder>{b}</system-reminder>\n\n"));
    }
    for (n, line) in content.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{}\t{line}", start + n as u64));
    }
    Ok(ToolOutput::text(out))
}

/// An image (as an image block) or a PDF (as a document block).
fn media(
    c: &mut Call<'_>,
    rel: &str,
    abs: &str,
    ext: &str,
    pages: Option<&str>,
    mtime: Option<i64>,
    reads: &mut Reads,
) -> Result<ToolOutput, RunError> {
    if pages.is_some() && ext == "pdf" {
        return Ok(refuse(
            "Reading PDF pages is not supported in burrow (it has no PDF renderer); read the whole PDF without `pages`.",
        ));
    }
    let media = super::super::media_type(rel).unwrap_or("application/octet-stream");
    let max = super::super::media_limit(media);
    let v = match c.op(super::super::proto::Read {
        path: rel.to_string(),
        max_bytes: Some(max),
    })? {
        Ok(v) => v,
        Err(Failure::NotFound | Failure::NotADirectory) => {
            return Ok(ToolOutput::error(missing_text(c, rel)));
        }
        Err(Failure::TooLarge { size, limit }) => {
            return Ok(ToolOutput::error(format!(
                "File content ({}) exceeds maximum allowed size ({}).",
                human_size(size),
                human_size(limit)
            )));
        }
        Err(f) => return Ok(refuse(format!("{abs}: {}", f.reason()))),
    };
    if let Some(m) = mtime {
        reads.insert(
            rel.to_string(),
            ReadMark {
                mtime: m,
                known: true,
                partial: false,
            },
        );
    }
    Ok(ToolOutput {
        content: vec![super::super::media_block(media, &v)],
        is_error: false,
    })
}

/// The lines a Read selects.
struct Page {
    /// The selected lines joined by `\n`, each without its `\r`.
    content: String,
    /// How many lines were selected.
    lines: usize,
    /// Lines in the file: line breaks + 1.
    total: usize,
}

/// Lines `[offset-1, offset-1+limit)` (offset 0 reads from the start too).
fn window(text: &str, offset: u64, limit: Option<u64>) -> Page {
    let start = offset.saturating_sub(1) as usize;
    let end = limit.map_or(usize::MAX, |l| start.saturating_add(l as usize));
    let mut lines = Vec::new();
    let mut total = 0;
    for (n, line) in text.split('\n').enumerate() {
        total = n + 1;
        if n >= start && n < end {
            lines.push(line.strip_suffix('\r').unwrap_or(line));
        }
    }
    Page {
        content: lines.join("\n"),
        lines: lines.len(),
        total,
    }
}

/// Claude Code's token estimate: UTF-16 length / 4, rounded.
fn estimate_tokens(text: &str) -> usize {
    (js_len(text) as f64 / 4.0).round() as usize
}

/// The token count when `content` is over the cap. Claude Code only counts when its rough
/// estimate (length / 2 for JSON, / 4 otherwise) passes a quarter of the cap.
fn over_token_cap(content: &str, rel: &str, cap: usize) -> Option<usize> {
    let per_token = match extension(rel).as_deref() {
        Some("json" | "jsonl" | "jsonc") => 2.0,
        _ => 4.0,
    };
    let rough = (js_len(content) as f64 / per_token).round() as usize;
    if rough <= cap / 4 {
        return None;
    }
    let tokens = estimate_tokens(content);
    (tokens > cap).then_some(tokens)
}

struct Partial {
    content: String,
    lines: usize,
    banner: String,
}

/// The first page of a whole-file read over the token cap, chosen as Claude Code chooses it:
/// whole lines in proportion to the cap (with a 15% margin, shrinking by 30% until the page
/// fits), or, for files with very long lines, a prefix by characters.
///
/// The page is sized by the usual cap; the note names the file, the cap (or, with
/// `allow_large`, the room that was not enough) and the way on.
fn partial_view(g: &str, total: usize, tokens: usize, abs: &str, large: bool) -> Partial {
    let cap = READ_MAX_TOKENS as f64;
    let lines: Vec<&str> = g.split('\n').collect();
    let chars_per_token = (js_len(g) as f64 / tokens.max(1) as f64).max(0.5);
    let fits = |w: &str| js_len(w) as f64 / chars_per_token <= cap;
    let mut m = ((lines.len() as f64 * cap / tokens.max(1) as f64 * 0.85).floor() as usize)
        .clamp(1, lines.len().max(1));
    let mut w = lines[..m.min(lines.len())].join("\n");
    for _ in 0..6 {
        if fits(&w) || m <= 1 {
            break;
        }
        m = ((m as f64 * 0.7).floor() as usize).max(1);
        w = lines[..m].join("\n");
    }
    let by_chars = !fits(&w) || w.trim().is_empty();
    if by_chars {
        let mut k = ((cap * chars_per_token * 0.85).floor() as usize).max(1);
        for _ in 0..6 {
            w = js_prefix(g, k).to_string();
            if fits(&w) {
                break;
            }
            k = ((k as f64 * 0.7).floor() as usize).max(1);
        }
    }
    let shown = if by_chars {
        w.matches('\n').count() + 1
    } else {
        m
    };
    let cap_text = if large {
        format!("allow_large had room for {READ_LARGE_TOKENS} tokens this turn")
    } else {
        format!("cap {READ_MAX_TOKENS}")
    };
    let advice = advice(large, tokens <= READ_LARGE_TOKENS);
    let banner = if !by_chars && shown < total {
        format!(
            "[Truncated: PARTIAL view \u{2014} {abs}: showing lines 1-{shown} of {total} total ({tokens} tokens, {cap_text}). Call Read with offset={} limit={shown} for the next page, or Grep to find a specific section.{advice} Do NOT answer from this page alone if the answer may be further in the file.]",
            shown + 1
        )
    } else {
        format!(
            "[Truncated: PARTIAL view \u{2014} {abs}: showing the first {} of {} characters ({tokens} tokens, {cap_text}); this file has very long lines and cannot be paginated by line. Use Grep to find a specific section, or Read with offset/limit to page through it.{advice} Do NOT answer from this excerpt alone if the answer may be elsewhere in the file.]",
            js_len(&w),
            js_len(g)
        )
    };
    Partial {
        content: w,
        lines: shown,
        banner,
    }
}

/// The first `units` UTF-16 code units of `s`, without a trailing half of a surrogate pair.
fn js_prefix(s: &str, units: usize) -> &str {
    let mut n = 0;
    for (i, ch) in s.char_indices() {
        let w = ch.len_utf16();
        if n + w > units {
            return &s[..i];
        }
        n += w;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_number_lines_as_claude_code() {
        let p = window("a\r\nb\nc\n", 1, None);
        assert_eq!((p.content.as_str(), p.total), ("a\nb\nc\n", 4));
        let p = window("a\nb\nc", 0, Some(2));
        assert_eq!(p.content, "a\nb");
        let p = window("a\nb", 5, None);
        assert_eq!((p.content.as_str(), p.lines, p.total), ("", 0, 2));
        let p = window("a\n", 2, None);
        assert_eq!((p.content.as_str(), p.lines, p.total), ("", 1, 2));
        assert_eq!(js_prefix("ab😀c", 3), "ab");
        assert_eq!(extension("/w/a.TXT").as_deref(), Some("txt"));
        assert_eq!(extension("/w/.bashrc"), None);
    }
}
