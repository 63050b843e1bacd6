"""The judgement of a target that computes in a narrower precision (the record's ``declared``),
before and after the reduced-precision kernel model (issue 33): how much of the allowed error
correct implementations use, and what the wrong ones get away with.

Every valid float32 case of cases/gru, cases/lstm and cases/rnn (onnx-14) runs on

- OpenVINO's ONNX frontend, CPU, in its default configuration (bf16 on AVX512-BF16/AMX CPUs, f16 on
  ARM; where it computes float32 in float32 the row says so and is left out);
- the legitimate test doubles of tests/doubles/precision.py (bf16 kernels as oneDNN builds them:
  pairwise and reversed sums, the state kept in float32, every intermediate stored in bf16; the
  same in f16; TF32) and the wrong ones (a tanh or sigmoid off by a few percent, a state scaled
  per step, a probe faked narrower);

and each output is judged against the precision the target declares twice, with the suite's own
``judge_computed_in``:

- **before**: the model as it was (running-error-v1 in the narrow type, the inputs rounded to it,
  activations within 4 ulps of that type, the rigorous bound alone; rounding faithful where the
  probe's reading disagreed with the declaration, as ``effective_of`` had it; OpenVINO's x86 bf16
  with the float32 accumulation its adapter declared then);
- **after**: the kernel model (kernel-v1: activations computed in float32 and rounded once, ...),
  the sharper of the rigorous and the statistical bound per element, rounding to nearest unless
  declared.

    python benchmarks/declared_precision.py [-k EXPR] [--every N] [--only all|openvino|doubles]
                                            [--out reports/bench/declared_precision.json]

Prints the Markdown tables (benchmarks/README.md has the results) and writes the details.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import oracles  # noqa: E402
import tests.doubles.precision as doubles  # noqa: E402
from conformance.case import load_paths  # noqa: E402
from conformance.compare import for_case, judge_computed_in, judge_outputs  # noqa: E402
from conformance.run.engine import oracle_for  # noqa: E402
from conformance.run.probe import decode, probe_case  # noqa: E402
from conformance.run.select import compile_expression  # noqa: E402
from conformance.runtimes.effective import BY_NAME, describe_host, host, narrower  # noqa: E402
from conformance.specs import SPECS, NotExpressible, translate  # noqa: E402

SPEC = "onnx-14"
LEGITIMATE = (*doubles.LEGITIMATE, doubles.PartialSumsBf16, *doubles.LEGITIMATE_F16, doubles.Tf32)
BASE = {cls: next(b for b in (doubles.PairwiseF16, doubles.Tf32, doubles.Kernel) if issubclass(cls, b))
        for cls in doubles.WRONG}


def _openvino():
    """OpenVINO's ONNX frontend, CPU, default configuration, what it declares here, and its pinned
    (float32) configuration: a pair is one OpenVINO gets right when the pinned one passes the
    float32 spec; the others are its known divergences (peepholes and input_forget ignored, ...)."""
    try:
        from conformance.runtimes.openvino import OpenVINOOnnxFrontend
        rt = OpenVINOOnnxFrontend("CPU", "default")
        probe = translate(SPECS[SPEC], probe_case())
        rt.run(probe.model, probe.feeds)
        return rt, rt.effective(), f"openvino-{rt.version}/CPU default", OpenVINOOnnxFrontend("CPU", "precision=pinned")
    except Exception as exc:  # noqa: BLE001 - absent or broken: the row says why
        return None, {}, f"OpenVINO not available: {type(exc).__name__}: {exc}", None


def _old_rounding(runtime, declared: dict) -> str:
    """The rounding the model before issue 33 judged with: the probe's, where it read the declared
    precision, else faithful."""
    prog = translate(SPECS[SPEC], probe_case())
    y = runtime.run(prog.model, prog.feeds)
    names = [canonical for _, canonical in prog.outputs]
    measured = decode(prog.to_canonical("Y_h", np.asarray(y[names.index("Y_h")])))
    return measured["rounding"] if measured["precision"] == declared.get("precision") else "faithful"


def _judged(case, prog, res, attrs, memo, got, declared, kernel, rounding):
    """(declared verdict, ratio, which bound judged the worst element) under one model."""
    compute, acc = BY_NAME[declared["precision"]].dtype, declared.get("accumulation")

    def bounds(choices):
        key = (compute, acc, rounding, kernel, tuple(sorted(choices.items())))
        if key not in memo:
            memo[key] = oracles.computed_in(case.op, attrs, case.tensors, "onnx", choices, compute, acc, rounding,
                                            kernel=kernel)
        return memo[key]
    j = judge_computed_in(case, prog, got, res, bounds)
    return j.verdict, j.ratio, (j.tolerance or {}).get("judged_by", "rigorous")


def _stats(ratios):
    r = np.asarray([x for x in ratios if x is not None and np.isfinite(x)])
    if not r.size:
        return None
    return {"median": float(np.median(r)), "p90": float(np.quantile(r, 0.9)), "max": float(r.max())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="a -k expression over case ids")
    ap.add_argument("--every", type=int, default=1, help="every N-th case (a sample)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "declared_precision.json"))
    ap.add_argument("--only", choices=("all", "openvino", "doubles"), default="all",
                    help="judge OpenVINO, the test doubles, or both")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    cases, _ = load_paths([str(ROOT / "cases" / d) for d in ("gru", "lstm", "rnn")])
    select = compile_expression(args.k) if args.k else (lambda _: True)
    cases = [c for c in cases if c.valid and c.dtype == "float32" and select(c.id)][::args.every]

    ov, ov_declared, ov_name, pinned = _openvino() if args.only != "doubles" else (None, {}, "not asked for", None)
    runtimes = []  # (label, runtime, declared, role, rounding before)
    if ov is not None and narrower(BY_NAME.get(ov_declared.get("precision")), "float32"):
        runtimes.append((ov_name, ov, ov_declared, "real", _old_rounding(ov, ov_declared)))
    elif ov is not None:
        ov_name += f" computes float32 in {ov_declared.get('precision') or 'float32'} here: no narrower judgement"
    for cls in (*LEGITIMATE, *doubles.WRONG) if args.only != "openvino" else ():
        double = cls()
        runtimes.append((cls.__name__, double, dict(cls.declared), "wrong" if cls in doubles.WRONG else "legitimate",
                         _old_rounding(double, cls.declared)))

    rows: dict = {label: [] for label, *_ in runtimes}
    for case in cases:
        prog = translate(SPECS[SPEC], case)
        if isinstance(prog, NotExpressible):
            continue
        res = oracle_for(case.op, case.attributes, case.tensors, "onnx", 128)
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        memo: dict = {}
        outs: dict = {}
        for label, rt, *_ in runtimes:
            try:
                outs[label] = rt.run(prog.model, prog.feeds)
            except Exception:  # noqa: BLE001 - refused: not judged
                outs[label] = None
        for label, rt, declared, role, rounding in runtimes:
            got = outs[label]
            if got is None:
                continue
            # until issue 33 OpenVINO's adapter declared float32 accumulation for x86 bf16
            old = dict(declared, accumulation="float32") if role == "real" and declared["precision"] == "bf16" \
                else declared
            verdicts = {"before": _judged(case, prog, res, attrs, memo, got, old, False, rounding),
                        "after": _judged(case, prog, res, attrs, memo, got, declared, True,
                                         declared.get("rounding", "nearest"))}
            base = BASE.get(type(rt))
            affected = True
            if role == "real":  # right for its precision where the pinned configuration passes the spec
                right = judge_outputs(case, prog, pinned.run(prog.model, prog.feeds), res, for_case(case))
                affected = right.verdict == "pass"
            elif base is not None:
                b = outs.get(base.__name__) if base.__name__ in outs else base().run(prog.model, prog.feeds)
                affected = any(not np.array_equal(x, y, equal_nan=True) for x, y in zip(got, b))
            rows[label].append({"case": case.id, "affected": affected, **verdicts})
    summary = {}
    for label, _, declared, role, rounding in runtimes:
        mine = rows[label]
        judged = [r for r in mine if r["affected"]]  # OpenVINO: the pairs it gets right
        entry = {"role": role, "declared": declared, "rounding_before": rounding, "pairs": len(mine),
                 "affected": len(judged)}
        for when in ("before", "after"):
            entry[when] = {"fail": sum(r[when][0] == "fail" for r in judged),
                           "used": _stats([r[when][1] for r in (mine if role != "real" else judged)]),
                           "judged_by_statistical": sum(r[when][2] == "statistical" for r in mine)}
            if role == "real":  # its known divergences (the pinned configuration fails them too)
                wrong = [r for r in mine if not r["affected"]]
                entry[when]["divergences"] = len(wrong)
                entry[when]["divergences_failing"] = sum(r[when][0] == "fail" for r in wrong)
        summary[label] = entry
    text = _tables(summary)
    print(text)
    report = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "machine": {"cpu": describe_host(host()), "python": platform.python_version(), "numpy": np.__version__},
              "openvino": ov_name, "cases": len(cases), "every": args.every, "select": args.k,
              "wall_s": round(time.perf_counter() - start, 1), "summary": summary, "tables_markdown": text,
              "pairs": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=float) + "\n")
    print(f"\n{report['wall_s']:.0f} s; {len(cases)} cases; details in {out}", file=sys.stderr)
    return 0


def _fmt(s):
    return "—" if s is None else f"{100 * s['median']:.1f} % / {100 * s['p90']:.1f} % / {100 * s['max']:.1f} %"


def _tables(summary: dict) -> str:
    head = ("| target | declared | pairs | false alarms before → after | used of the allowed error before "
            "(median / p90 / max) | after | judged by the statistical bound after |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    for label, e in summary.items():
        if e["role"] == "wrong":
            continue
        decl = ", ".join(f"{k}={v}" for k, v in e["declared"].items() if k in ("precision", "accumulation"))
        pairs = e["pairs"] if e["role"] != "real" else f"{e['affected']} right (of {e['pairs']})"
        lines.append(f"| {label} | {decl} | {pairs} | {e['before']['fail']} → {e['after']['fail']} | "
                     f"{_fmt(e['before']['used'])} | {_fmt(e['after']['used'])} | "
                     f"{e['after']['judged_by_statistical']} |")
    for label, e in summary.items():
        if e["role"] == "real":
            lines += ["", f"{label}: of its {e['before']['divergences']} known divergences (pairs its pinned "
                      f"configuration fails too), {e['before']['divergences_failing']} failed the declared bound "
                      f"before, {e['after']['divergences_failing']} after."]
    lines += ["", "| wrong double | declared | affected pairs | caught before | caught after |",
              "|---|---|---|---|---|"]
    for label, e in summary.items():
        if e["role"] != "wrong":
            continue
        n = max(e["affected"], 1)
        lines.append(f"| {label} | {e['declared']['precision']} | {e['affected']} | "
                     f"{e['before']['fail']} ({100 * e['before']['fail'] / n:.1f} %) | "
                     f"{e['after']['fail']} ({100 * e['after']['fail'] / n:.1f} %) |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
