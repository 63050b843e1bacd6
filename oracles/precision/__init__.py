"""The precision model: how far a *correct* implementation may land from the exact result, element
by element (oracles/README.md, "Precision model"; docs/precision.md).

Running error analysis (first order) along the case's own trajectory: every quantity of the
recurrence — a gate's pre-activation, a gate, a new cell or hidden state — carries its value and a
bound e on |computed − exact|, and each primitive turns its operands' (value, e) into its result's.
Inputs are exact (e = 0), or rounded to a narrower compute type (kernel()). The bound is evaluated
in float64 along a float64 recomputation of the trajectory (it needs a few correct digits, not the
oracle's 128 bits), following the same reading (choices) as the oracle's evaluation. "First order"
means products of two error bounds and curvature terms (½|f''|e²) are left out except where they
cost nothing; the tolerance that uses the bound multiplies it by a safety factor for them
(conformance/compare/policies.yaml).

The same walk carries tangents instead (statistical.py, tangents.py): the statistical model of a
correct implementation's error, Higham & Mary's √n·u, for the production tier's fast path and for
the judgement of a target that computes in a narrower precision.

Modules: ``arithmetic`` (unit roundoffs of a dtype, and of a reduced-precision kernel),
``functions`` (activations), ``sums`` (dot products and products), ``nonfinite`` (IEEE classes,
clip), ``running`` (the running-bound carrier), ``statistical`` and ``tangents`` (the statistical
model and its carrier), ``walker`` (the one trajectory walker: directions, sequence_lens, the gate
arithmetic).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import statistical
from .arithmetic import (
    ACCUMULATIONS,
    ACT_ABS_ULPS,
    ACT_ULPS,
    ACT_ULPS_CEILING,
    FORMATS,
    KERNEL_MODEL,
    KINK_WIDEN,
    MEASURED_FUNCTIONS,
    MODEL,
    NONFINITE,
    ROUNDINGS,
    Arithmetic,
    activations_text,
    arithmetic,
    kernel,
    widened,
    with_activations,
)
from .running import Running
from .statistical import samples_for
from .tangents import Tangents
from .walker import walk as _walk

__all__ = ["ACCUMULATIONS", "ACT_ABS_ULPS", "ACT_ULPS", "ACT_ULPS_CEILING", "FORMATS", "KERNEL_MODEL", "KINK_WIDEN",
           "MEASURED_FUNCTIONS", "MODEL", "NONFINITE", "ROUNDINGS", "Arithmetic", "activations_text", "arithmetic",
           "arithmetic_of", "bound", "fingerprint", "kernel", "shape_facts", "sigma", "statistical", "trajectory",
           "walk", "widened", "with_activations"]


def bound(problem, choices: dict, dtype: str | None = None, accumulation: str | None = None,
          rounding: str = "nearest", kernel: bool = True, act_ulps: dict | None = None) -> tuple[dict, dict]:
    """Per-output error bounds (layout 0, float64, NaN where a direction has no functions), and
    the model's parameters, for ``problem`` under the reading ``choices`` (point id -> value).

    ``dtype`` other than the problem's: an implementation that computes in ``dtype`` instead
    (bfloat16 or float16 for a float32 model, float32 for float64, tfloat32): a reduced-precision
    kernel (arithmetic.kernel); ``kernel=False``: the model before kernel-v1, the dtype's own
    arithmetic with the inputs rounded to it (kept for comparison: benchmarks/declared_precision.py).
    ``rounding`` "faithful" admits rounding in any direction (see ROUNDINGS). ``act_ulps``: the kernel's
    measured tanh and sigmoid accuracy ({"Tanh": k, "Sigmoid": k}: with_activations)."""
    out, parameters, classes = walk(problem, choices, dtype, accumulation, rounding, kernel, act_ulps)
    if classes is not None:  # non-finite problems: 0 at ±Inf and NaN, no bound where tainted
        out = {name: np.where(classes["taint"][name], np.inf,
                              np.where(np.isfinite(classes["value"][name]), b, 0.0))
               for name, b in out.items()}
    return out, parameters


def arithmetic_of(problem, dtype: str | None = None, accumulation: str | None = None,
                  rounding: str = "nearest", reduced: bool = True, act_ulps: dict | None = None) -> Arithmetic:
    """The arithmetic a walk of ``problem`` uses: its own dtype's, or a kernel computing in a
    narrower ``dtype`` (``reduced=False``: that dtype's own arithmetic, the inputs rounded); with
    ``act_ulps``, its tanh and sigmoid as measured (with_activations)."""
    compute = dtype or problem.dtype
    if compute != problem.dtype and FORMATS[compute][0] < FORMATS[problem.dtype][0]:
        ar = (kernel(compute, accumulation, rounding) if reduced
              else arithmetic(compute, accumulation, True, rounding))
    else:
        ar = arithmetic(compute, accumulation, False, rounding)
    ar = with_activations(ar, act_ulps)
    return dataclasses.replace(ar, ieee=True) if problem.nonfinite else ar


def walk(problem, choices: dict, dtype: str | None = None, accumulation: str | None = None,
         rounding: str = "nearest", kernel: bool = True, act_ulps: dict | None = None
         ) -> tuple[dict, dict, dict | None]:
    """bound()'s walk, with, for a problem with a non-finite input, the classes it saw: {"value":
    per output the float64 trajectory's values, "taint": per output where the IEEE class is not
    certain} (None for a finite problem). readings.py compares them with the exact classes."""
    ar = arithmetic_of(problem, dtype, accumulation, rounding, kernel, act_ulps)
    with np.errstate(all="ignore"):  # a trajectory that overflows gives inf/NaN bounds
        fields = _walk(problem, choices, Running(ar, choices))
    classes = {"value": fields["value"], "taint": fields["taint"]} if ar.ieee else None
    return fields["bound"], ar.parameters(), classes


def trajectory(problem, choices: dict) -> tuple[dict, dict]:
    """(the float64 trajectory's values, the running bound) per output, layout 0, for a finite
    problem in its own dtype: one walk."""
    ar = arithmetic_of(problem)
    with np.errstate(all="ignore"):
        fields = _walk(problem, choices, Running(ar, choices))
    return fields["value"], fields["bound"]


def sigma(problem, choices: dict, dtype: str | None = None, accumulation: str | None = None,
          rounding: str = "nearest", samples: int | None = None, seed: int = 0,
          act_ulps: dict | None = None) -> dict | None:
    """The statistical model's scale per output element (statistical.py), for a correct
    implementation in the problem's dtype or a kernel computing in a narrower ``dtype``:
    {"values": the float64 trajectory, "sigma": the estimated ‖c‖₂ × u (inf where a kink or jump
    breaks the linearisation), "offset": the largest error the inputs' known rounding can make
    (a kernel rounding its inputs; 0 otherwise), "samples": K, "u": u}, per output, layout 0.
    None where the model does not apply: a non-finite input, or rounding that is not to nearest
    (its errors are biased)."""
    ar = arithmetic_of(problem, dtype, accumulation, rounding, act_ulps=act_ulps)
    if problem.nonfinite or ar.rounding != "nearest":
        return None
    if problem.proj_size or problem.floats.get("X_error") is not None:
        return None  # torch.nn's projection and stacked layers: the running bound only
    K = samples or samples_for(problem)
    carrier = Tangents(ar, choices, K, seed, offsets=bool(ar.u_in or ar.u_gemm))
    with np.errstate(all="ignore"):
        fields = _walk(problem, choices, carrier)
    return {"values": fields["value"], "samples": K, "u": ar.u,
            "sigma": {k: v * ar.u for k, v in fields["sigma"].items()},
            "offset": {k: v * ar.u for k, v in fields["offset"].items()}}


def fingerprint() -> str:
    """The model's name and constants. A test pins it to ORACLE_VERSION: a changed constant is a
    changed bound, which must not be served from the cache under the old version."""
    return f"{MODEL}:k={ACT_ULPS}:abs={ACT_ABS_ULPS}:widen={KINK_WIDEN}:nonfinite={NONFINITE}"


def shape_facts(problem) -> dict:
    """What the bound grows with, for the tolerance's source: dot length and time steps."""
    products = problem.input_size + problem.hidden_size
    peephole = 1 if problem.P is not None else 0
    return {
        "dot_length": products + 2 + peephole,
        "dot_terms": (f"input_size {problem.input_size} + hidden_size {problem.hidden_size} + 2 "
                      f"biases" + (" + 1 peephole" if peephole else "")),
        "steps": max(problem.sequence_lens) if problem.sequence_lens else problem.seq_length,
    }
