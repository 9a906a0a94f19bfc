//! `kill`: `-l`/`-L` lists signals and translates numbers and names as bash does. A
//! sandboxed call starts no background processes and has no jobs, so a process or job
//! named is answered as bash answers one that does not exist; the shell itself (`$$`) can
//! be asked whether it exists (`kill -0 $$`) but not sent a signal.

use super::*;
use sh_utility::format::SIGNALS;

const USAGE: &str = "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n";

/// The name of signal `n` without `SIG` (`EXIT` for 0, the real-time ones as bash names
/// them).
fn signal_name(n: usize) -> Option<String> {
    match n {
        0 => Some("EXIT".into()),
        1..=31 => SIGNALS.get(n - 1).map(|s| s.to_string()),
        34 => Some("RTMIN".into()),
        35..=49 => Some(format!("RTMIN+{}", n - 34)),
        50..=63 => Some(format!("RTMAX-{}", 64 - n)),
        64 => Some("RTMAX".into()),
        _ => None,
    }
}

/// The number of a signal named with or without `SIG`, in any case, or given as a number.
fn signal_number(spec: &str) -> Option<usize> {
    if !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_digit()) {
        let n: usize = spec.parse().ok()?;
        return signal_name(n).map(|_| n);
    }
    let up = spec.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    (0..=64).find(|n| signal_name(*n).as_deref() == Some(name))
}

fn list(args: &[String], io: &Io) -> i32 {
    if args.is_empty() {
        let mut out = String::new();
        let mut column = 0;
        for n in 1..=64 {
            let Some(name) = signal_name(n) else {
                continue;
            };
            out.push_str(&format!("{n:2}) SIG{name}"));
            column += 1;
            if column < 5 {
                out.push('\t');
            } else {
                out.push('\n');
                column = 0;
            }
        }
        if column != 0 {
            out.push('\n');
        }
        io.print(&out);
        return 0;
    }
    let mut status = 0;
    for a in args {
        if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) {
            // An exit status of a signalled command (128 + N) names N.
            let n = a
                .parse::<usize>()
                .ok()
                .map(|n| if n > 128 { n - 128 } else { n });
            match n.and_then(signal_name) {
                Some(name) => io.print(&format!("{name}\n")),
                None => {
                    io.eprint(&format!("bash: kill: {a}: invalid signal specification\n"));
                    status = 1;
                }
            }
        } else {
            match signal_number(a) {
                Some(n) => io.print(&format!("{n}\n")),
                None => {
                    io.eprint(&format!("bash: kill: {a}: invalid signal specification\n"));
                    status = 1;
                }
            }
        }
    }
    status
}

/// `kill [-s SIG | -n NUM | -SIG] PID|JOBSPEC...` and `kill -l|-L [SIG...]`.
pub(super) fn kill(args: &[String], io: &Io) -> i32 {
    let mut signal = 15;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-l" | "-L" => return list(&args[i + 1..], io),
            "--" => {
                i += 1;
                break;
            }
            "-s" | "-n" => {
                let Some(spec) = args.get(i + 1) else {
                    io.eprint(&format!(
                        "bash: kill: {a}: option requires an argument\n{USAGE}"
                    ));
                    return 2;
                };
                match signal_number(spec) {
                    Some(n) => signal = n,
                    None => {
                        io.eprint(&format!(
                            "bash: kill: {spec}: invalid signal specification\n"
                        ));
                        return 1;
                    }
                }
                i += 2;
            }
            s if s.len() > 1 && s.starts_with('-') => {
                match signal_number(&s[1..]) {
                    Some(n) => signal = n,
                    None => {
                        io.eprint(&format!(
                            "bash: kill: {}: invalid signal specification\n",
                            &s[1..]
                        ));
                        return 1;
                    }
                }
                i += 1;
            }
            _ => break,
        }
    }
    let targets = &args[i..];
    if targets.is_empty() {
        io.eprint(USAGE);
        return 2;
    }
    // `$$`.
    let me = "1";
    let mut status = 0;
    for t in targets {
        if t.starts_with('%') {
            io.eprint(&format!("bash: kill: {t}: no such job\n"));
            status = 1;
            continue;
        }
        let pid = t.strip_prefix('-').unwrap_or(t);
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            io.eprint(&format!(
                "bash: kill: {t}: arguments must be process or job IDs\n"
            ));
            status = 1;
            continue;
        }
        if t.as_str() == me {
            if signal != 0 {
                io.eprint(&format!(
                    "bash: kill: ({t}) - a signal to the shell itself is not supported in burrow\n"
                ));
                status = 1;
            }
            continue;
        }
        io.eprint(&format!("bash: kill: ({t}) - No such process\n"));
        status = 1;
    }
    status
}
