#!/usr/bin/env bash
# `heir sim` and `heir analyze` on generated files of 10 .. 100,000 tasks
# (issue 26, goals 2 and 3): the whole process, reading the file included.
#
# Usage: scripts/bench-cli-scale.sh [TASKS...]      (default 10 10000 100000)
# Environment: HEIR (default target/release/heir, built if missing), LOCKS
# (default "none mutex"), KEEP=DIR to keep the generated files there.
#
# Each file is `heir_sim::bench::periodic_set` (seed 1; the sets of
# scripts/bench-sim-scale.sh) on 1 CPU, written by the sim_scale example's
# `--json` (every task pinned to CPU 0; global.duration long enough for
# about 2 M jobs, at least 1 s). Per file:
# - `heir sim FILE --cpus 1 --json` (stdout to /dev/null): CPU time
#   (user + sys, GNU time), peak RSS, jobs (summed from the report);
# - the same with `--duration 0.000001`: reading, building and the
#   report alone ("setup");
# - `heir analyze FILE --json`: CPU time, peak RSS.
# "ns/job" = sim CPU / jobs; "ns/job sim" = (sim − setup) CPU / jobs;
# "KB/task" = peak RSS / tasks; "sim KB/task" = (peak − setup peak) / tasks,
# what running adds to the read and built scenario and simulator;
# "scenario MB" the heap the read model holds (the scenario_bytes example:
# a counting allocator), "beyond KB/task" = (peak RSS − scenario) / tasks,
# issue 26's "memory per task beyond the scenario itself".
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 10000 100000)
heir=${HEIR:-target/release/heir}
[ -x "$heir" ] || cargo build --release --quiet -p heir-cli
cargo build --release --quiet -p heir-sim --example sim_scale --example scenario_bytes
gen=target/release/examples/sim_scale
scen=target/release/examples/scenario_bytes
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# measure OUT ARGS...: runs heir, stdout to OUT; prints "cpu_s peak_kb".
measure() {
    local out=$1
    shift
    /usr/bin/time -f '%U %S %M' -o "$work/time" "$heir" "$@" >"$out"
    awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$work/time"
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F), $($heir --version 2>/dev/null || echo heir)"
echo
echo "| tasks | mutexes | file MB | simulated s | jobs | sim CPU s | setup CPU s | ns/job | ns/job sim | peak RSS MB | setup peak MB | KB/task | sim KB/task | scenario MB | beyond KB/task | analyze CPU s | analyze peak MB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
    for locks in ${LOCKS:-none mutex}; do
        f="$work/$locks-$n.json"
        "$gen" "$n" 1 "$locks" --json "$f"
        secs=$(sed -n 's/.*"duration": \([0-9.]*\).*/\1/p' "$f" | head -1)
        read -r cpu peak < <(measure "$work/sim.json" sim "$f" --cpus 1 --json)
        jobs=$(python3 -c 'import json,sys; print(sum(t["jobs"] for t in json.load(open(sys.argv[1]))["tasks"].values()))' "$work/sim.json")
        read -r scpu speak < <(measure /dev/null sim "$f" --cpus 1 --json --duration 0.000001)
        read -r acpu apeak < <(measure /dev/null analyze "$f" --json)
        read -r sbytes _ < <("$scen" "$f")
        awk -v n="$n" -v l="$locks" -v fb="$(stat -c %s "$f")" -v s="$secs" -v j="$jobs" \
            -v c="$cpu" -v sc="$scpu" -v p="$peak" -v sp="$speak" -v ac="$acpu" -v ap="$apeak" \
            -v sb="$sbytes" 'BEGIN {
            printf "| %d | %s | %.2f | %s | %d | %.3f | %.3f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.3f | %.1f |\n",
                n, l, fb / 1048576, s, j, c, sc, c * 1e9 / j, (c - sc) * 1e9 / j, p / 1024, sp / 1024,
                p / n, (p - sp) / n, sb / 1048576, (p - sb / 1024) / n, ac, ap / 1024 }'
    done
done
