# shellcheck shell=bash
# Shared helpers for the scripts in this directory. Source it, don't run it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Repository root (the directory above scripts/), as an absolute path.
STRATA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STRATA_ROOT

# Cargo's target directory: honour CARGO_TARGET_DIR, else <repo>/target. The scripts run cargo
# from the repository root, so a relative CARGO_TARGET_DIR is relative to it.
STRATA_TARGET="${CARGO_TARGET_DIR:-$STRATA_ROOT/target}"
[[ "$STRATA_TARGET" = /* ]] || STRATA_TARGET="$STRATA_ROOT/$STRATA_TARGET"
export STRATA_TARGET
STRATA_BIN="$STRATA_TARGET/release/strata-server"
export STRATA_BIN

# Messages go to stderr so that scripts' stdout stays clean.
log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# rustup installs into ~/.cargo/bin, which a non-login shell (CI) may not have on PATH.
ensure_cargo_on_path() {
    if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
        PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
        export PATH
    fi
}
