"""Exact binary values in, double-double out: the oracle's arithmetic at the mpf-tuple level.

Every number inside the oracle is a raw mpmath value (a ``(sign, man, exp, bc)`` tuple). Working at
this level, with the precision passed explicitly, keeps the oracle free of global mpmath state and
about three times faster than going through ``mpf`` objects.

The discipline: each formula (a gate's pre-activation, a new state) is evaluated *exactly* from its
operands, then rounded once to the working precision. Products of two raw values are exact
(``mpf_mul`` without a precision), and so are sums (``mpf_sum`` with precision 0), with one limit:
a sum whose exact value would take more than ``EXACT_BITS`` bits (terms 2^16384 apart: only values
that exploded far beyond every dtype's range, such as an LSTM whose Softplus gates grow
double-exponentially) is rounded to ``EXACT_BITS`` bits, a relative error below 2^-16384, instead
of allocating gigabytes or overflowing.
"""

from __future__ import annotations

import math

import numpy as np
from mpmath import libmp

ROUND = libmp.round_nearest
ZERO = libmp.fzero
ONE = libmp.fone

mul = libmp.mpf_mul  # mul(a, b) is exact; mul(a, b, prec, ROUND) rounds
neg = libmp.mpf_neg
cmp = libmp.mpf_cmp


def from_float(value: float):
    """The exact value of a binary float (float16/bfloat16/float32 widen to float64 exactly)."""
    return libmp.from_float(float(value), 0, ROUND) if value else ZERO


EXACT_BITS = 1 << 14


def _too_wide(terms) -> bool:
    """Whether the exact sum of ``terms`` would take more than EXACT_BITS bits."""
    top = low = None
    for _sign, man, exp, bc in terms:
        if man:
            top = exp + bc if top is None or exp + bc > top else top
            low = exp if low is None or exp < low else low
    return top is not None and top - low > EXACT_BITS


def one_minus(value):
    """1 - value, exactly (within EXACT_BITS bits)."""
    if _too_wide((ONE, value)):
        return libmp.mpf_sub(ONE, value, EXACT_BITS, ROUND)
    return libmp.mpf_sub(ONE, value)


def exact_sum(terms):
    """The exact sum of raw values (within EXACT_BITS bits)."""
    terms = list(terms)
    if _too_wide(terms):
        return libmp.mpf_sum(terms, EXACT_BITS, ROUND)
    return libmp.mpf_sum(terms, 0)


def rounded_sum(terms, prec: int):
    """The sum of raw values, computed exactly and rounded once to ``prec`` bits."""
    return libmp.mpf_pos(libmp.mpf_sum(terms, 0), prec, ROUND)


def round_to(value, prec: int):
    return libmp.mpf_pos(value, prec, ROUND)


def is_negative(value) -> bool:
    return value[0] == 1 and value[1] != 0


def magnitude(value) -> int:
    """An integer m with 2**(m-1) <= |value| < 2**m (for non-zero values)."""
    return value[2] + value[3]


def to_double(value) -> float:
    """The float64 nearest to ``value`` (ties to even), subnormals and overflow included."""
    sign, man, exp, bc = value
    if not man:
        return libmp.to_float(value)
    if exp + bc - 1 < -1022:  # below the normal range: round to a multiple of 2**-1074
        n = libmp.to_int(libmp.mpf_nint(libmp.mpf_shift(value, 1074)))
        return math.ldexp(n, -1074)
    sign, man, exp, bc = libmp.normalize(sign, man, exp, bc, 53, ROUND)
    try:
        return math.ldexp(-man if sign else man, exp)
    except OverflowError:
        return -math.inf if sign else math.inf


def to_double_double(value) -> tuple[float, float]:
    """(hi, lo): hi is the float64 nearest ``value``, lo the float64 nearest ``value - hi``.
    ±Inf and NaN (and a finite value beyond float64's range) give (hi, 0.0)."""
    hi = to_double(value)
    if not math.isfinite(hi):
        return hi, 0.0
    return hi, to_double(libmp.mpf_sub(value, from_float(hi)))


def to_mpf_matrix(array: np.ndarray) -> list:
    """Nested lists of exact raw values from a float array of any binary float dtype."""
    return np.vectorize(from_float, otypes=[object])(np.asarray(array, dtype=np.float64)).tolist()
