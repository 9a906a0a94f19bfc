"""Benchmark: a 4 KiB `read` through the Python package vs through the Rust library, in the
same process and the same run (the Rust side loops inside the extension, with no Python in
between). The ratio is the cost of the binding; the goal is <= 1.2x.

    python3 bindings/python/bench.py [--n 20000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import burrow


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000, help="reads per sample")
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as d:
        s = burrow.Sandbox(f"{d}/bench.db").create("bench")
        s.write("data/file.txt", b"x" * 4096)
        core, sid, path = s._core, s.id, "data/file.txt"
        read = s.read_bytes
        for _ in range(1000):  # warm: page cache, SQLite statement cache
            read(path)
        py, rs = [], []
        for _ in range(args.samples):
            t = time.perf_counter()
            for _ in range(args.n):
                read(path)
            py.append((time.perf_counter() - t) / args.n)
            rs.append(core.bench_read(sid, path, args.n) / args.n)
    py_us, rs_us = statistics.median(py) * 1e6, statistics.median(rs) * 1e6
    result = {
        "name": "python.read_4k",
        "python_us": round(py_us, 2),
        "rust_us": round(rs_us, 2),
        "ratio": round(py_us / rs_us, 3),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"read 4 KiB: python {py_us:.2f} us, rust {rs_us:.2f} us, ratio {py_us / rs_us:.3f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
