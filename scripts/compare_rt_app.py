#!/usr/bin/env python3
"""heir run vs rt-app on the same files: response p50/p99, per-job run error,
CPU overhead per job. Called by scripts/compare-rt-app.sh (which says how);
Python 3 standard library only.

Definitions, the same for both programs:
- response of a job: from its period's start (the timer's release) to the
  job's end (the thread reaching its next timer). heir: the report's
  response_us (completion - release). rt-app: c_period - slack of each log
  row (slack = next release - end of the phase's last event; one row per
  job for a phase "events..., timer"), so both include the wake-up latency.
- run error of a job: its run events' time against their nominal sum, %.
  rt-app: run / c_duration - 1 (its "run" column is wall-clock time of the
  run events, preemption included). heir: the same by the wall clock
  (calibration.run_wall_error_pct) and by the thread's CPU clock
  (calibration.run_error_pct, what heir's run means).
- CPU overhead per job: the process's CPU time (user + system, getrusage of
  the child: every thread) minus the nominal run time of the jobs it
  completed, divided by those jobs.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# Keys of heir's that rt-app does not know.
HEIR_GLOBAL = {"pi_cv", "seed", "bwi_affinity", "gpm", "ipc"}

PERIODIC = {
    "global": {"duration": 10, "default_policy": "SCHED_FIFO"},
    "tasks": {
        "A": {"priority": 30, "cpus": [0], "run": 1000,
              "timer": {"ref": "A", "period": 10000}},
        "B": {"priority": 20, "cpus": [0], "run": 3000,
              "timer": {"ref": "B", "period": 20000}},
        "C": {"priority": 10, "cpus": [0], "run": 5000,
              "timer": {"ref": "C", "period": 40000}},
    },
}


def strip_comments(text):
    """Removes /* */ and // comments and trailing commas (heir's reader
    accepts them), leaving strings alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("repeated keys (rt-app's reader would keep one)")
    return dict(pairs)


def load(path):
    with open(path) as f:
        return json.loads(strip_comments(f.read()), object_pairs_hook=no_duplicates)


READABLE_EVENT = re.compile(r"^(run|runtime|sleep|timer|lock|unlock)\d*$")
TASK_KEYS = {"priority", "policy", "cpus", "delay", "instance", "loop"}


def rt_app_copy(scenario, duration, calibration, logdir, basename):
    """rt-app's copy of a heir file: heir's keys stripped (the resources
    object: rt-app makes its mutexes from the lock events), or None with
    the reason when it uses something rt-app has not (conditions, queues,
    RPC, gangs, phases, random durations)."""
    g = {k: v for k, v in scenario.get("global", {}).items() if k not in HEIR_GLOBAL}
    g.update({"duration": duration, "calibration": calibration, "logdir": logdir,
              "log_basename": basename, "lock_pages": False})
    for name, r in scenario.get("resources", {}).items():
        if r.get("type", "mutex") not in ("mutex", "timer"):
            return None, f"resource {name} is a {r.get('type')}"
        if r.get("protocol", "inherit") not in ("inherit", "none"):
            return None, f"mutex {name} uses protocol {r.get('protocol')}"
    tasks = {}
    for tname, t in scenario["tasks"].items():
        for k, v in t.items():
            if k in TASK_KEYS:
                continue
            if not READABLE_EVENT.match(k):
                return None, f"task {tname} has {k!r}"
            if k.startswith(("run", "sleep")) and not isinstance(v, int):
                return None, f"task {tname}: {k} is not a fixed duration"
        tasks[tname] = dict(t)
    return {"global": g, "tasks": tasks}, None


def heir_copy(scenario, duration):
    s = json.loads(json.dumps(scenario))
    s.setdefault("global", {})["duration"] = duration
    # heir calibrates each CPU unless given a figure; rt-app is given one,
    # so heir is too (it only sizes the loops between reads of the CPU clock).
    s["global"]["calibration"] = 1
    return s


def nominal_run_us(task):
    return sum(v for k, v in task.items() if re.match(r"^run\d*$", k))


def run_measured(argv):
    """Runs argv; returns (stdout, stderr, CPU seconds of the process — user
    + system of all its threads, from wait4's rusage —, wall seconds, exit
    code)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), ru.ru_utime + ru.ru_stime, wall, p.returncode


def quantile(v, q):
    if not v:
        return None
    s = sorted(v)
    i = min(max(int(-(-q * len(s) // 1)), 1), len(s)) - 1
    return s[i]


def rt_app_logs(logdir, basename):
    """Per thread: rows of (run, period, slack, c_duration, c_period)."""
    rows = {}
    for f in sorted(os.listdir(logdir)):
        m = re.match(re.escape(basename) + r"-(.+)-(\d+)\.log$", f)
        if not m:
            continue
        cols = None
        for line in open(os.path.join(logdir, f)):
            if line.startswith("#idx"):
                cols = line[1:].split()
                continue
            if line.startswith("#") or not line.strip() or cols is None:
                continue
            v = dict(zip(cols, (int(x) for x in line.split())))
            rows.setdefault(m.group(1), []).append(v)
    return rows


def calibrate_rt_app(rtapp, cpu, tmp, guess):
    """rt-app's ns per loop of its own busy loop on `cpu`: runs a 10 ms
    run / 20 ms period FIFO-50 task for 1 s with a guess, reads the log's
    run against c_duration (median over jobs), corrects, repeats until
    within 0.3 % (at most 6 runs)."""
    cal = guess
    for _ in range(6):
        d = tempfile.mkdtemp(dir=tmp)
        f = os.path.join(d, "cal.json")
        json.dump({"global": {"duration": 1, "calibration": max(int(round(cal)), 1),
                              "default_policy": "SCHED_FIFO", "logdir": d,
                              "log_basename": "cal", "lock_pages": False},
                   "tasks": {"cal": {"priority": 50, "cpus": [cpu], "run": 10000,
                                     "timer": {"ref": "cal", "period": 20000}}}},
                  open(f, "w"))
        _, err, _, _, code = run_measured([rtapp, f])
        if code != 0:
            sys.exit(f"rt-app failed on its calibration file: {err.strip()[-400:]}")
        rows = rt_app_logs(d, "cal").get("cal", [])[1:]
        if not rows:
            sys.exit("rt-app wrote no log rows for its calibration file")
        used = max(int(round(cal)), 1)
        ratio = statistics.median(r["run"] / r["c_duration"] for r in rows)
        cal = used * ratio
        if abs(ratio - 1) < 0.003 or max(int(round(cal)), 1) == used:
            break
    # rt-app's calibration is an integer (ns per loop): with its ~17 ns loop
    # the rounding alone is up to 3 %; the figure reported is what was used.
    return max(int(round(cal)), 1), ratio, cal


def compare(name, scenario, args, rt_cal, tmp):
    d = tempfile.mkdtemp(prefix=re.sub(r"\W", "_", name) + "-", dir=tmp)
    rcopy, why = rt_app_copy(scenario, args.duration, rt_cal, d, "rta")
    if rcopy is None:
        print(f"{name}: skipped ({why})")
        return None
    fr = os.path.join(d, "rt-app.json")
    fh = os.path.join(d, "heir.json")
    json.dump(rcopy, open(fr, "w"), indent=1)
    json.dump(heir_copy(scenario, args.duration), open(fh, "w"), indent=1)
    nominal = {t: nominal_run_us(v) for t, v in scenario["tasks"].items()}

    out, err, h_cpu, h_wall, code = run_measured(
        [args.heir, "run", fh, "--json", "--placement", "as-written"])
    if code not in (0, 3):
        sys.exit(f"heir run {fh} failed ({code}): {err.strip()[-400:]}")
    h = json.loads(out)
    for line in err.strip().splitlines():
        # heir's notes: other real-time threads on the CPU, late starts.
        print(f"  heir: {line}")
    _, err, r_cpu, r_wall, code = run_measured([args.rt_app, fr])
    if code != 0:
        sys.exit(f"rt-app {fr} failed ({code}): {err.strip()[-400:]}")
    logs = rt_app_logs(d, "rta")

    res = {"file": name, "tasks": {}, "heir_cpu_s": h_cpu, "rt_app_cpu_s": r_cpu}
    h_jobs = h_nominal = r_jobs = r_nominal = 0
    r_err = []
    for t in scenario["tasks"]:
        ht = h["tasks"].get(t, {})
        hr = ht.get("response_us") or {}
        rows = [r for r in logs.get(t, []) if r["c_period"] > 0]
        resp = [r["c_period"] - r["slack"] for r in rows]
        r_err += [100.0 * (r["run"] / r["c_duration"] - 1) for r in rows if r["c_duration"] > 0]
        res["tasks"][t] = {
            "heir": {"jobs": ht.get("jobs", 0), "p50": hr.get("p50"), "p99": hr.get("p99")},
            "rt_app": {"jobs": len(rows), "p50": quantile(resp, 0.5), "p99": quantile(resp, 0.99)},
        }
        h_jobs += ht.get("jobs", 0)
        h_nominal += ht.get("jobs", 0) * nominal[t]
        r_jobs += len(rows)
        r_nominal += sum(r["c_duration"] for r in rows)
    c = h.get("calibration", {})
    res["heir"] = {
        "jobs": h_jobs,
        "run_error_cpu_pct": c.get("run_error_pct"),
        "run_error_wall_pct": c.get("run_wall_error_pct"),
        "overhead_us_per_job": (h_cpu * 1e6 - h_nominal) / h_jobs if h_jobs else None,
    }
    res["rt_app"] = {
        "jobs": r_jobs,
        "run_error_wall_pct": {"p50": quantile(r_err, 0.5), "p99": quantile(r_err, 0.99)},
        "overhead_us_per_job": (r_cpu * 1e6 - r_nominal) / r_jobs if r_jobs else None,
    }
    return res


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def print_table(results, args, rt_cal, ratio):
    print(f"\nduration {args.duration} s per program per file; load average before: {args.load}")
    print(f"rt-app calibration: {rt_cal} ns per loop, an integer (its last calibration run: run/c_duration = {ratio:.4f})")
    print("\nresponse (period start -> job end), us")
    print("| file | task | jobs heir / rt-app | p50 heir | p50 rt-app | p99 heir | p99 rt-app |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for t, v in r["tasks"].items():
            h, a = v["heir"], v["rt_app"]
            print(f"| {r['file']} | {t} | {h['jobs']} / {a['jobs']} | {fmt(h['p50'])} | {fmt(a['p50'])} "
                  f"| {fmt(h['p99'])} | {fmt(a['p99'])} |")
    print("\nper-job run error (%, p50 / p99) and CPU overhead per job (us: process CPU time - nominal run, / jobs)")
    print("| file | heir CPU clock | heir wall clock | rt-app wall clock (run/c_duration) | overhead heir | overhead rt-app | process CPU s heir / rt-app |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        h, a = r["heir"], r["rt_app"]
        pc = lambda e: "-" if not e else f"{fmt(e.get('p50'), '+.3f')} / {fmt(e.get('p99'), '+.3f')}"
        print(f"| {r['file']} | {pc(h['run_error_cpu_pct'])} | {pc(h['run_error_wall_pct'])} "
              f"| {pc(a['run_error_wall_pct'])} | {fmt(h['overhead_us_per_job'])} | {fmt(a['overhead_us_per_job'])} "
              f"| {r['heir_cpu_s']:.3f} / {r['rt_app_cpu_s']:.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heir", required=True)
    ap.add_argument("--rt-app", default="rt-app")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rt-app-guess", type=float, default=17.0,
                    help="first guess of rt-app's ns per loop (corrected by its log)")
    ap.add_argument("--calibration-cpu", type=int, default=0)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("files", nargs="*", help="heir files rt-app can read once stripped")
    args = ap.parse_args()
    args.load = open("/proc/loadavg").read().split()[0:3]
    with tempfile.TemporaryDirectory(prefix="heir-vs-rt-app-") as tmp:
        rt_cal, ratio, measured = calibrate_rt_app(args.rt_app, args.calibration_cpu, tmp, args.rt_app_guess)
        print(f"rt-app's loop: {measured:.2f} ns per loop on CPU {args.calibration_cpu} (given to rt-app: {rt_cal})", flush=True)
        results = []
        todo = [("periodic (3 FIFO tasks, CPU 0)", PERIODIC)]
        for f in args.files:
            try:
                todo.append((os.path.basename(f), load(f)))
            except (ValueError, OSError) as e:
                print(f"{f}: skipped ({e})")
        for name, s in todo:
            print(f"{name}: heir run, then rt-app, {args.duration} s each ...", flush=True)
            r = compare(name, s, args, rt_cal, tmp)
            if r:
                results.append(r)
        args.load = f"{' '.join(args.load)} (after: {' '.join(open('/proc/loadavg').read().split()[0:3])})"
        print_table(results, args, rt_cal, ratio)
        if args.json:
            json.dump({"rt_app_calibration": rt_cal, "results": results}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
