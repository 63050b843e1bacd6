"""Does the derived tolerance work? False alarms and misses of each tolerance policy on the corpus.

Compares the derived tolerance (the oracle's precision model, the default) with the interim
per-dtype policy and the fixed policies other suites use (policies.yaml: ``fixed-onnx-node-tests``,
``fixed-1e-5``, ``fixed-rel-1e-2``), judging every (result, policy) pair with the suite's own
``judge_outputs`` and ``for_case(case, policy)``: each runtime output and each oracle result is
computed once and re-judged under every policy.

1. **False alarms**: every real runtime present runs every valid case its spec expresses, in
   process (onnxruntime CPU and OpenVINO's ONNX frontend CPU on onnx-14, OpenVINO IR CPU on
   openvino-opset5, torch CPU, the DirectML descriptor interpreter), judged against the oracle
   under its spec's semantics. ``classify`` sorts each result without looking at any policy: a
   *semantic divergence* when no oracle reading comes within 1 % of the output's value scale
   (``SEMANTIC``, tests/corpus/test_tolerance.py's rule); *narrowed* when it is below that but no more
   accurate than a narrower type could give (a float64 case computed in float32); otherwise
   *correct behaviour*, and a policy that fails it raises a false alarm. Refused cases, ones the
   spec cannot express and ones whose every element the spec leaves unspecified are left out.
2. **Misses**: every deliberately wrong implementation of tests/doubles/wrong/ runs every valid float32
   and float16 case of its ``ops`` at onnx-14. A case is *affected* when its outputs differ from
   the correct mode's (``tests.doubles.wrong.NumpyRNN``), the spec defines some element of them, they are
   not another documented reading of the spec, and the bug is a bug for the case's dtype
   (``BUG_DTYPES``). A policy *catches* an affected case when its verdict there is failing, and
   *misses the bug* when it catches none of its cases. The benign controls (tests.doubles.wrong.BENIGN)
   run on every case of their ``ops``: a policy failing one raises a false alarm too.

    python benchmarks/tolerance_policies.py [--cases cases] [-k EXPR] [--jobs 2]
                                            [--out reports/bench/tolerance.json]

Oracle results come from the on-disk cache (oracles/cache) where present. Prints the summary table
(Markdown) and writes the details to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from conformance.case import load_paths  # noqa: E402
from conformance.compare import FAILING, for_case, judge_outputs  # noqa: E402
from conformance.compare.metrics import errors  # noqa: E402
from conformance.compare.tolerance import policies  # noqa: E402
from conformance.results import Record  # noqa: E402
from conformance.run.engine import oracle_for  # noqa: E402
from conformance.run.select import compile_expression  # noqa: E402
from conformance.specs import SPECS, NotExpressible, translate  # noqa: E402

#: the policies compared, the default first
POLICIES = ("derived", "interim-dtype-v1", "fixed-onnx-node-tests", "fixed-1e-5", "fixed-rel-1e-2")
#: a result whose error is above this share of the output's value scale for every oracle reading
#: computes another function (tests/corpus/test_tolerance.py's rule)
SEMANTIC = 1e-2
#: the value scale never counts as smaller than this (outputs that are all about zero)
SCALE_FLOOR = 1e-3
#: a result below SEMANTIC that is no more accurate than the case computed in a narrower type:
#: error above NARROWED_SHARE × that type's unit roundoff × the value scale (float64 → float32;
#: float32 → float16, TF32 or bfloat16, whose unit roundoff is 2^-11 or more). On this corpus a
#: computation in the case's own dtype stays far below it (float32: 2.4e-6 of the scale at most,
#: against 3.1e-5; float64: 2e-16, against 3.7e-9), and OpenVINO's float64-in-float32 is above it
NARROWER_U = {"float64": 2.0 ** -24, "float32": 2.0 ** -11}
NARROWED_SHARE = 1 / 16
#: the oracle's working precision, as `conformance run` asks for it (so the same cache entries)
PREC = 128
#: (runtime, spec, device, config): the real targets judged for false alarms
TARGETS = (
    ("onnxruntime", "onnx-14", "CPU", "default"),
    ("openvino", "onnx-14", "CPU", "default"),
    ("openvino", "openvino-opset5", "CPU", "default"),
    ("torch", "torch", "CPU", "default"),
    ("directml-interpreter", "directml-fl1_0", "CPU", "default"),
)
#: where the wrong implementations run, and on which dtypes
WRONG_SPEC = "onnx-14"
WRONG_DTYPES = ("float32", "float16")
#: the precision bugs (their `bug` switch) are bugs only for these dtypes, as their registry entry
#: says (visible_when: "float32 or float64 cases"): on a float16 case, accumulating in float16, a
#: tanh good to 8.7e-5 relative or a sigmoid evaluated in float16 is arithmetic the precision model
#: admits for float16 (oracles/README.md, "Assumptions"), so those runs are not counted as misses
#: (they are reported as correct float16 implementations instead)
BUG_DTYPES = {"float16-accumulation": ("float32", "float64"), "fast-tanh": ("float32", "float64"),
              "sigmoid-float16": ("float32", "float64")}
DTYPES = ("float32", "float16", "float64", "bfloat16")


# -- classification --------------------------------------------------------------------------------

def classify(case, program, outputs, oracle) -> tuple[str, float, str]:
    """("correct" | "semantic" | "narrowed" | "unspecified", the smallest error/scale over the
    readings, that reading's name), whatever any policy's verdict.

    For each oracle reading: the largest absolute error over the elements the spec defines, over
    the largest |exact| of those elements (at least SCALE_FLOOR); the smallest of these over the
    readings is the result's share. A result is a *semantic divergence* when its share exceeds
    SEMANTIC (or an output is missing or misshapen, or not finite where the exact value is);
    *narrowed* when it is below that but above NARROWED_SHARE × the unit roundoff of a narrower
    type (NARROWER_U: a float64 case computed in float32); *unspecified* when the spec defines
    none of its elements; otherwise *correct behaviour*."""
    names = [canonical for _, canonical in program.outputs]
    if len(outputs) != len(names):
        return "semantic", float("inf"), ""
    got = {n: program.to_canonical(n, np.asarray(o)) for n, o in zip(names, outputs)}
    best, judged_any, name_of_best = float("inf"), False, ""
    for reading in oracle.readings:
        worst, scale, judged = 0.0, 0.0, 0
        for name, arr in got.items():
            exp = reading.outputs[name]
            if arr.shape != exp.hi.shape:
                worst = float("inf")
                judged += 1
                break
            mask = ~exp.unspecified
            if not mask.any():
                continue
            judged += int(mask.sum())
            err = errors(arr, exp.hi, exp.lo, case.dtype)["abs"][mask]
            worst = max(worst, float(err.max()))
            finite = np.abs(exp.hi[mask])
            finite = finite[np.isfinite(finite)]
            if finite.size:
                scale = max(scale, float(finite.max()))
        if judged == 0:
            continue
        judged_any = True
        share = worst / max(scale, SCALE_FLOOR)
        if share < best or not name_of_best:
            best, name_of_best = share, reading.name
    if not judged_any:
        return "unspecified", float("nan"), ""
    if best > SEMANTIC:
        return "semantic", best, name_of_best
    if case.dtype in NARROWER_U and best > NARROWED_SHARE * NARROWER_U[case.dtype]:
        return "narrowed", best, name_of_best
    return "correct", best, name_of_best


def judge_all(case, program, outputs, oracle) -> dict:
    """policy -> (verdict, worst error/allowed, max abs err, and for the derived policy the error
    over the bound at the worst element), each judged by judge_outputs."""
    out = {}
    for policy in POLICIES:
        j = judge_outputs(case, program, outputs, oracle, for_case(case, policy))
        out[policy] = (j.verdict, j.ratio, j.max_abs_err,
                       (j.worst or {}).get("abs_err", 0.0) / j.worst["bound"]
                       if policy == "derived" and j.worst and j.worst.get("bound") else None)
    return out


# -- the worker ------------------------------------------------------------------------------------

_W: dict = {}


def _init(case_paths, selected_ids, tmp):
    """Per worker process: the corpus, the runtimes (built once), the test doubles."""
    cases, _ = load_paths(case_paths)
    _W["cases"] = {c.id: c for c in cases if c.id in selected_ids}
    _W["tmp"] = Path(tmp)
    targets, _ = _targets()
    _W["targets"] = [(t, t.ref.build()) for t in targets]
    from tests.doubles.wrong import BENIGN, WRONG, NumpyRNN
    _W["correct"] = NumpyRNN()
    _W["doubles"] = [(name, "wrong", cls()) for name, cls in WRONG.items()] + \
                    [(name, "benign", cls()) for name, cls in BENIGN.items()]
    _W["ops"] = {name: tuple(cls.ops) for name, cls in (*WRONG.items(), *BENIGN.items())}


def _targets():
    """The TARGETS present here, as discover() finds them, and the ones it could not find."""
    from conformance.runtimes import discover
    by_format = defaultdict(list)
    for _, spec, _, _ in TARGETS:
        if spec in SPECS and spec not in by_format[SPECS[spec].format]:
            by_format[SPECS[spec].format].append(spec)
    found, skipped = discover(dict(by_format), use_entry_points=False,
                              runtimes=tuple({r for r, _, _, _ in TARGETS}))
    chosen, missing = [], []
    for runtime, spec, device, config in TARGETS:
        match = [t for t in found if (t.runtime, t.spec, t.device, t.config) == (runtime, spec, device, config)]
        if match:
            chosen.append(match[0])
        else:
            missing.append(f"{runtime}/{device}@{spec}")
    return chosen, missing + [f"{s.runtime}: {s.reason}" for s in skipped]


def _run(runtime, program):
    try:
        return "ok", runtime.run(program.runtime_input(), program.feeds), ""
    except Exception as exc:  # noqa: BLE001 - a refusal is a verdict of its own
        return "rejected", None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _differs(a, b) -> bool:
    if a is None or b is None or len(a) != len(b):
        return True
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or not np.array_equal(x.astype(np.float64), y.astype(np.float64), equal_nan=True):
            return True
    return False


def process(case_ids: list) -> tuple[list, dict]:
    """Every record for these cases, and where the time went."""
    records, seconds = [], Counter()
    for cid in case_ids:
        case = _W["cases"][cid]
        folder = Path(tempfile.mkdtemp(dir=_W["tmp"]))
        try:
            _one(case, folder, records, seconds)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return records, dict(seconds)


def _one(case, folder: Path, records: list, seconds: Counter) -> None:
    """The records of one case: each real runtime's, then each test double's."""
    programs, oracles = {}, {}

    def program_for(spec):
        if spec not in programs:
            try:
                prog = translate(SPECS[spec], case)
                if not isinstance(prog, NotExpressible) and prog.format != "onnx":
                    (folder / spec).mkdir(exist_ok=True)
                    SPECS[spec].write(prog, folder / spec)
            except Exception as exc:  # noqa: BLE001 - a translator failure costs its pairs
                prog = exc
            programs[spec] = prog
        return programs[spec]

    def oracle_of(spec):
        profile = SPECS[spec].semantics
        if profile not in oracles:
            start = time.perf_counter()
            try:
                oracles[profile] = oracle_for(case.op, case.attributes, case.tensors, profile, PREC)
            except Exception as exc:  # noqa: BLE001
                oracles[profile] = exc
            seconds["oracle"] += time.perf_counter() - start
        return oracles[profile]

    base = {"case": case.id, "dtype": case.dtype, "op": case.op}
    # 1. the real runtimes
    for target, runtime in _W["targets"]:
        rec = dict(base, kind="runtime", target=target.id, runtime=target.runtime, spec=target.spec)
        prog = program_for(target.spec)
        if isinstance(prog, NotExpressible):
            records.append(dict(rec, status="not-expressible"))
            continue
        if isinstance(prog, Exception):
            records.append(dict(rec, status="error", error=f"translator: {prog}"))
            continue
        start = time.perf_counter()
        status, outputs, error = _run(runtime, prog)
        seconds[target.id] += time.perf_counter() - start
        if status != "ok":
            records.append(dict(rec, status=status, error=error))
            continue
        oracle = oracle_of(target.spec)
        if isinstance(oracle, Exception):
            records.append(dict(rec, status="error", error=f"oracle: {oracle}"))
            continue
        start = time.perf_counter()
        kind, share, reading = classify(case, prog, outputs, oracle)
        rec.update(status="ok", cls=kind, error_over_scale=share, reading=reading,
                   judged=judge_all(case, prog, outputs, oracle))
        seconds["judging"] += time.perf_counter() - start
        records.append(rec)
    # 2. the test doubles: correct mode once, then each wrong or benign one on its ops
    if case.dtype not in WRONG_DTYPES:
        return
    prog = program_for(WRONG_SPEC)
    if isinstance(prog, (NotExpressible, Exception)):
        return
    oracle = oracle_of(WRONG_SPEC)
    if isinstance(oracle, Exception):
        return
    start = time.perf_counter()
    status, correct, error = _run(_W["correct"], prog)
    if status != "ok":
        records.append(dict(base, kind="double", double="correct", status=status, error=error))
        return
    correct_judged = judge_all(case, prog, correct, oracle)
    _, _, correct_reading = classify(case, prog, correct, oracle)
    records.append(dict(base, kind="double", double="correct", role="correct", status="ok",
                        affected=False, judged=correct_judged, reading=correct_reading))
    for name, role, double in _W["doubles"]:
        if case.op not in _W["ops"][name]:
            continue
        status, outputs, error = _run(double, prog)
        rec = dict(base, kind="double", double=name, role=role, bug=double.bug, status=status)
        if status != "ok":
            records.append(dict(rec, affected=True, error=error))
            continue
        affected = _differs(outputs, correct)
        rec["affected"] = affected
        rec["judged"] = judge_all(case, prog, outputs, oracle) if affected else correct_judged
        if affected:
            rec["cls"], rec["error_over_scale"], rec["reading"] = classify(case, prog, outputs, oracle)
            # the spec admits it here when it matches another documented reading than the correct
            # mode's, to within rounding
            rec["other_reading"] = rec["cls"] in ("correct", "narrowed") and rec["reading"] != correct_reading
        records.append(rec)
    seconds["test doubles"] += time.perf_counter() - start


# -- aggregation -----------------------------------------------------------------------------------

def failing(verdict: str) -> bool:
    return verdict in FAILING


def _label(r) -> str:
    return f"{r['target']} {r['case']}" if "target" in r else r["case"]


def _expectations():
    from conformance.gate import Expectations
    folder = ROOT / "expectations"
    return Expectations.load([folder]) if folder.is_dir() else None


def summarise(records: list) -> dict:
    from tests.doubles.wrong import BENIGN, WRONG
    runtime = [r for r in records if r["kind"] == "runtime"]
    doubles = [r for r in records if r["kind"] == "double"]
    ok = [r for r in runtime if r["status"] == "ok"]
    out = {"false_alarms": {}, "targets": {}, "classes": {}, "wrong": {}, "benign": {},
           "correct_double": {}, "admitted_float16": {}, "policies": {}}

    # 1. false alarms of the real runtimes, per policy and dtype
    for policy in POLICIES:
        row = {}
        for dtype in DTYPES:
            correct = [r for r in ok if r["dtype"] == dtype and r["cls"] == "correct"]
            fails = [r for r in correct if failing(r["judged"][policy][0])]
            row[dtype] = {"results": len(correct), "false_alarms": len(fails),
                          "cases": sorted(_label(r) for r in fails)}
        for cls in ("semantic", "narrowed"):
            bad = [r for r in ok if r["cls"] == cls]
            passed = [r for r in bad if not failing(r["judged"][policy][0])]
            row[f"{cls}_results"] = len(bad)
            row[f"{cls}_passed"] = len(passed)
            row[f"{cls}_passed_cases"] = sorted(_label(r) for r in passed)
        out["false_alarms"][policy] = row

    for target in sorted({r["target"] for r in runtime}):
        mine = [r for r in runtime if r["target"] == target]
        per = {}
        for dtype in DTYPES:
            d = [r for r in mine if r["dtype"] == dtype]
            if not d:
                continue
            good = [r for r in d if r["status"] == "ok"]
            correct = [r for r in good if r["cls"] == "correct"]
            ratios = [r["judged"]["derived"][3] for r in correct
                      if r["judged"]["derived"][0] == "pass" and r["judged"]["derived"][3] is not None]
            shares = [r["error_over_scale"] for r in correct]
            per[dtype] = {
                "status": dict(Counter(r["status"] for r in d)),
                "class": dict(Counter(r["cls"] for r in good)),
                "fails_per_policy": {p: sum(failing(r["judged"][p][0]) for r in correct) for p in POLICIES},
                "derived_error_over_bound_at_worst_element": (
                    np.quantile(ratios, [0.5, 0.9, 1.0]).round(4).tolist() if ratios else None),
                "error_over_scale": ([float(f"{min(shares):.3g}"), float(f"{np.median(shares):.3g}"),
                                      float(f"{max(shares):.3g}")] if shares else None),
            }
        out["targets"][target] = per

    # each class checked against the known divergences recorded in expectations/
    expectations = _expectations()
    for cls in ("semantic", "narrowed", "correct"):
        rows = []
        for r in (r for r in ok if r["cls"] == cls):
            verdict = r["judged"]["derived"][0]
            entry = expectations.match(Record.from_dict({"case": r["case"], "target": r["target"],
                                                         "verdict": verdict})) \
                if expectations and failing(verdict) else None
            rows.append({"target": r["target"], "case": r["case"],
                         "error_over_scale": float(f"{r['error_over_scale']:.3g}"),
                         "verdicts": {p: r["judged"][p][0] for p in POLICIES},
                         "expectation": f"{entry.kind}: {entry.reason}" if entry else None})
        out["classes"][cls] = {
            "results": len(rows),
            "derived_fails": sum(failing(x["verdicts"]["derived"]) for x in rows),
            "derived_fails_covered_by_expectations": sum(bool(x["expectation"]) for x in rows),
            "list": sorted((x for x in rows if cls != "correct" or failing(x["verdicts"]["derived"])),
                           key=lambda x: (x["target"], x["case"])),
        }
    out["rejected"] = sorted(f"{_label(r)}: {r.get('error', '')[:120]}" for r in runtime if r["status"] == "rejected")

    # the correct mode of the test double: a correct implementation that is not a real runtime
    correct = [r for r in doubles if r["double"] == "correct" and r["status"] == "ok"]
    out["correct_double"] = {p: {dtype: {"results": sum(r["dtype"] == dtype for r in correct),
                                         "fails": sum(r["dtype"] == dtype and failing(r["judged"][p][0])
                                                      for r in correct)}
                                 for dtype in WRONG_DTYPES} for p in POLICIES}

    # 2. misses of the wrong implementations; how each policy treats the benign controls
    def fails(r, policy):
        return r["status"] != "ok" or failing(r["judged"][policy][0])

    admitted = []
    for name, cls in sorted(WRONG.items()):
        mine = [r for r in doubles if r["double"] == name]
        dtypes = BUG_DTYPES.get(cls.bug, DTYPES)
        changed = [r for r in mine if r["affected"]]
        exempt = [r for r in changed if r["dtype"] not in dtypes]
        unjudged = [r for r in changed if r["dtype"] in dtypes and r.get("cls") == "unspecified"]
        other = [r for r in changed if r["dtype"] in dtypes and r.get("other_reading")]
        visible = [r for r in changed if r["dtype"] in dtypes and r.get("cls") != "unspecified"
                   and not r.get("other_reading")]
        admitted += exempt
        entry = {"bug": cls.bug, "ops": list(cls.ops), "ran": len(mine), "changed": len(changed),
                 "affected": len(visible), "affected_by_dtype": dict(Counter(r["dtype"] for r in visible)),
                 "not_counted": {"every element unspecified by the spec": len(unjudged),
                                 "matches another documented reading": sorted(r["case"] for r in other),
                                 "dtype the bug is not a bug for": len(exempt)},
                 "rejected": sum(r["status"] != "ok" for r in mine), "policies": {}}
        for policy in POLICIES:
            caught = [r for r in visible if fails(r, policy)]
            entry["policies"][policy] = {
                "caught": len(caught),
                "caught_by_dtype": dict(Counter(r["dtype"] for r in caught)),
                "missed_cases": sorted(
                    ({"case": r["case"], "dtype": r["dtype"], "error_over_scale": float(f"{r['error_over_scale']:.3g}"),
                      "error_over_allowed": None if r["judged"][policy][1] is None
                      else float(f"{r['judged'][policy][1]:.3g}")}
                     for r in visible if not fails(r, policy)), key=lambda x: x["case"])[:40],
            }
        out["wrong"][name] = entry
    for name in sorted(BENIGN):
        mine = [r for r in doubles if r["double"] == name]
        entry = {"ran": len(mine), "changed": sum(r["affected"] for r in mine), "policies": {}}
        for policy in POLICIES:
            failed = [r for r in mine if fails(r, policy)]
            entry["policies"][policy] = {"failed": len(failed),
                                         "failed_by_dtype": dict(Counter(r["dtype"] for r in failed)),
                                         "failed_cases": sorted(r["case"] for r in failed)[:40]}
        out["benign"][name] = entry
    out["admitted_float16"] = {
        "what": "the precision bugs run on float16 cases, where their arithmetic is admitted (BUG_DTYPES)",
        "results": len(admitted),
        "fails": {p: sum(fails(r, p) for r in admitted) for p in POLICIES}}

    for policy in POLICIES:
        wrong = out["wrong"]
        affected = sum(e["affected"] for e in wrong.values())
        caught = sum(e["policies"][policy]["caught"] for e in wrong.values())
        by_dtype = {d: (sum(e["affected_by_dtype"].get(d, 0) for e in wrong.values()),
                        sum(e["policies"][policy]["caught_by_dtype"].get(d, 0) for e in wrong.values()))
                    for d in WRONG_DTYPES}
        fa = out["false_alarms"][policy]
        out["policies"][policy] = {
            "false_alarms": {d: fa[d]["false_alarms"] for d in DTYPES},
            "correct_results": {d: fa[d]["results"] for d in DTYPES},
            "semantic_passed": fa["semantic_passed"], "narrowed_passed": fa["narrowed_passed"],
            "narrowed_results": fa["narrowed_results"],
            "benign_failed": sum(e["policies"][policy]["failed"] for e in out["benign"].values()),
            "benign_results": sum(e["ran"] for e in out["benign"].values()),
            "bugs": len(wrong),
            "bugs_missed": sorted(n for n, e in wrong.items() if e["affected"] and not e["policies"][policy]["caught"]),
            "bugs_without_affected_case": sorted(n for n, e in wrong.items() if not e["affected"]),
            "affected_cases": affected, "caught_cases": caught,
            "caught_pct": 100.0 * caught / affected if affected else None,
            "caught_pct_by_dtype": {d: (100.0 * c / a if a else None) for d, (a, c) in by_dtype.items()},
            "admitted_float16_failed": out["admitted_float16"]["fails"][policy],
        }
    return out


def table(summary: dict) -> str:
    p = summary["policies"]
    first = p[POLICIES[0]]
    n = first["correct_results"]
    extra = [d for d in ("float64", "bfloat16") if n[d]]
    short = {"float32": "f32", "float16": "f16", "float64": "f64", "bfloat16": "bf16"}
    head = (["policy"] + [f"false alarms {short[d]} (of {n[d]})" for d in ("float32", "float16", *extra)]
            + [f"benign controls failed (of {first['benign_results']})",
               f"bugs missed (of {first['bugs']})", f"cases caught (of {first['affected_cases']})"])
    if first["narrowed_results"]:
        head.append(f"f64-in-f32 results passed (of {first['narrowed_results']})")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for policy in POLICIES:
        row = p[policy]
        cells = [f"`{policy}`"] + [str(row["false_alarms"][d]) for d in ("float32", "float16", *extra)]
        cells += [str(row["benign_failed"]),
                  str(len(row["bugs_missed"])) + (f" ({', '.join(row['bugs_missed'])})" if row["bugs_missed"] else ""),
                  f"{row['caught_cases']} ({row['caught_pct']:.1f} %)"]
        if first["narrowed_results"]:
            cells.append(str(row["narrowed_passed"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bug_table(summary: dict) -> str:
    """Cases caught per bug and policy (of the bug's affected cases)."""
    head = ["bug", "affected"] + [f"`{p}`" for p in POLICIES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, e in summary["wrong"].items():
        cells = [name, str(e["affected"])]
        for p in POLICIES:
            c = e["policies"][p]["caught"]
            cells.append(f"{c}" + ("" if c == e["affected"] else f" ({100.0 * c / e['affected']:.1f} %)"
                                   if e["affected"] else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions(targets) -> dict:
    import onnx
    out = {"python": platform.python_version(), "numpy": np.__version__, "onnx": onnx.__version__,
           "platform": platform.platform(), "cpu": _cpu(), "cores": os.cpu_count()}
    for t in targets:
        out[f"{t.runtime}@{t.spec}"] = t.version
    from conformance import __version__
    from oracles.api import ORACLE_VERSION
    out.update(conformance=__version__, oracle=ORACLE_VERSION)
    return out


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="cases")
    ap.add_argument("-k", default="", help="a -k expression over case ids (default: the whole corpus)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=8, help="cases per task handed to a worker")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "tolerance.json"))
    ap.add_argument("--records", default="", help="also write every (result, verdicts) record here (JSON lines)")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    cases, load_errors = load_paths([args.cases])
    select = compile_expression(args.k) if args.k else (lambda _: True)
    chosen = [c for c in cases if c.valid and select(c.id)]
    targets, missing = _targets()
    print(f"{len(chosen)} valid cases ({dict(Counter(c.dtype for c in chosen))}); targets: "
          f"{', '.join(t.id for t in targets)}" + (f"; absent: {'; '.join(missing)}" if missing else ""),
          file=sys.stderr)
    ids = [c.id for c in chosen]
    # the slow ones (long sequences, big hidden sizes) first, so the pool ends together
    weight = {c.id: c.shape.get("seq_length", 1) * c.hidden_size ** 2 for c in chosen}
    ids.sort(key=lambda i: -weight[i])
    chunks = [ids[i:i + args.chunk] for i in range(0, len(ids), args.chunk)]
    records, seconds = [], Counter()
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="tolerance-bench-") as tmp, \
            ctx.Pool(args.jobs, initializer=_init, initargs=([args.cases], set(ids), tmp)) as pool:
        for i, (recs, secs) in enumerate(pool.imap_unordered(process, chunks), 1):
            records += recs
            seconds.update(secs)
            print(f"\r{i}/{len(chunks)} chunks", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if args.records:
        with open(args.records, "w") as f:
            f.writelines(json.dumps(rec, default=float) + "\n" for rec in records)
    summary = summarise(records)
    wall = time.perf_counter() - start
    text = table(summary)
    bugs = bug_table(summary)
    print(text + "\n\n" + bugs)
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "versions": versions(targets), "targets": [t.id for t in targets], "absent": missing,
        "cases": {"valid": len(chosen), "by_dtype": dict(Counter(c.dtype for c in chosen)),
                  "select": args.k, "load_errors": len(load_errors)},
        "rule": {"semantic": SEMANTIC, "scale_floor": SCALE_FLOOR, "narrower_u": NARROWER_U,
                 "narrowed_share": NARROWED_SHARE, "text": " ".join(classify.__doc__.split()),
                 "affected": "a wrong implementation's case counts when its outputs differ from the "
                             "correct mode's at all, the spec defines some element, the outputs do not "
                             "match (to within rounding: classified correct or narrowed) another "
                             "documented reading than the correct mode's, and the dtype is one the bug "
                             "is a bug for (BUG_DTYPES)"},
        "policy_definitions": {p: policies()[p] for p in POLICIES},
        "table_markdown": text, "bug_table_markdown": bugs, **summary,
        "wall_s": round(wall, 1), "jobs": args.jobs,
        "cpu_seconds": {k: round(v, 1) for k, v in sorted(seconds.items())},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=float) + "\n")
    print(f"\n{wall:.0f} s wall on {args.jobs} workers; details in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
