#!/usr/bin/env bash
# Runs every test heir has: formatting, lints, the whole workspace's tests
# (engine property tests, reader, simulator, analysis, CLI, the fuzzing
# harness for a bounded time — HEIR_FUZZ_SECONDS, 60 s under CI=true, 5 s
# otherwise — and the real-time tests on real SCHED_FIFO threads; under
# CI=true, or HEIR_TEST_UNDER_LOAD=1, the real-thread test binaries a second
# time beside one SCHED_OTHER busy loop per CPU), the C API
# examples (built against the build tree, and against libheir installed by
# cargo-c into a temporary prefix with nothing but pkg-config), and the
# Python package: its abi3 wheel built by maturin and installed into a
# virtual environment (target/py-venv) with pytest, pandas, matplotlib and
# Dask (crates/heir-py/requirements-test.txt), then its pytest suite (the
# API on the examples, the Dask sweep on a 2-worker LocalCluster, the
# example script, docs/PYTHON.md's code run as scripts, and mypy --strict
# on the package, its stubs, examples/python and the docs' code); under
# CI=true the Debian package (scripts/build-deb.sh, then
# scripts/test-deb.sh: dpkg -i, the demo, a pkg-config build, heir exec,
# dpkg --purge).
#
# On a fresh machine it first installs what is missing (a C compiler and
# pkg-config for the C API test; as root, Chromium for the report page's
# browser test, which otherwise says it skips — and fails under CI=true). Real-time tests need root (or CAP_SYS_NICE):
# without it they print why and skip, except under CI=true, where a missing
# capability fails the run.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
# rt-app's own example files (/usr/share/doc/rt-app/examples/), read by the
# reader's and the fuzzer's tests.
[ -d /usr/share/doc/rt-app/examples ] || need+=(rt-app)
# rt-tests' pi_stress runs under `heir exec` (heir-cli's exec tests).
command -v pi_stress >/dev/null 2>&1 || need+=(rt-tests)
# trace-cmd and KernelShark's library read heir run --trace-dat's file back (heir-cli's trace_dat test; skipped without them outside CI).
[ "${CI:-}" != true ] || command -v trace-cmd >/dev/null 2>&1 || need+=(trace-cmd)
[ "${CI:-}" != true ] || ldconfig -p 2>/dev/null | grep 'libkshark\.so\.2 ' >/dev/null || need+=(libkshark2)
# cargo-c (cargo cinstall), for libheir's install test and the Debian
# package: as root with apt, the distribution's package (Debian 12: 0.9.14,
# seconds) unless a cargo-c is in cargo's own bin directory already.
# (Outputs are read whole before grep: under pipefail, `grep -q` leaving
# early fails the pipe.)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
usable_cargo_c='(0\.9\.14|0\.(1[0-9]|[2-9][0-9])\.)'
cargo_c_10() {
    local v
    v=$(cargo cinstall --version 2>/dev/null) && grep -Eq '^cargo-c 0\.(1[0-9]|[2-9][0-9])\.' <<<"$v"
}
cargo_c_debian() {
    local v
    [ ! -e "$cargo_home/bin/cargo-cinstall" ] && v=$(/usr/bin/cargo-cinstall --version 2>/dev/null) &&
        grep -Eq "^cargo-c $usable_cargo_c" <<<"$v"
}
if ! cargo_c_10 && ! cargo_c_debian && [ ! -e "$cargo_home/bin/cargo-cinstall" ] &&
    [ "$(id -u)" = 0 ] && command -v apt-cache >/dev/null 2>&1 &&
    grep -Eq "Candidate: $usable_cargo_c" <<<"$(apt-cache policy cargo-c 2>/dev/null)"; then
    need+=(cargo-c)
fi
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        need+=(chromium)
    else
        echo "test.sh: chromium is missing: the report page's browser test will skip (run as root to let test.sh install it)" >&2
    fi
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: installing ${need[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "test.sh: missing ${need[*]} (install them, or run as root to let test.sh do it)" >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "test.sh: cargo not found: install Rust (https://rustup.rs), then run ./test.sh again" >&2
    exit 1
fi

# Which cargo-c: 0.10 or later where installed (cargo install cargo-c);
# else Debian 12's 0.9.14 (installed above). It is built with cargo 0.66
# (Rust 1.65), hence what the workspace keeps for it:
#  - Cargo.lock stays at version 3 (version 4 needs cargo 1.78; cargo keeps
#    an existing version 3 file, but `cargo update` or a new dependency
#    writes version 4: set the line back to `version = 3`, the content is
#    the same for a workspace without git dependencies; checked below);
#  - its resolver turns a feature "dep/feat" of an optional dependency
#    declared as "dep:dep" into a missing feature: proptest stays below
#    1.12 (Cargo.toml; 1.12's rand 0.10 does it) and js-sys, wasm-only,
#    at 0.3.104 in Cargo.lock (0.3.105 does it);
#  - CARGO_UNSTABLE_SPARSE_REGISTRY=true makes it read crates.io's sparse
#    index (its channel allows the then unstable flag); without it, it
#    clones the whole git index from GitHub;
#  - an absolute --libdir (it takes a relative one as relative to the
#    working directory, and writes it so into heir.pc).
# Elsewhere (no apt, not root) cargo-c 0.10.24 is built once into
# ~/.cargo/bin: about 13 min of CPU (0.10.26, the newest, needs Rust 1.97).
if ! grep -qx 'version = 3' Cargo.lock; then
    echo "test.sh: Cargo.lock is not version 3 (\`cargo update\` or a new dependency rewrote it): set its 'version = 4' line back to 'version = 3' (Debian's cargo-c reads version 3 only; see test.sh)" >&2
    exit 1
fi
if cargo_c_10; then
    :
elif cargo_c_debian; then
    export CARGO_UNSTABLE_SPARSE_REGISTRY=true
    echo "test.sh: cargo-c: the distribution's ($(/usr/bin/cargo-cinstall --version))"
else
    echo "test.sh: installing cargo-c (cargo install --locked cargo-c --version 0.10.24: about 13 min of CPU, once)"
    cargo install --locked --quiet cargo-c --version 0.10.24
fi

# Each section says when it starts (minutes:seconds since test.sh began).
section() { printf '== %s (at %d:%02d)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

section "cargo fmt --check"
cargo fmt --all -- --check
section "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
section "cargo doc (warnings are errors: broken links, missing docs)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
section "cargo test"
cargo test --workspace

# The real-thread test binaries again, under load: one SCHED_OTHER busy
# loop per CPU (what another program, or a build, does to a machine). On
# Linux 6.12 and later the kernel's fair server runs such loops ahead of
# SCHED_FIFO threads (50 ms a second by default): the tests must still
# pass, retrying a run whose measured disturbance says it was disturbed.
# Under CI=true always; elsewhere with HEIR_TEST_UNDER_LOAD=1.
if [ "${CI:-}" = true ] || [ "${HEIR_TEST_UNDER_LOAD:-}" = 1 ]; then
    ncpu=$(nproc)
    section "cargo test (real-thread tests) under load: $ncpu SCHED_OTHER busy loops"
    # Built first (the workspace's features, as above: nothing recompiles),
    # so that the loops slow the tests, not the compiler.
    cargo test --workspace --test rt --test runner --test cli --no-run
    loops=()
    for _ in $(seq "$ncpu"); do
        # Bounded: no loop outlives this script by more than an hour.
        timeout 3600 sh -c 'while :; do :; done' &
        loops+=($!)
    done
    stop_loops() { kill "${loops[@]}" 2>/dev/null || true; }
    trap stop_loops EXIT
    cargo test --workspace --test rt --test runner --test cli
    stop_loops
    trap - EXIT
fi

section "Python package: wheel (maturin), pytest"
venv=target/py-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r crates/heir-py/requirements-test.txt
rm -f target/wheels/heir-*.whl
(cd crates/heir-py && "../../$venv/bin/maturin" build --release --quiet --out ../../target/wheels)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/heir-*.whl
cargo build --quiet -p heir-cli
HEIR_BIN="$PWD/target/debug/heir" "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/heir-py/tests

# The Debian package, installed as a user would install it (dpkg -i into
# this machine's root, then used with no build tree and removed again):
# under CI=true (a fresh VM) always; elsewhere, as root, with HEIR_TEST_DEB=1.
if [ "${CI:-}" = true ] || [ "${HEIR_TEST_DEB:-}" = 1 ]; then
    section "Debian package: build, dpkg -i, use, dpkg --purge"
    scripts/test-deb.sh
else
    section "Debian package: skipped (CI=true or HEIR_TEST_DEB=1 installs it into this machine's root)"
fi
section "done"
