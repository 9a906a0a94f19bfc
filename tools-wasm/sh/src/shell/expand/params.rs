//! Parameter expansion: `$name`, special and positional parameters, `${...}` with its
//! operators (defaults, lengths, substrings, patterns, case, `@Q`/`@P`/`@A` transforms,
//! indirection), over scalars and whole arrays.

use super::*;

pub(super) fn param_name(p: &Parameter) -> String {
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
pub(super) fn ifs_sep(sh: &Shell) -> String {
    match sh.vars.get("IFS") {
        Some(v) => v.value.chars().next().map(String::from).unwrap_or_default(),
        None => " ".into(),
    }
}

pub(super) fn param_value(sh: &mut Shell, p: &Parameter) -> Option<String> {
    match p {
        Parameter::Positional(0) => Some(sh.arg0.clone()),
        Parameter::Positional(n) => sh.positional.get(*n as usize - 1).cloned(),
        Parameter::Special(s) => Some(match s {
            SpecialParameter::AllPositionalParameters { .. } => sh.positional.join(&ifs_sep(sh)),
            SpecialParameter::PositionalParameterCount => sh.positional.len().to_string(),
            SpecialParameter::LastExitStatus => sh.last_status.to_string(),
            SpecialParameter::CurrentOptionFlags => crate::shell::builtins::option_flags(sh),
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
pub(super) fn named(sh: &Shell, n: &str) -> Option<String> {
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

pub(super) fn lookup(
    sh: &mut Shell,
    p: &Parameter,
    indirect: bool,
    io: &Io,
) -> Result<Option<String>, Flow> {
    let mut v = param_value(sh, p);
    if indirect {
        v = match v {
            Some(target) => indirect_value(sh, &target, io)?,
            None => None,
        };
    }
    if v.is_none() && sh.options.nounset && !matches!(p, Parameter::Special(_)) {
        crate::sys::set_fatal();
        return Err(err(sh, io, &format!("{}: unbound variable", param_name(p))));
    }
    Ok(v)
}

/// `${!ref}`: the value of the parameter `ref` names: a variable, an array element (`a[i]`,
/// `a[k]`, `a[@]`, `a[*]`), a positional parameter (`1`) or a special one (`@`, `*`, `#`,
/// `?`, `-`, `$`, `!`). Anything else is bash's "invalid variable name", which ends the
/// command with status 1.
fn indirect_value(sh: &mut Shell, target: &str, io: &Io) -> Result<Option<String>, Flow> {
    use brush_parser::word::SpecialParameter as S;
    fn special(sh: &mut Shell, s: S) -> Option<String> {
        param_value(sh, &Parameter::Special(s))
    }
    let value = match target {
        "@" => Some(sh.positional.join(" ")),
        "*" => special(sh, S::AllPositionalParameters { concatenate: true }),
        "#" => special(sh, S::PositionalParameterCount),
        "?" => special(sh, S::LastExitStatus),
        "-" => special(sh, S::CurrentOptionFlags),
        "$" => special(sh, S::ProcessId),
        "!" => special(sh, S::LastBackgroundProcessId),
        t if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => match t.parse::<usize>() {
            Ok(0) => Some(sh.arg0.clone()),
            Ok(n) => sh.positional.get(n - 1).cloned(),
            Err(_) => None,
        },
        t if crate::shell::builtins::is_identifier(t) => named(sh, t),
        t => match t.strip_suffix(']').and_then(|t| t.split_once('[')) {
            Some((name, index))
                if crate::shell::builtins::is_identifier(name) && !index.is_empty() =>
            {
                match index {
                    "@" | "*" => {
                        let sep = if index == "@" {
                            " ".into()
                        } else {
                            ifs_sep(sh)
                        };
                        match sh.arrays.get(name) {
                            Some(a) => Some(a.values().join(&sep)),
                            None => sh.get(name).map(String::from),
                        }
                    }
                    _ => sh.array_get(name, index),
                }
            }
            _ => {
                let _ = err(sh, io, &format!("{t}: invalid variable name"));
                return Err(Flow::Abort(1));
            }
        },
    };
    Ok(value)
}

pub(super) fn is_unset_or_null(v: &Option<String>, t: &ParameterTestType) -> bool {
    match t {
        ParameterTestType::UnsetOrNull => v.as_deref().is_none_or(str::is_empty),
        ParameterTestType::Unset => v.is_none(),
    }
}

/// The parameter of a per-element operator ([`element_op`]) and whether it is indirect.
pub(super) fn op_parameter(pe: &ParameterExpr) -> Option<(&Parameter, bool)> {
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
pub(super) fn all_elements(sh: &Shell, parameter: &Parameter) -> Option<(Vec<String>, bool)> {
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
pub(super) fn element_op(
    sh: &mut Shell,
    pe: &ParameterExpr,
    v: String,
    io: &Io,
) -> Result<String, Flow> {
    Ok(match pe {
        ParameterExpr::RemoveSmallestSuffixPattern { pattern: p, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { pattern: p, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { pattern: p, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { pattern: p, .. } => {
            let pat = pattern(sh, p.as_deref().unwrap_or(""), io)?;
            // `shopt -s extglob` patterns (`${x%.@(py|cc)}`) match as bash's; others as a regex.
            let ext = sh.options.shopt("extglob") && crate::shell::extglob::has_ext(&pat);
            let regex = if ext { None } else { pattern_regex(&pat) };
            if !ext && regex.is_none() {
                return Ok(v);
            }
            let matcher = |s: &str| match &regex {
                Some(re) => re.is_match(s),
                None => crate::shell::extglob::matches(&pat, s, false),
            };
            let re = Matcher(&matcher);
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
            brush_parser::word::ParameterTransformOp::Quoted => {
                crate::shell::xtrace::reusable(&v, false)
            }
            brush_parser::word::ParameterTransformOp::ToUpperCase => v.to_uppercase(),
            brush_parser::word::ParameterTransformOp::ToLowerCase => v.to_lowercase(),
            brush_parser::word::ParameterTransformOp::CapitalizeInitial => {
                map_first(&v, char::to_uppercase)
            }
            brush_parser::word::ParameterTransformOp::ExpandEscapeSequences => {
                crate::shell::builtins::backslash_escapes(&v).0
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
                        let q = crate::shell::xtrace::reusable(&v, false);
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
            } => crate::shell::xtrace::reusable(&v, false),
        },
        _ => v,
    })
}

pub(super) fn param_expr(sh: &mut Shell, pe: &ParameterExpr, io: &Io) -> Result<String, Flow> {
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
    sh_utility::ctx::byte_locale(sh)
}

/// The variable a per-element operator applies to (`x` of `${x@a}`, `${a[1]@a}`, and the
/// name `${!r@a}` finds in `r`, without its subscript); None for positional parameters.
pub(super) fn op_name(sh: &Shell, pe: &ParameterExpr) -> Option<String> {
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
pub(super) fn prompt_expand(sh: &mut Shell, v: &str, io: &Io) -> Result<String, Flow> {
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
        let now = sh_utility::time::now();
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
            'd' => out.push_str(&sh_utility::time::strftime(now, "%a %b %d")),
            't' => out.push_str(&sh_utility::time::strftime(now, "%H:%M:%S")),
            'T' => out.push_str(&sh_utility::time::strftime(now, "%I:%M:%S")),
            '@' => out.push_str(&sh_utility::time::strftime(now, "%I:%M %p")),
            'A' => out.push_str(&sh_utility::time::strftime(now, "%H:%M")),
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
pub(super) fn map_first<I: Iterator<Item = char>>(v: &str, f: fn(char) -> I) -> String {
    let mut c = v.chars();
    match c.next() {
        Some(first) => f(first).chain(c).collect(),
        None => String::new(),
    }
}

pub(super) fn param_value_no_u(sh: &mut Shell, p: &Parameter, indirect: bool) -> Option<String> {
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

pub(super) fn replace(v: &str, pat: &str, rep: &str, kind: &SubstringMatchKind) -> String {
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
pub(super) fn slice_elements(
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

/// A match test with a regex's `is_match` shape, for code written against either.
struct Matcher<'a>(&'a dyn Fn(&str) -> bool);

impl Matcher<'_> {
    fn is_match(&self, s: &str) -> bool {
        (self.0)(s)
    }
}
