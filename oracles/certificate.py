"""The precision certificate: how far the evaluation at ``prec`` moves at ``check_prec``.

Both evaluations round every formula once, at their own precision, so their difference estimates
the error of the ``prec`` result (the ``check_prec`` one is 2**-(check_prec - prec) times closer to
exact). ``agree_bits`` is the smallest, over specified elements, of -log2(|a - b| / |b|), capped at
``prec`` (elements where b is 0 count the absolute difference); ``max_abs_diff`` is the largest
|a - b|. Elements that are ±Inf or NaN at either precision are not measured: they are classes,
and where the two precisions disagree on one, readings.py makes the element unspecified.
"""

from __future__ import annotations

import math

from mpmath import libmp

from .arith import to_double


def _log2(value) -> float:
    """log2 |value| for a non-zero raw value."""
    sign, man, exp, bc = value
    return math.log2(man) + exp


def agreement(low, high, prec: int) -> tuple[float, float]:
    """(agree_bits, max_abs_diff) between two Evaluations' outputs."""
    bits = float(prec)
    worst = 0.0
    for name, out in high.outputs.items():
        for a, b in zip(low.outputs[name].values, out.values):
            if b is None:
                assert a is None, "the two precisions disagree on which elements are specified"
                continue
            diff = libmp.mpf_sub(a, b)
            if not diff[1]:  # equal, or ±Inf or NaN at either precision (a class, not a value:
                continue     # readings.py makes an element whose classes differ unspecified)
            worst = max(worst, abs(to_double(diff)))
            scale = _log2(b) if b[1] else 0.0
            bits = min(bits, scale - _log2(diff))
    return max(bits, 0.0) if bits < prec else float(prec), worst


def certificate(pairs, prec: int, check_prec: int) -> dict:
    """The certificate over every evaluated reading: pairs of (low, high) Evaluations."""
    agree, worst = float(prec), 0.0
    for low, high in pairs:
        bits, diff = agreement(low, high, prec)
        agree, worst = min(agree, bits), max(worst, diff)
    return {"prec": prec, "check_prec": check_prec, "agree_bits": math.floor(agree * 1000) / 1000,
            "max_abs_diff": worst}
