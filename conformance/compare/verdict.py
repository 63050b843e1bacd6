"""From a runtime's outputs and the oracle's readings to one verdict, with one message shape.

Verdicts (DESIGN.md): pass, fail, rejected, accepted-invalid, crash, timeout, not-expressible,
unspecified. An element the spec leaves undefined is never judged; when every element is undefined
the verdict is ``unspecified`` and the report compares runtimes with each other instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance.compare.metrics import errors
from conformance.compare.tolerance import Tolerance

VERDICTS = ("pass", "fail", "rejected", "accepted-invalid", "crash", "timeout", "not-expressible",
            "unspecified")
#: verdicts that make the run exit non-zero (a rejected *valid* case counts; see judge())
FAILING = ("fail", "accepted-invalid", "crash", "timeout", "rejected")


@dataclass
class Judgement:
    verdict: str
    message: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    max_ulp: float | None = None
    ratio: float | None = None           # worst |err| / allowed
    worst: dict | None = None
    reading: str = ""
    unspecified: int = 0
    unspecified_values: dict = field(default_factory=dict)


def judge_outputs(case, program, outputs: list, oracle, tolerance: Tolerance) -> Judgement:
    """Compare a valid case's outputs with every oracle reading; the best reading decides."""
    names = [canonical for _, canonical in program.outputs]
    if len(outputs) != len(names):
        return Judgement("fail", f"returned {len(outputs)} outputs, but should return {len(names)} ({', '.join(names)})")
    got = {n: program.to_canonical(n, np.asarray(o)) for n, o in zip(names, outputs)}
    best = None
    for reading in oracle.readings:
        j = _judge_reading(case, got, reading, tolerance)
        if best is None or _rank(j) < _rank(best):
            best = j
        if j.verdict == "pass":
            break
    if len(oracle.readings) > 1:
        best.reading = best.reading or "?"
        if best.verdict == "pass":
            best.message += f"; matches the reading '{best.reading}' of {len(oracle.readings)} documented readings"
        else:
            best.message += f"\n  (closest of {len(oracle.readings)} documented readings: '{best.reading}')"
    return best


def _rank(j: Judgement):
    order = {"pass": 0, "unspecified": 1, "fail": 2}
    return (order.get(j.verdict, 3), j.ratio if j.ratio is not None else np.inf)


def _judge_reading(case, got: dict, reading, tol: Tolerance) -> Judgement:
    worst = None
    max_abs = max_rel = max_ulp = 0.0
    judged = unspecified = 0
    unspecified_values = {}
    for name, arr in got.items():
        exp = reading.outputs[name]
        if arr.shape != exp.hi.shape:
            return Judgement("fail", f"{name} has shape {list(arr.shape)}, but should have shape {list(exp.hi.shape)}",
                             reading=reading.name)
        mask = ~exp.unspecified
        unspecified += int(exp.unspecified.sum())
        if exp.unspecified.any():
            unspecified_values[name] = [float(v) for v in arr[exp.unspecified].astype(np.float64)[:256]]
        if not mask.any():
            continue
        judged += int(mask.sum())
        err = errors(arr, exp.hi, exp.lo, case.dtype)
        allowed = tol.allowed(exp.hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(mask, err["abs"] / allowed, -1.0)
        idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        max_abs = max(max_abs, float(np.max(err["abs"][mask])))
        max_rel = max(max_rel, float(np.max(err["rel"][mask])))
        max_ulp = max(max_ulp, float(np.max(err["ulp"][mask])))
        r = float(ratio[idx])
        if worst is None or r > worst["ratio"]:
            worst = {"output": name, "index": [int(i) for i in idx], "got": float(arr[idx]),
                     "expected": float(exp.hi[idx]), "allowed": float(allowed[idx]), "ratio": r,
                     "abs_err": float(err["abs"][idx]), "ulp": float(err["ulp"][idx]),
                     "time_step": time_step(case, name, idx)}
    if judged == 0:
        return Judgement("unspecified", f"all {unspecified} output elements are unspecified by the spec "
                         f"({_reasons(reading)}); compared across runtimes in the report",
                         reading=reading.name, unspecified=unspecified, unspecified_values=unspecified_values)
    ok = worst["ratio"] <= 1.0
    message = (f"max abs err {max_abs:.3g} ({max_ulp:.3g} ulp) within tolerance {tol}" if ok
               else describe_worst(worst, tol))
    if unspecified:
        message += f"; {unspecified} elements unspecified by the spec, not judged ({_reasons(reading)})"
    return Judgement("pass" if ok else "fail", message, max_abs, max_rel, max_ulp, worst["ratio"], worst,
                     reading.name, unspecified, unspecified_values)


def _reasons(reading) -> str:
    texts = []
    for exp in reading.outputs.values():
        for text in getattr(exp, "reasons", {}).values():
            if text not in texts:
                texts.append(text)
    return "; ".join(texts) or "spec silent"


def describe_worst(w: dict, tol: Tolerance) -> str:
    idx = ",".join(map(str, w["index"]))
    lo, hi = w["expected"] - w["allowed"], w["expected"] + w["allowed"]
    return (f"{w['output']}[{idx}] = {w['got']:.9g}, but should be within {lo:.9g} … {hi:.9g} "
            f"(exact {w['expected']:.9g}, {w['time_step']}; error {w['abs_err']:.3g} = "
            f"{w['ratio']:.3g}× the tolerance {tol})")


def time_step(case, name: str, idx) -> str:
    """Where in the recurrence the element sits, in words."""
    if name == "Y":
        return f"time step {idx[0]}"
    d = idx[0]
    lens = case.tensors.get("sequence_lens")
    b = idx[1]
    steps = int(lens[b]) if lens is not None and b < len(lens) else case.shape["seq_length"]
    reverse = case.direction == "reverse" or (case.direction == "bidirectional" and d == 1)
    last = 0 if reverse else steps - 1
    return f"final state after time step {last}"
