//! Namerefs (`declare -n ref=name`): a variable with attribute `n` whose value names another
//! variable (or an array element, `a[2]`); reading, assigning and unsetting `ref` act on
//! that one, as in bash. `${!ref}` of a nameref is the name it holds.

use brush_parser::word::{Parameter, ParameterExpr};

use crate::shell::Shell;

/// How many namerefs a chain may pass through (bash warns past its own limit).
const MAX_CHAIN: usize = 16;

impl Shell {
    /// The variable `name` stands for: itself, or the end of its chain of namerefs (a name
    /// or `name[subscript]`). A nameref with no value stands for itself; a chain that comes
    /// back on itself stands for nothing ("").
    pub fn resolve_ref(&self, name: &str) -> String {
        let mut n = name.to_string();
        let mut seen = vec![n.clone()];
        for _ in 0..MAX_CHAIN {
            if !self.has_attr(&n, 'n') {
                return n;
            }
            match self.vars.get(&n) {
                Some(v) if !v.value.is_empty() => n = v.value.clone(),
                _ => return n,
            }
            if seen.contains(&n) {
                return String::new();
            }
            seen.push(n.clone());
        }
        String::new()
    }

    /// Whether `name` is a nameref that names something.
    pub fn is_ref(&self, name: &str) -> bool {
        self.has_attr(name, 'n') && self.vars.get(name).is_some_and(|v| !v.value.is_empty())
    }
}

/// `name[subscript]` split, or None for a plain name.
pub fn element(target: &str) -> Option<(&str, &str)> {
    target.strip_suffix(']').and_then(|t| t.split_once('['))
}

/// A parameter with a nameref in it replaced by what the nameref names; None when there is
/// none.
pub fn deref_parameter(sh: &Shell, p: &Parameter) -> Option<Parameter> {
    let name = match p {
        Parameter::Named(n)
        | Parameter::NamedWithIndex { name: n, .. }
        | Parameter::NamedWithAllIndices { name: n, .. } => n,
        _ => return None,
    };
    if !sh.is_ref(name) {
        return None;
    }
    let target = sh.resolve_ref(name);
    let (base, index) = match element(&target) {
        Some((b, i)) => (b.to_string(), Some(i.to_string())),
        None => (target, None),
    };
    Some(match (p, index) {
        (Parameter::Named(_), None) => Parameter::Named(base),
        (Parameter::Named(_), Some(i)) if i == "@" || i == "*" => Parameter::NamedWithAllIndices {
            name: base,
            concatenate: i == "*",
        },
        (Parameter::Named(_), Some(index)) => Parameter::NamedWithIndex { name: base, index },
        (Parameter::NamedWithIndex { index, .. }, None) => Parameter::NamedWithIndex {
            name: base,
            index: index.clone(),
        },
        (Parameter::NamedWithAllIndices { concatenate, .. }, None) => {
            Parameter::NamedWithAllIndices {
                name: base,
                concatenate: *concatenate,
            }
        }
        _ => return None,
    })
}

/// The parameter of an expansion and whether it is indirect (`${!x}`).
fn parameter_mut(pe: &mut ParameterExpr) -> Option<(&mut Parameter, &mut bool)> {
    match pe {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UseAlternativeValue {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::ParameterLength {
            parameter,
            indirect,
        }
        | ParameterExpr::RemoveSmallestSuffixPattern {
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
        | ParameterExpr::Substring {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::Transform {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            ..
        } => Some((parameter, indirect)),
        _ => None,
    }
}

/// An expansion with its nameref followed (`${ref}`, `${ref[1]}`, `${#ref[@]}`,
/// `${!ref[@]}`); `${!ref}` of a nameref is the name it holds, as bash inverts it. None when
/// nothing changes.
pub fn deref_expr(sh: &Shell, pe: &ParameterExpr) -> Option<ParameterExpr> {
    if let ParameterExpr::MemberKeys {
        variable_name,
        concatenate,
    } = pe
    {
        if !sh.is_ref(variable_name) {
            return None;
        }
        let target = sh.resolve_ref(variable_name);
        return Some(ParameterExpr::MemberKeys {
            variable_name: element(&target).map_or(target.clone(), |(b, _)| b.to_string()),
            concatenate: *concatenate,
        });
    }
    let mut out = pe.clone();
    let (parameter, indirect) = parameter_mut(&mut out)?;
    if *indirect {
        let Parameter::Named(n) = parameter else {
            return None;
        };
        if !sh.has_attr(n, 'n') {
            return None;
        }
        *indirect = false;
        return Some(out);
    }
    *parameter = deref_parameter(sh, parameter)?;
    Some(out)
}
