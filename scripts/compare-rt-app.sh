#!/bin/sh
# heir run vs rt-app on the same files (issue 12 goal 4; docs/PERFORMANCE.md,
# "heir run vs rt-app"): a generated periodic set of 3 SCHED_FIFO tasks and
# the examples rt-app can read once heir's extensions are stripped (copies in
# a temporary directory), the same duration each; prints p50/p99 response,
# the per-job run error and the CPU overhead per job side by side.
#
#   scripts/compare-rt-app.sh [DURATION_S] [--json OUT.json]
#
# Needs root (or CAP_SYS_NICE) for SCHED_FIFO, python3, and rt-app (Debian
# package rt-app: installed here with apt-get when run as root). rt-app's own
# calibration does not finish on some VMs: the script measures rt-app's busy
# loop from rt-app's log instead (compare_rt_app.py, calibrate_rt_app) and
# passes "calibration" in ns per loop. Run it on a quiet machine: the load
# average is printed with the table.
set -eu
cd "$(dirname "$0")/.."
duration=${1:-10}
[ $# -gt 0 ] && shift

if ! command -v rt-app >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "rt-app missing: apt-get install -y rt-app" >&2
        apt-get install -y rt-app >/dev/null || { apt-get update >/dev/null && apt-get install -y rt-app >/dev/null; }
    else
        echo "rt-app is missing: install it (Debian/Ubuntu: sudo apt-get install rt-app; or build https://github.com/scheduler-tools/rt-app) and run this again" >&2
        exit 2
    fi
fi
command -v python3 >/dev/null 2>&1 || { echo "python3 is needed" >&2; exit 2; }

cargo build --release -q -p heir-cli
exec python3 scripts/compare_rt_app.py --heir target/release/heir --duration "$duration" "$@" \
    examples/ipcp-t0-t1-t2-inherit.json
