"""Pieces every cell shares: exact dot products, the input projection, clip.

Dot products run on Python integers: a vector of raw values is brought to one common exponent
(``fixed_point``), so vector·row is one integer multiply-add per element and the sum is exact.
Rounding happens once, when the caller asks for a precision. Exact within ``EXACT_BITS``
(:mod:`oracles.arith`): values that span more (a state that exploded far past every dtype's range
next to an ordinary one) keep the bits down to 2^-EXACT_BITS of the largest.
"""

from __future__ import annotations

from operator import mul as _int_mul

from mpmath.libmp import from_man_exp

from .arith import EXACT_BITS, ROUND, cmp


def fixed_point(values) -> tuple[list[int], int]:
    """Raw values as signed integers times 2**exp, with one exp for all (exact within EXACT_BITS)."""
    exps = [v[2] for v in values if v[1]]
    if not exps:
        return [0] * len(values), 0
    base = min(exps)
    if max(exps) - base > EXACT_BITS // 2:   # only then can the span pass EXACT_BITS (mantissas are short)
        top = max(v[2] + v[3] for v in values if v[1])
        if top - base > EXACT_BITS:
            base = top - EXACT_BITS
        return [_at((-m if s else m), e, base) if m else 0 for s, m, e, _ in values], base
    return [((-m if s else m) << (e - base)) if m else 0 for s, m, e, _ in values], base


def _at(man: int, exp: int, base: int) -> int:
    """man·2**exp as a multiple of 2**base (bits below 2**base dropped, only past EXACT_BITS)."""
    return man << (exp - base) if exp >= base else man >> (base - exp)


def _add(man: int, exp: int, m: int, e: int) -> tuple[int, int]:
    """man·2**exp + m·2**e, exact within EXACT_BITS."""
    low = min(exp, e)
    top = max(exp + man.bit_length() if man else low, e + m.bit_length())
    if top - low > EXACT_BITS:
        low = top - EXACT_BITS
    return _at(man, exp, low) + _at(m, e, low), low


def dot_plus(vector, row, terms=(), prec: int = 0):
    """vector·row + sum(terms), exact, then rounded to ``prec`` bits (0: kept exact).

    ``vector`` and ``row`` are ``fixed_point`` pairs; ``terms`` are raw values.
    """
    man = sum(map(_int_mul, vector[0], row[0]))
    exp = vector[1] + row[1]
    for s, m, e, _ in terms:
        if not m:
            continue
        if s:
            m = -m
        shift = e - exp
        if 0 <= shift <= EXACT_BITS:
            man += m << shift
        elif -EXACT_BITS <= shift < 0:
            man, exp = (man << -shift) + m, e
        else:
            man, exp = _add(man, exp, m, e)
    return from_man_exp(man, exp, prec, ROUND) if prec else from_man_exp(man, exp)


def fixed_rows(rows) -> list:
    return [fixed_point(row) for row in rows]


def input_projection(X, W_rows, *biases):
    """Xt·Wᵀ + the given bias rows, exactly, for every t, b and row: [t][b][row].

    It does not depend on the recurrence, the precision or the reading, so it is computed once
    per problem and direction.
    """
    rows = fixed_rows(W_rows)
    bias = [list(terms) for terms in zip(*biases)] if biases else [[] for _ in W_rows]
    return [[[dot_plus(x, row, extra) for row, extra in zip(rows, bias)]
             for x in map(fixed_point, x_t)] for x_t in X]


def clip_to(value, bound, bound_neg):
    """``value`` bounded to [-bound, bound]; ``bound`` None means no clipping."""
    if bound is None:
        return value
    if cmp(value, bound) > 0:
        return bound
    if cmp(value, bound_neg) < 0:
        return bound_neg
    return value
