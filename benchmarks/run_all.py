"""Corpus throughput, the suite's overhead against the bare runtime calls, oracle speed.

Measured side by side in one process run (the machines are shared and noisy): the suite's wall
time on the corpus and the sum of the bare runtime calls for the same models are taken in
alternation, `--rounds` times, and the ratio is reported per round and as the median.

    python benchmarks/run_all.py [--cases cases] [-k EXPR] [--rounds 2] [--out reports/bench]
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
from conformance.run import Engine, Options, ResultStore, compile_expression  # noqa: E402
from conformance.runtimes import discover  # noqa: E402
from conformance.specs import SPECS, NotExpressible  # noqa: E402

BUILTIN = ("onnxruntime", "openvino", "onnx-reference")


def macs(case) -> int:
    """Multiply-adds of one evaluation: G*H*(I+H) per step, batch and direction."""
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[case.op]
    h, s = case.hidden_size, case.shape
    d = 2 if case.direction == "bidirectional" else 1
    return g * h * (s["input_size"] + h) * s["seq_length"] * s["batch_size"] * d


def suite_wall(cases, targets, jobs: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp, resume=False)
        engine = Engine(cases, targets, store, Options(out_dir=Path(tmp), jobs=jobs, write_programs=True))
        start = time.perf_counter()
        summary = engine.run()
        wall = time.perf_counter() - start
        store.close()
    return wall, summary.runtime_s


def bare_calls(cases, targets) -> float:
    """The same models on the same runtimes, called directly in this process, summed."""
    programs = {}
    for case in cases:
        for spec in {t.spec for t in targets}:
            programs[(case.id, spec)] = SPECS[spec].translate(case)
    runtimes = {t.ref: t.ref.build() for t in targets}
    total = 0.0
    for case in cases:
        for t in targets:
            prog = programs[(case.id, t.spec)]
            if isinstance(prog, NotExpressible):
                continue
            start = time.perf_counter()
            try:
                runtimes[t.ref].run(prog.model, prog.feeds)
            except Exception:
                pass
            total += time.perf_counter() - start
    return total


def oracle_speed(cases, limit: int = 40) -> dict:
    import oracles
    sample = [c for c in cases if c.valid][:limit]
    start, n_macs = time.perf_counter(), 0
    for c in sample:
        attrs = {k: v for k, v in c.attributes.items() if k != "layout"}
        oracles.evaluate(c.op, attrs, c.tensors, profile="onnx", cache=False)
        n_macs += macs(c)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for c in sample:
        attrs = {k: v for k, v in c.attributes.items() if k != "layout"}
        oracles.evaluate(c.op, attrs, c.tensors, profile="onnx", cache=True)
    warm_fill = time.perf_counter() - start
    start = time.perf_counter()
    for c in sample:
        attrs = {k: v for k, v in c.attributes.items() if k != "layout"}
        oracles.evaluate(c.op, attrs, c.tensors, profile="onnx", cache=True)
    cached = time.perf_counter() - start
    return {"cases": len(sample), "macs_per_evaluation_sum": n_macs,
            "cold_s": cold, "cold_ms_per_case": 1000 * cold / len(sample),
            # each evaluate() runs the recurrence twice (prec and check_prec) for the certificate
            "macs_per_s": 2 * n_macs / cold, "cache_fill_s": warm_fill,
            "cached_ms_per_case": 1000 * cached / len(sample)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "cases"))
    ap.add_argument("-k", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench"))
    ap.add_argument("--production", action="store_true",
                    help="also time the oracle on the production tier (benchmarks/production_oracle.py; minutes)")
    args = ap.parse_args()

    cases, errors = load_paths([args.cases])
    select = compile_expression(args.k)
    cases = [c for c in cases if select(c.id)]
    targets, _ = discover({"onnx": [s for s in SPECS if s.startswith("onnx")]}, use_entry_points=False)
    targets = [t for t in targets if t.runtime in BUILTIN]
    pairs = len(cases) * len(targets)
    print(f"{len(cases)} cases x {len(targets)} targets = {pairs} pairs")

    print("oracle (cold, then cached) ...", flush=True)
    oracle = oracle_speed(cases)
    # warm the cache for the whole corpus so the suite's timing is of a cached run
    suite_wall(cases, targets[:1], jobs=2)

    rounds = []
    for r in range(args.rounds):
        wall, inside = suite_wall(cases, targets, args.jobs)
        bare = bare_calls(cases, targets)
        rounds.append({"suite_wall_s": wall, "suite_time_in_runtime_s": inside, "bare_calls_s": bare,
                       "ratio": wall / bare, "pairs_per_s": pairs / wall})
        print(f"round {r + 1}: suite {wall:.2f} s, bare runtime calls {bare:.2f} s, "
              f"ratio {wall / bare:.2f}x, {pairs / wall:.1f} pairs/s", flush=True)
    result = {
        "cases": len(cases), "targets": [t.id for t in targets], "pairs": pairs, "jobs": args.jobs,
        "rounds": rounds, "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "median_pairs_per_s": statistics.median(r["pairs_per_s"] for r in rounds), "oracle": oracle,
    }
    print(f"oracle: {oracle['cold_ms_per_case']:.1f} ms/case uncached ({oracle['macs_per_s']:.3g} "
          f"multiply-adds/s at 128+192 bits), {oracle['cached_ms_per_case']:.2f} ms/case cached")
    print(f"median suite/bare ratio {result['median_ratio']:.2f}x; "
          f"{result['median_pairs_per_s']:.1f} pairs/s with --jobs {args.jobs}")
    from benchmarks.webnn_overhead import measure as webnn_overhead
    result["webnn"] = webnn_overhead(cases, rounds=args.rounds)  # {"skipped": why} without a WebNN browser
    if args.production:
        from benchmarks.production_oracle import DEFAULT_K
        from benchmarks.production_oracle import measure as production_oracle
        tier, _ = load_paths([ROOT / "cases" / "production"])
        chosen = compile_expression(DEFAULT_K)
        result["production_oracle"] = production_oracle([c for c in tier if chosen(c.id)])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=2))
    print(f"written {out / 'bench.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
