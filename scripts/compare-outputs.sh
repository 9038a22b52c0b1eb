#!/usr/bin/env bash
# Goal 5 of issue 26: outputs unchanged. Runs two builds of heir on every
# example and compares, byte for byte (cmp), `heir sim --json`, its
# `--trace` file and `heir analyze --json` (default settings, and `heir sim
# --cpus 4 --duration 30`); the exit codes must agree too.
#
# Usage: scripts/compare-outputs.sh [--base REV] OLD_HEIR [NEW_HEIR]
#   OLD_HEIR: e.g. a build of the branch's base commit:
#     git archive BASE | tar -x -C /tmp/heir-base && (cd /tmp/heir-base && cargo build --release -p heir-cli)
#   NEW_HEIR: default target/release/heir (built if missing).
#   --base REV: OLD_HEIR reads the examples as they are in commit REV, each
#     under its name there (git's rename detection maps an example renamed
#     since REV to its old name; one added since is read from the work tree),
#     both from the same relative path `examples/NAME`. Without it both
#     builds read the work tree's files.
# Prints one line per difference and a summary; exits 1 if any differ.
set -uo pipefail
cd "$(dirname "$0")/.."
base=
if [ "${1:-}" = --base ]; then
    base=${2:?--base needs a revision}
    shift 2
fi
old=${1:?usage: scripts/compare-outputs.sh [--base REV] OLD_HEIR [NEW_HEIR]}
new=${2:-target/release/heir}
[ -x "$new" ] || cargo build --release --quiet -p heir-cli
old=$(realpath "$old")
new=$(realpath "$new")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The directory each build runs in: the work tree, or for the old build with
# --base a copy of REV's examples (plus the work tree's new ones).
root=$PWD
oldroot=$root
declare -A oldname
if [ -n "$base" ]; then
    oldroot=$work/base
    mkdir -p "$oldroot"
    git archive "$base" examples | tar -x -C "$oldroot" || exit 2
    while read -r status from to; do
        case $status in R*) oldname[$to]=$from ;; esac
    done < <(git diff -M --name-status "$base" -- examples)
fi

runs=0
diffs=0
# run TAG FILE ARGS...: runs both builds; {file} in ARGS is FILE (for the
# old build, its name in --base), {out} a file per build.
compare() {
    local tag=$1 file=$2
    shift 2
    local b
    for b in old new; do
        local bin=$old dir=$oldroot f=${oldname[$file]:-$file}
        [ $b = new ] && bin=$new dir=$root f=$file
        [ -e "$dir/$f" ] || { dir=$root f=$file; }
        local args=("${@//\{out\}/$work/$b.trace}")
        args=("${args[@]//\{file\}/$f}")
        rm -f "$work/$b.trace"
        (cd "$dir" && "$bin" "${args[@]}") >"$work/$b.out" 2>"$work/$b.err"
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
    compare "sim --json $name" "$ex" sim '{file}' --json --trace '{out}'
    compare "sim --cpus 4 --duration 30 $name" "$ex" sim '{file}' --json --cpus 4 --duration 30 --trace '{out}'
    compare "analyze --json $name" "$ex" analyze '{file}' --json
done
echo "$runs runs of $(ls examples/*.json | wc -l) examples compared, $diffs differences"
[ $diffs = 0 ]
