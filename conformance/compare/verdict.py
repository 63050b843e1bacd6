"""From a runtime's outputs and the oracle's readings to one verdict, with one message shape.

The verdicts are conformance/compare/verdicts.py's table. An element the spec leaves undefined is
never judged against the spec (silent.py classifies it); when every element is undefined the verdict
is ``unspecified``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

import conformance.compare.silent as silent
from conformance.case.tensors import numpy_dtype
from conformance.compare.metrics import errors
from conformance.compare.tolerance import DEFAULT_POLICY, Tolerance, named_policy


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
    #: the tolerance applied, as recorded: kind, name, source (and for a derived one its factor,
    #: floor, model, and the bound and allowed error at the worst element)
    tolerance: dict | None = None
    #: per output, the few elements farthest outside (or closest to) their allowed error
    worst_elements: dict = field(default_factory=dict)
    #: per output, the largest error/allowed ratio at each time step (None where nothing is judged)
    error_by_step: dict = field(default_factory=dict)
    #: the sub-verdict of the unspecified elements (conformance/compare/silent.py), or None
    silent: dict | None = None


TOP_ELEMENTS = 5


def judge_outputs(case, program, outputs: list, oracle, tolerance: Tolerance, repeat: list | None = None) -> Judgement:
    """Compare a valid case's outputs with every oracle reading; the best reading decides. The
    elements that reading leaves unspecified are classified too (``Judgement.silent``:
    conformance/compare/silent.py), with ``repeat``, a second run's outputs, where one was made."""
    tolerance = tolerance.resolve(oracle, case)
    names = [canonical for _, canonical in program.outputs]
    if len(outputs) != len(names):
        return Judgement("fail", f"returned {len(outputs)} outputs, but should return {len(names)} "
                                 f"({', '.join(names)})",
                         tolerance=tolerance.to_json())
    wrong = _wrong_type(case, names, outputs)
    if wrong:
        return Judgement("fail", wrong, tolerance=tolerance.to_json())
    got = {n: program.to_canonical(n, np.asarray(o)) for n, o in zip(names, outputs)}
    best = None
    for reading in oracle.readings:
        j = _judge_reading(case, got, reading, tolerance)
        if best is None or _rank(j) < _rank(best):
            best = j
        if j.verdict == "pass":
            break
    assert best is not None  # an oracle has at least one reading
    best.tolerance = _recorded(tolerance, best.worst)
    chosen = next((r for r in oracle.readings if r.name == best.reading), oracle.readings[0])
    again = None
    if repeat is not None and len(repeat) == len(names):
        again = {n: program.to_canonical(n, np.asarray(o)) for n, o in zip(names, repeat)}
    best.silent = silent.classify(case, getattr(program, "spec", ""), got, chosen, again)
    if len(oracle.readings) > 1:
        best.reading = best.reading or "?"
        if best.verdict == "pass":
            best.message += f"; matches the reading '{best.reading}' of {len(oracle.readings)} documented readings"
        else:
            best.message += f"\n  (closest of {len(oracle.readings)} documented readings: '{best.reading}')"
    return best


def _wrong_type(case, names: list, outputs: list) -> str:
    """'Y has dtype float64, but should be float32' for the first output not of the case's type: the
    output type is part of the spec (ONNX's T), so a float64, complex, string or object output is
    wrong whatever its values."""
    want = numpy_dtype(case.dtype)
    for name, out in zip(names, outputs):
        dtype = getattr(out, "dtype", None)
        if dtype != want:
            shown = dtype.name if dtype is not None else type(out).__name__
            return f"{name} has dtype {shown}, but should be {case.dtype}"
    return ""


def judge_computed_in(case, program, outputs: list, oracle, bounds_for) -> Judgement:
    """Judge a valid case's outputs against what a correct implementation computing in a narrower
    precision may do: the same exact values, and the derived tolerance over the precision model's
    bound for that arithmetic (inputs rounded to it). ``bounds_for(reading.choices)`` returns that
    bound per output and the model's parameters (``oracles.computed_in``)."""
    readings, model, offsets = [], {}, []
    for reading in oracle.readings:
        found = bounds_for(reading.choices)
        bounds, model = found
        sigma, offset = getattr(found, "sigma", None), getattr(found, "offset", None)
        offsets.append(offset)
        readings.append(replace(reading, outputs={
            name: replace(exp, bound=bounds[name], sigma=None if sigma is None else sigma[name])
            for name, exp in reading.outputs.items()}))
    narrowed = replace(oracle, readings=readings, precision=model)
    tolerance = named_policy(DEFAULT_POLICY, case.dtype)
    if all(o is not None for o in offsets) and model.get("statistical"):
        # the inputs' known rounding is an offset beside the random part: allowed there is
        # stat_factor × (λ·c_K·sigma + offset), so sigma carries offset / (λ·c_K)
        scale = tolerance.resolve(narrowed, case).stat_scale
        if scale > 0:
            narrowed = replace(narrowed, readings=[replace(r, outputs={
                name: replace(exp, sigma=exp.sigma + offset[name] / scale)
                for name, exp in r.outputs.items()}) for r, offset in zip(readings, offsets) if offset is not None])
    return judge_outputs(case, program, outputs, narrowed, tolerance)


def _rank(j: Judgement):
    order = {"pass": 0, "unspecified": 1, "fail": 2}
    return (order.get(j.verdict, 3), j.ratio if j.ratio is not None else np.inf)


def _judge_reading(case, got: dict, reading, tol: Tolerance) -> Judgement:
    worst = None
    max_abs = max_rel = max_ulp = 0.0
    judged = unspecified = 0
    unspecified_values = {}
    worst_elements, error_by_step = {}, {}
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
        bound = getattr(exp, "bound", None)
        sigma = getattr(exp, "sigma", None)
        allowed = tol.allowed(exp.hi, bound, case.dtype, sigma)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(mask, np.where(err["abs"] == 0, 0.0, err["abs"] / allowed), -1.0)
            ratio = np.where(np.isnan(ratio), np.inf, ratio)
        idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        max_abs = max(max_abs, float(np.max(err["abs"][mask])))
        max_rel = max(max_rel, float(np.max(err["rel"][mask])))
        max_ulp = max(max_ulp, float(np.max(err["ulp"][mask])))
        r = float(ratio[idx])
        worst_elements[name] = [
            {"index": [int(i) for i in at], "time_step": time_step(case, name, at), "got": float(arr[at]),
             "expected": float(exp.hi[at]), "abs_err": float(err["abs"][at]), "allowed": float(allowed[at]),
             "ratio": float(ratio[at]), **({"bound": float(bound[at])} if tol.derived and bound is not None else {})}
            for at in (np.unravel_index(int(k), ratio.shape)
                       for k in np.argsort(-ratio, axis=None, kind="stable")[:TOP_ELEMENTS])
            if ratio[at] >= 0]
        error_by_step[name] = _by_step(name, ratio)
        if worst is None or r > worst["ratio"]:
            worst = {"output": name, "index": [int(i) for i in idx], "got": float(arr[idx]),
                     "expected": float(exp.hi[idx]), "allowed": float(allowed[idx]), "ratio": r,
                     "abs_err": float(err["abs"][idx]), "ulp": float(err["ulp"][idx]),
                     "time_step": time_step(case, name, idx), "dtype": case.dtype}
            if tol.derived:
                assert bound is not None  # tol.allowed() above raised for a derived tolerance without one
                worst["bound"] = float(bound[idx])
                if sigma is not None and tol.stat_scale:  # which bound judged it (docs/production.md)
                    rigorous = float(tol.allowed(np.array([exp.hi[idx]]), np.array([bound[idx]]), case.dtype)[0])
                    worst["judged_by"] = "statistical" if float(allowed[idx]) < rigorous else "rigorous"
                    worst["rigorous_ratio"] = float(err["abs"][idx]) / rigorous if rigorous > 0 else float("inf")
    if judged == 0:
        return Judgement("unspecified", f"all {unspecified} output elements are unspecified by the spec "
                         f"({_reasons(reading)}); compared across runtimes in the report",
                         reading=reading.name, unspecified=unspecified, unspecified_values=unspecified_values)
    assert worst is not None  # set by every output with a judged element
    ok = worst["ratio"] <= 1.0
    message = (f"max abs err {max_abs:.3g} ({max_ulp:.3g} ulp) within tolerance {tol}"
               + (f"; worst element {_worst_against_bound(worst)}" if tol.derived else "")
               if ok else describe_worst(worst, tol))
    if unspecified:
        message += f"; {unspecified} elements unspecified by the spec, not judged ({_reasons(reading)})"
    return Judgement("pass" if ok else "fail", message, max_abs, max_rel, max_ulp, worst["ratio"], worst,
                     reading.name, unspecified, unspecified_values, worst_elements=worst_elements,
                     error_by_step=error_by_step)


def _by_step(name: str, ratio: np.ndarray) -> list:
    """Y [S,D,B,H]: the worst ratio at each time step; a final state: one value (-1 marks unjudged)."""
    rows = ratio.reshape(ratio.shape[0], -1) if name == "Y" else ratio.reshape(1, -1)
    return [None if row.max() < 0 else float(row.max()) for row in rows]


def _reasons(reading) -> str:
    texts = []
    for exp in reading.outputs.values():
        for text in getattr(exp, "reasons", {}).values():
            if text not in texts:
                texts.append(text)
    return "; ".join(texts) or "spec silent"


def _recorded(tol: Tolerance, worst: dict | None) -> dict:
    """The tolerance as the results record carries it; a derived one with its worst element."""
    data = tol.to_json()
    if tol.derived and worst and "judged_by" in worst:
        data.update(judged_by=worst["judged_by"], rigorous_ratio=worst["rigorous_ratio"])
    if tol.derived and worst and "bound" in worst:
        data.update(worst_bound=worst["bound"], worst_allowed=worst["allowed"],
                    worst_error=worst["abs_err"],
                    worst_error_over_bound=_over(worst["abs_err"], worst["bound"]))
    return data


def _over(error: float, bound: float) -> float:
    if error == 0:
        return 0.0
    return error / bound if bound > 0 else float("inf")


def _element(w: dict) -> str:
    return f"{w['output']}[{','.join(map(str, w['index']))}]"


def _worst_against_bound(w: dict) -> str:
    """'Y[3,0,1,2] (time step 3): error 1.2e-07 = 0.71× its bound 1.7e-07 (0.35× the allowed …)'"""
    return (f"{_element(w)} ({w['time_step']}): error {w['abs_err']:.3g} = "
            f"{_over(w['abs_err'], w['bound']):.3g}× its bound {w['bound']:.3g} "
            f"({w['ratio']:.3g}× the allowed {w['allowed']:.3g})")


#: significant digits that tell values of each dtype apart
DIGITS = {"float64": 17, "float32": 9, "float16": 5, "bfloat16": 4}


def describe_worst(w: dict, tol: Tolerance) -> str:
    n = DIGITS.get(w.get("dtype", ""), 9)
    if not np.isfinite(w["expected"]):  # IEEE 754 propagates a non-finite input to exactly this value
        return (f"{_element(w)} = {w['got']:.{n}g}, but should be {w['expected']:g} ({w['time_step']}: IEEE 754 "
                f"arithmetic on the non-finite inputs gives exactly that)")
    lo, hi = w["expected"] - w["allowed"], w["expected"] + w["allowed"]
    head = f"{_element(w)} = {w['got']:.{n}g}, but should be within {lo:.{n}g} … {hi:.{n}g} "
    if tol.derived and w.get("judged_by") == "statistical":
        return head + (f"(exact {w['expected']:.{n}g}, {w['time_step']}; error {w['abs_err']:.3g} = "
                       f"{w['ratio']:.3g}× the allowed {w['allowed']:.3g} by the statistical bound, "
                       f"{w['rigorous_ratio']:.3g}× the rigorous one: "
                       + ("beyond both, certain" if w["rigorous_ratio"] > 1 else
                          f"a correct implementation lands there with probability below {tol.false_alarm:g}")
                       + f"; tolerance {tol})")
    if tol.derived:
        return head + (f"(exact {w['expected']:.{n}g}, {w['time_step']}; error {w['abs_err']:.3g} = "
                       f"{_over(w['abs_err'], w['bound']):.3g}× the bound {w['bound']:.3g} there, "
                       f"{w['ratio']:.3g}× the allowed {w['allowed']:.3g}; tolerance {tol})")
    return head + (f"(exact {w['expected']:.{n}g}, {w['time_step']}; error {w['abs_err']:.3g} = "
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
