"""Pieces every cell shares: exact dot products, the input projection, clip.

Dot products run on Python integers: a vector of raw values is brought to one common exponent
(``fixed_point``), so vector·row is one integer multiply-add per element and the sum is exact.
Rounding happens once, when the caller asks for a precision.
"""

from __future__ import annotations

from operator import mul as _int_mul

from mpmath.libmp import from_man_exp

from .arith import ROUND, cmp


def fixed_point(values) -> tuple[list[int], int]:
    """Raw values as signed integers times 2**exp, with one exp for all (exact)."""
    exps = [v[2] for v in values if v[1]]
    base = min(exps) if exps else 0
    return [((-m if s else m) << (e - base)) if m else 0 for s, m, e, _ in values], base


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
        if e >= exp:
            man += m << (e - exp)
        else:
            man, exp = (man << (exp - e)) + m, e
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
