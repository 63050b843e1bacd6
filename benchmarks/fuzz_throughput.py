"""Fuzzer throughput (cases per second per core) and what each deliberately wrong implementation
costs the fuzzer to find and minimize.

    python benchmarks/fuzz_throughput.py [--seconds 60] [--jobs 1 --jobs 4] [--sets onnxruntime,runtimes]
    python benchmarks/fuzz_throughput.py --wrong [--seconds 60] [--only NAME]   # tests/doubles/wrong, one campaign each

Throughput runs generate only (no shrinking, no database, a fresh output folder, the shipped
expectations and regressions known as ``conformance fuzz`` has them; ``--nothing-known`` drops them),
so every second goes to drawing, translating, the oracle and the runtimes; "per core" divides by the worker count
(one worker process per core). A case counts once however many targets it runs on.

The --wrong mode runs one campaign per class of tests/doubles/wrong (its ops only, spec onnx-22, shrinking
on) and reports the cases and seconds until its first failing verdict, the seconds until its
findings were written (minimized), how many files, and the minimized case's sizes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case import load_paths  # noqa: E402
from conformance.fuzz.campaign import Campaign, CampaignConfig  # noqa: E402
from conformance.fuzz.scope import Scope  # noqa: E402
from conformance.gate import Expectations  # noqa: E402
from conformance.isolation.processes import cpu_count  # noqa: E402
from conformance.runtimes import discover, plugin_targets  # noqa: E402
from conformance.selection import specs_by_format  # noqa: E402

#: the engines of ``nox -s conformance-all`` (compilers): in the "all" set, not in "runtimes"
ENGINES = ("tract", "mnn", "iree", "tvm")


def target_set(name: str) -> list:
    """A runtime's targets; "runtimes": every target of ``nox -s conformance``; "all": with the engines."""
    if name in ("all", "runtimes"):
        found = discover(specs_by_format(()), (), use_entry_points=False)[0]
        return [t for t in found if name == "all" or t.runtime not in ENGINES]
    targets, _ = discover(specs_by_format(()), (), use_entry_points=False, runtimes=(name,))
    return [t for t in targets if t.runtime == name]


def throughput(targets, jobs: int, seconds: float, seed: int, known: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        # as `conformance fuzz --no-shrink --no-database` runs: the shipped expectations and the
        # corpus' regressions are known, so a known divergence does not end a hypothesis run
        expectations = Expectations.load([ROOT / "expectations"]) if known else None
        cfg = CampaignConfig(targets=targets, out_dir=Path(tmp) / "found", budget_s=seconds, jobs=jobs, seed=seed,
                             database=None, shrink=False, expectations=expectations,
                             known=(ROOT / "cases" / "regressions",) if known else ())
        res = Campaign(cfg).run()
    return {"targets": len(targets), "jobs": jobs, "cases": res.examples, "valid": res.valid, "invalid": res.invalid,
            "seconds": round(res.elapsed_s, 1), "cases_per_s": round(res.throughput, 2),
            "cases_per_s_per_core": round(res.throughput / jobs, 2),
            # start-up (workers started, every target's configuration measured) left out: the rate
            # a campaign longer than this window runs at
            "ready_s": round(res.ready_s, 1),
            "searching_cases_per_s_per_core": round(res.searching_throughput / jobs, 2),
            "runs_per_s": round(res.throughput * len(targets), 1)}


def find_wrong(seconds: float, jobs: int, seed: int, only=()) -> list[dict]:
    from tests.doubles.wrong import WRONG
    rows = []
    for name, cls in WRONG.items():
        if only and name not in only:
            continue
        path = f"tests.doubles.wrong:{cls.__name__}"
        targets = plugin_targets(path, {"onnx": ["onnx-22"]})
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "found"
            # `seconds` of search, as much again for shrinking: the budget holds both
            cfg = CampaignConfig(targets=targets, out_dir=out, budget_s=2 * seconds, jobs=jobs, seed=seed,
                                 database=None, scope=Scope(ops=tuple(cls.ops)), search_share=0.5,
                                 plugins={cls.name: path})
            res = Campaign(cfg).run()
            first = res.first_failure_at.get(cfg.targets[0].id)  # measured: its id names its precision
            cases, _ = load_paths([out])
            sizes = [dict(c.shape, hidden_size=c.hidden_size) for c in cases]
        rows.append({
            "implementation": name, "ops": list(cls.ops),
            "first_failure_case": first[0] if first else None,
            "first_failure_s": round(first[1], 1) if first else None,
            "written_s": round(max((w.written_s for w in res.written), default=0.0), 1) or None,
            "files": len(res.written), "signatures": [w.signature.split("|", 3)[3] for w in res.written],
            "sizes": sizes, "cases_run": res.examples,
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, action="append", help="worker counts to measure (default: 1 and all cores)")
    ap.add_argument("--sets", default="onnxruntime,runtimes",
                    help="target sets: a runtime name, runtimes (nox -s conformance's), or all (with the engines)")
    ap.add_argument("--nothing-known", action="store_true",
                    help="no expectations, no known regressions: every divergence is a finding and ends its run")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--wrong", action="store_true", help="time the fuzzer on each tests/doubles/wrong implementation")
    ap.add_argument("--only", action="append", default=[], help="with --wrong: only this implementation (repeatable)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "fuzz.json")
    args = ap.parse_args()
    if args.wrong:
        result = {"wrong": find_wrong(args.seconds, (args.jobs or [cpu_count()])[0], args.seed, args.only)}
    else:
        result = {"throughput": []}
        for name in args.sets.split(","):
            targets = target_set(name)
            for jobs in args.jobs or sorted({1, cpu_count()}):
                row = dict(set=name, **throughput(targets, jobs, args.seconds, args.seed, known=not args.nothing_known))
                result["throughput"].append(row)
                print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
