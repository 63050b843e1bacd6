"""Test vectors of one case: the oracle's expected outputs with the error each element may have.

What the suite judges by, taken out of it: for one reading of the spec (the oracle's, or the one a
verdict chose), each output's exact value (correctly rounded to float64), the *allowed* error per
element (the derived tolerance, ``conformance/compare/tolerance.py``: ``max(2 × bound, 2 ulp)``,
or a named policy's), and the elements the spec leaves unspecified. ``compute`` narrows the bound to
an implementation computing in a narrower precision (bf16 for a float32 model), as the second
judgement does (``judge_computed_in``).

Both ``conformance bugreport`` (the bundle's ``expected_*.npy`` and ``allowed_*.npy``) and
``conformance export`` (node tests, WPT vectors) write these. Values are in the canonical layout
(ONNX layout 0); :func:`program_layout` brings one into a program's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from conformance.case.tensors import numpy_dtype
from conformance.compare.tolerance import DEFAULT_POLICY, for_case, named_policy


@dataclass
class Output:
    name: str                  # the canonical output name (Y, Y_h, Y_c)
    expected: np.ndarray       # float64: the exact value, correctly rounded to float64; NaN where unspecified
    allowed: np.ndarray        # float64: the largest |got - exact| a conforming result may show; inf where unspecified
    unspecified: np.ndarray    # bool: the spec defines no value there

    def rounded(self, dtype: str) -> np.ndarray:
        """The expected value in the case's dtype (round to nearest; unspecified elements are 0)."""
        return np.where(self.unspecified, 0.0, self.expected).astype(numpy_dtype(dtype))

    def allowed_against_rounded(self, dtype: str) -> np.ndarray:
        """The allowed error against :meth:`rounded` rather than the exact value: the rounding's own
        error added, so a result the suite passes passes against the rounded value too."""
        with np.errstate(invalid="ignore", over="ignore"):
            slack = np.abs(self.rounded(dtype).astype(np.float64) - self.expected)
        return np.where(np.isfinite(slack), self.allowed + slack, self.allowed)


@dataclass
class Vectors:
    case: object
    profile: str               # the oracle profile (spec semantics): onnx, openvino, directml
    reading: str               # the reading of the spec these values follow
    readings: list[str]        # every documented reading of the case (more than one: the spec is ambiguous)
    outputs: dict[str, Output]
    tolerance: dict            # the tolerance applied (Tolerance.to_json(): kind, source, factor, floor, ...)
    unspecified: dict[str, str] = field(default_factory=dict)   # reason code -> why the spec is silent
    compute: str = ""          # the narrower precision the bound is for ("" for the case's own dtype)

    @property
    def any_unspecified(self) -> bool:
        return any(o.unspecified.any() for o in self.outputs.values())


def oracle_of(case, profile: str, prec: int = 128):
    """The oracle's result for ``case`` under ``profile`` (the engine's own call, in this process;
    the oracle's disk cache answers what a run already computed)."""
    from conformance.run.engine import oracle_for
    return oracle_for(case.op, case.attributes, case.tensors, profile, prec)


def vectors_of(case, profile: str, reading: str | None = None, compute: str = "", accumulation: str | None = None,
               rounding: str = "nearest", policy: str | None = None, prec: int = 128, oracle=None) -> Vectors:
    """The case's vectors under ``profile``: ``reading`` names the reading (default: the first),
    ``compute`` a narrower precision the implementation computes in (its bound, with ``accumulation``
    and ``rounding`` as the pair's effective configuration says), ``policy`` a named tolerance policy
    instead of the derived bound (a case's own override still wins, as in a run)."""
    result = oracle if oracle is not None else oracle_of(case, profile, prec)
    if compute:
        result = _narrowed(case, profile, result, compute, accumulation, rounding)
        tol = named_policy(DEFAULT_POLICY, case.dtype).resolve(result, case)
    else:
        tol = for_case(case, policy).resolve(result, case)
    chosen = result.readings[0]
    if reading:
        chosen = next((r for r in result.readings if r.name == reading), chosen)
    outputs: dict[str, Output] = {}
    reasons: dict[str, str] = {}
    for name, exp in chosen.outputs.items():
        mask = np.asarray(exp.unspecified, dtype=bool)
        hi = np.asarray(exp.hi, dtype=np.float64)
        if tol.derived:
            allowed = tol.allowed(hi, exp.bound, case.dtype, getattr(exp, "sigma", None))
        else:
            allowed = tol.allowed(hi)
        allowed = np.where(mask, np.inf, np.asarray(allowed, dtype=np.float64))
        outputs[name] = Output(name, np.where(mask, np.nan, hi), allowed, mask)
        reasons.update(getattr(exp, "reasons", {}) or {})
    return Vectors(case, profile, chosen.name, [r.name for r in result.readings], outputs, tol.to_json(), reasons,
                   compute)


def _narrowed(case, profile: str, result, compute: str, accumulation, rounding: str):
    """The oracle result with each reading's bound for an implementation computing in ``compute``."""
    import oracles
    attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
    readings: list = []
    model: dict = {}
    for r in result.readings:
        bounds, model = oracles.computed_in(case.op, attrs, case.tensors, profile, r.choices, compute, accumulation,
                                            rounding)
        readings.append(replace(r, outputs={n: replace(e, bound=bounds[n]) for n, e in r.outputs.items()}))
    return replace(result, readings=readings, precision=model)


def program_layout(program, name: str, array: np.ndarray) -> tuple[np.ndarray, bool]:
    """``array`` (canonical layout) in the layout ``program`` returns its output ``name`` in, and
    whether that layout is only a reshape of it (a cell's [B, H] for the canonical [1, B, H]: the
    program's own shape is the runtime's to say, so a reader compares the elements in order)."""
    t = program.transforms.get(name, {})
    if "transpose" in t:
        array = np.transpose(array, np.argsort(t["transpose"]))
    return np.ascontiguousarray(array), "reshape" in t
