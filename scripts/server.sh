#!/usr/bin/env bash
# Build strata-server (release) if needed and run it in the foreground, like redis-server:
# on 127.0.0.1:6379 with its data in <repo>/data.
#
#   scripts/server.sh [config-file] [--directive value ...]
#
# Directives given here come after the defaults, so they win: `scripts/server.sh --port 7000`.
# Stop it with Ctrl-C (or redis-cli shutdown).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A config file, like redis-server's, must be the first argument. Resolve it against the
# caller's directory before we change to the repository root.
config=()
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
    [ -f "$1" ] || die "config file not found: $1"
    config=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
    shift
fi

bash "$STRATA_ROOT/scripts/setup.sh" --build-only
ensure_cargo_on_path
cd "$STRATA_ROOT"
cargo build --release -p strata-server
mkdir -p data
exec "$STRATA_BIN" "${config[@]}" --bind 127.0.0.1 --port 6379 --dir ./data "$@"
