//! Shell patterns (`*`, `?`, `[...]`) as anchored regexes, compiled once and remembered
//! (find -name, case, grep --exclude test one pattern against many names), and POSIX basic
//! regular expressions as extended ones.

/// A shell pattern as an anchored regex.
pub fn pattern_regex(pat: &str) -> Option<regex::Regex> {
    pattern_regex_case(pat, false)
}

/// [`pattern_regex`], ignoring case when `nocase`.
fn pattern_regex_case(pat: &str, nocase: bool) -> Option<regex::Regex> {
    with_compiled(pat, nocase, |r| r.cloned())
}

/// Runs `f` with `pat` compiled (None when it cannot be). Compiled patterns are remembered:
/// a `case` in a loop, `find -name`, pathname expansion and grep's `--exclude` test one
/// pattern against many names, and compiling it is far dearer than matching. Matching runs
/// on the remembered regex itself, whose match caches stay warm (a clone would start cold).
pub fn with_compiled<T>(pat: &str, nocase: bool, f: impl FnOnce(Option<&regex::Regex>) -> T) -> T {
    /// Patterns kept before the memory is cleared (a script may make patterns without end).
    const KEPT: usize = 256;
    type Compiled = foldhash::HashMap<String, Option<regex::Regex>>;
    thread_local! {
        /// Case-sensitive patterns, then case-folding ones.
        static COMPILED: std::cell::RefCell<[Compiled; 2]> = Default::default();
    }
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        let map = &mut c[usize::from(nocase)];
        if !map.contains_key(pat) {
            if map.len() >= KEPT {
                map.clear();
            }
            let flags = if nocase { "si" } else { "s" };
            let r = regex::Regex::new(&format!("^(?{flags}:{})$", pattern_body(pat))).ok();
            map.insert(pat.to_string(), r);
        }
        f(map.get(pat).and_then(Option::as_ref))
    })
}

pub fn pattern_body(pat: &str) -> String {
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
    with_compiled(pat, false, |r| r.is_some_and(|r| r.is_match(s)))
}

/// Translates a POSIX basic regular expression into the `regex` crate's syntax.
pub fn bre_to_ere(p: &str) -> String {
    let mut out = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(x @ ('(' | ')' | '|' | '{' | '}' | '+' | '?')) => out.push(x),
                Some('<') | Some('>') => out.push_str("\\b"),
                Some(x) => {
                    out.push('\\');
                    out.push(x);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '|' | '{' | '}' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            '[' => {
                // Copy a bracket expression verbatim.
                out.push('[');
                let mut first = true;
                while let Some(x) = chars.next() {
                    if x == ']' && !first {
                        out.push(']');
                        break;
                    }
                    if x == '[' && chars.peek() == Some(&':') {
                        out.push('[');
                        for y in chars.by_ref() {
                            out.push(y);
                            if y == ']' {
                                break;
                            }
                        }
                        first = false;
                        continue;
                    }
                    if x == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(x);
                    }
                    first = x == '^' && first;
                }
            }
            _ => out.push(c),
        }
    }
    out
}
