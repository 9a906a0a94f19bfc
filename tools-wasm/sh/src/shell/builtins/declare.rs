//! `declare`/`typeset`/`local`/`readonly`: attributes (-i -l -u -x -r -a -A -n), arrays,
//! function scopes, and the `declare -p`/`-f` listings in bash's format.

use super::*;

/// `declare`, `typeset`, `local` and `readonly`: attributes `-a -A -i -l -u -r -x` (`+` takes
/// one away, except `r`), `-g`, `-p`, `-f`/`-F`.
pub(super) fn local(sh: &mut Shell, name: &str, args: &[String], io: &Io) -> Status {
    if name == "local" && sh.locals.is_empty() {
        io.eprint("bash: local: can only be used in a function\n");
        return Ok(1);
    }
    let (mut on, mut off) = (String::new(), String::new());
    let (options, i) = option_letters(args, true);
    for (sign, c) in options {
        match c {
            'a' | 'A' | 'x' | 'g' | 'r' | 'p' | 'f' | 'F' | 'i' | 'l' | 'u' | 'n' => {
                if sign == '-' {
                    on.push(c);
                } else {
                    off.push(c);
                }
            }
            't' | 'I' | 'c' => {
                io.eprint(&format!("bash: {name}: -{c}: not supported in burrow\n"));
                return Ok(2);
            }
            other => {
                io.eprint(&format!(
                    "bash: {name}: {sign}{other}: invalid option\n{name}: usage: {name} [-aAfFgiIlnrtux] [name[=value] ...] or {name} -p [-aAfFilnrtux] [name ...]\n"
                ));
                return Ok(2);
            }
        }
    }
    if name == "readonly" {
        on.push('r');
    }
    let names: Vec<&String> = args[i..].iter().collect();
    let flag = |c: char| on.contains(c);
    if flag('f') || flag('F') {
        return Ok(declare_functions(sh, &names, flag('F'), io));
    }
    if off.contains('r') {
        for n in &names {
            io.eprint(&format!("bash: {name}: {n}: readonly variable\n"));
        }
        return Ok(1);
    }
    if flag('p') || names.is_empty() {
        // A bare `local` lists the function's local variables, in the order declared.
        if names.is_empty() && name == "local" && !flag('p') {
            let mut seen: Vec<String> = Vec::new();
            for (n, ..) in sh.locals.last().into_iter().flatten() {
                if !seen.contains(n) {
                    seen.push(n.clone());
                }
            }
            let mut out = String::new();
            for n in &seen {
                if let Some(d) = declaration(sh, n) {
                    out.push_str(&d);
                    out.push('\n');
                }
            }
            io.print(&out);
            return Ok(0);
        }
        // `readonly` / `declare -r` with no names lists the readonly variables.
        let filter = on.replace(['p', 'g'], "");
        return Ok(declare_print(sh, &names, &filter, io));
    }
    let (assoc, indexed) = (flag('A'), flag('a'));
    // Inside a function, `local`/`declare` hide the caller's variable of that name until the
    // function returns (scalar, array and attributes alike); `-g` and `readonly` do not.
    let scoped = name == "local" || (name != "readonly" && !flag('g') && !sh.locals.is_empty());
    let mut status = 0;
    for a in names {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k.trim_end_matches('+').to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let append = a.split_once('=').is_some_and(|(k, _)| k.ends_with('+'));
        // `declare a[2]=x`: an element of an array, as the assignment `a[2]=x` sets it.
        if let (Some((base, sub)), Some(v)) = (
            k.strip_suffix(']').and_then(|k| k.split_once('[')),
            v.as_ref(),
        ) && is_identifier(base)
        {
            if sh.readonly_refused(base, io) {
                status = 1;
                continue;
            }
            sh.array_set(base, sub, v.clone(), append);
            continue;
        }
        if !is_identifier(&k) {
            io.eprint(&format!("bash: {name}: `{a}': not a valid identifier\n"));
            status = 1;
            continue;
        }
        // A nameref named again without -n/+n: the declaration is of what it names.
        let mut k = k;
        if !flag('n') && !off.contains('n') && sh.is_ref(&k) {
            let target = sh.resolve_ref(&k);
            if target.is_empty() {
                io.eprint(&format!("bash: warning: {k}: circular name reference\n"));
                status = 1;
                continue;
            }
            if let Some((base, index)) = crate::shell::nameref::element(&target) {
                if let Some(v) = &v {
                    let (base, index) = (base.to_string(), index.to_string());
                    sh.array_set(&base, &index, v.clone(), append);
                }
                continue;
            }
            k = target;
        }
        if off.contains('n') {
            sh.set_attr(&k, 'n', false);
        }
        let hid = if scoped && !sh.locals.is_empty() {
            let saved = (
                k.clone(),
                sh.vars.get(&k).cloned(),
                sh.arrays.get(&k).cloned(),
                sh.attrs.get(&k).cloned(),
            );
            if let Some(frame) = sh.locals.last_mut() {
                frame.push(saved);
            }
            true
        } else {
            false
        };
        // Changing a readonly variable's value or attributes is refused; naming it again
        // (`readonly x`) is not.
        if sh.has_attr(&k, 'r') && !hid && (v.is_some() || on.chars().any(|c| c != 'r')) {
            io.eprint(&format!("bash: {name}: {k}: readonly variable\n"));
            status = 1;
            continue;
        }
        if hid {
            sh.attrs.remove(&k);
        }
        if flag('n') {
            // `declare -n ref=name`: ref holds the name (a variable or an element).
            let value = v
                .clone()
                .unwrap_or_else(|| sh.vars.get(&k).map(|x| x.value.clone()).unwrap_or_default());
            if !value.is_empty() && !is_assignable(&value) {
                io.eprint(&format!(
                    "bash: {name}: `{value}': invalid variable name for name reference\n"
                ));
                status = 1;
                continue;
            }
            if value == k {
                io.eprint(&format!(
                    "bash: {name}: {k}: nameref variable self references not allowed\n"
                ));
                status = 1;
                continue;
            }
            sh.arrays.remove(&k);
            // Without a value it names nothing yet, and is unset.
            if v.is_some() || sh.vars.contains_key(&k) {
                let exported = sh.vars.get(&k).is_some_and(|x| x.exported) || flag('x');
                sh.vars
                    .insert(k.clone(), crate::shell::Var { value, exported });
            }
            sh.set_attr(&k, 'n', true);
            if flag('r') {
                sh.set_attr(&k, 'r', true);
            }
            continue;
        }
        for c in on.chars().filter(|c| matches!(c, 'i' | 'l' | 'u')) {
            sh.set_attr(&k, c, true);
        }
        for c in off.chars().filter(|c| matches!(c, 'i' | 'l' | 'u')) {
            sh.set_attr(&k, c, false);
        }
        // declare -a/-A NAME, and NAME=(items) given as one word.
        if assoc
            || indexed
            || v.as_deref()
                .is_some_and(|v| v.starts_with('(') && v.ends_with(')'))
            || (!hid && v.is_none() && sh.arrays.contains_key(&k))
        {
            let mut array = if assoc {
                crate::shell::Array::Assoc(Default::default())
            } else {
                crate::shell::Array::Indexed(Default::default())
            };
            if let Some(list) = v
                .as_deref()
                .and_then(|v| v.strip_prefix('('))
                .and_then(|v| v.strip_suffix(')'))
            {
                if append
                    && !hid
                    && let Some(existing) = sh.arrays.get(&k)
                {
                    array = existing.clone();
                }
                let mut next = array.next_index();
                for item in list.split_whitespace() {
                    let (key, val) = match item.strip_prefix('[').and_then(|i| i.split_once("]=")) {
                        Some((key, val)) => (Some(key.to_string()), val.to_string()),
                        None => (None, item.to_string()),
                    };
                    let val = sh.attr_value(&k, val, None);
                    match &mut array {
                        crate::shell::Array::Indexed(m) => {
                            let i = key.and_then(|k| k.parse().ok()).unwrap_or(next);
                            m.insert(i, val);
                            next = i + 1;
                        }
                        crate::shell::Array::Assoc(m) => {
                            m.insert(key.unwrap_or_default(), val);
                        }
                    }
                }
            } else if !hid && let Some(existing) = sh.arrays.get(&k) {
                if assoc != matches!(existing, crate::shell::Array::Assoc(_)) && (assoc || indexed)
                {
                    let kind = if assoc { "associative" } else { "indexed" };
                    let other = if assoc { "indexed" } else { "associative" };
                    io.eprint(&format!(
                        "bash: {name}: {k}: cannot convert {other} to {kind} array\n"
                    ));
                    status = 1;
                    continue;
                }
                array = existing.clone();
            } else if let Some(v) = v.clone().or_else(|| {
                (!hid)
                    .then(|| sh.vars.get(&k).map(|x| x.value.clone()))
                    .flatten()
            }) {
                // `declare -a x=v` and `declare -a x` of a scalar: the value as element 0.
                let v = sh.attr_value(&k, v, None);
                if let crate::shell::Array::Indexed(m) = &mut array {
                    m.insert(0, v);
                }
            }
            sh.vars.remove(&k);
            sh.arrays.insert(k.clone(), array);
        } else {
            if hid {
                sh.arrays.remove(&k);
                if v.is_none() {
                    sh.vars.remove(&k);
                }
            }
            match v {
                Some(v) => {
                    let old = append.then(|| sh.get(&k).unwrap_or("").to_string());
                    let value = sh.shaped(&k, v, old.as_deref(), &format!("{name}: "), io)?;
                    sh.set_shaped(&k, value);
                }
                None => {
                    if !sh.vars.contains_key(&k) {
                        sh.set(&k, "");
                    } else if on.chars().any(|c| matches!(c, 'i' | 'l' | 'u')) {
                        // `declare -u x` of a set x shapes the value it has.
                        let old = sh.get(&k).unwrap_or("").to_string();
                        let value = sh.shaped(&k, old, None, &format!("{name}: "), io)?;
                        sh.set_shaped(&k, value);
                    }
                }
            }
        }
        if let Some(var) = sh.vars.get_mut(&k) {
            if flag('x') {
                var.exported = true;
            } else if off.contains('x') {
                var.exported = false;
            }
        }
        if flag('r') {
            sh.set_attr(&k, 'r', true);
        }
    }
    Ok(status)
}

/// A value as `declare -p` shows it: in double quotes, with `"`, `\\`, `$` and backquotes
/// escaped.
pub fn dq(v: &str) -> String {
    // A control character: `$'...'`, as bash shows it.
    if v.chars().any(char::is_control) {
        return sh_utility::format::ansi_c_quote(v);
    }
    let mut out = String::from("\"");
    for c in v.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `declare -p [NAME...]`: each variable as the `declare` command that recreates it.
/// `declare -p [NAME...]`: each variable as a `declare` command that makes it again, with
/// its attributes. With no names, every variable that has all attributes in `filter`.
pub(super) fn declare_print(sh: &Shell, names: &[&String], filter: &str, io: &Io) -> i32 {
    let all: Vec<String>;
    let names: Vec<&str> = if names.is_empty() {
        let mut v: Vec<String> = sh
            .vars
            .keys()
            .chain(sh.arrays.keys())
            .filter(|n| {
                let f = sh.attr_flags(n);
                filter.chars().all(|c| f.contains(c))
            })
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        all = v;
        all.iter().map(String::as_str).collect()
    } else {
        names.iter().map(|s| s.as_str()).collect()
    };
    let mut status = 0;
    let mut out = String::new();
    for n in names {
        match declaration(sh, n) {
            Some(d) => {
                out.push_str(&d);
                out.push('\n');
            }
            None => {
                io.eprint(&format!("bash: declare: {n}: not found\n"));
                status = 1;
            }
        }
    }
    io.print(&out);
    status
}

/// The `declare` command that makes variable `n` again (`declare -p`, `${a[@]@A}`).
pub fn declaration(sh: &Shell, n: &str) -> Option<String> {
    let flags = sh.attr_flags(n);
    let flags = if flags.is_empty() {
        "-".to_string()
    } else {
        flags
    };
    if let Some(a) = sh.arrays.get(n) {
        Some(match a {
            crate::shell::Array::Indexed(m) => {
                let items: Vec<String> =
                    m.iter().map(|(k, v)| format!("[{k}]={}", dq(v))).collect();
                format!("declare -{flags} {n}=({})", items.join(" "))
            }
            crate::shell::Array::Assoc(m) => {
                let items: String = m.iter().map(|(k, v)| format!("[{k}]={} ", dq(v))).collect();
                format!("declare -{flags} {n}=({items})")
            }
        })
    } else {
        sh.vars
            .get(n)
            .map(|v| format!("declare -{flags} {n}={}", dq(&v.value)))
    }
}

/// `declare -f [NAME...]` (definitions) and `declare -F [NAME...]` (names).
pub(super) fn declare_functions(sh: &Shell, names: &[&String], only_names: bool, io: &Io) -> i32 {
    let mut status = 0;
    let wanted: Vec<String> = if names.is_empty() {
        sh.functions.keys().cloned().collect()
    } else {
        names.iter().map(|s| s.to_string()).collect()
    };
    for n in wanted {
        match sh.functions.get(&n) {
            Some((src, _)) => {
                if only_names {
                    io.print(&format!("declare -f {n}\n"));
                } else {
                    io.print(&format!("{src}\n"));
                }
            }
            None => status = 1,
        }
    }
    status
}
