#!/usr/bin/env bash
# The simulator's scaling benchmark (issue 12, goal 1), in one run:
# heir-sim on generated periodic sets of 10 .. 100,000 tasks, on 1 and 4
# CPUs (global fixed priority), without and with shared PI mutexes
# (one per 8 tasks), reporting ns per job and peak RSS — one process per
# point, so each peak is that point's own — and SimSo on the same sets for
# the ratio (in a venv this script creates: `pip install simso`, else
# SimSo's git version through pip).
#
# Usage: scripts/bench-sim-scale.sh [TASKS...]     (default 10 100 1000 10000 100000)
# Environment: SIMSO_MAX_TASKS (default 10000: SimSo's global RM scans its
# ready list per decision and would take hours beyond), SIMSO_JOBS (default
# 20000: SimSo simulates long enough for about this many jobs, at most as
# long as heir), SIMSO_TIMEOUT (s per SimSo point, default 600),
# SIMSO_VENV (default target/simso-venv), NO_SIMSO=1 to skip SimSo,
# SIM_SCALE_BIN: another build of the sim_scale example to measure (e.g.
# of an older commit, for a before/after table; not rebuilt).
#
# heir simulates each point long enough for about 2 M jobs (at least 1 s).
# "ns/job" is CPU time (heir: /proc/thread-self/schedstat around the
# simulation; SimSo: time.process_time() around model.run_model()) per job.
# "sim KB/task" is heir's peak RSS minus its RSS once the scenario was
# built, per task: what the simulator adds.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000 10000 100000)
simso_max=${SIMSO_MAX_TASKS:-10000}
simso_jobs=${SIMSO_JOBS:-20000}
simso_timeout=${SIMSO_TIMEOUT:-600}
venv=${SIMSO_VENV:-target/simso-venv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bin=${SIM_SCALE_BIN:-}
if [ -z "$bin" ]; then
    cargo build --release --quiet -p heir-sim --example sim_scale
    bin=target/release/examples/sim_scale
fi

simso=""
if [ "${NO_SIMSO:-0}" != 1 ]; then
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    if "$venv/bin/python" -c 'import simso' 2>/dev/null; then
        simso="$venv/bin/python scripts/simso_run.py"
    elif "$venv/bin/pip" install --quiet simso >"$work/pip.log" 2>&1 \
        || "$venv/bin/pip" install --quiet "git+https://github.com/MaximeCheramy/simso" >>"$work/pip.log" 2>&1; then
        simso="$venv/bin/python scripts/simso_run.py"
    else
        echo "SimSo did not install (pip log below); heir only" >&2
        tail -20 "$work/pip.log" >&2
    fi
fi
if [ -n "$simso" ]; then
    echo "SimSo $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("simso"))'), $("$venv/bin/python" --version)"
fi
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
echo
echo "| tasks | CPUs | mutexes | heir: simulated s | jobs | ns/job | peak RSS MB | sim KB/task | SimSo: simulated s | jobs | ns/job | peak RSS MB | SimSo/heir ns/job |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
    for cpus in 1 4; do
        for locks in none mutex; do
            read -r _ _ _ secs jobs _events _wall cpu nsjob peak scen < <("$bin" "$n" "$cpus" "$locks" --simso "$work/set.txt")
            simkb=$(awk -v p="$peak" -v s="$scen" -v n="$n" 'BEGIN { printf "%.2f", (p - s) / n }')
            row="| $n | $cpus | $locks | $secs | $jobs | $nsjob | $(awk -v p="$peak" 'BEGIN { printf "%.1f", p / 1024 }') | $simkb"
            if [ -z "$simso" ]; then
                row="$row | – | – | – | – | – |"
            elif [ "$n" -gt "$simso_max" ]; then
                row="$row | not run (> $simso_max tasks) | | | | |"
            else
                ssecs=$(awk -v j="$jobs" -v s="$secs" -v t="$simso_jobs" 'BEGIN { x = t * s / j; if (x > s) x = s; if (x < 0.05) x = 0.05; printf "%.3f", x }')
                if out=$(timeout "$simso_timeout" $simso "$work/set.txt" "$cpus" "$ssecs" 2>"$work/simso.err"); then
                    read -r sjobs _scpu snsjob srss <<<"$out"
                    ratio=$(awk -v a="$snsjob" -v b="$nsjob" 'BEGIN { printf "%.0f", a / b }')
                    note=""
                    [ "$locks" = mutex ] && note=" (no mutexes in SimSo)"
                    row="$row | $ssecs | $sjobs | $snsjob | $(awk -v p="$srss" 'BEGIN { printf "%.1f", p / 1024 }') | ${ratio}×$note |"
                else
                    row="$row | $ssecs | timeout ${simso_timeout} s or error: $(tail -1 "$work/simso.err") | | | |"
                fi
            fi
            echo "$row"
        done
    done
done
