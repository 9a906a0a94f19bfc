//! Test guest: an ordinary command-line program, run by burrow's shell from PATH through
//! `burrow:sandbox/process`. `probe-cmd [MODE ARGS...]`:
//! - (no mode) copy stdin to stdout upper-cased, and a count to stderr;
//! - `stream`: the same a piece at a time, holding one piece (a filter of unbounded input);
//! - `args`: print argv, $PWD, the working directory and $GREETING;
//! - `write FILE TEXT`: write TEXT to FILE (relative to $PWD), then print `wrote FILE`;
//! - `exit N`: exit with code N;
//! - `trap FILE`: write FILE, then trap (abort);
//! - `spin`: loop forever;
//! - `interleave`: `out1` to stdout, `err1` to stderr, `out2` to stdout.

use std::io::{Read, Write};

fn main() {
    if let Ok(pwd) = std::env::var("PWD") {
        let _ = std::env::set_current_dir(pwd);
    }
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        None => {
            let mut input = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut input);
            let _ = std::io::stdout().write_all(&input.to_ascii_uppercase());
            eprintln!("probe-cmd: {} bytes", input.len());
        }
        Some("stream") => {
            let (mut buf, mut total) = (vec![0u8; 64 << 10], 0usize);
            let (mut stdin, mut stdout) = (std::io::stdin(), std::io::stdout());
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        total += n;
                        if stdout.write_all(&buf[..n].to_ascii_uppercase()).is_err() {
                            break;
                        }
                    }
                }
            }
            eprintln!("probe-cmd: {total} bytes");
        }
        Some("args") => {
            for a in &args {
                println!("arg {a}");
            }
            println!("PWD {}", std::env::var("PWD").unwrap_or_default());
            let cwd = std::env::current_dir().unwrap_or_default();
            println!("cwd {}", cwd.display());
            println!(
                "GREETING {}",
                std::env::var("GREETING").unwrap_or_else(|_| "(unset)".into())
            );
        }
        Some("write") => {
            let (Some(file), Some(text)) = (args.get(2), args.get(3)) else {
                eprintln!("usage: probe-cmd write FILE TEXT");
                std::process::exit(2);
            };
            if let Err(e) = std::fs::write(file, text) {
                eprintln!("probe-cmd: {file}: {e}");
                std::process::exit(1);
            }
            println!("wrote {file}");
        }
        Some("exit") => {
            let code: u8 = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(1);
            // std's exit reports every failure as 1 on wasip2; WASI's own call keeps the code.
            #[cfg(target_os = "wasi")]
            wasip2::cli::exit::exit_with_code(code);
            #[cfg(not(target_os = "wasi"))]
            std::process::exit(code.into());
        }
        Some("trap") => {
            if let Some(file) = args.get(2) {
                let _ = std::fs::write(file, "half-done");
            }
            std::process::abort();
        }
        Some("interleave") => {
            println!("out1");
            eprintln!("err1");
            println!("out2");
        }
        Some("spin") => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Some(other) => {
            eprintln!("probe-cmd: unknown mode {other}");
            std::process::exit(2);
        }
    }
}
