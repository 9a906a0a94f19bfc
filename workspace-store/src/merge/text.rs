//! Three-way merge of one text file, as `git merge-file --diff3` does it: the two sides'
//! line diffs against the base (git's Myers with its slider rules, `gix-imara-diff`) are
//! walked together in base order; a change only one side made is taken, identical changes
//! on both sides are taken once, and overlapping or touching changes become a conflict
//! written with diff3-style markers (ours, base, theirs). Line ends are kept byte for byte;
//! markers end in CRLF when the surrounding lines do, as git's do.

use gix_imara_diff::{Algorithm, Diff, InternedInput};

/// Marker length (`<<<<<<<`), git's default.
const MARKER: usize = 7;

/// Bytes git looks at to decide a file is binary (`buffer_is_binary`).
const BINARY_PROBE: usize = 8000;

/// Whether git would treat `data` as binary (a NUL byte among its first 8000 bytes).
pub fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(BINARY_PROBE)].contains(&0)
}

/// The result of merging one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextMerge {
    /// The merged bytes, conflicts written with markers.
    pub bytes: Vec<u8>,
    /// Conflicted regions (0: a clean merge).
    pub conflicts: usize,
}

/// Labels written after the markers: `<<<<<<< ours`, `||||||| base`, `>>>>>>> theirs`.
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    pub ours: &'a str,
    pub base: &'a str,
    pub theirs: &'a str,
}

/// The lines of `data`, each with its line end (the last one may have none).
fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// One side's change to the base: base lines `b0..b0+bn` became side lines `s0..s0+sn`.
#[derive(Clone, Copy)]
struct Edit {
    b0: usize,
    bn: usize,
    s0: usize,
    sn: usize,
}

fn edits(base: &[u8], side: &[u8]) -> Vec<Edit> {
    let input = InternedInput::new(base, side);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_no_heuristic(&input);
    diff.hunks()
        .map(|h| Edit {
            b0: h.before.start as usize,
            bn: h.before.len(),
            s0: h.after.start as usize,
            sn: h.after.len(),
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Take {
    Conflict,
    Ours,
    Theirs,
}

/// A region of the result: base lines `i0..+n0`, ours `i1..+n1`, theirs `i2..+n2`. Signed,
/// as git's are: a conflict widened backwards past an earlier region can start before 0
/// until it is folded into that region.
struct Region {
    take: Take,
    i0: isize,
    n0: isize,
    i1: isize,
    n1: isize,
    i2: isize,
    n2: isize,
}

/// Appends a region, folding it into the previous one when they touch on either side (a
/// region folded into one of another kind becomes a conflict).
fn push(out: &mut Vec<Region>, r: Region) {
    if let Some(m) = out.last_mut()
        && (r.i1 <= m.i1 + m.n1 || r.i2 <= m.i2 + m.n2)
    {
        if r.take != m.take {
            m.take = Take::Conflict;
        }
        m.n0 = r.i0 + r.n0 - m.i0;
        m.n1 = r.i1 + r.n1 - m.i1;
        m.n2 = r.i2 + r.n2 - m.i2;
        return;
    }
    out.push(r);
}

/// Merges `ours` and `theirs`, both changed from `base`.
pub fn merge(base: &[u8], ours: &[u8], theirs: &[u8], labels: Labels<'_>) -> TextMerge {
    let e1 = edits(base, ours);
    let e2 = edits(base, theirs);
    if e1.is_empty() {
        return TextMerge {
            bytes: theirs.to_vec(),
            conflicts: 0,
        };
    }
    if e2.is_empty() {
        return TextMerge {
            bytes: ours.to_vec(),
            conflicts: 0,
        };
    }
    let (lb, l1, l2) = (lines(base), lines(ours), lines(theirs));
    let regions = regions(&e1, &e2, &l1, &l2, lb.len());
    render(&regions, &lb, &l1, &l2, labels)
}

/// Walks both sides' edits in base order (git's `xdl_do_merge` at its "eager" level: the
/// most diff3 output allows).
fn regions(e1: &[Edit], e2: &[Edit], l1: &[&[u8]], l2: &[&[u8]], nbase: usize) -> Vec<Region> {
    let mut out = Vec::new();
    let (mut a, mut b) = (0, 0);
    let s = |v: usize| v as isize;
    while a < e1.len() && b < e2.len() {
        let (x, y) = (e1[a], e2[b]);
        if x.b0 + x.bn < y.b0 {
            // Only ours changed this stretch; theirs' lines line up with the base's.
            push(
                &mut out,
                Region {
                    take: Take::Ours,
                    i0: s(x.b0),
                    n0: s(x.bn),
                    i1: s(x.s0),
                    n1: s(x.sn),
                    i2: s(y.s0) - s(y.b0) + s(x.b0),
                    n2: s(x.bn),
                },
            );
            a += 1;
            continue;
        }
        if y.b0 + y.bn < x.b0 {
            push(
                &mut out,
                Region {
                    take: Take::Theirs,
                    i0: s(y.b0),
                    n0: s(y.bn),
                    i1: s(x.s0) - s(x.b0) + s(y.b0),
                    n1: s(y.bn),
                    i2: s(y.s0),
                    n2: s(y.sn),
                },
            );
            b += 1;
            continue;
        }
        let identical = x.b0 == y.b0
            && x.bn == y.bn
            && x.sn == y.sn
            && l1[x.s0..x.s0 + x.sn] == l2[y.s0..y.s0 + y.sn];
        if !identical {
            // Overlapping (or touching) changes: one conflict spanning both, each side's
            // region widened by the base lines the other side's change covers.
            let (mut i0, mut i1, mut i2) = (s(x.b0), s(x.s0), s(y.s0));
            let off = s(x.b0) - s(y.b0);
            if off > 0 {
                i0 -= off;
                i1 -= off;
            } else {
                i2 += off;
            }
            let mut n0 = s(x.b0 + x.bn) - i0;
            let mut n1 = s(x.s0 + x.sn) - i1;
            let mut n2 = s(y.s0 + y.sn) - i2;
            let ffo = off + s(x.bn) - s(y.bn);
            if ffo < 0 {
                n0 -= ffo;
                n1 -= ffo;
            } else {
                n2 += ffo;
            }
            push(
                &mut out,
                Region {
                    take: Take::Conflict,
                    i0,
                    n0,
                    i1,
                    n1,
                    i2,
                    n2,
                },
            );
        }
        let end1 = x.b0 + x.bn;
        let end2 = y.b0 + y.bn;
        if end1 >= end2 {
            b += 1;
        }
        if end2 >= end1 {
            a += 1;
        }
    }
    let (n1, n2, nb) = (s(l1.len()), s(l2.len()), s(nbase));
    for x in &e1[a..] {
        push(
            &mut out,
            Region {
                take: Take::Ours,
                i0: s(x.b0),
                n0: s(x.bn),
                i1: s(x.s0),
                n1: s(x.sn),
                i2: s(x.b0) + n2 - nb,
                n2: s(x.bn),
            },
        );
    }
    for y in &e2[b..] {
        push(
            &mut out,
            Region {
                take: Take::Theirs,
                i0: s(y.b0),
                n0: s(y.bn),
                i1: s(y.b0) + n1 - nb,
                n1: s(y.bn),
                i2: s(y.s0),
                n2: s(y.sn),
            },
        );
    }
    out
}

/// Whether line `i` of `lines` ends in CRLF: `Some(bool)`, or `None` when it cannot tell (an
/// empty file, or a last line without an end and nothing before it).
fn crlf_at(lines: &[&[u8]], i: usize) -> Option<bool> {
    let crlf = |l: &[u8]| l.len() > 1 && l[l.len() - 2] == b'\r';
    if lines.is_empty() {
        return None;
    }
    if i + 1 < lines.len() {
        return Some(crlf(lines[i]));
    }
    let last = lines[i];
    if last.last() == Some(&b'\n') {
        return Some(crlf(last));
    }
    if i == 0 {
        return None;
    }
    Some(crlf(lines[i - 1]))
}

/// Whether a conflict's markers end in CRLF: the lines before it on both sides do, and so
/// does the base's first line (git's `is_cr_needed`).
fn needs_cr(lb: &[&[u8]], l1: &[&[u8]], l2: &[&[u8]], r: &Region) -> bool {
    let before = |i: isize| (i - 1).max(0) as usize;
    let mut cr = crlf_at(l1, before(r.i1));
    if cr != Some(false) {
        cr = crlf_at(l2, before(r.i2));
    }
    if cr != Some(false) {
        cr = crlf_at(lb, 0);
    }
    cr.unwrap_or(false)
}

/// Copies `count` lines from `from` (clamped to the file), with a line end added after the
/// last one when `add_nl` says so and it has none.
fn copy(out: &mut Vec<u8>, lines: &[&[u8]], from: isize, count: isize, add_nl: Option<bool>) {
    let len = lines.len() as isize;
    let to = (from + count).clamp(0, len) as usize;
    let from = from.clamp(0, to as isize) as usize;
    for l in &lines[from..to] {
        out.extend_from_slice(l);
    }
    if let Some(cr) = add_nl
        && to > from
        && lines[to - 1].last() != Some(&b'\n')
    {
        out.extend_from_slice(if cr { b"\r\n" } else { b"\n" });
    }
}

fn marker(out: &mut Vec<u8>, c: u8, label: &str, cr: bool) {
    out.extend(std::iter::repeat_n(c, MARKER));
    if !label.is_empty() {
        out.push(b' ');
        out.extend_from_slice(label.as_bytes());
    }
    out.extend_from_slice(if cr { b"\r\n" } else { b"\n" });
}

fn render(
    regions: &[Region],
    lb: &[&[u8]],
    l1: &[&[u8]],
    l2: &[&[u8]],
    labels: Labels<'_>,
) -> TextMerge {
    let mut out = Vec::new();
    let mut conflicts = 0;
    let mut i: isize = 0;
    for r in regions {
        match r.take {
            Take::Conflict => {
                conflicts += 1;
                let cr = needs_cr(lb, l1, l2, r);
                copy(&mut out, l1, i, r.i1 - i, None);
                marker(&mut out, b'<', labels.ours, cr);
                copy(&mut out, l1, r.i1, r.n1, Some(cr));
                marker(&mut out, b'|', labels.base, cr);
                copy(&mut out, lb, r.i0, r.n0, Some(cr));
                marker(&mut out, b'=', "", cr);
                copy(&mut out, l2, r.i2, r.n2, Some(cr));
                marker(&mut out, b'>', labels.theirs, cr);
            }
            Take::Ours => copy(&mut out, l1, i, r.i1 + r.n1 - i, None),
            Take::Theirs => copy(&mut out, l2, r.i2 - r.i1 + i, r.i1 + r.n2 - i, None),
        }
        i = r.i1 + r.n1;
    }
    copy(&mut out, l1, i, l1.len() as isize - i, None);
    TextMerge {
        bytes: out,
        conflicts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Labels<'static> = Labels {
        ours: "ours",
        base: "base",
        theirs: "theirs",
    };

    fn m(b: &str, o: &str, t: &str) -> (String, usize) {
        let r = merge(b.as_bytes(), o.as_bytes(), t.as_bytes(), L);
        (String::from_utf8(r.bytes).unwrap(), r.conflicts)
    }

    #[test]
    fn separate_changes_merge_cleanly() {
        let base = "a\nb\nc\nd\ne\n";
        assert_eq!(
            m(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n"),
            ("A\nb\nc\nd\nE\n".into(), 0)
        );
    }

    #[test]
    fn identical_changes_are_taken_once() {
        assert_eq!(m("a\nb\n", "a\nX\n", "a\nX\n"), ("a\nX\n".into(), 0));
    }

    #[test]
    fn overlapping_changes_conflict_in_diff3_style() {
        let (out, n) = m("a\nb\nc\n", "a\nB1\nc\n", "a\nB2\nc\n");
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "a\n<<<<<<< ours\nB1\n||||||| base\nb\n=======\nB2\n>>>>>>> theirs\nc\n"
        );
    }

    #[test]
    fn missing_final_newline_inside_a_conflict_is_added() {
        let (out, n) = m("a\n", "b", "c");
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "<<<<<<< ours\nb\n||||||| base\na\n=======\nc\n>>>>>>> theirs\n"
        );
    }

    #[test]
    fn binary_is_a_nul_in_the_first_8000_bytes() {
        assert!(is_binary(b"a\0b"));
        let mut late = vec![b'a'; 8000];
        late.push(0);
        assert!(!is_binary(&late));
    }
}
