#!/usr/bin/env python3
"""Vendors the filesystem tests of the WebAssembly wasi-testsuite into fixtures/wasi-testsuite.

Usage: scripts/vendor-wasi-testsuite.py GIT_DIR COMMIT

GIT_DIR is a clone of https://github.com/WebAssembly/wasi-testsuite and COMMIT a commit of its
`prod/testsuite-base` branch (prebuilt test programs with JSON specs). A filesystem test is one
whose spec preopens a directory (`"root"`). The programs are copied with their custom sections
(names, debug info) removed, which changes no code: that keeps the fixtures ~5 MB instead of
~90 MB. SHA256SUMS records the hash of each original and of the stripped copy, so anyone can
check the vendored bytes against the upstream commit.
"""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

SUITES = {
    "rust": "tests/rust/testsuite/wasm32-wasip1",
    "c": "tests/c/testsuite/wasm32-wasip1",
}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "wasi-testsuite")


def leb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def strip_custom_sections(b):
    assert b[:8] == b"\0asm\x01\0\0\0", "not a core wasm module"
    out = bytearray(b[:8])
    i = 8
    while i < len(b):
        sid = b[i]
        n, j = leb(b, i + 1)
        if sid != 0:
            out += b[i : j + n]
        i = j + n
    return bytes(out)


def main():
    git_dir, commit = sys.argv[1], sys.argv[2]
    tar = subprocess.run(
        ["git", "-C", git_dir, "archive", commit, *SUITES.values(), "LICENSE"],
        check=True,
        capture_output=True,
    ).stdout
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    sums = []
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        members = {m.name: m for m in t.getmembers()}
        lic = t.extractfile(members["LICENSE"]).read()
        open(os.path.join(OUT, "LICENSE"), "wb").write(lic)
        for suite, base in SUITES.items():
            os.makedirs(os.path.join(OUT, suite))
            for name, m in sorted(members.items()):
                if not name.startswith(base + "/"):
                    continue
                rel = name[len(base) + 1 :]
                dest = os.path.join(OUT, suite, rel)
                if rel.startswith("fs-tests.dir"):
                    if m.isdir():
                        os.makedirs(dest, exist_ok=True)
                    else:
                        os.makedirs(os.path.dirname(dest), exist_ok=True)
                        open(dest, "wb").write(t.extractfile(m).read())
                    continue
                if not rel.endswith(".json") or rel == "manifest.json":
                    continue
                spec = json.loads(t.extractfile(m).read())
                if "root" not in spec:
                    continue
                test = rel[: -len(".json")]
                wasm = t.extractfile(members[f"{base}/{test}.wasm"]).read()
                stripped = strip_custom_sections(wasm)
                open(dest, "w").write(json.dumps(spec, sort_keys=True) + "\n")
                open(os.path.join(OUT, suite, test + ".wasm"), "wb").write(stripped)
                sums.append(
                    f"{hashlib.sha256(stripped).hexdigest()}  {suite}/{test}.wasm"
                    f"  (upstream {hashlib.sha256(wasm).hexdigest()})"
                )
    open(os.path.join(OUT, "SHA256SUMS"), "w").write("\n".join(sums) + "\n")
    open(os.path.join(OUT, "SOURCE"), "w").write(
        "https://github.com/WebAssembly/wasi-testsuite\n"
        f"branch prod/testsuite-base, commit {commit}\n"
        "licence: Apache-2.0 (LICENSE)\n"
        "made by scripts/vendor-wasi-testsuite.py\n"
    )
    print(f"{len(sums)} tests vendored into {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
