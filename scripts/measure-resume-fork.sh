#!/usr/bin/env bash
# Measures two session-level numbers of docs/BENCHMARKS.md with the release binary:
#  - resume: a fresh `burrow` process reading a file of an existing session, 20 runs (p50, p90);
#  - fork -n 100 of a session holding a 1 GiB / 50,000-file tree.
# Usage: scripts/measure-resume-fork.sh [MiB] [files]   (defaults 1024 50000)
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-1024}
FILES=${2:-50000}
cargo build -q --release -p burrow-cli --bin burrow
B=$PWD/target/release/burrow
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export BURROW_STORE=$W/store.db BURROW_CACHE=$W/cache
python3 - "$W/tree" "$MB" "$FILES" <<'PY'
import os, sys
root, mb, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = mb * 1024 * 1024 // files
for i in range(files):
    d = os.path.join(root, f"d{i // 1000:03d}", f"e{(i // 100) % 10:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}.dat"), "wb") as f:
        f.write(os.urandom(size))
PY
t0=$(date +%s.%N)
S=$($B session new --name big --from "$W/tree")
t1=$(date +%s.%N)
echo "import of ${MB} MiB / ${FILES} files: $(python3 -c "print(round($t1 - $t0, 2))") s"
$B tool big write '{"file_path":"notes.md","content":"resume me\n"}' >/dev/null
$B tool big read '{"file_path":"notes.md"}' >/dev/null   # compiles the tools once (cached)
times=()
for i in $(seq 1 20); do
  a=$(date +%s%N); $B tool big read '{"file_path":"notes.md"}' >/dev/null; b=$(date +%s%N)
  times+=($(( (b - a) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "resume (fresh process -> first read), 20 runs: p50 ${sorted[9]} us, p90 ${sorted[17]} us"
a=$(date +%s%N); $B fork big -n 100 >/dev/null; b=$(date +%s%N)
echo "fork -n 100 of the ${MB} MiB session: $(( (b - a) / 1000 )) us (whole process)"
before=$(stat -c %s "$W/store.db")
$B fork big -n 1 >/dev/null
echo "store file size: $(( before / 1048576 )) MiB; sessions: $($B session ls | tail -n +2 | wc -l)"
