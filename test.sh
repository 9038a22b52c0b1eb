#!/usr/bin/env bash
# Runs every test heir has: formatting, lints, the whole workspace's tests
# (engine property tests, reader, simulator, analysis, CLI, the fuzzing
# harness for a bounded time — HEIR_FUZZ_SECONDS, 60 s under CI=true, 5 s
# otherwise — and the real-time tests on real SCHED_FIFO threads), and the
# C API example.
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

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo doc (warnings are errors: broken links, missing docs)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== cargo test"
cargo test --workspace
