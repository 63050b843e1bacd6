"""Throughput on a Dask cluster of 1 and 2 conformance workers on this machine, and the per-pair
overhead of the cluster path against the local path.

Side by side, ``--rounds`` times in alternation (the machines are shared and noisy), the same
cases on the same targets through the same Engine: (1) the local path, a warm ``Pool`` of ``--jobs``
worker processes; (2) a LocalCluster of one conformance worker with ``--jobs`` slots; (3) a
LocalCluster of two workers with ``--jobs`` slots each; (4) the local path with twice the jobs,
the fair comparison for (3). Every path is warmed once first (runtimes imported, the oracle's cache
filled), and the clusters are started once, outside the timings (their start-up is reported
apart). The per-pair overhead is (wall of (2) - wall of (1)) / pairs: what a Job's trip through
the client, the scheduler and a Dask worker costs on top of the same worker processes.

    python benchmarks/cluster_overhead.py [--cases cases] [-k EXPR] [--rounds 3] [--jobs 1] [--runtime NAME]...
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case import load_paths  # noqa: E402
from conformance.cluster.client import start_local  # noqa: E402
from conformance.run import Engine, Options, Pool, ResultStore, compile_expression  # noqa: E402
from conformance.run.probe import measured  # noqa: E402
from conformance.runtimes.discovery import discover  # noqa: E402
from conformance.selection import specs_by_format  # noqa: E402


def once(cases, targets, pool) -> tuple[float, int]:
    """(wall s, pairs run) of one Engine run on ``pool``."""
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp, resume=False)
        engine = Engine(cases, targets, store, Options(out_dir=Path(tmp), jobs=pool.jobs, write_programs=False))
        start = time.perf_counter()
        summary = engine.run(pool)
        wall = time.perf_counter() - start
        store.close()
    return wall, sum(summary.counts.values()) - summary.counts.get("not-expressible", 0)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=str(ROOT / "cases"))
    ap.add_argument("-k", dest="expr", default="basic or cell")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of the local pool and of each worker")
    ap.add_argument("--runtime", action="append", default=None, help="default: onnxruntime and onnx-reference")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "cluster.json"))
    args = ap.parse_args(argv)

    select = compile_expression(args.expr)
    cases, _ = load_paths([Path(args.cases)])
    cases = [c for c in cases if select(c.id)]
    targets, _ = discover(specs_by_format(()), (), runtimes=tuple(args.runtime or ("onnxruntime", "onnx-reference")))
    with Pool(args.jobs) as pool:
        targets = measured(targets, pool)
    print(f"{len(cases)} cases on {len(targets)} targets; {args.rounds} rounds; jobs {args.jobs} per pool/worker")

    paths: dict = {}
    started = {}
    with Pool(args.jobs) as local, Pool(2 * args.jobs) as local2:
        paths["local"] = (local, targets)
        for n in (1, 2):
            t0 = time.perf_counter()
            cluster = start_local(targets, [], n, args.jobs)
            started[n] = time.perf_counter() - t0
            paths[f"cluster-{n}"] = (cluster.pool(), cluster.targets, cluster)
        paths["local-2x"] = (local2, targets)
        try:
            for pool, tg, *_ in paths.values():   # warm: imports, the oracle's cache
                once(cases, tg, pool)
            walls: dict = {name: [] for name in paths}
            pairs = 0
            for r in range(args.rounds):
                for name, (pool, tg, *_) in paths.items():
                    wall, pairs = once(cases, tg, pool)
                    walls[name].append(wall)
                    print(f"round {r + 1} {name:10s} {wall:7.2f} s  {pairs / wall:7.1f} pairs/s", flush=True)
        finally:
            for entry in paths.values():
                if len(entry) == 3:
                    entry[2].close()
    med = {name: statistics.median(w) for name, w in walls.items()}
    out = {"cases": len(cases), "targets": len(targets), "pairs": pairs, "rounds": args.rounds, "jobs": args.jobs,
           "cluster_start_s": started, "wall_s": walls, "median_wall_s": med,
           "pairs_per_s": {name: pairs / w for name, w in med.items()},
           "overhead_per_pair_ms": 1000 * (med["cluster-1"] - med["local"]) / pairs,
           "overhead_per_pair_ms_2_workers": 1000 * (med["cluster-2"] - med["local-2x"]) / pairs,
           "speedup_2_workers": med["cluster-1"] / med["cluster-2"]}
    print(f"\n{pairs} pairs; median pairs/s: " + ", ".join(f"{n} {v:.1f}" for n, v in out["pairs_per_s"].items()))
    print(f"cluster path overhead per pair: {out['overhead_per_pair_ms']:.2f} ms (1 worker vs local, jobs "
          f"{args.jobs}); {out['overhead_per_pair_ms_2_workers']:.2f} ms (2 workers vs local with 2x jobs)")
    print(f"2 workers vs 1: {out['speedup_2_workers']:.2f}x; cluster start-up: "
          + ", ".join(f"{n} worker(s) {s:.1f} s" for n, s in started.items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
