//! Conditional expressions: the `test`/`[` builtin and `[[ ... ]]`.

use brush_parser::ast::{BinaryPredicate, ExtendedTestExpr, TestExpr, UnaryPredicate};

use crate::shell::io::Io;
use crate::shell::{Flow, Shell};

fn unary(sh: &Shell, p: &UnaryPredicate, s: &str) -> bool {
    let path = || sh.path(s);
    match p {
        UnaryPredicate::FileExists => std::fs::metadata(path()).is_ok(),
        UnaryPredicate::FileExistsAndIsDir => path().is_dir(),
        UnaryPredicate::FileExistsAndIsRegularFile => path().is_file(),
        UnaryPredicate::FileExistsAndIsSymlink => {
            std::fs::symlink_metadata(path()).is_ok_and(|m| m.file_type().is_symlink())
        }
        UnaryPredicate::FileExistsAndIsNotZeroLength => {
            std::fs::metadata(path()).is_ok_and(|m| m.len() > 0)
        }
        UnaryPredicate::FileExistsAndIsReadable | UnaryPredicate::FileExistsAndIsWritable => {
            std::fs::metadata(path()).is_ok()
        }
        UnaryPredicate::FileExistsAndIsExecutable => std::fs::metadata(path())
            .is_ok_and(|m| m.is_dir() || s.ends_with(".sh") || s.ends_with(".wasm")),
        UnaryPredicate::FileExistsAndIsCharSpecialFile => {
            std::fs::metadata(path()).is_ok_and(|m| crate::sys::is_char_device(&m.file_type()))
        }
        UnaryPredicate::StringHasZeroLength => s.is_empty(),
        UnaryPredicate::StringHasNonZeroLength => !s.is_empty(),
        UnaryPredicate::ShellVariableIsSetAndAssigned => is_set(sh, s),
        UnaryPredicate::FdIsOpenTerminal => false,
        UnaryPredicate::ShellOptionEnabled => match s {
            "errexit" => sh.options.errexit,
            "nounset" => sh.options.nounset,
            "pipefail" => sh.options.pipefail,
            _ => false,
        },
        _ => false,
    }
}

fn num(s: &str) -> Result<i64, String> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| format!("{s}: integer expression expected"))
}

fn binary(sh: &Shell, p: &BinaryPredicate, a: &str, b: &str) -> Result<bool, String> {
    Ok(match p {
        BinaryPredicate::StringExactlyMatchesString
        | BinaryPredicate::StringExactlyMatchesPattern => a == b,
        BinaryPredicate::StringDoesNotExactlyMatchString
        | BinaryPredicate::StringDoesNotExactlyMatchPattern => a != b,
        BinaryPredicate::LeftSortsBeforeRight => a < b,
        BinaryPredicate::LeftSortsAfterRight => a > b,
        BinaryPredicate::ArithmeticEqualTo => num(a)? == num(b)?,
        BinaryPredicate::ArithmeticNotEqualTo => num(a)? != num(b)?,
        BinaryPredicate::ArithmeticLessThan => num(a)? < num(b)?,
        BinaryPredicate::ArithmeticLessThanOrEqualTo => num(a)? <= num(b)?,
        BinaryPredicate::ArithmeticGreaterThan => num(a)? > num(b)?,
        BinaryPredicate::ArithmeticGreaterThanOrEqualTo => num(a)? >= num(b)?,
        BinaryPredicate::StringContainsSubstring => a.contains(b),
        BinaryPredicate::StringMatchesRegex => {
            regex::Regex::new(b).map_err(|e| e.to_string())?.is_match(a)
        }
        BinaryPredicate::LeftFileIsNewerOrExistsWhenRightDoesNot => {
            let m = |p: &str| {
                std::fs::metadata(sh.path(p))
                    .and_then(|m| m.modified())
                    .ok()
            };
            match (m(a), m(b)) {
                (Some(x), Some(y)) => x > y,
                (Some(_), None) => true,
                _ => false,
            }
        }
        BinaryPredicate::LeftFileIsOlderOrDoesNotExistWhenRightDoes => {
            let m = |p: &str| {
                std::fs::metadata(sh.path(p))
                    .and_then(|m| m.modified())
                    .ok()
            };
            match (m(a), m(b)) {
                (Some(x), Some(y)) => x < y,
                (None, Some(_)) => true,
                _ => false,
            }
        }
        BinaryPredicate::FilesReferToSameDeviceAndInodeNumbers => {
            sh.path(a).canonicalize().ok() == sh.path(b).canonicalize().ok()
        }
    })
}

/// Evaluates a `test` expression.
pub fn eval(sh: &mut Shell, e: &TestExpr) -> Result<bool, String> {
    Ok(match e {
        TestExpr::False => false,
        TestExpr::Literal(s) => !s.is_empty(),
        TestExpr::And(a, b) => eval(sh, a)? && eval(sh, b)?,
        TestExpr::Or(a, b) => eval(sh, a)? || eval(sh, b)?,
        TestExpr::Not(a) => !eval(sh, a)?,
        TestExpr::Parenthesized(a) => eval(sh, a)?,
        TestExpr::UnaryTest(UnaryPredicate::ShellVariableIsSetAndAssigned, s) => {
            element_is_set(sh, s).unwrap_or_else(|| is_set(sh, s))
        }
        TestExpr::UnaryTest(p, s) => unary(sh, p, s),
        TestExpr::BinaryTest(p, a, b) => binary(sh, p, a, b)?,
    })
}

/// Evaluates `[[ ... ]]`: words are expanded without splitting or globbing; the right side
/// of `==`/`!=` is a pattern and of `=~` a regular expression.
pub fn extended(sh: &mut Shell, e: &ExtendedTestExpr, io: &Io) -> Result<bool, String> {
    let ex = |sh: &mut Shell, w: &str| -> Result<String, String> {
        crate::shell::expand::single(sh, w, io).map_err(|f| match f {
            Flow::Exit(_) => "expansion failed".to_string(),
            _ => String::new(),
        })
    };
    Ok(match e {
        ExtendedTestExpr::And(a, b) => extended(sh, a, io)? && extended(sh, b, io)?,
        ExtendedTestExpr::Or(a, b) => extended(sh, a, io)? || extended(sh, b, io)?,
        ExtendedTestExpr::Not(a) => !extended(sh, a, io)?,
        ExtendedTestExpr::Parenthesized(a) => extended(sh, a, io)?,
        ExtendedTestExpr::UnaryTest(p, w) => {
            let s = ex(sh, &w.value)?;
            if matches!(p, UnaryPredicate::ShellVariableIsSetAndAssigned)
                && let Some(set) = element_is_set(sh, &s)
            {
                return Ok(set);
            }
            unary(sh, p, &s)
        }
        ExtendedTestExpr::BinaryTest(p, a, b) => {
            let left = ex(sh, &a.value)?;
            match p {
                BinaryPredicate::StringExactlyMatchesPattern
                | BinaryPredicate::StringDoesNotExactlyMatchPattern => {
                    let pat = crate::shell::expand::pattern(sh, &b.value, io)
                        .map_err(|_| "bad pattern".to_string())?;
                    let m = crate::shell::expand::test_pattern_matches(sh, &pat, &left);
                    if matches!(p, BinaryPredicate::StringExactlyMatchesPattern) {
                        m
                    } else {
                        !m
                    }
                }
                BinaryPredicate::StringMatchesRegex => {
                    let right = ex(sh, &b.value)?;
                    // nocasematch: the regex ignores case too, as in bash.
                    let right = if sh.options.shopt("nocasematch") {
                        format!("(?i){right}")
                    } else {
                        right
                    };
                    let re = regex::Regex::new(&right).map_err(|e| e.to_string())?;
                    // BASH_REMATCH: the whole match, then each group ("" when it took no
                    // part); empty when there is no match.
                    let groups: std::collections::BTreeMap<i64, String> = match re.captures(&left) {
                        Some(c) => c
                            .iter()
                            .enumerate()
                            .map(|(i, g)| (i as i64, g.map_or("", |m| m.as_str()).to_string()))
                            .collect(),
                        None => Default::default(),
                    };
                    let matched = !groups.is_empty();
                    sh.vars.remove("BASH_REMATCH");
                    sh.arrays
                        .insert("BASH_REMATCH".into(), crate::shell::Array::Indexed(groups));
                    matched
                }
                BinaryPredicate::ArithmeticEqualTo
                | BinaryPredicate::ArithmeticNotEqualTo
                | BinaryPredicate::ArithmeticLessThan
                | BinaryPredicate::ArithmeticLessThanOrEqualTo
                | BinaryPredicate::ArithmeticGreaterThan
                | BinaryPredicate::ArithmeticGreaterThanOrEqualTo => {
                    // In [[ ]] both sides are arithmetic expressions (0x10, 010, names).
                    let right = ex(sh, &b.value)?;
                    let (Ok(l), Ok(r)) = (
                        crate::shell::expand::arith_str(sh, &left, io),
                        crate::shell::expand::arith_str(sh, &right, io),
                    ) else {
                        // The error is printed; the test is false (status 1), as in bash.
                        return Ok(false);
                    };
                    binary(sh, p, &l.to_string(), &r.to_string())?
                }
                _ => {
                    let right = ex(sh, &b.value)?;
                    binary(sh, p, &left, &right)?
                }
            }
        }
    })
}

/// `-v NAME`: a variable, or element 0 of an array, is set.
/// `-v name[key]`: whether that element is set (None: `s` names no element).
fn element_is_set(sh: &mut Shell, s: &str) -> Option<bool> {
    let (name, idx) = s.strip_suffix(']').and_then(|t| t.split_once('['))?;
    if idx == "@" || idx == "*" {
        return Some(
            sh.arrays.get(name).is_some_and(|a| !a.keys().is_empty()) || sh.vars.contains_key(name),
        );
    }
    let key = sh.array_key(name, idx);
    Some(match sh.arrays.get(name) {
        Some(crate::shell::Array::Indexed(m)) => {
            key.parse::<i64>().is_ok_and(|k| m.contains_key(&k))
        }
        Some(crate::shell::Array::Assoc(m)) => m.contains_key(&key),
        None => key.parse::<i64>().is_ok_and(|k| k == 0) && sh.vars.contains_key(name),
    })
}

fn is_set(sh: &Shell, name: &str) -> bool {
    sh.vars.contains_key(name)
        || match sh.arrays.get(name) {
            Some(crate::shell::Array::Indexed(m)) => m.contains_key(&0),
            Some(crate::shell::Array::Assoc(m)) => m.contains_key("0"),
            None => false,
        }
}
