"""The oracle's public entry points."""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np

from . import cache as disk
from . import fast, precision
from .errors import OracleError
from .evaluation import evaluate as evaluate_choices
from .problem import build_problem
from .profiles import get_profile
from .readings import solve
from .result import OracleResult
from .stack import evaluate_stack, layers_of, stack_bounds

#: bump whenever the semantics, the result format or the precision model (precision/, its
#: constants included) change: it is part of the cache key.
#: 1.1.0: Expected.bound and OracleResult.precision (precision model running-error-v1).
#: 1.2.0: ±Inf and NaN inputs evaluated with IEEE 754 semantics (ieee.py; the IEEE points of
#: profiles.py; bound 0 at non-finite elements; reason ieee754.vanishing_factor).
#: 1.3.0: Expected.codes (each unspecified element's reason) and Expected.plausible (silent.py).
#: 1.4.0: the float64 fast path for production shapes (fast.py: Expected.sigma, the statistical
#: model: fast.STAT_MODEL, part of the cache key with fast.fingerprint()); results of the mpmath path are unchanged.
ORACLE_VERSION = "1.4.0"

DEFAULT_PREC = 128
MIN_PREC = 64


def _stacked(attributes) -> bool:
    """Whether the problem is a stack of layers (num_layers > 1), which stack.py evaluates."""
    return layers_of(attributes or {}) > 1


def _check_precisions(prec, check_prec) -> tuple[int, int]:
    if not isinstance(prec, int) or prec < MIN_PREC:
        raise OracleError(f"prec={prec!r} should be an integer >= {MIN_PREC} (bits); the "
                          "double-double outputs need more than 106 bits to be meaningful.")
    if check_prec is None:
        check_prec = prec + 64
    if not isinstance(check_prec, int) or check_prec <= prec:
        raise OracleError(f"check_prec={check_prec!r} should be an integer > prec={prec!r}. "
                          f"Consider check_prec={prec + 64}.")
    return prec, check_prec


def _lookup(op, attributes, tensors, profile, prec, check_prec, cache: bool, method: str):
    """(semantics, the fast path's problem or None, the cache key or None, the cached result or
    None): everything evaluate() does before it computes."""
    if method not in ("auto", "fast", "mpmath"):
        raise OracleError(f"method={method!r} should be 'auto', 'fast' or 'mpmath'.")
    semantics = get_profile(profile)
    problem = None
    if method != "mpmath" and not _stacked(attributes):
        problem = build_problem(op, attributes, tensors, semantics, exact=False)
        if (method == "auto" and fast.macs(problem) < fast.FAST_MIN_MACS) or fast.ineligible(problem, semantics):
            problem = None
    version = ORACLE_VERSION if problem is None else f"{ORACLE_VERSION}+{fast.fingerprint()}"
    cache_key, hit = None, None
    if cache:
        cache_key = disk.key(version, op, attributes, tensors, profile, prec, check_prec)
        hit = disk.load(cache_key)
        if hit is not None and hit.oracle_version != ORACLE_VERSION:
            hit = None
    return semantics, problem, cache_key, hit


def cache_path(op: str, attributes: dict, tensors: dict, profile: str = "onnx", prec: int = DEFAULT_PREC,
               check_prec: int | None = None, method: str = "auto"):
    """The file evaluate() keeps its result in (oracles/cache.py; it need not exist yet): what a portable
    bundle of results copies (conformance gpu-check --prepare)."""
    prec, check_prec = _check_precisions(prec, check_prec)
    _, problem, _, _ = _lookup(op, attributes, tensors, profile, prec, check_prec, False, method)
    version = ORACLE_VERSION if problem is None else f"{ORACLE_VERSION}+{fast.fingerprint()}"
    return disk.path_for(disk.key(version, op, attributes, tensors, profile, prec, check_prec))


def cached(op: str, attributes: dict, tensors: dict, profile: str = "onnx", prec: int = DEFAULT_PREC,
           check_prec: int | None = None, method: str = "auto") -> OracleResult | None:
    """evaluate()'s result where its disk cache already holds it, else None (nothing is computed:
    the suite's main process looks here before it sends the oracle a job)."""
    prec, check_prec = _check_precisions(prec, check_prec)
    return _lookup(op, attributes, tensors, profile, prec, check_prec, True, method)[3]


def evaluate(op: str, attributes: dict, tensors: dict, profile: str = "onnx",
             prec: int = DEFAULT_PREC, check_prec: int | None = None,
             cache: bool = True, method: str = "auto") -> OracleResult:
    """Evaluate RNN/GRU/LSTM exactly under a spec family's documented semantics.

    op: "RNN", "GRU" or "LSTM". attributes: ONNX attribute names; missing ones take ONNX defaults.
    tensors: ONNX input names -> arrays (absent optional inputs are simply missing), in the layout
    the ``layout`` attribute names. profile: "onnx", "openvino" or "directml".
    Returns one reading per distinct result of the spec's ambiguous points that apply, each output
    as a double-double with a mask of unspecified elements, and a precision certificate.
    Raises OracleError for an invalid problem.

    ``method``: "mpmath" (the reference), "fast" (float64 with a bound on its own error and mpmath
    for the batch rows where that bound is not far below the float32 tolerance: fast.py; a
    problem the fast path cannot take goes to mpmath), or "auto" (fast from fast.FAST_MIN_MACS
    multiply-adds on: the production tier; the corpus stays on mpmath).
    """
    prec, check_prec = _check_precisions(prec, check_prec)
    semantics, problem, cache_key, hit = _lookup(op, attributes, tensors, profile, prec, check_prec, cache, method)
    if hit is not None:
        return hit
    if _stacked(attributes):  # torch.nn's num_layers: layer by layer (stack.py)
        result = evaluate_stack(op, attributes, tensors, semantics, prec, check_prec)
    elif problem is not None:
        def fallback(op_, attributes_, tensors_):
            return evaluate(op_, attributes_, tensors_, profile, prec, check_prec, cache=False,
                            method="mpmath")
        result = fast.evaluate(problem, semantics, op, attributes, tensors, prec, check_prec, fallback)
    else:
        problem = build_problem(op, attributes, tensors, semantics)
        result = solve(problem, semantics, prec, check_prec)
    result.oracle_version = ORACLE_VERSION
    if cache_key is not None:
        disk.store(cache_key, result)
    return result


def evaluate_mp(op: str, attributes: dict, tensors: dict, profile: str = "onnx",
                prec: int = DEFAULT_PREC, choices: dict | None = None) -> dict[str, np.ndarray]:
    """One reading at one precision, as arrays of ``mpmath.mpf`` (None where unspecified).

    ``choices`` picks a reading by ambiguity id and choice tag, e.g. ``{"input_forget": "i=1-f"}``;
    points not named take the profile's first choice. Outputs are in the problem's layout.
    """
    if not isinstance(prec, int) or prec < 2:
        raise OracleError(f"prec={prec!r} should be an integer >= 2 (bits).")
    semantics = get_profile(profile)
    values = {pid: point.choices[0].value for pid, point in semantics.points.items()}
    for pid, tag in (choices or {}).items():
        if pid not in semantics.points:
            raise OracleError(f"choices has {pid!r}, which is not a point of the {profile!r} "
                              f"profile; its points are {sorted(semantics.points)!r}.")
        point = semantics.points[pid]
        picked = [c for c in point.choices if c.tag == tag]
        if not picked:
            raise OracleError(f"choices[{pid!r}]={tag!r} is not a reading of the {profile!r} "
                              f"profile; it admits {list(point.choice_tags)!r}.")
        values[pid] = picked[0].value
    problem = build_problem(op, attributes, tensors, semantics)
    evaluation = evaluate_choices(problem, semantics, values, prec)
    outputs = {}
    for name, out in evaluation.outputs.items():
        array = np.empty(len(out.values), dtype=object)
        array[:] = [None if v is None else mpmath.mp.make_mpf(v) for v in out.values]
        array = array.reshape(out.shape)
        if problem.layout == 1:
            array = array.transpose((2, 0, 1, 3) if array.ndim == 4 else (1, 0, 2))
        outputs[name] = array
    return outputs


@dataclass
class Narrowed:
    """computed_in's answer: per output (the problem's layout) the rigorous ``bounds``, the
    statistical scale ``sigma`` and the inputs' rounding ``offset`` (None where the statistical
    model does not apply), and the model's parameters. Unpacks as (bounds, model)."""

    bounds: dict
    model: dict
    sigma: dict | None = None
    offset: dict | None = None

    def __iter__(self):
        return iter((self.bounds, self.model))


def computed_in(op: str, attributes: dict, tensors: dict, profile: str, choices: dict,
                compute: str, accumulation: str | None = None,
                rounding: str = "nearest", statistical: bool = True, kernel: bool = True,
                act_ulps: dict | None = None) -> Narrowed:
    """The precision model's bound for a reduced-precision kernel that computes in ``compute``
    instead of the inputs' dtype (bfloat16, float16 or tfloat32 for a float32 model; float32 for a
    float64 one): precision.kernel, docs/precision.md ("Reduced-precision kernels").
    ``accumulation`` ("float32" or "dtype") narrows the accumulation types admitted for dot
    products to one; by default the worse. ``rounding`` "faithful" admits rounding in any direction
    (a truncating conversion), at twice the unit roundoff; by default to nearest.

    ``choices`` names the reading (``Reading.choices``: point id -> choice tag); points it does not
    name take the profile's first choice. Returns per output the bound (float64, in the problem's
    layout; inf where there is no finite bound: the trajectory overflowed float64, or the element is
    unspecified, which the reading's mask says, or its IEEE class depends on rounding; 0 where the
    value is ±Inf or NaN) and the model's parameters, as ``OracleResult.precision`` records them;
    with ``statistical`` (and rounding to nearest, finite inputs) also the statistical model's
    scale and offset (precision.sigma), and its parameters in ``model["statistical"]``.
    ``kernel=False``: the model before kernel-v1 (the narrower type's own arithmetic, the inputs
    rounded to it, the rigorous bound only), for comparison. ``compute`` may be the inputs' own dtype
    where ``act_ulps`` is given: a kernel in the model's type whose tanh and sigmoid are accurate to
    the measured {"Tanh": k, "Sigmoid": k} ulps (precision.with_activations; capped at
    precision.ACT_ULPS_CEILING). A stack of layers (num_layers > 1, torch.nn's) is walked layer by layer
    (stack.stack_bounds), with the rigorous bound only.
    """
    semantics = get_profile(profile)
    values = {pid: point.choices[0].value for pid, point in semantics.points.items()}
    for pid, tag in (choices or {}).items():
        picked = [c for c in semantics.points[pid].choices if c.tag == tag] if pid in semantics.points else []
        if not picked:
            raise OracleError(f"choices[{pid!r}]={tag!r} is not a reading of the {profile!r} profile.")
        values[pid] = picked[0].value
    if compute not in precision.ACCUMULATIONS:
        raise OracleError(f"compute={compute!r} is not a type the precision model knows; it knows "
                          f"{sorted(precision.ACCUMULATIONS)!r}.")
    if accumulation not in (None, *precision.ACCUMULATIONS[compute]):
        raise OracleError(f"accumulation={accumulation!r} is not admitted for {compute}; admitted: "
                          f"{list(precision.ACCUMULATIONS[compute])!r}.")
    if _stacked(attributes):
        bounds, model = stack_bounds(op, attributes, tensors, semantics, values, compute, accumulation, rounding,
                                     kernel, act_ulps)
        return Narrowed({name: np.where(np.isnan(b), np.inf, b) for name, b in bounds.items()}, model)
    problem = build_problem(op, attributes, tensors, semantics)
    if accumulation not in (None, *precision.ACCUMULATIONS[compute]):
        raise OracleError(f"accumulation={accumulation!r} is not admitted for {compute}; admitted: "
                          f"{list(precision.ACCUMULATIONS[compute])!r}.")
    if rounding not in precision.ROUNDINGS:
        raise OracleError(f"rounding={rounding!r} is not one of {list(precision.ROUNDINGS)!r}.")
    bounds, model = precision.bound(problem, values, dtype=compute, accumulation=accumulation,
                                    rounding=rounding, kernel=kernel, act_ulps=act_ulps)
    # no finite bound where the float64 trajectory overflowed (or a direction is unspecified,
    # which the reading's own mask covers): inf, as Expected.bound has it
    bounds = {name: np.where(np.isnan(b), np.inf, b) for name, b in bounds.items()}
    found = (precision.sigma(problem, values, compute, accumulation, rounding, act_ulps=act_ulps)
             if statistical and kernel else None)
    sigma = offset = None
    if found is not None:
        elements = int(sum(b.size for b in bounds.values()))
        sigma = {k: np.where(np.isfinite(v) & np.isfinite(bounds[k]), v, np.inf)
                 for k, v in found["sigma"].items()}
        offset = found["offset"]
        model["statistical"] = precision.statistical.describe(
            found["samples"], elements, precision.arithmetic_of(problem, compute, accumulation, rounding,
                                                                act_ulps=act_ulps))
    model.update(precision.shape_facts(problem))
    return Narrowed(_to_layout(problem, bounds) or {}, model, _to_layout(problem, sigma),
                    _to_layout(problem, offset))


def _to_layout(problem, arrays: dict | None) -> dict | None:
    """Per-output arrays from layout 0 to the problem's layout."""
    if arrays is None or problem.layout != 1:
        return arrays
    return {name: np.ascontiguousarray(b.transpose((2, 0, 1, 3) if b.ndim == 4 else (1, 0, 2)))
            for name, b in arrays.items()}
