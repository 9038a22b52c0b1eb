#!/bin/sh
# heir exec against glibc: the overhead per pthread operation
# (crates/heir-preload/bench/overhead.c) and rt-tests' pi_stress
# inversions in 5 s (one group on one CPU; two groups on two CPUs) and
# ptsematest's latencies,
# each on glibc, under `heir exec` (defaults), and with --gpm off (glibc's
# barriers) and --mutex keep (only the library loaded). Release build.
# Run as root, on a machine without other real-time work; it holds heir's
# real-time tests' lock file so that heir's tests do not run beside it.
# docs/PERFORMANCE.md, "heir exec".
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p heir-cli -p heir-preload
HEIR=target/release/heir
LOCK="${TMPDIR:-/tmp}/heir-rt-tests.lock"
OVH=$(mktemp /tmp/heir-exec-overhead.XXXXXX)
cc -O2 -pthread crates/heir-preload/bench/overhead.c -o "$OVH"
echo "== overhead (10^7 lock+unlock pairs, 10^6 signals, 20000 round trips)"
for i in 1 2 3; do
  printf 'glibc            '; "$OVH"
  printf 'heir exec        '; "$HEIR" exec -- "$OVH" 2>/dev/null
  printf 'heir exec c=off  '; "$HEIR" exec --cond off -- "$OVH" 2>/dev/null
done
rm -f "$OVH"
command -v pi_stress >/dev/null || { echo "pi_stress missing (apt-get install rt-tests)"; exit 0; }
# ptsematest uses a mutex as a semaphore (unlocked by a thread that does
# not hold it): under heir's PI mutexes those unlocks are refused and it
# measures nothing; --mutex keep runs it on glibc's mutexes with the
# library loaded (docs/EXEC.md).
echo "== ptsematest -a -t -p80 -i100 -d25 -l20000 -q: latency us"
for i in 1 2 3; do
  for mode in glibc keep; do
    case $mode in
      glibc) pre="" ;;
      keep) pre="$HEIR exec --mutex keep --" ;;
    esac
    echo "-- $mode"
    # shellcheck disable=SC2086
    flock "$LOCK" $pre timeout -k 5 60 ptsematest -a -t -p80 -i100 -d25 -l20000 -q 2>/dev/null | grep -- '->'
  done
done
for case in "--groups 1 --uniprocessor" "--groups 2"; do
  echo "== pi_stress --duration 5 $case: inversions"
  for i in 1 2 3; do
    for mode in glibc exec gpm-off keep; do
      case $mode in
        glibc) pre="" ;;
        exec) pre="$HEIR exec --" ;;
        gpm-off) pre="$HEIR exec --gpm off --" ;;
        keep) pre="$HEIR exec --mutex keep --gpm off --" ;;
      esac
      # shellcheck disable=SC2086
      n=$(flock "$LOCK" $pre timeout -k 5 40 pi_stress --duration 5 --quiet $case 2>/dev/null |
          sed -n 's/^Total inversion performed: //p')
      echo "$mode $n"
    done
  done
done
