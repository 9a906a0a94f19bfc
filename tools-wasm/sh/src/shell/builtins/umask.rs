//! `umask [-p] [-S] [MODE]`: the file creation mask, shown and set as bash does (octal or
//! symbolic `u=rwx,g-w,...`). The mask is the shell's (kept with its options and inherited
//! by what it runs); like `chmod`, it changes no file's mode in the sandbox, whose files
//! carry no permission bits.

use super::*;

/// The mask when none was set: bash's usual 022.
pub const DEFAULT_UMASK: u32 = 0o022;

pub(super) fn umask(sh: &mut Shell, args: &[String], io: &Io) -> i32 {
    let (mut symbolic, mut reusable) = (false, false);
    let flag = |c| {
        match c {
            'S' => symbolic = true,
            'p' => reusable = true,
            _ => return false,
        }
        true
    };
    let i = match super::flag_words("umask", "[-p] [-S] [mode]", args, io, flag) {
        Ok(i) => i,
        Err(status) => return status,
    };
    let current = sh.options.umask.unwrap_or(DEFAULT_UMASK);
    // Only the first operand counts, as in bash.
    let Some(mode) = args.get(i) else {
        print(current, symbolic, reusable, io);
        return 0;
    };
    let new = if mode.starts_with(|c: char| c.is_ascii_digit()) {
        match read_octal(mode) {
            Some(v) => v & 0o777,
            None => {
                io.eprint(&format!("bash: umask: {mode}: octal number out of range\n"));
                return 1;
            }
        }
    } else {
        // Symbolic modes work on the permitted bits, the mask's complement.
        match parse_symbolic(mode, !current & 0o777) {
            Ok(bits) => !bits & 0o777,
            Err(e) => {
                io.eprint(&format!("bash: umask: {e}\n"));
                return 1;
            }
        }
    };
    sh.options.umask = Some(new);
    if symbolic {
        print(new, true, reusable, io);
    }
    0
}

fn print(mask: u32, symbolic: bool, reusable: bool, io: &Io) {
    let prefix = match (reusable, symbolic) {
        (true, true) => "umask -S ",
        (true, false) => "umask ",
        _ => "",
    };
    if symbolic {
        let allowed = !mask & 0o777;
        let part = |shift: u32| {
            let b = (allowed >> shift) & 7;
            let mut s = String::new();
            for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
                if b & bit != 0 {
                    s.push(c);
                }
            }
            s
        };
        io.print(&format!(
            "{prefix}u={},g={},o={}\n",
            part(6),
            part(3),
            part(0)
        ));
    } else {
        io.print(&format!("{prefix}{mask:04o}\n"));
    }
}

/// An octal number up to 07777, all of the word.
fn read_octal(s: &str) -> Option<u32> {
    let mut v: u32 = 0;
    for c in s.chars() {
        let d = c.to_digit(8)?;
        v = v * 8 + d;
        if v > 0o7777 {
            return None;
        }
    }
    (!s.is_empty()).then_some(v)
}

/// Applies `who op perm[,...]` clauses to the permitted bits `bits`, as bash reads them;
/// the error in bash's words.
fn parse_symbolic(mode: &str, mut bits: u32) -> Result<u32, String> {
    let mut s = mode.chars().peekable();
    loop {
        let mut who = 0;
        while let Some(&c) = s.peek() {
            who |= match c {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => break,
            };
            s.next();
        }
        let op = s.next();
        if !matches!(op, Some('+' | '-' | '=')) {
            let shown = op.map(String::from).unwrap_or_default();
            return Err(format!("`{shown}': invalid symbolic mode operator"));
        }
        let mut perm = 0;
        while let Some(&c) = s.peek() {
            perm |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                _ => break,
            };
            s.next();
        }
        let end = s.next();
        if let Some(c) = end.filter(|c| *c != ',') {
            return Err(format!("`{c}': invalid symbolic mode character"));
        }
        if who != 0 {
            perm &= who;
        }
        match op {
            Some('+') => bits |= perm,
            Some('-') => bits &= !perm,
            _ => {
                let who = if who == 0 { 0o777 } else { who };
                bits = (bits & !who) | perm;
            }
        }
        if end.is_none() {
            return Ok(bits);
        }
    }
}
