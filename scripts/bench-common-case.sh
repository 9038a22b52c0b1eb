#!/usr/bin/env bash
# Issue 26, goal 1: the simulator's common case against an old build.
#
# Builds heir (release) at REV (default 4a57f3c: the simulator before
# deadline servers, NOVA donation, gangs and lending existed) in a git
# worktree under target/bench-REV, and the work tree's heir (release) beside
# it; writes the 3-task rate-monotonic set below; then times
# `heir sim FILE --json >/dev/null` for the two builds alternately (old,
# new, old, new, ...), pinned to one CPU, after one warm-up run of each.
#
# The set: three periodic SCHED_FIFO tasks on CPU 0, priorities
# rate-monotonic, no mutex, utilisation 0.6, `global.duration` 10^4 s
# (10^7 ms simulated):
#   t1  period  5 ms  run 1 ms  priority 90
#   t2  period 20 ms  run 4 ms  priority 80
#   t3  period 40 ms  run 8 ms  priority 70
# 2,750,000 jobs.
#
# Prints, for each pair, the wall and CPU (user + sys) seconds of each
# build and the ratios new/old; then the medians of each column and the
# median of the ratios pair by pair (quote that one: it holds when the
# machine's speed drifts between pairs), ns per job (CPU time / jobs) and
# the load average before and after. On a loaded machine quote the CPU
# ratio: a process pinned to a CPU shared with other work waits for it,
# and its wall time measures the others (at load 14 on 2 CPUs a 0.3 s
# run takes 3 s of wall time).
#
# Usage: scripts/bench-common-case.sh [-n PAIRS] [--cpu N] [--rev REV]
#   -n PAIRS   timed pairs (default 7)
#   --cpu N    the CPU to pin both builds to (default 0)
#   --rev REV  the old build's commit (default 4a57f3c)
#   NEW_HEIR / OLD_HEIR in the environment: use these binaries instead of
#   building (e.g. OLD_HEIR=/tmp/main-heir to compare against main).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=7
cpu=0
rev=4a57f3c
while [ $# -gt 0 ]; do
    case $1 in
    -n) pairs=${2:?-n needs a number}; shift 2 ;;
    --cpu) cpu=${2:?--cpu needs a CPU number}; shift 2 ;;
    --rev) rev=${2:?--rev needs a revision}; shift 2 ;;
    *) echo "usage: $0 [-n PAIRS] [--cpu N] [--rev REV]" >&2; exit 2 ;;
    esac
done
root=$PWD
mkdir -p target

# The old build: a detached worktree of REV under target/ (git ignores
# target/, so the worktree is outside the repository's tracked tree).
if [ -z "${OLD_HEIR:-}" ]; then
    short=$(git rev-parse --short "$rev")
    wt=$root/target/bench-$short
    if [ ! -e "$wt/.git" ]; then
        git worktree prune
        git worktree add --detach "$wt" "$short" >&2
    fi
    (cd "$wt" && cargo build --release --quiet --bin heir) >&2
    OLD_HEIR=$wt/target/release/heir
fi
if [ -z "${NEW_HEIR:-}" ]; then
    cargo build --release --quiet --bin heir >&2
    NEW_HEIR=$root/target/release/heir
fi

scenario=$root/target/bench-common-case.json
cat >"$scenario" <<'EOF'
{
	"global" : {
		"duration" : 10000,
		"default_policy" : "SCHED_FIFO",
		"pi_enabled" : true,
		"seed" : 1
	},
	"tasks" : {
		"t1" : {
			"priority" : 90, "cpus" : [0], "run" : 1000,
			"timer" : { "ref" : "t1", "period" : 5000 }
		},
		"t2" : {
			"priority" : 80, "cpus" : [0], "run" : 4000,
			"timer" : { "ref" : "t2", "period" : 20000 }
		},
		"t3" : {
			"priority" : 70, "cpus" : [0], "run" : 8000,
			"timer" : { "ref" : "t3", "period" : 40000 }
		}
	}
}
EOF
jobs=2750000

# one BIN: prints "wall cpu" (seconds) of one pinned run.
one() {
    local TIMEFORMAT='%3R %3U %3S' t
    t=$( { time taskset -c "$cpu" "$1" sim "$scenario" --json >/dev/null; } 2>&1 )
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t"
}
median() { sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); if (NR % 2) print a[m]; else printf "%.4f\n", (a[m] + a[m + 1]) / 2 }'; }

echo "old: $OLD_HEIR"
echo "new: $NEW_HEIR"
echo "scenario: $scenario ($jobs jobs), pinned to CPU $cpu, $pairs pairs"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
one "$OLD_HEIR" >/dev/null
one "$NEW_HEIR" >/dev/null
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
printf '%-5s %9s %9s %9s %9s %9s %9s\n' pair old_wall new_wall ratio old_cpu new_cpu ratio
for i in $(seq 1 "$pairs"); do
    read -r ow oc < <(one "$OLD_HEIR")
    read -r nw nc < <(one "$NEW_HEIR")
    awk -v i="$i" -v ow="$ow" -v oc="$oc" -v nw="$nw" -v nc="$nc" 'BEGIN {
        printf "%-5s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", i, ow, nw, nw / ow, oc, nc, (oc > 0 ? nc / oc : 0)
    }' | tee -a "$rows"
done
col() { awk -v c="$1" '{ print $c }' "$rows" | median; }
printf '%-5s %9s %9s %9s %9s %9s %9s\n' median "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(col 6)" "$(col 7)"
awk -v j="$jobs" -v o="$(col 5)" -v n="$(col 6)" 'BEGIN {
    printf "ns per job (median CPU time / jobs): old %.1f, new %.1f\n", o * 1e9 / j, n * 1e9 / j
}'
echo "ratio new/old, median of pairs: wall $(col 4), CPU $(col 7)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
