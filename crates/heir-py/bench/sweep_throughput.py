"""Sweep throughput: heir.sweep in one process, then on a 2-worker LocalCluster.

    python crates/heir-py/bench/sweep_throughput.py [SETS_PER_POINT]   (default 1000; docs/PERFORMANCE.md used 4000)

examples/sweeps/small.json with SETS_PER_POINT sets per point; prints task sets per second
for both and checks that the two CSVs are equal.
"""
import json, time, sys
import heir
from distributed import Client, LocalCluster
def main():
    cfg = json.load(open("examples/sweeps/small.json"))
    cfg["sets_per_point"] = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    cfg["output"] = {"csv": "/tmp/b.csv", "svg": "/tmp/b.svg"}
    total = 20 * cfg["sets_per_point"]
    t = time.perf_counter(); a = heir.sweep(cfg); t1 = time.perf_counter() - t
    print(f"single process: {total} sets in {t1:.2f} s = {total/t1:.0f} sets/s")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    heir.sweep({**cfg, "sets_per_point": 10}, client=client)  # warm the workers
    t = time.perf_counter(); b = heir.sweep(cfg, client=client); t2 = time.perf_counter() - t
    print(f"LocalCluster 2 workers: {total} sets in {t2:.2f} s = {total/t2:.0f} sets/s ({b.chunks} chunks)")
    assert a.csv == b.csv
    client.close(); cluster.close()
    
if __name__ == '__main__':
    main()
