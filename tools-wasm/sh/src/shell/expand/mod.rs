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

use crate::shell::io::Io;
use crate::shell::{Flow, Shell, parser_options};

mod arith;
pub mod glob;
mod params;

pub use arith::*;
pub use glob::*;
pub use params::single_quoted;
use params::*;

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
        for raw in braces(sh, &w.value) {
            let fields = expand_word(sh, &raw, io)?;
            for f in split_fields(sh, fields) {
                out.extend(glob_field(sh, &f, io)?);
            }
        }
    }
    Ok(out)
}

/// An assignment argument of a declaration builtin (`local x=$1`, `export P=$HOME/a b`):
/// brace expansion makes a word of each form, as in bash, and each is expanded as an
/// assignment's value is (no field splitting, no globbing).
pub fn assignment_argument(
    sh: &mut Shell,
    word: &brush_parser::ast::Word,
    io: &Io,
) -> Result<Vec<String>, Flow> {
    let mut out = Vec::new();
    for raw in braces(sh, &word.value) {
        out.push(single(sh, &raw, io)?);
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
    for (i, segs) in f.fields.iter().enumerate() {
        // `"${a[@]}"` and `"$@"` in a pattern are their elements joined by spaces, as bash
        // reads them in `[[ ]]` and `case`.
        if i > 0 {
            out.push(' ');
        }
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

/// Brace expansion, unless `set +B` turned it off.
fn braces(sh: &Shell, raw: &str) -> Vec<String> {
    if sh.options.no_braceexpand {
        return vec![raw.to_string()];
    }
    brace_expand(raw)
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
                let followed = crate::shell::nameref::deref_expr(sh, pe);
                let pe = followed.as_ref().unwrap_or(pe);
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
                            let d = crate::shell::builtins::declaration(sh, name).unwrap_or_default();
                            f.push(d, quoted, !quoted);
                        }
                        _ => {
                            let text: Vec<String> = pairs
                                .iter()
                                .map(|(k, v)| format!("{k} {}", crate::shell::builtins::dq(v)))
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
                        // Unquoted `$*` and `${a[*]}` with IFS set to '': nothing to join
                        // them by, so the elements stay words of their own, as `$@`'s do.
                        ParameterExpr::Parameter {
                            parameter:
                                Parameter::Special(SpecialParameter::AllPositionalParameters {
                                    concatenate: true,
                                }),
                            ..
                        } if !quoted && sh.get("IFS") == Some("") => Some(sh.positional.clone()),
                        ParameterExpr::Parameter {
                            parameter:
                                Parameter::NamedWithAllIndices {
                                    name,
                                    concatenate: true,
                                },
                            indirect: false,
                        } if !quoted && sh.get("IFS") == Some("") => {
                            Some(match sh.arrays.get(name) {
                                Some(a) => a.values(),
                                None => sh.get(name).map(String::from).into_iter().collect(),
                            })
                        }
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
    let mut out =
        crate::shell::builtins::ansi_c_escapes(&s.replace("\\'", "'").replace("\\\"", "\""));
    // A shell string cannot hold a NUL byte: bash's ends at the first one.
    if let Some(i) = out.find('\0') {
        out.truncate(i);
    }
    out
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
