"""The main benchmark: every figure of the speed goals (issue 17, docs/speed.md), measured side by
side in one run, and written to benchmarks/README.md with the machine and the date.

    python benchmarks/run_all.py [--cases cases] [-k EXPR] [--rounds 1] [--jobs 2] [--fuzz-seconds 45]
                                 [--engines] [--no-readme] [--out reports/bench]

Per round, in this order: the suite on the corpus with every target of ``nox -s conformance`` (the
runtimes; ``--engines`` adds tract, MNN, IREE and TVM), batched (the default) and with
``--no-batch``; then the same programs called on the bare runtimes in this process, one program per
call, summed. The ratio is the suite's wall time over the bare sum divided by the cores used
(``--jobs``): the unbatched physical limit. Then, once: the seconds to the first verdict of
``conformance run`` (benchmarks/startup.py's launcher, a warm cache), the fuzzer's cases per second
per core (benchmarks/fuzz_throughput.py, as ``conformance fuzz --no-shrink`` runs: the shipped
expectations and regressions known) with onnxruntime and with every runtime target, and the oracle.
Timings only: the tests assert none of this.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case import load_paths  # noqa: E402
from conformance.run import Engine, Options, Pool, ResultStore, compile_expression  # noqa: E402
from conformance.run.probe import measured  # noqa: E402
from conformance.specs import SPECS, NotExpressible, translate  # noqa: E402

README = ROOT / "benchmarks" / "README.md"
BEGIN, END = "<!-- run_all: begin -->", "<!-- run_all: end -->"


def corpus_targets(engines: bool) -> list:
    """The targets ``nox -s conformance`` runs here (with --engines, ``conformance-all``'s), their
    configuration measured (the batch rule reads the measured precision)."""
    from benchmarks.fuzz_throughput import target_set
    with Pool(2) as pool, tempfile.TemporaryDirectory() as tmp:
        return measured(target_set("all" if engines else "runtimes"), pool, folder=tmp)


def macs(case) -> int:
    """Multiply-adds of one evaluation: G*H*(I+H) per step, batch and direction."""
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[case.op]
    h, s = case.hidden_size, case.shape
    d = 2 if case.direction == "bidirectional" else 1
    return g * h * (s["input_size"] + h) * s["seq_length"] * s["batch_size"] * d


def suite_wall(cases, targets, jobs: int, batch: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp, resume=False)
        engine = Engine(cases, targets, store, Options(out_dir=Path(tmp), jobs=jobs, batch=batch))
        start, main_cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        summary = engine.run()
        wall = time.perf_counter() - start
        main_cpu, children = time.process_time() - main_cpu, _children_cpu() - children
        store.close()
    # CPU seconds: this (the main) process's, and its workers' (reaped when the pool closes, with what
    # they waited for: WebNN's browsers)
    return {"wall_s": wall, "in_runtime_s": summary.runtime_s, "in_runtime_by": dict(summary.runtime_by),
            "verdicts": dict(summary.counts), "main_cpu_s": main_cpu, "workers_cpu_s": children}


def _children_cpu() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bare_calls(cases, targets, log: str, skip: int = 0) -> None:
    """The same programs on the same runtimes, called directly in this process, one program per
    call; each call appended to ``log`` as ``index runtime wall-seconds cpu-seconds`` as it ends (a
    call that kills the process is the one after the last line). Calls up to ``skip`` are not made."""
    with tempfile.TemporaryDirectory() as tmp, open(log, "a", buffering=1) as out:
        programs: dict = {}
        for ci, case in enumerate(cases):
            for spec in sorted({t.spec for t in targets}):
                prog = translate(SPECS[spec], case)   # as the engine translates
                if not isinstance(prog, NotExpressible) and prog.format != "onnx":
                    folder = Path(tmp) / f"{ci}-{spec}"
                    folder.mkdir()
                    SPECS[spec].write(prog, folder)
                programs[(ci, spec)] = prog
        runtimes: dict = {}
        index = -1
        for ci, case in enumerate(cases):
            for t in targets:
                prog = programs[(ci, t.spec)]
                if isinstance(prog, NotExpressible) or case.op in t.gates:
                    continue
                index += 1
                if index < skip:
                    continue
                if t.ref not in runtimes:
                    runtimes[t.ref] = t.ref.build()
                    if hasattr(runtimes[t.ref], "keep"):  # OpenVINO keeps compiled models: not here,
                        runtimes[t.ref].keep = 0          # where every call compiles its program
                start, cpu = time.perf_counter(), time.process_time()
                try:
                    runtimes[t.ref].run(prog.runtime_input(), prog.feeds)
                except Exception:  # noqa: BLE001, S110 - a refusal costs what it costs
                    pass
                out.write(f"{index} {t.runtime} {time.perf_counter() - start:.6f} {time.process_time() - cpu:.6f}\n")


def bare_in_child(cases, targets) -> tuple[dict, int]:
    """bare_calls for each runtime configuration in a fresh interpreter of its own, as the suite's
    workers are (two WebNN browsers cannot share one process's Playwright). A call that kills its
    interpreter (the corpus has crashing cases) is left out, and the calls after it go on in a new
    one. Seconds per runtime, and how many calls killed their interpreter."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    by: Counter = Counter()
    crashed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, ref in enumerate(dict.fromkeys(t.ref for t in targets)):
            log, skip = Path(tmp) / f"{n}.log", 0
            log.touch()
            while True:
                try:
                    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
                        ex.submit(bare_calls, cases, [t for t in targets if t.ref == ref], str(log), skip).result()
                    break
                except BrokenProcessPool:  # the call after the last one logged killed it
                    lines = log.read_text().split()
                    skip = max(int(lines[-4]) + 2 if lines else 0, skip + 1)
                    crashed += 1
            for line in log.read_text().splitlines():
                _, runtime, seconds, cpu = line.split()
                by[runtime] += float(seconds)
                by["cpu"] += float(cpu)
    return dict(by), crashed


def startup(rounds: int = 5) -> dict:
    """Seconds to the first verdict of ``conformance run cases/gru --runtime onnxruntime --spec
    onnx-14 --jobs 1`` and to its end (medians), the caches warm."""
    from benchmarks.startup import SCRIPT, launch
    args = ["run", "cases/gru", "--runtime", "onnxruntime", "--spec", "onnx-14", "--jobs", "1", "--fresh", "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "conformance"
        script.write_text(SCRIPT)
        launch(script, ROOT, args, Path(tmp) / "out", pyc=True)   # warms the caches
        runs = [launch(script, ROOT, args, Path(tmp) / "out", pyc=True) for _ in range(rounds)]
    firsts = [f for f, _, _ in runs if f is not None]
    return {"command": "conformance " + " ".join(args), "rounds": rounds,
            "first_verdict_s": statistics.median(firsts) if firsts else None,
            "total_s": statistics.median(t for _, t, _ in runs)}


def fuzzer(seconds: float, engines: bool) -> list[dict]:
    from benchmarks.fuzz_throughput import target_set, throughput
    rows = []
    for name in ("onnxruntime", "runtimes") + (("all",) if engines else ()):
        rows.append(dict(set=name, **throughput(target_set(name), 1, seconds, seed=20)))
        print(f"fuzzer, {name}: {rows[-1]['cases_per_s_per_core']} cases/s per core "
              f"({rows[-1]['searching_cases_per_s_per_core']} after {rows[-1]['ready_s']} s of start-up)", flush=True)
    return rows


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


def machine() -> dict:
    import platform

    from conformance.runtimes.effective import describe_host, host
    facts = host()
    versions = {}
    for name in ("onnxruntime", "openvino", "torch", "onnx", "numpy", "hypothesis"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - not installed
            continue
    return {"host": describe_host(facts), "cpus": facts.get("cpus"), "python": platform.python_version(),
            "versions": versions, "date": datetime.date.today().isoformat()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "cases"))
    ap.add_argument("-k", default="")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--fuzz-seconds", type=float, default=45.0)
    ap.add_argument("--engines", action="store_true", help="also the engines of nox -s conformance-all")
    ap.add_argument("--no-readme", action="store_true", help="do not write the figures to benchmarks/README.md")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench"))
    ap.add_argument("--production", action="store_true",
                    help="also time the oracle on the production tier (benchmarks/production_oracle.py; minutes)")
    args = ap.parse_args()

    cases, errors = load_paths([args.cases])
    select = compile_expression(args.k)
    cases = [c for c in cases if select(c.id)]
    targets = corpus_targets(args.engines)
    pairs = len(cases) * len(targets)
    print(f"{len(cases)} cases x {len(targets)} targets = {pairs} pairs, --jobs {args.jobs}", flush=True)

    print("oracle (cold, then cached) ...", flush=True)
    oracle = oracle_speed(cases)
    suite_wall(cases, [t for t in targets if t.runtime == "onnxruntime"][:1], jobs=args.jobs)  # every oracle cached

    rounds = []
    for r in range(args.rounds):
        batched = suite_wall(cases, targets, args.jobs)
        print(f"  suite, batched: {batched['wall_s']:.1f} s", flush=True)
        alone = suite_wall(cases, targets, args.jobs, batch=False)
        print(f"  suite, --no-batch: {alone['wall_s']:.1f} s", flush=True)
        bare, crashed = bare_in_child(cases, targets)
        bare_cpu = bare.pop("cpu", 0.0)
        limit = sum(bare.values()) / args.jobs
        row = {"suite": batched, "suite_no_batch": alone, "bare_by_runtime_s": bare, "bare_s": sum(bare.values()),
               "bare_per_core_s": limit, "ratio": batched["wall_s"] / limit,
               "ratio_no_batch": alone["wall_s"] / limit,
               "openvino_in_runtime_s": batched["in_runtime_by"].get("openvino", 0.0),
               "openvino_in_runtime_no_batch_s": alone["in_runtime_by"].get("openvino", 0.0),
               "openvino_bare_s": bare.get("openvino", 0.0),
               "same_verdicts": batched["verdicts"] == alone["verdicts"], "bare_calls_that_crashed": crashed,
               "bare_cpu_s": bare_cpu,
               # the suite's CPU seconds over the cores: the wall time it needs on this machine even
               # with perfect packing (its own share of the cores is the limit the ratio shows)
               "suite_cpu_per_core_s": (batched["main_cpu_s"] + batched["workers_cpu_s"]) / args.jobs}
        rounds.append(row)
        print(f"round {r + 1}: suite {batched['wall_s']:.1f} s (--no-batch {alone['wall_s']:.1f} s), bare calls "
              f"{row['bare_s']:.1f} s = {limit:.1f} s per core; ratio {row['ratio']:.2f}x "
              f"(--no-batch {row['ratio_no_batch']:.2f}x); OpenVINO inside the runtime "
              f"{row['openvino_in_runtime_s']:.1f} s "
              f"batched, {row['openvino_in_runtime_no_batch_s']:.1f} s alone, bare {row['openvino_bare_s']:.1f} s",
              flush=True)
    result = {"machine": machine(), "cases": len(cases), "targets": [t.id for t in targets], "pairs": pairs,
              "jobs": args.jobs, "rounds": rounds, "median_ratio": statistics.median(r["ratio"] for r in rounds),
              "oracle": oracle}
    print(f"oracle: {oracle['cold_ms_per_case']:.1f} ms/case uncached, {oracle['cached_ms_per_case']:.2f} ms cached")
    result["startup"] = startup()
    print(f"start-up: first verdict {result['startup']['first_verdict_s']:.2f} s", flush=True)
    result["fuzzer"] = fuzzer(args.fuzz_seconds, args.engines)
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
    if not args.no_readme and not args.k and Path(args.cases).resolve() == (ROOT / "cases").resolve():
        write_readme(result)
        print(f"written {README} (between {BEGIN} and {END})")
    return 0


def table(result: dict) -> str:
    """The figures as benchmarks/README.md shows them."""
    m = result["machine"]
    lines = [f"Measured {m['date']} on {m['host']}, {m['cpus']} cores, Python {m['python']}, "
             + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) + f"; {result['cases']} cases x "
             f"{len(result['targets'])} targets = {result['pairs']} pairs, --jobs {result['jobs']}.", "",
             "| figure | value | goal |", "|---|---|---|"]
    for k, r in enumerate(result["rounds"], 1):
        suffix = f" (round {k})" if len(result["rounds"]) > 1 else ""
        lines += [
            f"| suite wall, batched{suffix} | {r['suite']['wall_s']:.1f} s | |",
            f"| suite wall, `--no-batch`{suffix} | {r['suite_no_batch']['wall_s']:.1f} s | |",
            f"| bare calls, summed (per core) | {r['bare_s']:.1f} s ({r['bare_per_core_s']:.1f} s) | |",
            f"| **suite / bare per core** | **{r['ratio']:.2f}x** (`--no-batch` {r['ratio_no_batch']:.2f}x) | ≤ 1.2x |",
            f"| OpenVINO inside the runtime: batched / alone / bare | {r['openvino_in_runtime_s']:.1f} s / "
            f"{r['openvino_in_runtime_no_batch_s']:.1f} s / {r['openvino_bare_s']:.1f} s | |",
            f"| same verdict counts batched and `--no-batch` | {r['same_verdicts']} | True |",
            f"| CPU seconds, batched: main process / workers / their sum per core | {r['suite']['main_cpu_s']:.1f} s / "
            f"{r['suite']['workers_cpu_s']:.1f} s / {r['suite_cpu_per_core_s']:.1f} s | |",
            f"| CPU seconds of the bare calls | {r['bare_cpu_s']:.1f} s | |",
        ]
    s = result["startup"]
    lines.append(f"| start-up to the first verdict (`{s['command']}`, median of {s['rounds']}) | "
                 f"{s['first_verdict_s']:.2f} s | < 1 s |")
    goals = {"onnxruntime": "≥ 20", "runtimes": "≥ 8"}
    for row in result["fuzzer"]:
        lines.append(f"| fuzzer, {row['set']} ({row['targets']} targets), cases/s per core: "
                     f"in {row['seconds']:.0f} s / "
                     f"after its start-up ({row['ready_s']:.1f} s) | {row['cases_per_s_per_core']:.1f} / "
                     f"{row['searching_cases_per_s_per_core']:.1f} | {goals.get(row['set'], '')} |")
    bare = result["rounds"][-1]["bare_by_runtime_s"]
    lines += ["", "Bare calls per runtime (s): " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                          sorted(bare.items(), key=lambda kv: -kv[1])) + "."]
    return "\n".join(lines)


def write_readme(result: dict) -> None:
    text = README.read_text()
    block = f"{BEGIN}\n{table(result)}\n{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n## The main benchmark (`run_all.py`)\n\n" + block + "\n"
    README.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
