#!/usr/bin/env bash
# Install what building and testing Strata needs. Idempotent, and silent when everything is there.
#
#   scripts/setup.sh               toolchain + redis + Python test venv (.venv)
#   scripts/setup.sh --build-only  only what building the server needs (no redis, no venv)
#
# System packages come from apt-get (Debian/Ubuntu; sudo is used when not root). Rust comes from
# rustup, and only when cargo is missing altogether.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_only=0
for arg in "$@"; do
    case "$arg" in
        --build-only) build_only=1 ;;
        -h | --help) sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $arg (try --help)" ;;
    esac
done

# ---------------------------------------------------------------------------------------------
# System packages. Each is checked by what it provides, so nothing is installed when the tool is
# already there by other means (e.g. a pyenv Python that has venv built in).
# ---------------------------------------------------------------------------------------------
missing=()
need() { # need PACKAGE CHECK-COMMAND...: queue PACKAGE unless CHECK-COMMAND succeeds
    local pkg=$1
    shift
    "$@" >/dev/null 2>&1 || missing+=("$pkg")
}
has_cmd() { command -v "$1"; }
has_libclang() { # bindgen (RocksDB bindings) loads libclang at build time
    [ -n "${LIBCLANG_PATH:-}" ] && return 0
    dpkg-query -W -f='${Status}' libclang-dev 2>/dev/null | grep -q 'install ok installed' && return 0
    compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' || compgen -G '/usr/lib*/libclang*.so*' ||
        compgen -G '/usr/lib/*-linux-gnu/libclang*.so*'
}
has_cxx_toolchain() { has_cmd g++ && has_cmd make; }
has_venv() { python3 -c 'import venv, ensurepip'; }

need clang has_cmd clang
need libclang-dev has_libclang
need build-essential has_cxx_toolchain
need pkg-config has_cmd pkg-config
ensure_cargo_on_path
has_cmd cargo >/dev/null || need curl has_cmd curl # only to fetch rustup
if [ "$build_only" = 0 ]; then
    # redis-server is also Redis Sentinel (`redis-server sentinel.conf --sentinel`), which
    # tests/python/test_sentinel.py runs. Debian's redis-sentinel package adds only a symlink to
    # the same binary and a system service on port 26379, so it is not installed.
    need redis-server has_cmd redis-server
    need redis-tools has_cmd redis-cli
    # tests/python/test_tls.py makes its certificates with the openssl tool.
    need openssl has_cmd openssl
    need python3 has_cmd python3
    need python3-venv has_venv
    # bench/cold.py measures the disk's own random-read figure with fio.
    need fio has_cmd fio
fi

if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 ||
        die "missing: ${missing[*]}; this script installs them only with apt-get (Debian/Ubuntu)"
    sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "missing: ${missing[*]}; run as root or install sudo"
        sudo=(sudo)
    fi
    had_redis_service=0
    has_cmd redis-server >/dev/null && had_redis_service=1
    log "installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian's redis-server package starts a system service on port 6379, which is the port
    # scripts/server.sh uses. We only want the binaries (tests start their own), so stop a
    # service that this very run brought in.
    if [ "$had_redis_service" = 0 ] && command -v systemctl >/dev/null 2>&1 &&
        systemctl is-active --quiet redis-server 2>/dev/null; then
        log "stopping and disabling the redis-server system service (it would hold port 6379)"
        "${sudo[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
    fi
fi

# ---------------------------------------------------------------------------------------------
# Rust. Normally present; rustup is tried only when cargo is missing.
# ---------------------------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    log "cargo not found: installing Rust with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
        sh -s -- -y --quiet --profile minimal --component rustfmt,clippy ||
        die "could not install Rust with rustup; install a Rust toolchain (>= 1.80) by hand"
    ensure_cargo_on_path
fi
if [ "$build_only" = 0 ] && command -v rustup >/dev/null 2>&1; then
    # scripts/test.sh runs `cargo fmt` and `cargo clippy`.
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt >/dev/null
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy >/dev/null
fi

[ "$build_only" = 1 ] && exit 0

# ---------------------------------------------------------------------------------------------
# Python virtualenv for tests/python, re-installed only when requirements.txt (or the Python
# behind the venv) changes: a stamp file in the venv records the hash of both.
# ---------------------------------------------------------------------------------------------
venv="$STRATA_ROOT/.venv"
requirements="$STRATA_ROOT/tests/python/requirements.txt"
stamp="$venv/.requirements.sha256"

# A venv whose base interpreter disappeared (e.g. a pyenv version removed) is rebuilt.
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    [ -e "$venv" ] && log "recreating broken virtualenv $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
fi
want="$({ cat "$requirements"; "$venv/bin/python" -VV; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    log "installing Python test requirements into .venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
    echo "$want" >"$stamp"
fi
