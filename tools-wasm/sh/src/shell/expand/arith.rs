//! Shell arithmetic (`$((...))`, `((...))`, `let`, array subscripts, `declare -i`): bash's
//! 64-bit integer semantics on brush-parser's arithmetic AST, with its error wording.

use super::*;

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
    // `((...))` is `let "..."`: its text is expanded with quote removal, so
    // `(( x = A['k'] ))` reads the element with key k.
    let text = if text.contains(['\'', '"']) {
        single(sh, text, io)?
    } else {
        text.to_string()
    };
    let text = text.as_str();
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
pub(super) const UNBOUND: &str = ": unbound variable";

pub(super) fn arith_eval(sh: &mut Shell, text: &str, io: &Io) -> Result<Result<i64, String>, Flow> {
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

pub(super) fn var_num(sh: &Shell, name: &str) -> i64 {
    str_num(sh, &named(sh, name).unwrap_or_default())
}

/// A variable's text as a number in arithmetic: a number, or an expression evaluated in turn.
pub(super) fn str_num(sh: &Shell, v: &str) -> i64 {
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
pub(super) fn target_get(sh: &mut Shell, t: &ArithmeticTarget) -> Result<i64, String> {
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
pub(super) fn target_set(sh: &mut Shell, t: &ArithmeticTarget, v: i64) -> Result<(), String> {
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

pub(super) fn arith(sh: &mut Shell, e: &ArithmeticExpr) -> Result<i64, String> {
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

pub(super) fn binop(op: &BinaryOperator, x: i64, y: i64) -> Result<i64, String> {
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
