//! bash's extended patterns (`shopt -s extglob`): `?(a|b)`, `*(a|b)`, `+(a|b)`, `@(a|b)` and
//! `!(a|b)`, nested and mixed with `*`, `?` and `[...]`. Matched by backtracking over the
//! characters, since the negation `!(...)` has no regular-expression form in the regex
//! crate. Used for pathname expansion, `case` and `[[ == ]]` when the option is on.

/// One piece of a pattern.
#[derive(Debug, Clone)]
enum Tok {
    Lit(char),
    /// `?`
    One,
    /// `*`
    Star,
    /// `[...]`: negated, and the members as (from, to) ranges or named classes.
    Class(bool, Vec<Member>),
    /// `K(alt|alt...)`.
    Ext(char, Vec<Vec<Tok>>),
}

#[derive(Debug, Clone)]
enum Member {
    Range(char, char),
    Named(String),
}

/// Whether `pat` holds an extended pattern (an unescaped `?(`, `*(`, `+(`, `@(` or `!(`).
pub fn has_ext(pat: &str) -> bool {
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '?' | '*' | '+' | '@' | '!' if chars.get(i + 1) == Some(&'(') => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether the whole of `s` matches `pat`.
pub fn matches(pat: &str, s: &str, nocase: bool) -> bool {
    let chars: Vec<char> = pat.chars().collect();
    let mut at = 0;
    let toks = parse(&chars, &mut at, false);
    let s: Vec<char> = s.chars().collect();
    Matcher { nocase }.all(&toks, &s)
}

/// Tokens up to the end, or (inside an extended pattern) up to its `|` or `)`.
fn parse(c: &[char], at: &mut usize, inner: bool) -> Vec<Tok> {
    let mut out = Vec::new();
    while *at < c.len() {
        let ch = c[*at];
        if inner && (ch == '|' || ch == ')') {
            break;
        }
        match ch {
            '\\' if *at + 1 < c.len() => {
                out.push(Tok::Lit(c[*at + 1]));
                *at += 2;
            }
            '?' | '*' | '+' | '@' | '!' if c.get(*at + 1) == Some(&'(') => {
                *at += 2;
                let mut alts = vec![parse(c, at, true)];
                while *at < c.len() && c[*at] == '|' {
                    *at += 1;
                    alts.push(parse(c, at, true));
                }
                // The closing `)` (an unclosed one ends the pattern).
                *at += 1;
                out.push(Tok::Ext(ch, alts));
            }
            '?' => {
                out.push(Tok::One);
                *at += 1;
            }
            '*' => {
                out.push(Tok::Star);
                *at += 1;
            }
            '[' => match class(c, *at) {
                Some((tok, next)) => {
                    out.push(tok);
                    *at = next;
                }
                None => {
                    out.push(Tok::Lit('['));
                    *at += 1;
                }
            },
            _ => {
                out.push(Tok::Lit(ch));
                *at += 1;
            }
        }
    }
    out
}

/// A bracket expression starting at `c[start] == '['`: the token and the index after `]`.
fn class(c: &[char], start: usize) -> Option<(Tok, usize)> {
    let mut i = start + 1;
    let negated = matches!(c.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut members = Vec::new();
    let mut first = true;
    while i < c.len() {
        if c[i] == ']' && !first {
            return Some((Tok::Class(negated, members), i + 1));
        }
        first = false;
        if c[i] == '['
            && c.get(i + 1) == Some(&':')
            && let Some(end) = (i + 2..c.len()).find(|&k| c[k] == ':' && c.get(k + 1) == Some(&']'))
        {
            members.push(Member::Named(c[i + 2..end].iter().collect()));
            i = end + 2;
            continue;
        }
        let mut lo = c[i];
        if lo == '\\' && i + 1 < c.len() {
            i += 1;
            lo = c[i];
        }
        if c.get(i + 1) == Some(&'-') && c.get(i + 2).is_some_and(|&h| h != ']') {
            members.push(Member::Range(lo, c[i + 2]));
            i += 3;
        } else {
            members.push(Member::Range(lo, lo));
            i += 1;
        }
    }
    None
}

struct Matcher {
    nocase: bool,
}

impl Matcher {
    fn same(&self, a: char, b: char) -> bool {
        a == b || (self.nocase && a.to_lowercase().eq(b.to_lowercase()))
    }

    fn in_class(&self, negated: bool, members: &[Member], ch: char) -> bool {
        let hit = members.iter().any(|m| match m {
            Member::Range(lo, hi) => {
                (*lo..=*hi).contains(&ch)
                    || (self.nocase
                        && ch
                            .to_lowercase()
                            .chain(ch.to_uppercase())
                            .any(|c| (*lo..=*hi).contains(&c)))
            }
            Member::Named(name) => match name.as_str() {
                "alpha" => ch.is_alphabetic(),
                "digit" => ch.is_ascii_digit(),
                "alnum" => ch.is_alphanumeric(),
                "upper" => ch.is_uppercase(),
                "lower" => ch.is_lowercase(),
                "space" => ch.is_whitespace(),
                "blank" => ch == ' ' || ch == '\t',
                "punct" => ch.is_ascii_punctuation(),
                "xdigit" => ch.is_ascii_hexdigit(),
                "cntrl" => ch.is_control(),
                "print" => !ch.is_control(),
                "graph" => !ch.is_control() && ch != ' ',
                _ => false,
            },
        });
        hit != negated
    }

    /// Whether `toks` match all of `s`.
    fn all(&self, toks: &[Tok], s: &[char]) -> bool {
        let Some((first, rest)) = toks.split_first() else {
            return s.is_empty();
        };
        match first {
            Tok::Lit(c) => s.first().is_some_and(|&x| self.same(*c, x)) && self.all(rest, &s[1..]),
            Tok::One => !s.is_empty() && self.all(rest, &s[1..]),
            Tok::Star => (0..=s.len()).any(|i| self.all(rest, &s[i..])),
            Tok::Class(neg, members) => {
                s.first().is_some_and(|&x| self.in_class(*neg, members, x))
                    && self.all(rest, &s[1..])
            }
            Tok::Ext(kind, alts) => (0..=s.len()).any(|j| {
                let (head, tail) = s.split_at(j);
                let piece = match kind {
                    '@' => self.any(alts, head),
                    '?' => head.is_empty() || self.any(alts, head),
                    '*' => self.repeat(alts, head),
                    '+' => !head.is_empty() && self.repeat(alts, head),
                    _ => !self.any(alts, head),
                };
                piece && self.all(rest, tail)
            }),
        }
    }

    /// Whether one of the alternatives matches all of `s`.
    fn any(&self, alts: &[Vec<Tok>], s: &[char]) -> bool {
        alts.iter().any(|a| self.all(a, s))
    }

    /// Whether `s` is a run of zero or more pieces, each matching an alternative.
    fn repeat(&self, alts: &[Vec<Tok>], s: &[char]) -> bool {
        s.is_empty() || (1..=s.len()).any(|k| self.any(alts, &s[..k]) && self.repeat(alts, &s[k..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_patterns_match_as_in_bash() {
        assert!(has_ext("!(a).txt") && has_ext("x@(a|b)") && !has_ext("\\!(a)") && !has_ext("a*"));
        assert!(matches("!(f).txt", "g.txt", false));
        assert!(!matches("!(f).txt", "f.txt", false));
        assert!(matches("!(*.md)", "a.rs", false) && !matches("!(*.md)", "a.md", false));
        assert!(matches("@(a|b)c", "bc", false) && !matches("@(a|b)c", "abc", false));
        assert!(matches("*(ab)", "", false) && matches("*(ab)", "abab", false));
        assert!(matches("+(ab|c)x", "abcabx", false) && !matches("+(ab)x", "x", false));
        assert!(matches("?(v)1.[0-9]", "v1.2", false) && matches("?(v)1.[0-9]", "1.2", false));
        assert!(matches("*.@(JPG|png)", "a.jpg", true));
        assert!(matches("file-+([0-9]).log", "file-12.log", false));
        assert!(!matches("file-+([0-9]).log", "file-.log", false));
    }
}
