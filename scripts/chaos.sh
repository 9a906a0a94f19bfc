#!/usr/bin/env bash
# The chaos harness's long run (cli/tests/chaos.rs, `long_run`): burrow processes on
# PostgreSQL + moto's S3 server through PgBouncer in transaction pooling, SIGKILLs, two
# database crashes, an object-server outage, GC every few seconds; then the report
# (acknowledged calls lost, half-applied calls, fsck) and the assertions.
#
#   scripts/chaos.sh [SECONDS] [SESSIONS]        # default 1800 s, 1000 sessions
#
# Needs PostgreSQL's server binaries, pgbouncer and moto_server (BURROW_MOTO_SERVER or on
# PATH); BURROW_CHAOS_SEED picks another random sequence.
set -euo pipefail
cd "$(dirname "$0")/.."
export BURROW_CHAOS_SECS="${1:-1800}" BURROW_CHAOS_SESSIONS="${2:-1000}"
export BURROW_REQUIRE_POSTGRES=1 BURROW_REQUIRE_PGBOUNCER=1 BURROW_REQUIRE_S3=1
export CARGO_INCREMENTAL=0
exec nice -n 19 cargo test -p burrow-cli --test all chaos::long_run -- --ignored --nocapture
