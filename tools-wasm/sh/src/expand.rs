//! Word expansion, in bash's order: brace expansion, tilde, parameter and arithmetic
//! expansion, command substitution, field splitting on IFS, pathname expansion (globbing),
//! quote removal. brush-parser splits a word into pieces; this module evaluates them.

use brush_parser::ast::{
    ArithmeticExpr, ArithmeticTarget, BinaryOperator, UnaryAssignmentOperator, UnaryOperator,
};
use brush_parser::word::{
    BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr, ParameterTestType,
    SpecialParameter, SubstringMatchKind, TildeExpr, WordPiece, WordPieceWithSource,
};

use crate::io::Io;
use crate::shell::{Flow, Shell, parser_options};

/// A run of text within a field: quoted text is never split or globbed.
#[derive(Clone, Debug)]
struct Seg {
    text: String,
    quoted: bool,
    /// Produced by an unquoted expansion: subject to field splitting.
    split: bool,
}

/// Fields being built from one word.
struct Fields {
    fields: Vec<Vec<Seg>>,
    /// A quoted piece was seen: an empty result is still one (empty) field.
    saw_quotes: bool,
    /// Where the innermost enclosing double quotes put their empty marker (field, segment).
    marker: Option<(usize, usize)>,
}

impl Fields {
    fn new() -> Fields {
        Fields {
            fields: vec![Vec::new()],
            saw_quotes: false,
            marker: None,
        }
    }

    fn push(&mut self, text: String, quoted: bool, split: bool) {
        if let Some(f) = self.fields.last_mut() {
            f.push(Seg {
                text,
                quoted,
                split,
            });
        }
    }

    fn new_field(&mut self) {
        self.fields.push(Vec::new());
    }
}

/// An expansion error: bash's message (with the script's line) and the end of the shell.
fn err(sh: &Shell, io: &Io, msg: &str) -> Flow {
    match sh.lineno {
        0 => io.eprint(&format!("bash: {msg}\n")),
        n => io.eprint(&format!("bash: line {n}: {msg}\n")),
    }
    Flow::Exit(1)
}

/// Expands words into arguments (with splitting and globbing).
pub fn words(
    sh: &mut Shell,
    words: &[brush_parser::ast::Word],
    io: &Io,
) -> Result<Vec<String>, Flow> {
    let mut out = Vec::new();
    for w in words {
        for raw in brace_expand(&w.value) {
            let fields = expand_word(sh, &raw, io)?;
            for f in split_fields(sh, fields) {
                out.extend(glob_field(sh, &f, io)?);
            }
        }
    }
    Ok(out)
}

/// Expands one word to one string: no splitting, no globbing (assignments, redirections).
pub fn single(sh: &mut Shell, raw: &str, io: &Io) -> Result<String, Flow> {
    let f = expand_word(sh, raw, io)?;
    Ok(f.fields
        .iter()
        .map(|segs| segs.iter().map(|s| s.text.as_str()).collect::<String>())
        .collect::<Vec<_>>()
        .join(" "))
}

/// An assignment's value word (`x=VALUE`, `export x=VALUE`) with bash's extra tilde
/// expansion: an unquoted `~` after an unquoted `:` (as in `PATH=$PATH:~/bin`) names the home
/// directory too, when it ends there or before `/` or `:`. The home is put in single quotes.
pub fn assignment_tildes(sh: &Shell, raw: &str) -> String {
    if !raw.contains(":~") {
        return raw.to_string();
    }
    let home = sh
        .get("HOME")
        .unwrap_or("/home/agent")
        .replace('\'', "'\\''");
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len() + home.len());
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if !single => {
                out.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '~' if !single
                && !double
                && i > 0
                && chars[i - 1] == ':'
                && chars.get(i + 1).is_none_or(|n| *n == '/' || *n == ':') =>
            {
                out.push_str(&format!("'{home}'"));
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Expands a word used as a pattern: quoted characters are escaped so they match literally.
pub fn pattern(sh: &mut Shell, raw: &str, io: &Io) -> Result<String, Flow> {
    let f = expand_word(sh, raw, io)?;
    let mut out = String::new();
    for segs in &f.fields {
        for s in segs {
            if s.quoted {
                for c in s.text.chars() {
                    if "*?[]\\()|@!+".contains(c) {
                        out.push('\\');
                    }
                    out.push(c);
                }
            } else {
                out.push_str(&s.text);
            }
        }
    }
    Ok(out)
}

/// Expands the body of a here-document (parameters, `$(...)`, arithmetic; no quotes).
pub fn heredoc(sh: &mut Shell, body: &str, io: &Io) -> Result<String, Flow> {
    let pieces = match brush_parser::word::parse_heredoc(body, &parser_options()) {
        Ok(p) => p,
        Err(_) => return Ok(body.to_string()),
    };
    let mut f = Fields::new();
    eval_pieces(sh, &pieces, true, io, &mut f)?;
    Ok(f.fields.iter().flatten().map(|s| s.text.as_str()).collect())
}

fn brace_expand(raw: &str) -> Vec<String> {
    if !raw.contains('{') {
        return vec![raw.to_string()];
    }
    // The parser gives sequences as numbers; their widths (`{01..10}` pads to 2) come from
    // the text, in order of appearance (the order the parts are walked in).
    static SEQ: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let widths: Vec<usize> = SEQ
        .get_or_init(|| regex::Regex::new(r"\{(-?[0-9]+)\.\.(-?[0-9]+)(\.\.-?[0-9]+)?\}").ok())
        .as_ref()
        .map(|re| {
            re.captures_iter(raw)
                .map(|c| {
                    let (a, b) = (&c[1], &c[2]);
                    let padded = |t: &str| {
                        let d = t.trim_start_matches('-');
                        d.len() > 1 && d.starts_with('0')
                    };
                    if padded(a) || padded(b) {
                        a.len().max(b.len())
                    } else {
                        0
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    match brush_parser::word::parse_brace_expansions(raw, &parser_options()) {
        Ok(Some(parts)) => expand_brace_parts(&parts, &mut widths.into_iter()),
        _ => vec![raw.to_string()],
    }
}

fn expand_brace_parts(
    parts: &[BraceExpressionOrText],
    widths: &mut dyn Iterator<Item = usize>,
) -> Vec<String> {
    let mut results = vec![String::new()];
    for p in parts {
        let alternatives: Vec<String> = match p {
            BraceExpressionOrText::Text(t) => vec![t.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut alts = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::NumberSequence {
                            start,
                            end,
                            increment,
                        } => {
                            let step = increment.unsigned_abs().max(1) as i64;
                            let mut i = *start;
                            let width = widths.next().unwrap_or(0);
                            loop {
                                // Zero padding counts the sign, as bash's does.
                                alts.push(if i < 0 && width > 0 {
                                    format!("-{:0w$}", -i, w = width - 1)
                                } else {
                                    format!("{i:0width$}")
                                });
                                if i == *end || alts.len() > 100_000 {
                                    break;
                                }
                                if start <= end {
                                    i += step;
                                    if i > *end {
                                        break;
                                    }
                                } else {
                                    i -= step;
                                    if i < *end {
                                        break;
                                    }
                                }
                            }
                        }
                        BraceExpressionMember::CharSequence {
                            start,
                            end,
                            increment,
                        } => {
                            let step = increment.unsigned_abs().max(1) as u32;
                            let (s, e) = (*start as u32, *end as u32);
                            let mut i = s;
                            loop {
                                if let Some(c) = char::from_u32(i) {
                                    alts.push(c.to_string());
                                }
                                if i == e {
                                    break;
                                }
                                if s <= e {
                                    i += step;
                                    if i > e {
                                        break;
                                    }
                                } else {
                                    if i < e + step {
                                        break;
                                    }
                                    i -= step;
                                }
                            }
                        }
                        BraceExpressionMember::Child(children) => {
                            alts.extend(expand_brace_parts(children, widths))
                        }
                    }
                }
                alts
            }
        };
        let mut next = Vec::with_capacity(results.len() * alternatives.len());
        for r in &results {
            for a in &alternatives {
                next.push(format!("{r}{a}"));
            }
        }
        results = next;
    }
    results
}

fn expand_word(sh: &mut Shell, raw: &str, io: &Io) -> Result<Fields, Flow> {
    let pieces = match brush_parser::word::parse(raw, &parser_options()) {
        Ok(p) => p,
        Err(e) => return Err(err(sh, io, &format!("bad substitution: {e}"))),
    };
    let mut f = Fields::new();
    eval_pieces(sh, &pieces, false, io, &mut f)?;
    Ok(f)
}

fn eval_pieces(
    sh: &mut Shell,
    pieces: &[WordPieceWithSource],
    quoted: bool,
    io: &Io,
    f: &mut Fields,
) -> Result<(), Flow> {
    for (i, p) in pieces.iter().enumerate() {
        match &p.piece {
            // The parser leaves a `${...}` it cannot read (`${#x@Q}`) as the text `$` and
            // the text `{...}`; bash refuses it.
            WordPiece::Text(t)
                if t.ends_with('$')
                    && let Some(WordPiece::Text(next)) = pieces.get(i + 1).map(|n| &n.piece)
                    && next.starts_with('{') =>
            {
                let to = next.find('}').map_or(next.len(), |i| i + 1);
                // Like a readonly assignment, it ends the complete command, not the shell.
                let _ = err(sh, io, &format!("${}: bad substitution", &next[..to]));
                return Err(Flow::Abort(1));
            }
            WordPiece::Text(t) => f.push(t.clone(), quoted, false),
            WordPiece::SingleQuotedText(t) => {
                f.saw_quotes = true;
                f.push(t.clone(), true, false);
            }
            WordPiece::AnsiCQuotedText(t) => {
                f.saw_quotes = true;
                f.push(ansi_c(t), true, false);
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                f.saw_quotes = true;
                // An empty quoted marker: `""` is one (empty) field. "$@" with no parameters
                // takes its own marker away again.
                f.push(String::new(), true, false);
                let outer = f.marker.replace((
                    f.fields.len() - 1,
                    f.fields.last().map_or(0, |x| x.len() - 1),
                ));
                let r = eval_pieces(sh, inner, true, io, f);
                f.marker = outer;
                r?;
            }
            WordPiece::EscapeSequence(s) => {
                let c = s.strip_prefix('\\').unwrap_or(s);
                if quoted && !matches!(c, "$" | "`" | "\"" | "\\" | "\n") {
                    f.push(s.clone(), true, false);
                } else if c == "\n" {
                } else {
                    f.push(c.to_string(), true, false);
                }
            }
            WordPiece::TildeExpansion(t) => {
                let v = match t {
                    TildeExpr::Home => sh.get("HOME").unwrap_or("/home/agent").to_string(),
                    TildeExpr::WorkingDir => sh.cwd.clone(),
                    TildeExpr::OldWorkingDir => sh.get("OLDPWD").unwrap_or("").to_string(),
                    // The sandbox's users: root and the agent (whose home is $HOME).
                    TildeExpr::UserHome(u) if u == "root" => "/root".to_string(),
                    TildeExpr::UserHome(u) if u == "agent" => {
                        sh.get("HOME").unwrap_or("/home/agent").to_string()
                    }
                    TildeExpr::UserHome(u) => format!("~{u}"),
                    _ => "~".to_string(),
                };
                f.push(v, true, false);
            }
            WordPiece::ParameterExpansion(pe) => {
                // "${a[@]:off:len}" and "${@:off:len}": a slice of the elements, not of a
                // string; "${a[*]:off:len}" and "${*:off:len}" join that slice by IFS.
                let (sliced, joined) = match pe {
                    ParameterExpr::Substring {
                        parameter,
                        indirect: false,
                        offset,
                        length,
                    } => {
                        let (name, concatenate) = match parameter {
                            Parameter::NamedWithAllIndices { name, concatenate } => {
                                (Some(name), Some(*concatenate))
                            }
                            Parameter::Special(SpecialParameter::AllPositionalParameters {
                                concatenate,
                            }) => (None, Some(*concatenate)),
                            _ => (None, None),
                        };
                        match concatenate {
                            Some(c) => (
                                Some(slice_elements(
                                    sh,
                                    name.map(String::as_str),
                                    &offset.value,
                                    length.as_ref().map(|l| l.value.as_str()),
                                    io,
                                )?),
                                c,
                            ),
                            None => (None, false),
                        }
                    }
                    _ => (None, false),
                };
                if joined && let Some(elems) = &sliced {
                    f.push(elems.join(&ifs_sep(sh)), quoted, !quoted);
                    continue;
                }
                // `${a[@]@A}` (the declaration), `${a[@]@K}` and `${a[@]@k}` (key-value
                // pairs): of the whole array, not of each element.
                if let ParameterExpr::Transform {
                    parameter: Parameter::NamedWithAllIndices { name, .. },
                    indirect: false,
                    op:
                        op @ (brush_parser::word::ParameterTransformOp::ToAssignmentLogic
                        | brush_parser::word::ParameterTransformOp::PossiblyQuoteWithArraysExpanded {
                            ..
                        }),
                } = pe
                    && let Some(array) = sh.arrays.get(name)
                {
                    let pairs: Vec<(String, String)> = array.keys().into_iter().zip(array.values()).collect();
                    match op {
                        brush_parser::word::ParameterTransformOp::PossiblyQuoteWithArraysExpanded {
                            separate_words: true,
                        } => {
                            let words: Vec<String> =
                                pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
                            for (i, w) in words.into_iter().enumerate() {
                                if i > 0 {
                                    f.new_field();
                                }
                                f.push(w, quoted, !quoted);
                            }
                        }
                        brush_parser::word::ParameterTransformOp::ToAssignmentLogic => {
                            let d = crate::builtins::declaration(sh, name).unwrap_or_default();
                            f.push(d, quoted, !quoted);
                        }
                        _ => {
                            let text: Vec<String> = pairs
                                .iter()
                                .map(|(k, v)| format!("{k} {}", crate::builtins::dq(v)))
                                .collect();
                            let mut text = text.join(" ");
                            // bash ends an associative array's pairs with a space.
                            if matches!(array, crate::shell::Array::Assoc(_)) && !text.is_empty() {
                                text.push(' ');
                            }
                            f.push(text, quoted, !quoted);
                        }
                    }
                    continue;
                }
                // `${a[@]%x}`, `${@/#/-}`, `${a[*]^^}`: the operator on each element.
                let mut vector: Option<Vec<String>> = None;
                if let Some((parameter, false)) = op_parameter(pe)
                    && let Some((elems, concat)) = all_elements(sh, parameter)
                {
                    let mut mapped = Vec::with_capacity(elems.len());
                    for e in elems {
                        mapped.push(element_op(sh, pe, e, io)?);
                    }
                    if concat {
                        // `${a[*]...}`: joined by IFS's first character, as `$*` is.
                        f.push(mapped.join(&ifs_sep(sh)), quoted, !quoted);
                        continue;
                    }
                    vector = Some(mapped);
                }
                // "$@", "${a[@]}" and "${!a[@]}": one field per element.
                let all: Option<Vec<String>> = if sliced.is_some() {
                    sliced
                } else if vector.is_some() {
                    vector
                } else {
                    match pe {
                        ParameterExpr::Parameter {
                            parameter:
                                Parameter::Special(SpecialParameter::AllPositionalParameters {
                                    concatenate: false,
                                }),
                            ..
                        } => Some(sh.positional.clone()),
                        ParameterExpr::Parameter {
                            parameter:
                                Parameter::NamedWithAllIndices {
                                    name,
                                    concatenate: false,
                                },
                            indirect: false,
                        } => Some(match sh.arrays.get(name) {
                            Some(a) => a.values(),
                            None => sh.get(name).map(String::from).into_iter().collect(),
                        }),
                        ParameterExpr::VariableNames {
                            concatenate: false, ..
                        } => Some(
                            param_expr(sh, pe, io)?
                                .split(' ')
                                .filter(|n| !n.is_empty())
                                .map(String::from)
                                .collect(),
                        ),
                        ParameterExpr::MemberKeys {
                            variable_name,
                            concatenate: false,
                        } => Some(match sh.arrays.get(variable_name) {
                            Some(a) => a.keys(),
                            None => sh
                                .get(variable_name)
                                .map(|_| "0".to_string())
                                .into_iter()
                                .collect(),
                        }),
                        _ => None,
                    }
                };
                if let Some(args) = all {
                    if quoted {
                        for (i, a) in args.iter().enumerate() {
                            if i > 0 {
                                f.new_field();
                            }
                            f.push(a.clone(), true, false);
                        }
                        if args.is_empty() {
                            // "$@" with no parameters is no field at all: drop the quotes'
                            // empty marker (what else the word holds still counts).
                            f.saw_quotes = false;
                            if let Some((fi, si)) = f.marker.take()
                                && let Some(field) = f.fields.get_mut(fi)
                                && field.get(si).is_some_and(|s| s.quoted && s.text.is_empty())
                            {
                                field.remove(si);
                            }
                        }
                    } else {
                        // Unquoted: each element is a field of its own, then split by IFS
                        // (so an empty IFS does not glue them together).
                        for (i, a) in args.iter().enumerate() {
                            if i > 0 {
                                f.new_field();
                            }
                            f.push(a.clone(), false, true);
                        }
                    }
                    continue;
                }
                // `${x:-word}` and `${x:+word}`: the word keeps its own quoting, so an
                // unquoted `${x:-"a b"}` is one field; inside double quotes its single quotes
                // are literal characters, as in bash.
                let chosen = match pe {
                    ParameterExpr::UseDefaultValues {
                        parameter,
                        indirect,
                        test_type,
                        default_value,
                    } => {
                        let v = param_value_no_u(sh, parameter, *indirect);
                        is_unset_or_null(&v, test_type).then_some(default_value)
                    }
                    ParameterExpr::UseAlternativeValue {
                        parameter,
                        indirect,
                        test_type,
                        alternative_value,
                    } => {
                        let v = param_value_no_u(sh, parameter, *indirect);
                        (!is_unset_or_null(&v, test_type)).then_some(alternative_value)
                    }
                    _ => None,
                };
                if let Some(word) = chosen {
                    let word = word.as_deref().unwrap_or("");
                    let pieces = if quoted && !word.contains('"') {
                        brush_parser::word::parse_heredoc(word, &parser_options())
                    } else {
                        brush_parser::word::parse(word, &parser_options())
                    };
                    match pieces {
                        Ok(pieces) => {
                            let start = (f.fields.len() - 1, f.fields.last().map_or(0, Vec::len));
                            eval_pieces(sh, &pieces, quoted, io, f)?;
                            // The word is the result of an expansion: its unquoted text is
                            // split like any other expansion's.
                            if !quoted {
                                for (fi, field) in f.fields.iter_mut().enumerate().skip(start.0) {
                                    let from = if fi == start.0 { start.1 } else { 0 };
                                    for seg in field.iter_mut().skip(from) {
                                        seg.split = !seg.quoted;
                                    }
                                }
                            }
                            continue;
                        }
                        Err(e) => return Err(err(sh, io, &format!("bad substitution: {e}"))),
                    }
                }
                let v = param_expr(sh, pe, io)?;
                f.push(v, quoted, !quoted);
            }
            WordPiece::CommandSubstitution(src) => {
                let out = sh.capture(src, io)?;
                f.push(out, quoted, !quoted);
            }
            WordPiece::BackquotedCommandSubstitution(src) => {
                let out = sh.capture(&unescape_backquoted(src, quoted), io)?;
                f.push(out, quoted, !quoted);
            }
            WordPiece::ArithmeticExpression(e) => {
                let v = arith_str(sh, &e.value, io)?;
                f.push(v.to_string(), quoted, !quoted);
            }
        }
    }
    Ok(())
}

/// The command inside backquotes: a backslash before `$`, `` ` `` or `\\` (and `"` inside
/// double quotes) is removed; any other backslash stays, as bash reads `` `...` ``.
fn unescape_backquoted(src: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && (matches!(n, '$' | '`' | '\\') || (in_double_quotes && n == '"'))
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// `$'...'` quoting: the escapes of `echo -e` (octal also without the leading 0, `\cX` a
/// control character), plus `\'` and `\"`.
fn ansi_c(s: &str) -> String {
    crate::builtins::ansi_c_escapes(&s.replace("\\'", "'").replace("\\\"", "\""))
}

/// Field splitting as POSIX and bash do it: IFS whitespace (space, tab, newline when in IFS)
/// at the ends is dropped and runs of it delimit once; every other IFS character delimits a
/// field by itself (with the whitespace around it), so two in a row, or one at the start,
/// make an empty field, while one at the end does not.
fn split_fields(sh: &Shell, f: Fields) -> Vec<Vec<Seg>> {
    let ifs = sh.get("IFS").unwrap_or(" \t\n").to_string();
    let is_ws = |c: char| matches!(c, ' ' | '\t' | '\n') && ifs.contains(c);
    let mut out: Vec<Vec<Seg>> = Vec::new();
    for field in f.fields {
        let mut cur: Vec<Seg> = Vec::new();
        let mut cur_has = false;
        // IFS whitespace just ended a field: a non-whitespace delimiter after it is the same
        // delimiter, not an empty field.
        let mut ws_ended = false;
        for seg in field {
            if !seg.split || ifs.is_empty() {
                if seg.quoted || !seg.text.is_empty() {
                    cur_has = true;
                    ws_ended = false;
                }
                cur.push(seg);
                continue;
            }
            let mut piece = String::new();
            for c in seg.text.chars() {
                if !ifs.contains(c) {
                    piece.push(c);
                    ws_ended = false;
                    continue;
                }
                if !piece.is_empty() {
                    cur.push(Seg {
                        text: std::mem::take(&mut piece),
                        quoted: false,
                        split: false,
                    });
                    cur_has = true;
                }
                if is_ws(c) {
                    if cur_has {
                        out.push(std::mem::take(&mut cur));
                        cur_has = false;
                        ws_ended = true;
                    }
                } else {
                    if cur_has || !ws_ended {
                        out.push(std::mem::take(&mut cur));
                    }
                    cur_has = false;
                    ws_ended = false;
                }
            }
            if !piece.is_empty() {
                cur.push(Seg {
                    text: piece,
                    quoted: false,
                    split: false,
                });
                cur_has = true;
                ws_ended = false;
            }
        }
        if cur_has || (f.saw_quotes && cur.iter().any(|s| s.quoted)) {
            out.push(cur);
        }
    }
    out
}

fn has_glob(sh: &Shell, segs: &[Seg]) -> bool {
    let ext = sh.options.shopt("extglob");
    segs.iter().any(|s| {
        !s.quoted && (s.text.contains(['*', '?', '[']) || (ext && crate::extglob::has_ext(&s.text)))
    })
}

/// Pathname expansion of one field: its matches, or the field itself when none (nothing
/// with `nullglob`; with `failglob`, bash's "no match" error, which ends the complete command).
fn glob_field(sh: &Shell, segs: &[Seg], io: &Io) -> Result<Vec<String>, Flow> {
    let literal: String = segs.iter().map(|s| s.text.as_str()).collect();
    if sh.options.noglob || !has_glob(sh, segs) {
        return Ok(vec![literal]);
    }
    let mut pat = String::new();
    for s in segs {
        for c in s.text.chars() {
            if s.quoted && "*?[]\\()|@!+".contains(c) {
                pat.push('\\');
            }
            pat.push(c);
        }
    }
    let matches = glob(sh, &pat);
    if matches.is_empty() && sh.options.shopt("failglob") {
        let _ = err(sh, io, &format!("no match: {literal}"));
        return Err(Flow::Abort(1));
    }
    if matches.is_empty() && !sh.options.shopt("nullglob") {
        Ok(vec![literal])
    } else {
        Ok(matches)
    }
}

/// Pathname expansion of `pat` (relative to the shell's cwd); sorted; empty if nothing matches.
pub fn glob(sh: &Shell, pat: &str) -> Vec<String> {
    let absolute = pat.starts_with('/');
    let comps: Vec<&str> = pat.split('/').filter(|c| !c.is_empty()).collect();
    let mut cands: Vec<String> = vec![if absolute { "/".into() } else { String::new() }];
    let dotglob = sh.options.shopt("dotglob");
    let nocase = sh.options.shopt("nocaseglob");
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let mut next = Vec::new();
        let ext = sh.options.shopt("extglob") && crate::extglob::has_ext(comp);
        let is_pat = ext || comp.contains(['*', '?', '[']);
        // globstar: `**` alone matches any depth of directories (and, last, everything).
        if *comp == "**" && sh.options.shopt("globstar") {
            for c in &cands {
                let mut found = Vec::new();
                if !last {
                    found.push(c.clone());
                }
                walk_all(sh, c, dotglob, last, &mut found);
                next.extend(found);
            }
            next.dedup();
            cands = next;
            continue;
        }
        for c in &cands {
            let dir = if c.is_empty() {
                sh.cwd.clone()
            } else if absolute {
                c.clone()
            } else {
                sh.path(c).to_string_lossy().into_owned()
            };
            if ext {
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for n in crate::text::sorted_names(rd) {
                    if n.starts_with('.') && !comp.starts_with('.') && !dotglob {
                        continue;
                    }
                    if crate::extglob::matches(comp, &n, nocase) {
                        let p = join(c, &n);
                        if last || sh.path(&p).is_dir() {
                            next.push(p);
                        }
                    }
                }
            } else if is_pat {
                let re = if nocase {
                    regex::Regex::new(&format!("(?i)^(?s:{})$", pattern_body(comp))).ok()
                } else {
                    pattern_regex(comp)
                };
                let Some(re) = re else {
                    continue;
                };
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let names = crate::text::sorted_names(rd);
                for n in names {
                    if n.starts_with('.') && !comp.starts_with('.') && !dotglob {
                        continue;
                    }
                    if re.is_match(&n) {
                        let p = join(c, &n);
                        if !last && !sh.path(&p).is_dir() {
                            continue;
                        }
                        next.push(p);
                    }
                }
            } else {
                let lit = unescape(comp);
                let p = join(c, &lit);
                if last || sh.path(&p).is_dir() {
                    next.push(p);
                }
            }
        }
        cands = next;
        if cands.is_empty() {
            return Vec::new();
        }
    }
    if pat.ends_with('/') {
        cands = cands
            .into_iter()
            .filter(|c| sh.path(c).is_dir())
            .map(|c| c + "/")
            .collect();
    }
    cands.retain(|c| std::fs::symlink_metadata(sh.path(c)).is_ok());
    // bash sorts the whole names (C locale: by bytes), not component by component.
    cands.sort();
    cands.dedup();
    cands
}

/// Everything under `base` (depth first, sorted), for globstar's `**`: directories only when
/// `files` is false.
fn walk_all(sh: &Shell, base: &str, dotglob: bool, files: bool, out: &mut Vec<String>) {
    let dir = if base.is_empty() {
        sh.cwd.clone()
    } else {
        sh.path(base).to_string_lossy().into_owned()
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for n in crate::text::sorted_names(rd) {
        if n.starts_with('.') && !dotglob {
            continue;
        }
        let p = join(base, &n);
        let is_dir = std::fs::symlink_metadata(sh.path(&p)).is_ok_and(|m| m.is_dir());
        if is_dir || files {
            out.push(p.clone());
        }
        if is_dir && out.len() < 1_000_000 {
            walk_all(sh, &p, dotglob, files, out);
        }
    }
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// A shell pattern as an anchored regex.
pub fn pattern_regex(pat: &str) -> Option<regex::Regex> {
    regex::Regex::new(&format!("^(?s:{})$", pattern_body(pat))).ok()
}

fn pattern_body(pat: &str) -> String {
    let mut re = String::new();
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                re.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 1;
            }
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut j = i + 1;
                let mut class = String::from("[");
                if j < chars.len() && (chars[j] == '!' || chars[j] == '^') {
                    class.push('^');
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    class.push_str("\\]");
                    j += 1;
                }
                let mut closed = false;
                while j < chars.len() {
                    if chars[j] == ']' {
                        closed = true;
                        break;
                    }
                    if chars[j] == '['
                        && j + 1 < chars.len()
                        && chars[j + 1] == ':'
                        && let Some(end) = (j + 2..chars.len()).find(|&k| {
                            chars[k] == ':' && k + 1 < chars.len() && chars[k + 1] == ']'
                        })
                    {
                        let name: String = chars[j + 2..end].iter().collect();
                        class.push_str(&format!("[:{name}:]"));
                        j = end + 2;
                        continue;
                    }
                    let ch = chars[j];
                    if ch == '\\' || ch == '[' || ch == '&' || ch == '~' || ch == '|' {
                        class.push('\\');
                    }
                    class.push(ch);
                    j += 1;
                }
                if closed {
                    class.push(']');
                    re.push_str(&class);
                    i = j;
                } else {
                    re.push_str("\\[");
                }
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    re
}

pub fn pattern_matches(pat: &str, s: &str) -> bool {
    pattern_regex(pat).is_some_and(|r| r.is_match(s))
}

/// [`pattern_matches`] for the shell's own patterns (`case`, `[[ == ]]`), which take bash's
/// extended patterns when `shopt -s extglob` is on.
pub fn shell_pattern_matches(sh: &Shell, pat: &str, s: &str) -> bool {
    if sh.options.shopt("extglob") && crate::extglob::has_ext(pat) {
        crate::extglob::matches(pat, s, false)
    } else {
        pattern_matches(pat, s)
    }
}

fn param_name(p: &Parameter) -> String {
    match p {
        Parameter::Positional(n) => n.to_string(),
        Parameter::Special(s) => s.to_string(),
        Parameter::Named(n) => n.clone(),
        Parameter::NamedWithIndex { name, .. } => name.clone(),
        Parameter::NamedWithAllIndices { name, .. } => name.clone(),
    }
}

/// What "$*" and "${a[*]}" join with: the first character of IFS (a space when IFS is
/// unset, nothing when it is empty).
fn ifs_sep(sh: &Shell) -> String {
    match sh.vars.get("IFS") {
        Some(v) => v.value.chars().next().map(String::from).unwrap_or_default(),
        None => " ".into(),
    }
}

fn param_value(sh: &mut Shell, p: &Parameter) -> Option<String> {
    match p {
        Parameter::Positional(0) => Some(sh.arg0.clone()),
        Parameter::Positional(n) => sh.positional.get(*n as usize - 1).cloned(),
        Parameter::Special(s) => Some(match s {
            SpecialParameter::AllPositionalParameters { .. } => sh.positional.join(&ifs_sep(sh)),
            SpecialParameter::PositionalParameterCount => sh.positional.len().to_string(),
            SpecialParameter::LastExitStatus => sh.last_status.to_string(),
            SpecialParameter::CurrentOptionFlags => {
                let mut f = String::from("h");
                if sh.options.errexit {
                    f.push('e');
                }
                if sh.options.nounset {
                    f.push('u');
                }
                f
            }
            SpecialParameter::ProcessId => "1".into(),
            SpecialParameter::LastBackgroundProcessId => String::new(),
            SpecialParameter::ShellName => sh.arg0.clone(),
        }),
        Parameter::Named(n) => named(sh, n),
        Parameter::NamedWithIndex { name, index } => sh.array_get(name, index),
        Parameter::NamedWithAllIndices { name, .. } => match sh.arrays.get(name) {
            Some(a) => Some(a.values().join(&ifs_sep(sh))),
            None => sh.get(name).map(String::from),
        },
    }
}

/// A variable by name, the shell's dynamic ones (`RANDOM`, `PWD`, `LINENO`) included.
fn named(sh: &Shell, n: &str) -> Option<String> {
    match n {
        "RANDOM" => Some(
            (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
                % 32768)
                .to_string(),
        ),
        "PWD" => Some(sh.cwd.clone()),
        "LINENO" => Some(sh.lineno.to_string()),
        _ => sh.get(n).map(String::from),
    }
}

fn lookup(sh: &mut Shell, p: &Parameter, indirect: bool, io: &Io) -> Result<Option<String>, Flow> {
    let mut v = param_value(sh, p);
    if indirect {
        v = match v {
            Some(name) => sh.get(&name).map(String::from),
            None => None,
        };
    }
    if v.is_none() && sh.options.nounset && !matches!(p, Parameter::Special(_)) {
        crate::sys::set_fatal();
        return Err(err(sh, io, &format!("{}: unbound variable", param_name(p))));
    }
    Ok(v)
}

fn is_unset_or_null(v: &Option<String>, t: &ParameterTestType) -> bool {
    match t {
        ParameterTestType::UnsetOrNull => v.as_deref().is_none_or(str::is_empty),
        ParameterTestType::Unset => v.is_none(),
    }
}

/// The parameter of a per-element operator ([`element_op`]) and whether it is indirect.
fn op_parameter(pe: &ParameterExpr) -> Option<(&Parameter, bool)> {
    match pe {
        ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::Transform {
            parameter,
            indirect,
            ..
        } => Some((parameter, *indirect)),
        _ => None,
    }
}

/// The elements of `$@`/`$*` or `${a[@]}`/`${a[*]}`, and whether they are joined (`*`).
fn all_elements(sh: &Shell, parameter: &Parameter) -> Option<(Vec<String>, bool)> {
    match parameter {
        Parameter::Special(SpecialParameter::AllPositionalParameters { concatenate }) => {
            Some((sh.positional.clone(), *concatenate))
        }
        Parameter::NamedWithAllIndices { name, concatenate } => Some((
            match sh.arrays.get(name) {
                Some(a) => a.values(),
                None => sh.get(name).map(String::from).into_iter().collect(),
            },
            *concatenate,
        )),
        _ => None,
    }
}

/// A per-element operator of a parameter expansion (`%`, `#`, `/`, case changes, `@Q`...)
/// applied to one value: of a scalar, or of each element of `${a[@]}` and `$@`, as bash
/// applies them.
fn element_op(sh: &mut Shell, pe: &ParameterExpr, v: String, io: &Io) -> Result<String, Flow> {
    Ok(match pe {
        ParameterExpr::RemoveSmallestSuffixPattern { pattern: p, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { pattern: p, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { pattern: p, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { pattern: p, .. } => {
            let pat = pattern(sh, p.as_deref().unwrap_or(""), io)?;
            let Some(re) = pattern_regex(&pat) else {
                return Ok(v);
            };
            let chars: Vec<(usize, char)> = v.char_indices().collect();
            let mut cuts: Vec<usize> = chars.iter().map(|(i, _)| *i).collect();
            cuts.push(v.len());
            match pe {
                ParameterExpr::RemoveSmallestPrefixPattern { .. } => cuts
                    .iter()
                    .find(|&&i| re.is_match(&v[..i]))
                    .map(|&i| v[i..].to_string())
                    .unwrap_or(v),
                ParameterExpr::RemoveLargestPrefixPattern { .. } => cuts
                    .iter()
                    .rev()
                    .find(|&&i| re.is_match(&v[..i]))
                    .map(|&i| v[i..].to_string())
                    .unwrap_or(v),
                ParameterExpr::RemoveSmallestSuffixPattern { .. } => cuts
                    .iter()
                    .rev()
                    .find(|&&i| re.is_match(&v[i..]))
                    .map(|&i| v[..i].to_string())
                    .unwrap_or(v),
                _ => cuts
                    .iter()
                    .find(|&&i| re.is_match(&v[i..]))
                    .map(|&i| v[..i].to_string())
                    .unwrap_or(v),
            }
        }
        ParameterExpr::UppercasePattern { pattern: p, .. }
        | ParameterExpr::LowercasePattern { pattern: p, .. }
        | ParameterExpr::UppercaseFirstChar { pattern: p, .. }
        | ParameterExpr::LowercaseFirstChar { pattern: p, .. } => {
            let upper = matches!(
                pe,
                ParameterExpr::UppercasePattern { .. } | ParameterExpr::UppercaseFirstChar { .. }
            );
            let first_only = matches!(
                pe,
                ParameterExpr::UppercaseFirstChar { .. } | ParameterExpr::LowercaseFirstChar { .. }
            );
            // `${x^^[aeiou]}`: only the characters the pattern matches change case.
            let re = match p.as_deref().filter(|p| !p.is_empty()) {
                Some(p) => Some(pattern_regex(&pattern(sh, p, io)?)),
                None => None,
            };
            let mut out = String::with_capacity(v.len());
            for (i, c) in v.chars().enumerate() {
                let applies = (!first_only || i == 0)
                    && match &re {
                        None => true,
                        Some(Some(re)) => re.is_match(c.encode_utf8(&mut [0; 4])),
                        Some(None) => false,
                    };
                match (applies, upper) {
                    (true, true) => out.extend(c.to_uppercase()),
                    (true, false) => out.extend(c.to_lowercase()),
                    (false, _) => out.push(c),
                }
            }
            out
        }
        ParameterExpr::ReplaceSubstring {
            pattern: p,
            replacement,
            match_kind,
            ..
        } => {
            let pat = pattern(sh, p, io)?;
            let rep = single(sh, replacement.as_deref().unwrap_or(""), io)?;
            replace(&v, &pat, &rep, match_kind)
        }
        ParameterExpr::Transform { op, .. } => match op {
            brush_parser::word::ParameterTransformOp::Quoted => single_quoted(&v),
            brush_parser::word::ParameterTransformOp::ToUpperCase => v.to_uppercase(),
            brush_parser::word::ParameterTransformOp::ToLowerCase => v.to_lowercase(),
            brush_parser::word::ParameterTransformOp::CapitalizeInitial => {
                map_first(&v, char::to_uppercase)
            }
            brush_parser::word::ParameterTransformOp::ExpandEscapeSequences => {
                crate::builtins::backslash_escapes(&v).0
            }
            brush_parser::word::ParameterTransformOp::PromptExpand => prompt_expand(sh, &v, io)?,
            brush_parser::word::ParameterTransformOp::ToAttributeFlags => match op_name(sh, pe) {
                Some(n) => sh.attr_flags(&n),
                None => String::new(),
            },
            brush_parser::word::ParameterTransformOp::ToAssignmentLogic => {
                match op_name(sh, pe) {
                    Some(n) if sh.vars.contains_key(&n) || sh.arrays.contains_key(&n) => {
                        let flags = sh.attr_flags(&n);
                        let q = single_quoted(&v);
                        let element0 = match sh.arrays.get(&n) {
                            Some(a) => a.keys().iter().any(|k| k == "0"),
                            None => true,
                        };
                        if !element0 && matches!(op_parameter(pe), Some((Parameter::Named(_), _))) {
                            // `${h@A}` of an array without element 0: the bare declaration.
                            format!("declare -{flags} {n}")
                        } else if flags.is_empty() {
                            format!("{n}={q}")
                        } else {
                            format!("declare -{flags} {n}={q}")
                        }
                    }
                    _ => String::new(),
                }
            }
            // `${x@K}` of a scalar (or of one element) quotes it as `@Q` does.
            brush_parser::word::ParameterTransformOp::PossiblyQuoteWithArraysExpanded {
                ..
            } => single_quoted(&v),
        },
        _ => v,
    })
}

fn param_expr(sh: &mut Shell, pe: &ParameterExpr, io: &Io) -> Result<String, Flow> {
    Ok(match pe {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        } => lookup(sh, parameter, *indirect, io)?.unwrap_or_default(),
        ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            test_type,
            default_value,
        } => {
            let v = param_value_no_u(sh, parameter, *indirect);
            if is_unset_or_null(&v, test_type) {
                single(sh, default_value.as_deref().unwrap_or(""), io)?
            } else {
                v.unwrap_or_default()
            }
        }
        ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            test_type,
            default_value,
        } => {
            let v = param_value_no_u(sh, parameter, *indirect);
            if is_unset_or_null(&v, test_type) {
                let d = single(sh, default_value.as_deref().unwrap_or(""), io)?;
                sh.set(&param_name(parameter), d.clone());
                d
            } else {
                v.unwrap_or_default()
            }
        }
        ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            test_type,
            error_message,
        } => {
            let v = param_value_no_u(sh, parameter, *indirect);
            if is_unset_or_null(&v, test_type) {
                let msg = match error_message {
                    Some(m) => single(sh, m, io)?,
                    None => "parameter null or not set".into(),
                };
                io.eprint(&format!("bash: {}: {msg}\n", param_name(parameter)));
                // Fatal: the shell ends (127 for `bash -c` and the call, 1 for a script or a
                // subshell).
                crate::sys::set_fatal();
                return Err(Flow::Exit(127));
            }
            v.unwrap_or_default()
        }
        ParameterExpr::UseAlternativeValue {
            parameter,
            indirect,
            test_type,
            alternative_value,
        } => {
            let v = param_value_no_u(sh, parameter, *indirect);
            if is_unset_or_null(&v, test_type) {
                String::new()
            } else {
                single(sh, alternative_value.as_deref().unwrap_or(""), io)?
            }
        }
        ParameterExpr::ParameterLength {
            parameter,
            indirect,
        } => {
            if let Parameter::Special(SpecialParameter::AllPositionalParameters { .. }) = parameter
            {
                sh.positional.len().to_string()
            } else if let Parameter::NamedWithAllIndices { name, .. } = parameter {
                match sh.arrays.get(name) {
                    Some(a) => a.len().to_string(),
                    None => usize::from(sh.get(name).is_some()).to_string(),
                }
            } else {
                let v = lookup(sh, parameter, *indirect, io)?.unwrap_or_default();
                // Characters in a UTF-8 locale, bytes in the C locale, as bash counts.
                if byte_locale(sh) {
                    v.len().to_string()
                } else {
                    v.chars().count().to_string()
                }
            }
        }
        ParameterExpr::Substring {
            parameter,
            indirect,
            offset,
            length,
        } => {
            let v = lookup(sh, parameter, *indirect, io)?.unwrap_or_default();
            let chars: Vec<char> = v.chars().collect();
            let n = chars.len() as i64;
            let mut off = arith_str(sh, &offset.value, io)?;
            if off < 0 {
                off = (n + off).max(0);
            }
            let off = off.min(n) as usize;
            let end = match length {
                Some(l) => {
                    let l = arith_str(sh, &l.value, io)?;
                    if l < 0 {
                        ((n + l).max(off as i64)) as usize
                    } else {
                        (off as i64 + l).min(n) as usize
                    }
                }
                None => n as usize,
            };
            chars[off..end.max(off)].iter().collect()
        }
        ParameterExpr::VariableNames { prefix, .. } => {
            let mut names: Vec<String> = sh
                .vars
                .keys()
                .chain(sh.arrays.keys())
                .filter(|k| k.starts_with(prefix.as_str()))
                .cloned()
                .collect();
            names.sort();
            names.dedup();
            names.join(" ")
        }
        ParameterExpr::MemberKeys { variable_name, .. } => match sh.arrays.get(variable_name) {
            Some(a) => a.keys().join(" "),
            None => sh
                .get(variable_name)
                .map(|_| "0".to_string())
                .unwrap_or_default(),
        },
        // `%`, `#`, `/`, case changes, `@X`: the operator on the parameter's value.
        _ => match op_parameter(pe) {
            Some((parameter, indirect)) => match lookup(sh, parameter, indirect, io)? {
                Some(v) => element_op(sh, pe, v, io)?,
                // `@Q`, `@K`, `@A` and `@a` of an unset parameter are empty, not `''`.
                None if matches!(
                    pe,
                    ParameterExpr::Transform {
                        op: brush_parser::word::ParameterTransformOp::Quoted
                            | brush_parser::word::ParameterTransformOp::PossiblyQuoteWithArraysExpanded { .. }
                            | brush_parser::word::ParameterTransformOp::ToAssignmentLogic,
                        ..
                    }
                ) =>
                {
                    String::new()
                }
                None => element_op(sh, pe, String::new(), io)?,
            },
            None => String::new(),
        },
    })
}

/// `s` in single quotes, each `'` in it as `'\''` (`${x@Q}`, `trap -p`).
pub fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether the shell's character type locale (`LC_ALL`, else `LC_CTYPE`, else `LANG`) is
/// one of single bytes (`C`, `POSIX`, or any without UTF-8).
pub fn byte_locale(sh: &Shell) -> bool {
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|n| sh.get(n).filter(|v| !v.is_empty()))
        .unwrap_or("C.UTF-8")
        .to_ascii_lowercase();
    !(locale.contains("utf-8") || locale.contains("utf8"))
}

/// The variable a per-element operator applies to (`x` of `${x@a}`, `${a[1]@a}`, and the
/// name `${!r@a}` finds in `r`, without its subscript); None for positional parameters.
fn op_name(sh: &Shell, pe: &ParameterExpr) -> Option<String> {
    let (parameter, indirect) = op_parameter(pe)?;
    let name = match parameter {
        Parameter::Named(n) => n.clone(),
        Parameter::NamedWithIndex { name, .. } | Parameter::NamedWithAllIndices { name, .. } => {
            name.clone()
        }
        _ => return None,
    };
    if !indirect {
        return Some(name);
    }
    let target = sh.get(&name)?;
    Some(
        target
            .split_once('[')
            .map_or(target, |(n, _)| n)
            .to_string(),
    )
}

/// `${x@P}`: the value expanded as bash expands a prompt: its backslash escapes (`\u`, `\h`,
/// `\w`, `\W`, `\$`, `\d`, `\t`, `\n`, ...), then parameter expansion, command substitution
/// and arithmetic.
fn prompt_expand(sh: &mut Shell, v: &str, io: &Io) -> Result<String, Flow> {
    let mut out = String::new();
    let mut chars = v.chars().peekable();
    let home = sh.get("HOME").unwrap_or("/home/agent").to_string();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let now = crate::files::now();
        match e {
            'u' => out.push_str(sh.get("USER").unwrap_or("agent")),
            'h' | 'H' => out.push_str("burrow"),
            's' => out.push_str("bash"),
            'v' => out.push_str("5.2"),
            'V' => out.push_str("5.2.15"),
            'w' | 'W' => {
                let cwd = sh.cwd.clone();
                let shown = if cwd == home {
                    "~".to_string()
                } else if let Some(rest) = cwd.strip_prefix(&format!("{home}/")) {
                    format!("~/{rest}")
                } else {
                    cwd.clone()
                };
                if e == 'w' || shown == "~" || cwd == "/" {
                    out.push_str(&shown);
                } else {
                    out.push_str(cwd.rsplit('/').next().unwrap_or(""));
                }
            }
            '$' => out.push('$'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'e' => out.push('\x1b'),
            '\\' => out.push('\\'),
            '[' | ']' => {}
            'd' => out.push_str(&crate::text::strftime(now, "%a %b %d")),
            't' => out.push_str(&crate::text::strftime(now, "%H:%M:%S")),
            'T' => out.push_str(&crate::text::strftime(now, "%I:%M:%S")),
            '@' => out.push_str(&crate::text::strftime(now, "%I:%M %p")),
            'A' => out.push_str(&crate::text::strftime(now, "%H:%M")),
            'j' => out.push('0'),
            '!' | '#' => out.push('1'),
            '0'..='7' => {
                let mut n = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            n = n * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(n).unwrap_or('?'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    // bash's promptvars: the result goes through parameter expansion, command substitution
    // and arithmetic (not word splitting).
    if out.contains(['$', '`']) {
        let quoted = format!("\"{}\"", out.replace('\\', "\\\\").replace('"', "\\\""));
        return single(sh, &quoted, io);
    }
    Ok(out)
}

/// `v` with its first character mapped (`${v^}`, `${v,}`).
fn map_first<I: Iterator<Item = char>>(v: &str, f: fn(char) -> I) -> String {
    let mut c = v.chars();
    match c.next() {
        Some(first) => f(first).chain(c).collect(),
        None => String::new(),
    }
}

fn param_value_no_u(sh: &mut Shell, p: &Parameter, indirect: bool) -> Option<String> {
    // `${@-x}`, `${a[@]-x}`, `${a[@]+"${a[@]}"}`: all the elements of something with none
    // are unset for these tests, as in bash (a joined empty string would be "set").
    let count = match p {
        Parameter::Special(SpecialParameter::AllPositionalParameters { .. }) => {
            Some(sh.positional.len())
        }
        Parameter::NamedWithAllIndices { name, .. } => Some(match sh.arrays.get(name) {
            Some(a) => a.len(),
            None => usize::from(sh.get(name).is_some()),
        }),
        _ => None,
    };
    if !indirect && count == Some(0) {
        return None;
    }
    let v = param_value(sh, p);
    if indirect {
        return v.and_then(|n| sh.get(&n).map(String::from));
    }
    v
}

fn replace(v: &str, pat: &str, rep: &str, kind: &SubstringMatchKind) -> String {
    // An empty pattern anchored at the start or end matches there: `${x/#/pre}` prepends.
    if pat.is_empty() {
        return match kind {
            SubstringMatchKind::Prefix => format!("{rep}{v}"),
            SubstringMatchKind::Suffix => format!("{v}{rep}"),
            _ => v.to_string(),
        };
    }
    let Some(re) = pattern_regex(pat) else {
        return v.to_string();
    };
    let mut cuts: Vec<usize> = v.char_indices().map(|(i, _)| i).collect();
    cuts.push(v.len());
    let longest_at = |start: usize| -> Option<usize> {
        cuts.iter()
            .rev()
            .filter(|&&e| e >= start)
            .find(|&&e| e > start && re.is_match(&v[start..e]))
            .copied()
    };
    match kind {
        SubstringMatchKind::Prefix => match longest_at(0) {
            Some(e) => format!("{rep}{}", &v[e..]),
            None => v.to_string(),
        },
        SubstringMatchKind::Suffix => {
            match cuts.iter().find(|&&s| s < v.len() && re.is_match(&v[s..])) {
                Some(&s) => format!("{}{rep}", &v[..s]),
                None => v.to_string(),
            }
        }
        SubstringMatchKind::FirstOccurrence | SubstringMatchKind::Anywhere => {
            let all = matches!(kind, SubstringMatchKind::Anywhere);
            let mut out = String::new();
            let mut i = 0;
            let mut replaced = false;
            while i < v.len() {
                if (all || !replaced)
                    && let Some(e) = longest_at(i)
                {
                    out.push_str(rep);
                    i = e;
                    replaced = true;
                    continue;
                }
                let c = v[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
            out
        }
    }
}

/// Evaluates an arithmetic expression given as text (after expanding `$` in it).
/// The elements `${name[@]:offset:length}` (or, for `None`, `${@:offset:length}`, where
/// offset 0 is `$0`) selects: for an indexed array, those from the first index at or past
/// the offset (negative: counted back from the last index + 1).
fn slice_elements(
    sh: &mut Shell,
    name: Option<&str>,
    offset: &str,
    length: Option<&str>,
    io: &Io,
) -> Result<Vec<String>, Flow> {
    let off = arith_str(sh, offset, io)?;
    let len = match length {
        Some(l) => Some(arith_str(sh, l, io)?),
        None => None,
    };
    let items: Vec<(i64, String)> = match name {
        None => std::iter::once(sh.arg0.clone())
            .chain(sh.positional.iter().cloned())
            .enumerate()
            .map(|(i, v)| (i as i64, v))
            .collect(),
        Some(n) => match sh.arrays.get(n) {
            Some(crate::shell::Array::Indexed(m)) => {
                m.iter().map(|(k, v)| (*k, v.clone())).collect()
            }
            Some(a) => a
                .values()
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i as i64, v))
                .collect(),
            None => sh.get(n).map(|v| (0, v.to_string())).into_iter().collect(),
        },
    };
    if let Some(l) = len
        && l < 0
    {
        io.eprint(&format!("bash: {l}: substring expression < 0\n"));
        return Err(Flow::Exit(1));
    }
    let top = items.last().map_or(0, |(k, _)| k + 1);
    let start = if off < 0 { top + off } else { off };
    if start < 0 {
        return Ok(Vec::new());
    }
    Ok(items
        .into_iter()
        .filter(|(k, _)| *k >= start)
        .take(len.map_or(usize::MAX, |l| l as usize))
        .map(|(_, v)| v)
        .collect())
}

/// `$((...))` and every other arithmetic context but the `((...))` command: an error in the
/// expression is fatal, as in bash.
/// As [`arith_str`], with `who` (`declare: `, `read: `) before the error message.
pub fn arith_str_in(sh: &mut Shell, text: &str, who: &str, io: &Io) -> Result<i64, Flow> {
    match arith_eval(sh, text, io)? {
        Ok(v) => Ok(v),
        Err(m) => Err(err(sh, io, &format!("{who}{m}"))),
    }
}

pub fn arith_str(sh: &mut Shell, text: &str, io: &Io) -> Result<i64, Flow> {
    match arith_eval(sh, text, io)? {
        Ok(v) => Ok(v),
        Err(m) => Err(err(sh, io, &m)),
    }
}

/// The `((...))` command: an error in the expression is reported (`bash: ((: ...`) and is
/// the command's status 1; the shell goes on.
pub fn arith_command(sh: &mut Shell, text: &str, io: &Io) -> Result<i32, Flow> {
    Ok(match arith_eval(sh, text, io)? {
        Ok(v) => i32::from(v == 0),
        Err(m) => {
            let m = if m.ends_with("readonly variable") {
                m
            } else {
                format!("((: {m}")
            };
            match sh.lineno {
                0 => io.eprint(&format!("bash: {m}\n")),
                n => io.eprint(&format!("bash: line {n}: {m}\n")),
            }
            1
        }
    })
}

/// Expands and evaluates an arithmetic expression: the value, or the error as bash words it.
/// The end of the error a name unset under `set -u` gives in arithmetic.
const UNBOUND: &str = ": unbound variable";

fn arith_eval(sh: &mut Shell, text: &str, io: &Io) -> Result<Result<i64, String>, Flow> {
    let expanded = if text.contains('$') || text.contains('`') {
        single(sh, text, io)?
    } else {
        text.to_string()
    };
    if expanded.trim().is_empty() {
        return Ok(Ok(0));
    }
    let expr = match brush_parser::arithmetic::parse(&expanded) {
        Ok(e) => e,
        Err(_) => {
            return Ok(Err(format!(
                "{}: syntax error in expression",
                expanded.trim()
            )));
        }
    };
    let value = arith(sh, &expr);
    // `set -u` and an unset name: fatal, as `${x}` is.
    if let Err(m) = &value
        && m.ends_with(UNBOUND)
    {
        crate::sys::set_fatal();
        return Err(err(sh, io, m));
    }
    Ok(value.map_err(|m| {
        if m.ends_with("readonly variable") {
            m
        } else {
            format!("{}: {m}", expanded.trim())
        }
    }))
}

fn var_num(sh: &Shell, name: &str) -> i64 {
    str_num(sh, &named(sh, name).unwrap_or_default())
}

/// A variable's text as a number in arithmetic: a number, or an expression evaluated in turn.
fn str_num(sh: &Shell, v: &str) -> i64 {
    let v = v.trim().to_string();
    if v.is_empty() {
        return 0;
    }
    if let Ok(n) = v.parse::<i64>() {
        return n;
    }
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).unwrap_or(0);
    }
    match brush_parser::arithmetic::parse(&v) {
        Ok(e) => {
            let mut tmp = sh.clone();
            arith(&mut tmp, &e).unwrap_or(0)
        }
        Err(_) => 0,
    }
}

/// The value of a variable or an array element (`a[i+1]`, `A[key]`) in arithmetic; under
/// `set -u` a name that is not set at all is an error (an array's missing element is 0).
fn target_get(sh: &mut Shell, t: &ArithmeticTarget) -> Result<i64, String> {
    let name = match t {
        ArithmeticTarget::Variable(n) | ArithmeticTarget::ArrayElement(n, _) => n,
    };
    if sh.options.nounset && named(sh, name).is_none() && !sh.arrays.contains_key(name) {
        return Err(format!("{name}{UNBOUND}"));
    }
    Ok(match t {
        ArithmeticTarget::Variable(n) => var_num(sh, n),
        ArithmeticTarget::ArrayElement(n, index) => {
            let v = sh.array_get(n, &index.to_string()).unwrap_or_default();
            str_num(sh, &v)
        }
    })
}

/// Assigns a variable or an array element in arithmetic.
fn target_set(sh: &mut Shell, t: &ArithmeticTarget, v: i64) -> Result<(), String> {
    let name = match t {
        ArithmeticTarget::Variable(n) | ArithmeticTarget::ArrayElement(n, _) => n,
    };
    if sh.has_attr(name, 'r') {
        return Err(format!("{name}: readonly variable"));
    }
    match t {
        ArithmeticTarget::Variable(n) => sh.set(n, v.to_string()),
        ArithmeticTarget::ArrayElement(n, index) => {
            sh.array_set(n, &index.to_string(), v.to_string(), false)
        }
    }
    Ok(())
}

fn arith(sh: &mut Shell, e: &ArithmeticExpr) -> Result<i64, String> {
    Ok(match e {
        ArithmeticExpr::Literal(n) => *n,
        ArithmeticExpr::Reference(t) => target_get(sh, t)?,
        ArithmeticExpr::UnaryOp(op, x) => {
            let v = arith(sh, x)?;
            match op {
                UnaryOperator::UnaryPlus => v,
                UnaryOperator::UnaryMinus => v.wrapping_neg(),
                UnaryOperator::BitwiseNot => !v,
                UnaryOperator::LogicalNot => i64::from(v == 0),
            }
        }
        ArithmeticExpr::BinaryOp(op, a, b) => {
            if matches!(op, BinaryOperator::LogicalAnd) {
                return Ok(i64::from(arith(sh, a)? != 0 && arith(sh, b)? != 0));
            }
            if matches!(op, BinaryOperator::LogicalOr) {
                return Ok(i64::from(arith(sh, a)? != 0 || arith(sh, b)? != 0));
            }
            let x = arith(sh, a)?;
            let y = arith(sh, b)?;
            binop(op, x, y)?
        }
        ArithmeticExpr::Conditional(c, a, b) => {
            if arith(sh, c)? != 0 {
                arith(sh, a)?
            } else {
                arith(sh, b)?
            }
        }
        ArithmeticExpr::Assignment(t, v) => {
            let v = arith(sh, v)?;
            target_set(sh, t, v)?;
            v
        }
        ArithmeticExpr::BinaryAssignment(op, t, v) => {
            let cur = target_get(sh, t)?;
            let v = arith(sh, v)?;
            let r = binop(op, cur, v)?;
            target_set(sh, t, r)?;
            r
        }
        ArithmeticExpr::UnaryAssignment(op, t) => {
            let cur = target_get(sh, t)?;
            let (new, result) = match op {
                UnaryAssignmentOperator::PrefixIncrement => (cur + 1, cur + 1),
                UnaryAssignmentOperator::PrefixDecrement => (cur - 1, cur - 1),
                UnaryAssignmentOperator::PostfixIncrement => (cur + 1, cur),
                UnaryAssignmentOperator::PostfixDecrement => (cur - 1, cur),
            };
            target_set(sh, t, new)?;
            result
        }
    })
}

fn binop(op: &BinaryOperator, x: i64, y: i64) -> Result<i64, String> {
    Ok(match op {
        BinaryOperator::Power => {
            if y < 0 {
                return Err("exponent less than 0".into());
            }
            x.wrapping_pow(y as u32)
        }
        BinaryOperator::Multiply => x.wrapping_mul(y),
        BinaryOperator::Divide => {
            if y == 0 {
                return Err("division by 0 (error token is \"0\")".into());
            }
            x.wrapping_div(y)
        }
        BinaryOperator::Modulo => {
            if y == 0 {
                return Err("division by 0 (error token is \"0\")".into());
            }
            x.wrapping_rem(y)
        }
        BinaryOperator::Comma => y,
        BinaryOperator::Add => x.wrapping_add(y),
        BinaryOperator::Subtract => x.wrapping_sub(y),
        BinaryOperator::ShiftLeft => x.wrapping_shl(y as u32),
        BinaryOperator::ShiftRight => x.wrapping_shr(y as u32),
        BinaryOperator::LessThan => i64::from(x < y),
        BinaryOperator::LessThanOrEqualTo => i64::from(x <= y),
        BinaryOperator::GreaterThan => i64::from(x > y),
        BinaryOperator::GreaterThanOrEqualTo => i64::from(x >= y),
        BinaryOperator::Equals => i64::from(x == y),
        BinaryOperator::NotEquals => i64::from(x != y),
        BinaryOperator::BitwiseAnd => x & y,
        BinaryOperator::BitwiseXor => x ^ y,
        BinaryOperator::BitwiseOr => x | y,
        BinaryOperator::LogicalAnd => i64::from(x != 0 && y != 0),
        BinaryOperator::LogicalOr => i64::from(x != 0 || y != 0),
    })
}
