"""The suite's cost per WebNN pair against the bare WebNN calls, in the same browser build.

Side by side, ``--rounds`` times in alternation: (1) the suite (``Engine`` on the webnn target of
one device, one spec: translation, the worker, the page round trips in batches of the target's
``batch`` documents, the comparison with a cached oracle, results written), its wall time per pair
on a warm worker (its browser started: the once-per-run start is reported apart); (2) the bare
calls: the same written documents replayed in a page of the same browser executable, timing only
``build()`` and
``dispatch() + readTensor()`` inside the page (``performance.now()``), summed; (3) the suite with
``--no-batch`` (one round trip per pair). The ratio is (1)/(2);
the goal is at most 1.5x. Also reported: the time the suite's workers spent inside the runtime
(the whole page round trip, document read and outputs decoded included) against the bare calls.

    python benchmarks/webnn_overhead.py [--cases cases] [-k EXPR] [--rounds 3] [--device CPU]
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
from conformance.run import Engine, Options, Pool, ResultStore, compile_expression  # noqa: E402
from conformance.specs import SPECS, NotExpressible, translate  # noqa: E402

SPEC = "webnn-ed-20260626"


def webnn_target(device: str = "CPU"):
    from conformance.runtimes import webnn
    found, gaps = webnn.targets({"webnn": [SPEC]})
    for t in found:
        if t.device in (device, "default"):
            return t, ""
    return None, "; ".join(reason for _, reason in gaps) or "no webnn target"


def suite(cases, target, batch: bool = True, pool=None) -> tuple[float, float, int]:
    """(wall s, time inside the runtime s, pairs run) of one suite run on ``target`` (its pairs in
    batches of ``target.batch`` documents per page round trip, or one by one); with ``pool``, on
    that pool's warm worker (its browser started), else on a fresh one."""
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp, resume=False)
        engine = Engine(cases, [target], store, Options(out_dir=Path(tmp), jobs=1, write_programs=True, batch=batch))
        start = time.perf_counter()
        summary = engine.run(pool)
        wall = time.perf_counter() - start
        store.close()
        records = [json.loads(line) for line in (Path(tmp) / "results.jsonl").read_text().splitlines()]
    ran = sum(1 for r in records if r["verdict"] != "not-expressible")
    return wall, summary.runtime_s, ran


def bare(documents: list, runtime) -> float:
    """Seconds of build + dispatch + read inside the page, summed over the documents."""
    total = 0.0
    for i in range(0, len(documents), 50):
        for t in runtime.timings(documents[i:i + 50]):
            if t["ok"]:
                total += (t["build_ms"] + t["compute_ms"]) / 1000.0
    return total


def measure(cases, rounds: int = 3, device: str = "CPU") -> dict:
    from conformance.runtimes.webnn import WebNN
    target, why = webnn_target(device)
    if target is None:
        return {"skipped": why}
    cases = [c for c in cases if not isinstance(translate(SPECS[SPEC], c), NotExpressible)]
    folder = Path(tempfile.mkdtemp(prefix="webnn-bench-"))
    documents = []
    for i, case in enumerate(cases):
        program = translate(SPECS[SPEC], case)
        where = folder / str(i)
        where.mkdir()
        SPECS[SPEC].write(program, where)
        documents.append(program.files["model"])
    runtime = WebNN(**dict(target.ref.kwargs))
    cold, _, _ = suite(cases, target)  # a fresh worker: starts its browser; warms the oracle's cache
    bare(documents, runtime)
    out = []
    with Pool(1) as pool:
        suite(cases, target, pool=pool)  # the pool's worker and its browser, started once
        warm_start = cold - suite(cases, target, pool=pool)[0]
        for r in range(rounds):
            wall, inside, pairs = suite(cases, target, pool=pool)
            alone = bare(documents, runtime)
            single, _, _ = suite(cases, target, batch=False, pool=pool)
            out.append({"suite_wall_s": wall, "suite_inside_runtime_s": inside, "bare_s": alone, "pairs": pairs,
                        "suite_ms_per_pair": 1000 * wall / pairs, "bare_ms_per_pair": 1000 * alone / pairs,
                        "ratio": wall / alone, "inside_ratio": inside / alone,
                        "no_batch_wall_s": single, "no_batch_ratio": single / alone})
            print(f"webnn round {r + 1}: suite {1000 * wall / pairs:.2f} ms/pair ({1000 * inside / pairs:.2f} "
                  f"inside the runtime), bare build+compute {1000 * alone / pairs:.2f} ms/pair: ratio "
                  f"{wall / alone:.2f}x (inside {inside / alone:.2f}x); --no-batch {1000 * single / pairs:.2f} "
                  f"ms/pair, {single / alone:.2f}x", flush=True)
    print(f"webnn: a fresh worker (its browser's start) adds {warm_start:.2f} s once per run", flush=True)
    if runtime._session is not None:
        runtime._session.close()
    return {"target": target.id, "rounds": out, "median_ratio": statistics.median(r["ratio"] for r in out),
            "median_inside_ratio": statistics.median(r["inside_ratio"] for r in out),
            "median_no_batch_ratio": statistics.median(r["no_batch_ratio"] for r in out),
            "worker_start_s": warm_start, "goal": 1.5}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "cases"))
    ap.add_argument("-k", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench"))
    args = ap.parse_args()
    cases, _ = load_paths([args.cases])
    select = compile_expression(args.k)
    result = measure([c for c in cases if select(c.id)], args.rounds, args.device)
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "webnn.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
