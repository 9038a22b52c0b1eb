#!/usr/bin/env bash
# Goal 5 of issue 26: outputs unchanged. Runs two builds of heir on every
# example and compares, byte for byte (cmp), `heir sim --json`, its
# `--trace` file and `heir analyze --json` (default settings, and `heir sim
# --cpus 4 --duration 30`); the exit codes must agree too.
#
# Usage: scripts/compare-outputs.sh OLD_HEIR [NEW_HEIR]
#   OLD_HEIR: e.g. a build of the branch's base commit:
#     git archive BASE | tar -x -C /tmp/heir-base && (cd /tmp/heir-base && cargo build --release -p heir-cli)
#   NEW_HEIR: default target/release/heir (built if missing).
# Prints one line per difference and a summary; exits 1 if any differ.
set -uo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: scripts/compare-outputs.sh OLD_HEIR [NEW_HEIR]}
new=${2:-target/release/heir}
[ -x "$new" ] || cargo build --release --quiet -p heir-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

runs=0
diffs=0
# run TAG ARGS...: runs both builds; {out} in ARGS is a file per build.
compare() {
    local tag=$1
    shift
    local b
    for b in old new; do
        local bin=$old
        [ $b = new ] && bin=$new
        local args=("${@//\{out\}/$work/$b.trace}")
        rm -f "$work/$b.trace"
        "$bin" "${args[@]}" >"$work/$b.out" 2>"$work/$b.err"
        echo $? >"$work/$b.rc"
    done
    runs=$((runs + 1))
    for f in out rc trace; do
        if [ -e "$work/old.$f" ] || [ -e "$work/new.$f" ]; then
            if ! cmp -s "$work/old.$f" "$work/new.$f"; then
                echo "DIFFERS: $tag ($f)"
                diffs=$((diffs + 1))
            fi
        fi
    done
}

for ex in examples/*.json; do
    name=$(basename "$ex" .json)
    compare "sim --json $name" sim "$ex" --json --trace '{out}'
    compare "sim --cpus 4 --duration 30 $name" sim "$ex" --json --cpus 4 --duration 30 --trace '{out}'
    compare "analyze --json $name" analyze "$ex" --json
done
echo "$runs runs of $(ls examples/*.json | wc -l) examples compared, $diffs differences"
[ $diffs = 0 ]
