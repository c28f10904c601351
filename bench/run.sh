#!/usr/bin/env bash
# Strata vs Redis benchmark: builds strata-server (release) and runs bench/bench.py.
#   bench/run.sh               full run (a few minutes)
#   bench/run.sh --quick       smoke run (< 1 minute)
#   bench/run.sh --help        all options
#   bench/run.sh --queue ...   the queue workload instead (bench/queue_bench.py; --queue --help)
# The build is skipped with --no-build, when STRATA_SERVER or STRATA_CMD is set, or when
# --targets does not include strata. STRATA_BUILD_TIMEOUT (seconds, default 3600) bounds it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

script=bench.py
if [[ "${1:-}" == "--queue" ]]; then
  script=queue_bench.py
  shift
fi

build=1
[[ -n "${STRATA_SERVER:-}" || -n "${STRATA_CMD:-}" ]] && build=0
prev=
for a in "$@"; do
  case "$a" in
    --no-build|-h|--help|--self-test|--list-workloads|--strata-cmd|--strata-cmd=*|--strata-bin|--strata-bin=*)
      build=0 ;;
    --targets=*)
      [[ ",${a#--targets=}," == *,strata,* ]] || build=0 ;;
  esac
  if [[ "$prev" == "--targets" && ",$a," != *,strata,* ]]; then build=0; fi
  prev=$a
done

if (( build )); then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "bench/run.sh: cargo not found; build strata-server yourself and pass --no-build" >&2
    exit 2
  fi
  # --workspace, not -p strata-server: a partial build resolves zstd-sys with other features and
  # rebuilds RocksDB from scratch (~20 minutes on this machine).
  echo "bench/run.sh: cargo build --release --workspace --bins" >&2
  (cd "$repo" && timeout "${STRATA_BUILD_TIMEOUT:-3600}" cargo build --release --workspace --bins) || {
    echo "bench/run.sh: building strata-server failed" >&2
    exit 2
  }
fi

exec python3 "$here/$script" "$@"
