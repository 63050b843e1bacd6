"""The fast path for production shapes: the oracle in float64 numpy, vectorised over the batch, with
a bound on its own error, and mpmath only where that bound is not far below the float32 tolerance.

At production shapes (hundreds of hidden units and steps) the mpmath evaluation takes minutes per
case. Here the documented formulas are evaluated once in float64 (``hi`` = that value, ``lo`` = 0),
and the evaluation carries two things besides:

- **its own error**: the precision model (precision/) at float64's unit roundoff: the rigorous
  first-order running error bound × 2 where that is finite, and the statistical bound below at
  float64's unit roundoff otherwise (the smaller of the two). It is added to every element's bound,
  so a tolerance built from them covers the oracle's own error too.
- **the statistical bound** (``Expected.sigma``): the first-order error of a correct float32
  implementation as a linear form in its rounding errors, bounded with a stated false-alarm
  probability (precision/statistical.py, model probabilistic-v2); ``sigma`` is its scale, estimated
  by Gaussian tangents through the same walk as the running bound (precision/walker.py). The
  tolerance turns it into a bound (conformance/compare/tolerance.py).

Where the oracle's own error is not at most ``FAR_BELOW`` × the sharpest float32 tolerance, the batch
rows concerned are evaluated by mpmath (api.evaluate on the sub-problem of those rows; batch rows
are independent) and spliced in. Only problems with one reading, finite inputs, the activations
Sigmoid, Tanh and Relu, no clip, and for LSTM no peepholes and input_forget = 0 take this path
(``ineligible`` says why not); float32 and float64 only. mpmath stays the reference: a test checks
this path against it on every small case of the corpus.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import precision
from .evaluation import direction_functions
from .precision.statistical import (  # noqa: F401 - the statistical model, re-exported
    FALSE_ALARM,
    MAX_SAMPLES,
    MIN_SAMPLES,
    ROUNDING,
    SAMPLE_BUDGET,
    STAT_FACTOR,
    STAT_MODEL,
    chi2_lower_quantile,
    macs,
    statistical_factor,
)
from .readings import APPLIES, DYNAMIC, _describe
from .result import Expected, OracleResult, Reading

#: the oracle's own error must be at most this fraction of the float32 tolerance, else mpmath
FAR_BELOW = 1e-3
#: the problem size (multiply-adds) from which api.evaluate takes this path by default
FAST_MIN_MACS = 1_000_000
#: activations this path knows (the mpmath path takes the others)
ACTIVATIONS = ("Sigmoid", "Tanh", "Relu")


def choice_values(profile) -> dict:
    return {pid: point.choices[0].value for pid, point in profile.points.items()}


def ineligible(problem, profile) -> str:
    """Why the fast path cannot evaluate ``problem`` ("" when it can)."""
    if problem.nonfinite:
        return "a non-finite input (IEEE classes: mpmath)"
    if problem.dtype not in ("float32", "float64"):
        return f"dtype {problem.dtype} (the fast path models float32 and float64)"
    if problem.clip is not None:
        return "clip"
    if any(name not in ACTIVATIONS for name in problem.activations):
        return f"activations other than {', '.join(ACTIVATIONS)}"
    if problem.op == "LSTM" and (problem.P is not None or problem.floats.get("P") is not None
                                 or problem.input_forget):
        return "LSTM peepholes or input_forget"
    if problem.proj_size or problem.floats.get("X_error") is not None:
        return "an LSTM projection or a stacked layer (torch.nn: framework.py, stack.py)"
    multi = {pid for pid, point in profile.points.items() if len(point.choices) > 1}
    applicable = {pid for pid, applies in APPLIES.items() if applies(problem, profile)}
    if multi & applicable:
        return f"several readings ({', '.join(sorted(multi & applicable))})"
    if DYNAMIC & applicable:
        return "a reading decided during the evaluation"
    values = choice_values(profile)
    for d in range(problem.num_directions):
        if direction_functions(problem, d, values)[1]:
            return "a missing activation parameter"
    return ""


def fingerprint() -> str:
    """The fast path's model and constants: part of its results' cache key (api.evaluate)."""
    return (f"{precision.statistical.fingerprint()}:own64=scaled:far={FAR_BELOW:g}:"
            f"factor={STAT_FACTOR:g}:alarm={FALSE_ALARM:g}:walker=1")


def walk(problem, profile, samples: int | None = None, seed: int = 0) -> dict:
    """The float64 trajectory and the tangent estimate of ‖c‖₂ per element (units of u), through
    the precision model's walker: {"values": {output: array (layout 0)}, "sigma_unit": {output:
    array}, "samples": K}; ``samples=0``: the values only (sigma_unit 0)."""
    found = precision.sigma(problem, choice_values(profile), samples=samples if samples != 0 else 1,
                            seed=seed)
    assert found is not None  # a finite problem in its own dtype, rounding to nearest
    u = found["u"]
    sigma = ({k: np.zeros_like(v) for k, v in found["sigma"].items()} if samples == 0 else
             {k: v / u for k, v in found["sigma"].items()})
    return {"values": found["values"], "sigma_unit": sigma, "samples": found["samples"]}


# -- the result -----------------------------------------------------------------------------------

def _layout(problem, array):
    if problem.layout != 1:
        return array
    return np.ascontiguousarray(array.transpose((2, 0, 1, 3) if array.ndim == 4 else (1, 0, 2)))


def _subproblem_tensors(tensors: dict, layout: int, rows) -> dict:
    """The tensors of the batch rows ``rows`` (layout 0 or 1 as the problem's)."""
    out = {}
    for name, value in tensors.items():
        if value is None:
            continue
        a = np.asarray(value)
        if name == "X":
            out[name] = a[:, rows] if layout == 0 else a[rows]
        elif name in ("initial_h", "initial_c"):
            out[name] = a[:, rows] if layout == 0 else a[rows]
        elif name == "sequence_lens":
            out[name] = a[rows]
        else:
            out[name] = a
    return out


def evaluate(problem, profile, op: str, attributes: dict, tensors: dict, prec: int,
             check_prec: int, fallback) -> OracleResult:
    """The fast path's OracleResult for an eligible ``problem`` (``ineligible(problem) == ""``).

    ``fallback(op, attributes, tensors)`` evaluates a sub-problem by mpmath (api.evaluate)."""
    from .evaluation import BEYOND_LENGTH, REASONS, ZERO_LENGTH
    values = choice_values(profile)
    walked = walk(problem, profile)
    K = walked["samples"]
    dtype = problem.dtype
    u_dtype = 2.0 ** -precision.FORMATS[dtype][0]
    u64 = 2.0 ** -53
    bounds, model = precision.bound(problem, values)
    # the running-error model is linear in u for float32 and float64 (every term is a multiple of
    # u; what is exact in float32 is exact in float64): at float64 it is at most this
    own64 = bounds if dtype == "float64" else {k: b * (u64 / u_dtype) for k, b in bounds.items()}
    S, D, B, H = problem.seq_length, problem.num_directions, problem.batch_size, problem.hidden_size
    lens = np.asarray(problem.sequence_lens)
    # unspecified elements: Y past a length, Y_h/Y_c of an empty sequence (the profiles' rule)
    policy = values["sequence_lens"]
    masks = {"Y": np.zeros((S, D, B, H), dtype=bool)}
    codes = {"Y": np.full((S, D, B, H), None, dtype=object)}
    zeros = {"Y": np.zeros((S, D, B, H), dtype=bool)}
    beyond = np.arange(S)[:, None] >= lens[None, :]                     # [S, B]
    beyond4 = np.broadcast_to(beyond[:, None, :, None], (S, D, B, H))
    if policy["beyond_length"] == "zeros":
        zeros["Y"] = beyond4.copy()
    else:
        masks["Y"] = beyond4.copy()
        codes["Y"][beyond4] = BEYOND_LENGTH
    empty = np.broadcast_to((lens == 0)[None, :, None], (D, B, H))
    for name in problem.info.outputs[1:]:
        masks[name] = np.zeros((D, B, H), dtype=bool)
        codes[name] = np.full((D, B, H), None, dtype=object)
        zeros[name] = np.zeros((D, B, H), dtype=bool)
        if policy["zero_length"] == "unspecified":
            masks[name] = empty.copy()
            codes[name][empty] = ZERO_LENGTH
        elif policy["zero_length"] == "zeros":
            zeros[name] = empty.copy()
    elements = int(sum((~m).sum() for m in masks.values()))
    lam, c_k = statistical_factor(elements, K, FALSE_ALARM)
    reasons_text = {}
    if masks["Y"].any():
        reasons_text[BEYOND_LENGTH] = REASONS[BEYOND_LENGTH].format(
            clause="sequence_lens: " + profile.point("sequence_lens").clause)
    if any(masks[n].any() for n in problem.info.outputs[1:]):
        reasons_text[ZERO_LENGTH] = REASONS[ZERO_LENGTH].format(
            clause="sequence_lens: " + profile.point("sequence_lens").clause)
    outputs, flagged = {}, np.zeros(B, dtype=bool)
    own_error = {}
    worst_own, agree = 0.0, 53.0
    for name in problem.info.outputs:
        hi = np.where(zeros[name], 0.0, walked["values"][name])
        sigma_unit = np.where(zeros[name], 0.0, walked["sigma_unit"][name])
        stat64 = STAT_FACTOR * lam * c_k * sigma_unit * u64
        rig64 = 2.0 * np.where(np.isnan(own64[name]), np.inf, own64[name])
        own = np.where(zeros[name], 0.0, np.minimum(rig64, stat64))
        rigorous = np.where(np.isnan(bounds[name]), np.inf, bounds[name])
        sigma = sigma_unit * u_dtype
        sharpest = np.minimum(2.0 * rigorous, STAT_FACTOR * lam * c_k * sigma)
        floor = 2.0 * u_dtype * np.abs(hi)   # below the tolerance's 2-ulp floor
        allowed = np.maximum(sharpest, floor)
        bad = ~masks[name] & ~(own <= FAR_BELOW * allowed)
        if bad.any():
            axis = 2 if name == "Y" else 1
            flagged |= bad.any(axis=tuple(i for i in range(bad.ndim) if i != axis))
        own_error[name] = own
        spec = ~masks[name]
        if spec.any():
            worst_own = max(worst_own, float(own[spec].max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(own[spec] > 0, own[spec] / np.maximum(np.abs(hi[spec]), 1e-300), 0.0)
            top = float(rel.max())
            agree = min(agree, 53.0 if top <= 0 else -math.log2(top))
        outputs[name] = Expected(
            hi=np.where(masks[name], np.nan, hi), lo=np.where(masks[name], np.nan, 0.0),
            unspecified=masks[name].copy(),
            reasons={code: reasons_text[code] for code in sorted({c for c in codes[name].ravel() if c})},
            bound=np.where(masks[name], np.nan, rigorous + own),
            codes=codes[name], sigma=np.where(masks[name], np.nan, sigma + own / (lam * c_k)))
    fallback_rows = np.nonzero(flagged)[0]
    if fallback_rows.size:  # mpmath for those batch rows (rows are independent): spliced in
        sub = fallback(op, attributes, _subproblem_tensors(tensors, problem.layout, fallback_rows))
        reading = sub.readings[0]
        for name, e in outputs.items():
            got = reading.outputs[name]
            at = (slice(None), slice(None), fallback_rows) if name == "Y" else (slice(None), fallback_rows)
            assert e.bound is not None and e.sigma is not None  # set by this path for every output
            e.hi[at], e.lo[at], e.bound[at] = (_to0(problem, a) for a in (got.hi, got.lo, got.bound))
            e.sigma[at] = e.sigma[at] - (own_error[name] / (lam * c_k))[at]
    for e in outputs.values():  # layout 0 -> the problem's layout
        e.hi, e.lo, e.unspecified, e.bound, e.sigma, e.codes = (
            _layout(problem, a) for a in (e.hi, e.lo, e.unspecified, e.bound, e.sigma, e.codes))
    from . import silent
    if any(e.unspecified.any() for e in outputs.values()):
        continued = None
        if lens.min() < S:
            full = replace(problem, sequence_lens=[S] * B)
            cv, cb = precision.trajectory(full, values)
            continued = (cv, {k: np.where(np.isnan(v), np.inf, v) for k, v in cb.items()})
        silent.attach(problem, profile, values, outputs, check_prec, continued=continued)
    model.update(precision.shape_facts(problem))
    model["statistical"] = precision.statistical.describe(K, elements, precision.arithmetic(dtype))
    certificate = {"prec": 53, "check_prec": None, "method": "float64-fast",
                   "agree_bits": math.floor(agree * 1000) / 1000, "max_abs_diff": worst_own,
                   "own_error": "min(2 × the precision model at float64, its statistical bound)",
                   "fallback_rows": [int(b) for b in fallback_rows],
                   "mpmath_prec": prec if fallback_rows.size else None}
    listed = {pid for pid, applies in APPLIES.items() if applies(problem, profile)}
    return OracleResult(op=problem.op, profile=profile.name,
                        readings=[Reading("default", _describe(profile, listed, [], {}, []), outputs, {})],
                        certificate=certificate,
                        ambiguities=[pid for pid, point in profile.points.items()
                                     if point.ambiguous and pid in listed],
                        notes=list(problem.notes), precision=model)


def _to0(problem, array):
    if array is None or problem.layout != 1:
        return array
    back = (1, 2, 0, 3) if array.ndim == 4 else (1, 0, 2)
    return np.ascontiguousarray(array.transpose(back))
