//! `.wasm` commands on PATH (burrow:sandbox/process): the shell finds a program in
//! /workspace/.bin or the shared tool layer, the host runs it in the same transaction, wired
//! into pipes and redirections with its exit code; a program that traps or runs out of time
//! rolls the whole call back.

use crate::common;

use common::sh;

use std::path::Path;

use burrow_host::SandboxConfig;
use burrow_host::session::Sandbox;

fn probe() -> Vec<u8> {
    std::fs::read(common::guest("probe-cmd")).expect("probe-cmd.wasm")
}

fn sandbox_with_tools(dir: &Path, tools: Option<&Path>) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            tool_layer: tools.map(Path::to_path_buf),
            ..Default::default()
        },
    )
    .expect("sandbox")
}

#[test]
fn wasm_commands_on_path_run_in_pipelines() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox_with_tools(tmp.path(), None);
    let id = sb.create(None).unwrap().id;
    sb.put_file(&id, ".bin/upcase.wasm", &probe()).unwrap();

    // Found on PATH by its name without `.wasm`, fed by a pipe, feeding a pipe and a file.
    let (code, out, err) = sh(
        &sb,
        &id,
        "printf 'one\\ntwo\\n' | upcase | tac > out.txt; cat out.txt; wc -l < out.txt",
    );
    assert_eq!((code, out.as_str()), (0, "TWO\nONE\n2\n"), "stderr: {err}");
    assert_eq!(err, "probe-cmd: 8 bytes\n");

    // stderr follows the shell's redirections; exit codes reach $? and PIPESTATUS.
    let (code, out, _) = sh(
        &sb,
        &id,
        "echo x | upcase 2>/dev/null; upcase exit 3; echo \"rc=$?\"; \
         upcase exit 4 | cat; echo \"${PIPESTATUS[@]}\"; upcase exit 5 && echo no || echo yes",
    );
    assert_eq!(code, 0);
    assert_eq!(out, "X\nrc=3\n4 0\nyes\n");

    // argv, the exported environment and the working directory reach the program.
    let (_, out, _) = sh(
        &sb,
        &id,
        "mkdir -p sub && cd sub && export GREETING=hi && LOCAL=1 upcase.wasm args 'a b' c",
    );
    assert_eq!(
        out,
        "arg upcase.wasm\narg args\narg a b\narg c\nPWD /workspace/sub\ncwd /workspace/sub\nGREETING hi\n"
    );

    // Its writes land in the same transaction: visible to the next command of the call and
    // committed with it. Called by a relative path too.
    let (code, out, _) = sh(
        &sb,
        &id,
        "cd /workspace && ../workspace/.bin/upcase.wasm write note.txt hello && cat note.txt",
    );
    assert_eq!((code, out.as_str()), (0, "wrote note.txt\nhello"));
    assert_eq!(sb.cat(&id, "note.txt").unwrap(), b"hello");

    // stdout and stderr keep their order in the merged view (as a terminal shows them).
    let r = sb.sh(&id, "upcase interleave").unwrap();
    assert_eq!(
        String::from_utf8_lossy(&r.report.merged),
        "out1\nerr1\nout2\n"
    );

    // A program gets the shell's capabilities and nothing more: no host paths.
    let (code, _, err) = sh(&sb, &id, "upcase write /etc/burrow-escape hi");
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("probe-cmd: /etc/burrow-escape: "), "{err}");
    assert!(!Path::new("/etc/burrow-escape").exists());

    // which / type / command -v see it.
    let (_, out, _) = sh(&sb, &id, "which upcase; type upcase; command -v upcase");
    assert_eq!(
        out,
        "/workspace/.bin/upcase.wasm\nupcase is /workspace/.bin/upcase.wasm\n/workspace/.bin/upcase.wasm\n"
    );

    // A program on PATH shadows the built-in utility of the same name (.bin comes first).
    sb.put_file(&id, ".bin/tr.wasm", &probe()).unwrap();
    let (_, out, _) = sh(
        &sb,
        &id,
        "echo abc | tr; rm .bin/tr.wasm; echo abc | tr a-z x",
    );
    assert_eq!(out, "ABC\nxxx\n");

    // Bash's errors: not found, not a program, a directory, a script with a missing
    // interpreter; a shell script on PATH runs in a child shell with its arguments.
    sb.put_file(&id, ".bin/junk", b"\x7fELF\0\0binary").unwrap();
    sb.put_file(&id, ".bin/fake.wasm", b"\0asm\x01\0\0\0garbage")
        .unwrap();
    sb.put_file(
        &id,
        ".bin/greet",
        b"#!/bin/bash\necho \"hello $1 from $0\"\nexit 7\n",
    )
    .unwrap();
    sb.put_file(&id, ".bin/py", b"#!/usr/bin/env ruby\nputs 1\n")
        .unwrap();
    let (_, out, err) = sh(
        &sb,
        &id,
        "nosuch; echo $?; junk; echo $?; fake; echo $?; ./sub; echo $?; ./missing; echo $?; \
         greet you | upcase; echo ${PIPESTATUS[0]}; py; echo $?",
    );
    assert_eq!(
        out,
        "127\n126\n126\n126\n127\nHELLO YOU FROM GREET\n7\n126\n"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "bash: nosuch: command not found");
    assert_eq!(
        lines[1],
        "bash: junk: cannot execute binary file: Exec format error"
    );
    assert!(
        lines[2].starts_with("bash: fake: cannot execute binary file: "),
        "{}",
        lines[2]
    );
    assert_eq!(lines[3], "bash: ./sub: Is a directory");
    assert_eq!(lines[4], "bash: ./missing: No such file or directory");
    assert_eq!(
        lines[6],
        "bash: py: /usr/bin/env: bad interpreter: No such file or directory"
    );

    // A program too big to compile within a call is refused before compiling.
    let mut huge = b"\0asm\x01\0\0\0".to_vec();
    huge.resize(33 << 20, 0);
    sb.put_file(&id, ".bin/huge.wasm", &huge).unwrap();
    let (code, out, err) = sh(&sb, &id, "huge; echo $?");
    assert_eq!((code, out.as_str()), (0, "126\n"));
    assert!(err.contains("larger than the 32 MiB limit"), "{err}");
}

#[test]
fn a_failing_program_rolls_the_whole_call_back() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox_with_tools(tmp.path(), None);
    let id = sb
        .create_with(
            None,
            &burrow_host::session::Settings {
                timeout_ms: Some(2000),
                ..Default::default()
            },
        )
        .unwrap()
        .id;
    sb.put_file(&id, ".bin/probe.wasm", &probe()).unwrap();
    let before = sb.cat(&id, ".bin/probe.wasm").unwrap();

    // A trap in the program after it wrote a file: the call fails and nothing of it stays —
    // neither the shell's own write before it nor the program's.
    let err = sb
        .sh(
            &id,
            "echo mine > a.txt; probe trap b.txt; echo after > c.txt",
        )
        .expect_err("a trapping program fails the call");
    assert!(err.to_string().contains("trap"), "{err}");
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(sb.cat(&id, f).is_err(), "{f} survived a rolled-back call");
    }

    // A program that never ends: the call's own timeout, rolled back the same way.
    let err = sb
        .sh(&id, "echo mine > a.txt; probe spin")
        .expect_err("a spinning program times out");
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(sb.cat(&id, "a.txt").is_err());

    // The session works afterwards and the program is intact.
    let (code, out, _) = sh(&sb, &id, "echo ok | probe");
    assert_eq!((code, out.as_str()), (0, "OK\n"));
    assert_eq!(sb.cat(&id, ".bin/probe.wasm").unwrap(), before);
}

#[test]
fn shared_tool_layer_and_nesting() {
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("shout.wasm"), probe()).unwrap();
    // The shell itself as a program: nesting is bounded.
    let sh_wasm = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| common::workspace_root().join("target"))
        .join("tools-wasm/wasm32-wasip2/release/sh.wasm");
    std::fs::copy(&sh_wasm, tools.join("inner.wasm")).expect("the embedded shell's build");

    let sb = sandbox_with_tools(tmp.path(), Some(&tools));
    let id = sb.create(None).unwrap().id;
    let (code, out, _) = sh(&sb, &id, "echo quiet | shout; which shout");
    assert_eq!(
        (code, out.as_str()),
        (0, "QUIET\n/opt/burrow/bin/shout.wasm\n")
    );
    // The layer is read-only and not part of the workspace.
    let (code, _, err) = sh(&sb, &id, "rm /opt/burrow/bin/shout.wasm");
    assert_ne!(code, 0, "{err}");
    assert!(tools.join("shout.wasm").exists());

    // A program that starts programs: the shell running a shell running `shout`, sharing the
    // transaction (the inner shell's file is visible to the outer one).
    let (code, out, err) = sh(
        &sb,
        &id,
        "inner --no-state -c 'echo deep | shout > deep.txt; echo inner-done'; cat deep.txt",
    );
    assert_eq!((code, out.as_str()), (0, "inner-done\nDEEP\n"), "{err}");
    // Unbounded recursion ends with a clear error at the nesting limit, not a crash.
    let (code, _, err) = sh(
        &sb,
        &id,
        "export R='inner --no-state -c \"$R\"'; inner --no-state -c \"$R\"",
    );
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("nest deeper than 8"), "{err}");
}
