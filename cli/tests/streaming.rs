//! Streaming pipelines (burrow:sandbox/process.start): a stage that reads its input a piece at
//! a time (cat, head, wc, grep, sed, awk, a WebAssembly program on PATH) runs as a program of its own
//! alongside its writer once a pipe's worth has flowed, through bounded pipes. What flows may then be far larger than a stage's
//! memory; a reader that stops early ends its writer with SIGPIPE (141), as under bash; a
//! stage that fails ends the whole call, rolled back.

use crate::common;

use common::sh;

use std::path::Path;

use burrow_host::session::Sandbox;
use burrow_host::{Limits, SandboxConfig};

/// A sandbox whose every instance (the shell and each stage) may grow to `memory` bytes.
fn sandbox(dir: &Path, memory: usize) -> Sandbox {
    Sandbox::open_with(
        dir.join("s.db"),
        SandboxConfig {
            cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("burrow-test-cache")),
            limits: Limits {
                memory,
                ..Limits::default()
            },
            ..Default::default()
        },
    )
    .expect("sandbox")
}

#[test]
fn a_stream_larger_than_a_stage_memory_flows_through() {
    let tmp = tempfile::tempdir().unwrap();
    // 48 MiB per instance; 96 MB flow through two streaming stages.
    let sb = sandbox(tmp.path(), 48 << 20);
    let id = sb.create(None).unwrap().id;
    let (code, out, err) = sh(
        &sb,
        &id,
        "yes 0123456789abcdef | head -c $((96*1000*1000)) | wc -c; echo \"${PIPESTATUS[@]}\"",
    );
    assert_eq!((code, out.as_str()), (0, "96000000\n141 0 0\n"), "{err}");

    // A file larger than the memory, read by cat a piece at a time into a streaming wc.
    let line = "0123456789 the quick brown fox jumps over the lazy dog\n";
    let big = line.repeat((64 << 20) / line.len());
    sb.put_file(&id, "big.txt", big.as_bytes()).unwrap();
    let lines = big.len() / line.len();
    let (code, out, err) = sh(&sb, &id, "cat big.txt | wc -l; cat big.txt | cat | wc -c");
    assert_eq!(
        (code, out),
        (0, format!("{lines}\n{}\n", big.len())),
        "stderr: {err}"
    );

    // grep searches a flow larger than its memory a piece at a time.
    let (code, out, err) = sh(
        &sb,
        &id,
        "cat big.txt | grep -c fox; cat big.txt | grep -v fox | wc -l; \
         cat big.txt | grep -n -m 2 brown | cut -c1-12",
    );
    assert_eq!(
        (code, out),
        (0, format!("{lines}\n0\n1:0123456789\n2:0123456789\n")),
        "stderr: {err}"
    );

    // A device is read a piece at a time too: more of /dev/zero than the memory holds.
    let (code, out, err) = sh(
        &sb,
        &id,
        "head -c 100000000 /dev/zero | wc -c; head -c 60000000 /dev/urandom | cat | wc -c",
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "100000000\n60000000\n"),
        "stderr: {err}"
    );

    // sed edits a flow larger than its memory a line at a time; `q` ends its writer.
    let (code, out, err) = sh(
        &sb,
        &id,
        "cat big.txt | sed 's/fox/cat/' | grep -c cat; cat big.txt | sed -n '$=;2q'; \
         cat big.txt | sed -n '$='",
    );
    assert_eq!(
        (code, out),
        (0, format!("{lines}\n{lines}\n")),
        "stderr: {err}"
    );

    // awk reads a flow larger than its memory (a stage, a file operand, a `<` file) a record
    // at a time; `exit` ends its writer.
    let (code, out, err) = sh(
        &sb,
        &id,
        "cat big.txt | awk '/fox/ { n++ } END { print n }'; awk 'END { print NR }' big.txt; \
         awk -F' ' '{ w += NF } END { print w }' < big.txt; \
         cat big.txt | awk 'NR == 2 { print $1; exit }'; echo \"${PIPESTATUS[@]}\"",
    );
    assert_eq!(
        (code, out),
        (
            0,
            format!("{lines}\n{lines}\n{}\n0123456789\n141 0\n", lines * 10)
        ),
        "stderr: {err}"
    );

    // head reads a file, and `<` feeds one, only as far as needed.
    let (code, out, err) = sh(
        &sb,
        &id,
        "head -c 10 big.txt; echo; head -n 2 big.txt | tail -1; wc -l < big.txt; \
         cat < big.txt | head -n 1",
    );
    assert_eq!(
        (code, out),
        (0, format!("0123456789\n{line}{lines}\n{line}")),
        "stderr: {err}"
    );

    // A WebAssembly program on PATH streams too, as a stage and as a command of its own.
    let probe = std::fs::read(common::guest("probe-cmd")).expect("probe-cmd.wasm");
    sb.put_file(&id, ".bin/upcase.wasm", &probe).unwrap();
    let (code, out, err) = sh(
        &sb,
        &id,
        "yes abc | head -c $((96*1000*1000)) | upcase stream | wc -c; echo \"${PIPESTATUS[@]}\"; \
         upcase stream < big.txt | wc -c",
    );
    assert_eq!(
        (code, out),
        (0, format!("96000000\n141 0 0 0\n{}\n", big.len())),
        "stderr: {err}"
    );
    assert_eq!(
        err,
        format!(
            "probe-cmd: 96000000 bytes\nprobe-cmd: {} bytes\n",
            big.len()
        )
    );

    // The same flow into a stage that reads its input whole still fails at the limit, and
    // the call is rolled back.
    let e = sb
        .sh(&id, "touch marker; cat big.txt | sort | tail -1")
        .expect_err("sort holds its input whole");
    assert!(e.to_string().contains("memory"), "{e}");
    let (_, out, _) = sh(&sb, &id, "ls marker 2>&1");
    assert!(out.contains("No such file"), "{out}");
}

#[test]
fn readers_that_stop_early_end_their_writers_as_bash_does() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), Limits::default().memory);
    let id = sb.create(None).unwrap().id;
    // head's count known only by expanding it: the writer still meets SIGPIPE, through
    // stages in between too, and the stages' own output arrives whole and in order.
    let (code, out, err) = sh(
        &sb,
        &id,
        "n=2; yes | head -n $((n+1)); echo \"${PIPESTATUS[@]}\"; \
         yes ab | cat | cat | head -c $((n*3)); echo \" ${PIPESTATUS[@]}\"; \
         seq 200000 | cat | head -n $((n)) | wc -l; echo \"${PIPESTATUS[@]}\"",
    );
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "y\ny\ny\n141 0\nab\nab\n 141 141 141 0\n2\n141 141 0 0\n"
        ),
        "{err}"
    );
    // Past four stages running at once the rest are buffered: an endless writer then stops
    // as it did before stages streamed (after 10,000 lines), and the answer is the same.
    let (code, out, err) = sh(
        &sb,
        &id,
        "yes | cat | cat | cat | cat | cat | cat | head -n $((n)); yes | cat; echo",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("y\ny\n{}\n", "y\n".repeat(10_000)));
    // A loop writing forever into a streaming stage ends when it has had enough.
    let (_, out, _) = sh(
        &sb,
        &id,
        "i=0; while :; do i=$((i+1)); echo $i; done | cat | head -n $((3*1000*10)) | tail -1",
    );
    assert_eq!(out, "30000\n");
}

#[test]
fn a_stage_sees_the_exported_environment_and_cwd_and_writes_to_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox(tmp.path(), Limits::default().memory);
    let id = sb.create(None).unwrap().id;
    // The stage (tee is not one; cat and wc are) runs in the call's transaction: what the
    // writer made is visible to it, and its stderr reaches the call's.
    let (code, out, err) = sh(
        &sb,
        &id,
        "mkdir -p d && cd d && seq 100000 > n.txt && export LC_ALL=C; \
         seq 100000 | cat - n.txt nope.txt | wc -l; echo \"${PIPESTATUS[@]}\"",
    );
    assert_eq!((code, out.as_str()), (0, "200000\n0 1 0\n"), "{err}");
    assert_eq!(err, "cat: nope.txt: No such file or directory\n");
}
