#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions run through `step` look unreachable to shellcheck
# Run every check Strata has, in order, and print a summary:
#
#   setup    scripts/setup.sh (toolchain, redis, Python venv)
#   build    cargo build --release --workspace --all-targets
#   fmt      cargo fmt --all -- --check
#   clippy   cargo clippy --release --workspace --all-targets -- -D warnings
#   cargo    cargo test --release --workspace
#   python   pytest tests/python against the built strata-server (and a real redis-server)
#
# Every step runs even when an earlier one failed (except those that need the build), so one
# run shows everything that's wrong. Exits non-zero if any step failed.
# Honours CARGO_TARGET_DIR (default <repo>/target). Extra arguments go to pytest, e.g.
#   scripts/test.sh -k incr -x
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

logs="$(mktemp -d "${TMPDIR:-/tmp}/strata-test.XXXXXX")"
trap 'rm -rf "$logs"' EXIT

summary=() # one "step status seconds" line per step
failed=0
tests_passed=0
tests_failed=0
tests_skipped=0

# step NAME COMMAND...: run COMMAND, record PASS/FAIL and its duration; never aborts the script.
step() {
    local name=$1 start=$SECONDS status=PASS
    shift
    printf '\n==> [%s] %s\n' "$name" "$*" >&2
    "$@" || status=FAIL
    [ "$status" = FAIL ] && failed=1
    summary+=("$(printf '%-7s %-5s %5ss' "$name" "$status" $((SECONDS - start)))")
    [ "$status" = PASS ]
}
skip() { summary+=("$(printf '%-7s %-5s (%s)' "$1" SKIP "$2")"); }

print_summary() {
    printf '\n==== summary ====\n'
    printf '%s\n' "${summary[@]}"
    printf '%-13s %5ss\n' total "$SECONDS"
    # Last line in the plain "N passed, N failed" form: tests counted over cargo test and pytest.
    if [ "$tests_skipped" -gt 0 ]; then
        printf 'tests: %d passed, %d failed, %d skipped\n' "$tests_passed" "$tests_failed" "$tests_skipped"
    else
        printf 'tests: %d passed, %d failed\n' "$tests_passed" "$tests_failed"
    fi
}

# Add up cargo test's "test result: ok. 3 passed; 0 failed; 1 ignored; ..." lines.
count_cargo_tests() {
    local p f i
    while read -r p f i; do
        tests_passed=$((tests_passed + p))
        tests_failed=$((tests_failed + f))
        tests_skipped=$((tests_skipped + i))
    done < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$1")
}

# Read pytest's closing line, e.g. "2 failed, 180 passed, 1 skipped, 3 errors in 61.2s".
count_pytest_tests() {
    local line
    line="$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|errors?|xfailed|xpassed|deselected)' "$1" | tail -n 1 || true)"
    # how_many WORD: the number before WORD in that line, or 0
    how_many() { { grep -oE "[0-9]+ $1" <<<"$line" || echo 0; } | grep -oE '^[0-9]+' | head -n 1; }
    tests_passed=$((tests_passed + $(how_many passed) + $(how_many xfailed)))
    tests_failed=$((tests_failed + $(how_many failed) + $(how_many 'errors?') + $(how_many xpassed)))
    tests_skipped=$((tests_skipped + $(how_many skipped)))
}

# The two test runners, with their output also kept for counting (pipefail keeps their status).
run_cargo_tests() { cargo test --release --workspace 2>&1 | tee "$logs/cargo.log"; }
run_python_tests() {
    # The suite starts $STRATA_SERVER itself, and a real redis-server to compare against.
    STRATA_SERVER="$STRATA_BIN" .venv/bin/python -m pytest -q tests/python "$@" 2>&1 | tee "$logs/pytest.log"
}

# Setup is the one step everything depends on.
if ! step setup bash scripts/setup.sh; then
    print_summary
    exit 1
fi
ensure_cargo_on_path

built=1
step build cargo build --release --workspace --all-targets || built=0
step fmt cargo fmt --all -- --check || true
step clippy cargo clippy --release --workspace --all-targets -- -D warnings || true

if [ "$built" = 1 ]; then
    step cargo run_cargo_tests || true
    count_cargo_tests "$logs/cargo.log"
    step python run_python_tests "$@" || true
    count_pytest_tests "$logs/pytest.log"
else
    skip cargo "build failed"
    skip python "build failed"
fi

print_summary
exit "$failed"
