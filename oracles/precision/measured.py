"""A kernel's tanh and sigmoid as measured through the recurrent op, in the model's terms.

The activation probe (conformance/run/activations.py) runs a target's RNN, GRU and LSTM so that an
output is exactly one activation of an input exact in the target's precision (tanh(x) or
sigmoid(x), nothing else moving it). This module turns what came back into what the precision
model needs: per point, the smallest k (ulps as ``Arithmetic.k`` counts them: a library function
within k ulps is within 2k·u relative, with the absolute floor near zero, ``functions.Fn``) with
which the model's own error of that function covers the measured error, in the target's arithmetic
(float32, TF32's float32 activations, or a bf16/f16 kernel's float32 activation rounded once to the
narrow type). The exact values are the oracle's: mpmath at 80 bits.

``with_activations`` (arithmetic.py) then widens the model to the measured k, capped at
ACT_ULPS_CEILING (docs/precision.md, "Measured activations").
"""

from __future__ import annotations

import mpmath
import numpy as np

from .arithmetic import ACT_ULPS_CEILING, Arithmetic, arithmetic, kernel, widened
from .functions import Fn

#: the bisection's steps on k (from 0 to SEARCH_TOP: finer than a hundredth of an ulp)
STEPS = 48
#: k beyond which a point reads as unbounded (inf): far past the ceiling
SEARCH_TOP = 2.0 ** 24
EXACT_BITS = 80


def exact(name: str, x: np.ndarray) -> np.ndarray:
    """tanh(x) or sigmoid(x) of float64 inputs, from mpmath at EXACT_BITS bits, rounded to float64."""
    with mpmath.workprec(EXACT_BITS):
        if name == "Tanh":
            values = [float(mpmath.tanh(mpmath.mpf(float(v)))) for v in x]
        elif name == "Sigmoid":
            values = [float(1 / (1 + mpmath.exp(-mpmath.mpf(float(v))))) for v in x]
        else:
            raise ValueError(f"no measurement of activation {name!r}: only Tanh and Sigmoid")
    return np.array(values, dtype=np.float64)


def arithmetic_for(compute: str) -> Arithmetic:
    """The arithmetic a kernel computing in ``compute`` evaluates its activations in: float32's own
    (float32, and TF32, whose activations are float32), or a bf16/f16 kernel's (float32, rounded once
    to the narrow type)."""
    if compute in ("float32", "tfloat32"):
        return arithmetic("float32")
    return kernel(compute)


def _at(ar: Arithmetic, name: str, k: np.ndarray) -> Arithmetic:
    """``ar`` whose ``name`` is accurate to k ulps, k an array (one per point)."""
    return widened(ar, tanh=k) if name == "Tanh" else widened(ar, sigmoid=k)


def needed(name: str, x, got, compute: str = "float32") -> np.ndarray:
    """Per point, the smallest k with which the model's own error of ``name`` at x covers |got −
    exact|: 0 where the model's rounding alone covers it, inf where no k up to SEARCH_TOP does (a
    non-finite output included)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    got = np.asarray(got, dtype=np.float64).ravel()
    if x.shape != got.shape:
        raise ValueError(f"{got.size} outputs for {x.size} inputs")
    err = np.abs(got - exact(name, x))
    err = np.where(np.isfinite(err), err, np.inf)
    ar = arithmetic_for(compute)
    zero = np.zeros_like(x)

    def covers(k):
        return Fn(name, [], [], False, _at(ar, name, k))(x, zero)[1] >= err

    lo, hi = zero.copy(), np.full_like(x, SEARCH_TOP)
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        ok = covers(mid)
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    k = np.where(covers(zero), 0.0, hi)
    return np.where(covers(np.full_like(x, SEARCH_TOP)), k, np.inf)


#: significand bits of the types a kernel's outputs are rounded to (TF32's activations are float32)
BITS = {"float32": 24, "tfloat32": 24, "float16": 11, "bfloat16": 8}


def ulps(x, got, name: str, compute: str = "float32") -> np.ndarray:
    """The error of each point in ulps of its exact value in the type the kernel's outputs are (float32,
    or a bf16/f16 kernel's narrow type): the spacing of that type there (subnormals not modelled)."""
    exact_values = exact(name, np.asarray(x, dtype=np.float64).ravel())
    _, e = np.frexp(np.where(exact_values == 0, 1.0, np.abs(exact_values)))
    spacing = np.ldexp(1.0, e - BITS[compute])
    return np.abs(np.asarray(got, dtype=np.float64).ravel() - exact_values) / spacing


def summary(name: str, x, got, compute: str = "float32") -> dict:
    """What the judgement and the report need of one function measured through one op: the model's k
    (its largest over the points, and the median), the errors in float32 ulps (largest, median), the
    points, the input where k is largest, and the ceiling. ``ulps`` are of the kernel's output type
    (float32; bf16 or f16 for a narrow kernel, whose rounding alone is up to half of one)."""
    k = needed(name, x, got, compute)
    u = ulps(x, got, name, compute)
    worst = int(np.argmax(np.where(np.isfinite(k), k, np.finfo(np.float64).max)))
    return {"k": float(k.max()), "k_median": float(np.median(k)), "ulps": float(np.nanmax(u)),
            "ulps_median": float(np.nanmedian(u)), "points": int(k.size),
            "worst_x": float(np.asarray(x, dtype=np.float64).ravel()[worst]), "ceiling": ACT_ULPS_CEILING}
