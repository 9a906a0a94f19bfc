//! fs-probe: a test guest for burrow's host. Each scenario (argv[1]) exercises filesystem
//! functions through std and prints one line per operation with its outcome, so runs against
//! burrow's filesystem and against a host directory can be compared line by line.
//! Built for wasm32-wasip2 by the host's tests; it also builds natively (unused there).

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};

/// Creates a symlink through `wasi:filesystem` directly (std's wasi symlink is unstable).
#[cfg(target_os = "wasi")]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (root, _) = dirs
        .first()
        .ok_or_else(|| std::io::Error::other("no preopen"))?;
    root.symlink_at(target, link).map_err(|e| {
        use wasip2::filesystem::types::ErrorCode as C;
        std::io::Error::from(match e {
            C::Exist => std::io::ErrorKind::AlreadyExists,
            C::NoEntry => std::io::ErrorKind::NotFound,
            C::NotPermitted | C::Access => std::io::ErrorKind::PermissionDenied,
            _ => std::io::ErrorKind::Other,
        })
    })
}

#[cfg(not(target_os = "wasi"))]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Exits with a full status code (`wasi:cli/exit.exit-with-code`; std's exit maps every
/// non-zero code to 1 on wasip2).
fn exit(code: i32) -> ! {
    #[cfg(target_os = "wasi")]
    wasip2::cli::exit::exit_with_code(code as u8);
    std::process::exit(code)
}

fn show<T: std::fmt::Debug>(op: &str, r: std::io::Result<T>) -> Option<T> {
    match r {
        Ok(v) => {
            println!("{op}: ok {v:?}");
            Some(v)
        }
        Err(e) => {
            println!("{op}: err {:?} {:?}", e.kind(), e.raw_os_error());
            None
        }
    }
}

fn unit(op: &str, r: std::io::Result<()>) {
    show(op, r);
}

fn listing(dir: &str) -> std::io::Result<Vec<String>> {
    let mut v: Vec<String> = fs::read_dir(dir)?
        .map(|e| {
            e.map(|e| {
                let t = e.file_type().map(|t| {
                    if t.is_dir() {
                        "d"
                    } else if t.is_symlink() {
                        "l"
                    } else {
                        "f"
                    }
                });
                format!("{}:{}", e.file_name().to_string_lossy(), t.unwrap_or("?"))
            })
        })
        .collect::<std::io::Result<_>>()?;
    v.sort();
    Ok(v)
}

fn files() {
    unit("write new", fs::write("a.txt", b"hello\nworld\n"));
    show("read", fs::read_to_string("a.txt"));
    show("read missing", fs::read("missing.txt"));
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open("a.txt")
        .expect("open append");
    unit("append", f.write_all(b"more\n"));
    drop(f);
    show("read after append", fs::read_to_string("a.txt"));
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("a.txt")
        .expect("open rw");
    show("seek", f.seek(SeekFrom::Start(6)));
    unit("overwrite", f.write_all(b"WORLD"));
    show("seek end", f.seek(SeekFrom::End(0)));
    unit("set_len shrink", f.set_len(5));
    unit("set_len grow", f.set_len(8));
    drop(f);
    show("read after set_len", fs::read("a.txt"));
    show(
        "create_new exists",
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open("a.txt")
            .map(|_| ()),
    );
    show(
        "create_new",
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open("b.txt")
            .map(|_| ()),
    );
    show(
        "truncate open",
        fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open("a.txt")
            .map(|_| ()),
    );
    show("len after truncate", fs::metadata("a.txt").map(|m| m.len()));
    // Sparse write past the end.
    let mut f = fs::File::create("sparse.bin").expect("create sparse");
    show("seek far", f.seek(SeekFrom::Start(100_000)));
    unit("write far", f.write_all(b"x"));
    drop(f);
    show("sparse len", fs::metadata("sparse.bin").map(|m| m.len()));
    let mut buf = Vec::new();
    show(
        "sparse read",
        fs::File::open("sparse.bin").and_then(|mut f| f.read_to_end(&mut buf)),
    );
    println!("sparse zeros: {}", buf[..100_000].iter().all(|&b| b == 0));
    // A large file crossing many pages.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    unit("write big", fs::write("big.bin", &big));
    show("read big equal", fs::read("big.bin").map(|b| b == big));
    show(
        "open dir as file for write",
        fs::OpenOptions::new().write(true).open(".").map(|_| ()),
    );
    show("read dir as file", fs::read("."));
}

fn dirs() {
    unit("mkdir", fs::create_dir("d"));
    unit("mkdir again", fs::create_dir("d"));
    unit("mkdir nested missing", fs::create_dir("x/y"));
    unit("mkdir_all", fs::create_dir_all("d/e/f"));
    unit("write in dir", fs::write("d/e/file", b"1"));
    unit("mkdir under file", fs::create_dir("d/e/file/g"));
    show("list d", listing("d"));
    show("list d/e", listing("d/e"));
    unit("rmdir non-empty", fs::remove_dir("d/e"));
    unit("rmdir file", fs::remove_dir("d/e/file"));
    unit("unlink dir", fs::remove_file("d/e/f"));
    unit("rmdir", fs::remove_dir("d/e/f"));
    unit("unlink", fs::remove_file("d/e/file"));
    unit("unlink missing", fs::remove_file("d/e/file"));
    show("list d/e empty", listing("d/e"));
    unit("remove_dir_all", fs::remove_dir_all("d"));
    show("exists d", fs::exists("d"));
    show("metadata dir", fs::metadata(".").map(|m| m.is_dir()));
    show("list root", listing("."));
}

fn renames() {
    unit("setup", fs::create_dir_all("r/s"));
    unit("setup file", fs::write("r/one", b"1"));
    unit("setup file2", fs::write("r/two", b"2"));
    let f = fs::File::open("r/one").expect("open one");
    unit("rename across dirs", fs::rename("r/one", "r/s/uno"));
    let mut s = String::new();
    show("read through old handle", (&f).read_to_string(&mut s));
    println!("old handle content: {s}");
    unit("rename replacing", fs::rename("r/two", "r/s/uno"));
    show("read replaced", fs::read_to_string("r/s/uno"));
    unit("rename missing", fs::rename("r/none", "r/x"));
    unit("rename dir into itself", fs::rename("r", "r/s/inner"));
    unit("rename file over dir", fs::rename("r/s/uno", "r/s"));
    unit("setup dir t", fs::create_dir("r/t"));
    unit("setup file in t", fs::write("r/t/k", b""));
    unit("rename dir over non-empty dir", fs::rename("r/s", "r/t"));
    unit("rename dir", fs::rename("r/s", "r/s2"));
    show("list r", listing("r"));
}

fn links() {
    unit("setup", fs::create_dir_all("l/sub"));
    unit("target", fs::write("l/sub/t.txt", b"target"));
    unit("symlink rel", symlink("sub/t.txt", "l/link"));
    show("read via link", fs::read_to_string("l/link"));
    show("readlink", fs::read_link("l/link"));
    show("readlink non-link", fs::read_link("l/sub/t.txt"));
    show(
        "symlink_metadata",
        fs::symlink_metadata("l/link").map(|m| m.file_type().is_symlink()),
    );
    show(
        "metadata follows",
        fs::metadata("l/link").map(|m| m.is_file()),
    );
    unit("dangling", symlink("nothing", "l/dangling"));
    show("read dangling", fs::read("l/dangling"));
    unit("loop a", symlink("loopb", "l/loopa"));
    unit("loop b", symlink("loopa", "l/loopb"));
    show("read loop", fs::read("l/loopa"));
    unit("symlink exists", symlink("x", "l/link"));
    unit("symlink up", symlink("../l/sub", "l/up"));
    show("list via up", listing("l/up"));
    unit("unlink link", fs::remove_file("l/link"));
    show("target remains", fs::read_to_string("l/sub/t.txt"));
    show("list l", listing("l"));
}

fn escapes() {
    show("read ..", fs::read("../etc/passwd").map(|_| ()));
    show("read abs host", fs::read("/etc/passwd").map(|_| ()));
    show("list /", listing("/"));
    show("list ..", listing(".."));
    show("create ..", fs::write("../escape.txt", b"x"));
    show("mkdir deep ..", fs::create_dir("a/../../x"));
    unit("symlink abs", symlink("/etc/passwd", "hostlink"));
    show("read via abs link", fs::read("hostlink").map(|_| ()));
    show("exists hostlink", fs::exists("hostlink"));
    show("proc", fs::read("/proc/self/environ").map(|_| ()));
}

fn times() {
    unit("write", fs::write("t.txt", b"t"));
    let f = fs::File::options().write(true).open("t.txt").expect("open");
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    unit("set_modified", f.set_modified(when));
    drop(f);
    show(
        "mtime",
        fs::metadata("t.txt").and_then(|m| m.modified()).map(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        }),
    );
    show("hard link", fs::hard_link("t.txt", "t2.txt"));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_default();
    if let Ok(pwd) = std::env::var("PWD") {
        let _ = std::env::set_current_dir(pwd);
    }
    match scenario.as_str() {
        "files" => files(),
        "dirs" => dirs(),
        "renames" => renames(),
        "links" => links(),
        "escapes" => escapes(),
        "times" => times(),
        "args" => {
            println!("args: {:?}", args.collect::<Vec<_>>());
            let mut env: Vec<_> = std::env::vars().collect();
            env.sort();
            println!("env: {env:?}");
            let mut input = String::new();
            let _ = std::io::stdin().read_to_string(&mut input);
            println!("stdin: {input:?}");
            eprintln!("to stderr");
        }
        "exit" => {
            let code: i32 = args.next().and_then(|c| c.parse().ok()).unwrap_or(3);
            fs::write("before-exit.txt", b"written").ok();
            exit(code);
        }
        "write-then-trap" => {
            fs::write("partial.txt", b"should not survive").ok();
            panic!("deliberate trap");
        }
        "spin" => {
            fs::write("spin.txt", b"should not survive").ok();
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        "many-fds" => {
            // Opens descriptors until the host refuses; prints how many it got.
            fs::write("fd.txt", b"x").ok();
            let mut held = Vec::new();
            let err = loop {
                match fs::File::open("fd.txt") {
                    Ok(f) => held.push(f),
                    Err(e) => break e,
                }
                if held.len() > 1_000_000 {
                    break std::io::Error::other("no limit");
                }
            };
            println!("opened {} then: {err}", held.len());
        }
        "memory-bomb" => {
            fs::write("bomb.txt", b"should not survive").ok();
            let mut v: Vec<Vec<u8>> = Vec::new();
            loop {
                v.push(vec![1u8; 16 << 20]);
            }
        }
        "flood" => {
            fs::write("flood.txt", b"should not survive").ok();
            let line = "y".repeat(1023);
            loop {
                println!("{line}");
            }
        }
        "fill" => {
            let chunk = vec![7u8; 1 << 20];
            let mut f = fs::File::create("fill.bin").expect("create");
            for i in 0.. {
                if let Err(e) = f.write_all(&chunk) {
                    println!("write {i} failed: {:?}", e.kind());
                    std::process::exit(1);
                }
            }
        }
        "noop" => {}
        "write" => {
            for p in args {
                show(&format!("write {p}"), fs::write(&p, b"x"));
            }
        }
        "ls" => {
            for p in args {
                show(&format!("ls {p}"), listing(&p));
            }
        }
        "cat" => {
            for p in args {
                match fs::read(&p) {
                    Ok(b) => {
                        let _ = std::io::stdout().write_all(&b);
                    }
                    Err(e) => println!("{p}: {:?}", e.kind()),
                }
            }
        }
        other => {
            eprintln!("fs-probe: unknown scenario {other:?}");
            std::process::exit(2);
        }
    }
}
