#!/usr/bin/env python3
"""One SimSo run of a task set written by heir's sim_scale example.

Usage: simso_run.py TASKSET CPUS SECONDS

TASKSET has one `period_ms wcet_ms priority` line per task (heir-sim's
`bench::periodic_set`, written with `sim_scale ... --simso FILE`). SimSo
simulates it for SECONDS with its global rate-monotonic scheduler
(`simso.schedulers.RM`: heir's priorities are rate-monotonic too, on 98
levels) on CPUS processors. SimSo has no shared resources: a set with
mutexes runs without its critical sections (same work per job).

Prints one line: `jobs cpu_s ns_per_job peak_rss_kb` (CPU time of this
process around the simulation; peak RSS of the process, interpreter
included).
"""
import resource
import sys
import time

from simso.configuration import Configuration
from simso.core import Model


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, cpus, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    cfg = Configuration()
    cfg.duration = int(seconds * 1000 * cfg.cycles_per_ms)
    with open(path) as f:
        for i, line in enumerate(f):
            period, wcet, _prio = line.split()
            cfg.add_task(name=f"t{i}", identifier=i + 1, period=float(period),
                         activation_date=0, wcet=float(wcet),
                         deadline=float(period))
    for c in range(cpus):
        cfg.add_processor(name=f"CPU{c}", identifier=c + 1)
    cfg.scheduler_info.clas = "simso.schedulers.RM"
    cfg.check_all()
    model = Model(cfg)
    t0 = time.process_time()
    model.run_model()
    cpu = time.process_time() - t0
    jobs = sum(len(t.jobs) for t in model.results.tasks.values()) \
        if isinstance(model.results.tasks, dict) \
        else sum(len(t.jobs) for t in model.results.tasks)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{jobs} {cpu:.3f} {cpu * 1e9 / max(jobs, 1):.1f} {rss}")


if __name__ == "__main__":
    main()
