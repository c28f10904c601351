#!/usr/bin/env bash
# Library throughput of the embeddable `strata` crate (get/put/hset/zadd, 128-byte values, one
# thread, sync and no-sync): see bench/README.md. Usage: bench/lib.sh [OPS] (default 100000).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
STRATA_BENCH_OPS="${1:-100000}" cargo bench -q -p strata --bench throughput
