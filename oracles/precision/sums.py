"""Sums and products as the running bound sees them.

A dot product plus biases with m nonzero terms (``Sum``): e = Σ|coef|·e(operand) +
u_acc·Σ|products the accumulation type cannot hold| + γ_{m−1}·Σ|terms|, γ_n = n·u/(1 − n·u): any
summation order or blocking, with or without FMA; exact zeros and exact products cost nothing (so
a case built to compute exactly gets a zero bound). Products and sums: the partial derivatives
times the operands' errors, plus one rounding (u·|result|, none where the result is exact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .arithmetic import NUMPY
from .functions import flush


class Sum:
    """A sum of terms (products c·x and lone biases) as the model sees it: its value, Σ|terms|,
    Σ|products the accumulation type cannot hold exactly|, the count of nonzero terms, the error
    its operands carry in (Σ|c|·e(x)), and Σ|c| + Σ|x| (what flushing subnormal operands may
    cost). Summing in any order with m nonzero terms rounds at most m − 1 times; a term that is
    exactly zero, or a product that is exact, costs nothing."""

    __slots__ = ("S", "Sx", "a", "l1", "m", "prop", "q")
    # Sx, m, prop and l1 may be plain numbers (the same for every element); Sx None means S.

    def __init__(self, a, S, Sx, m, prop, l1, q):
        self.a, self.S, self.Sx, self.m, self.prop, self.l1 = a, S, Sx, m, prop, l1
        self.q = q  # a lower bound on every nonzero term's quantum: partial sums are multiples

    def __getitem__(self, index):
        return Sum(self.a[index], self.S[index], _at(self.Sx, index), _at(self.m, index),
                    _at(self.prop, index), _at(self.l1, index), self.q)

    def __add__(self, other):
        Sx = None if self.Sx is None and other.Sx is None else (
            (self.S if self.Sx is None else self.Sx) + (other.S if other.Sx is None else other.Sx))
        return Sum(self.a + other.a, self.S + other.S, Sx, self.m + other.m,
                    self.prop + other.prop, self.l1 + other.l1, min(self.q, other.q))

    def error(self, ar):
        """prop + u·Σ|inexact products| + γ_{m−1}·Σ|terms| (+ the store), and η·(m + l1) for
        flushes where a term, an operand or a partial sum can be subnormal: every nonzero
        term is a multiple of q (a power of two), so is every partial sum, and q >= η rules
        that out."""
        m = self.m
        gamma = ar.gamma(np.maximum(m - 1, 0)) if isinstance(m, np.ndarray) else ar.gamma(max(m - 1, 0))
        if self.Sx is None:
            e = self.prop + (ar.u_acc + gamma) * self.S
        else:
            e = self.prop + ar.u_acc * self.Sx + gamma * self.S
        if ar.flush and self.q < ar.eta:
            e = e + ar.eta * (m + self.l1)
        if ar.store:
            e = e + ar.u_el * np.abs(self.a)
        return e


def _at(value, index):
    return value[index] if isinstance(value, np.ndarray) else value


def _uniform(array):
    """A plain number when every element of ``array`` is the same (cheaper to carry)."""
    flat = array.ravel()
    return float(flat[0]) if flat.size and np.all(flat == flat[0]) else array


#: above this many input products, their exactness is not checked (all count as inexact)
EXACTNESS_LIMIT = 1 << 21


def exact_products(X, W, ar):
    """[D, S, B, rows, I]: which x·w the accumulation type holds exactly (None: unchecked)."""
    if X.size * W.shape[0] * W.shape[1] > EXACTNESS_LIMIT:
        return None
    prod = X[None, :, :, None, :] * W[:, None, None, :, :]  # exact in float64 below float64
    if ar.acc_dtype is not None:
        return prod.astype(ar.acc_dtype).astype(np.float64) == prod
    # float64: exact at least when a factor is ±2^k (frexp mantissa ½) or zero
    pow2x = np.abs(np.frexp(X)[0]) == 0.5
    pow2w = np.abs(np.frexp(W)[0]) == 0.5
    return (pow2x[None, :, :, None, :] | pow2w[:, None, None, :, :]) | (prod == 0)


def min_nonzero(values) -> float:
    values = np.abs(values[values != 0])
    smallest = float(values.min()) if values.size else math.inf
    if math.isnan(smallest):  # a NaN input (non-finite problems): the smallest finite one
        values = values[np.isfinite(values)]
        smallest = float(values.min()) if values.size else math.inf
    return smallest


def projection(X, W, bias_terms, ar) -> Sum:
    """X·Wᵀ + biases for every direction, time step, batch entry and row: [D, S, B, rows]."""
    W_abs, X_abs = np.abs(W), np.abs(X)
    # X·Wᵀ per direction as matrix products (BLAS; einsum does not use it for this contraction)
    a = np.stack([X @ W[d].T for d in range(W.shape[0])])
    S = np.stack([X_abs @ W_abs[d].T for d in range(W.shape[0])])
    Xnz, Wnz = (X != 0).astype(np.float64), (W != 0).astype(np.float64)
    m = np.stack([Xnz @ Wnz[d].T for d in range(W.shape[0])])
    if ar.products_exact:
        Sx = 0.0
    elif ar.u_in or ar.u_gemm:
        Sx = None  # the rounded operands' products are not checked for exactness: all inexact
    else:
        exact = exact_products(X, W, ar)
        Sx = None if exact is None or not exact.any() else np.einsum(
            "dsbri->dsbr", np.where(exact, 0.0, np.abs(X[None, :, :, None, :] * W[:, None, None])))
    # X and W rounded (inputs rounded to the dtype, or TF32 matrix-product operands): x·w carries
    # (2u + u²)|x||w| in; an input bias rounded to the dtype u|b|
    u_x = ar.u_in + ar.u_gemm
    prop = (2 * u_x + u_x * u_x) * S if u_x else 0.0
    for bias in bias_terms:  # [D, rows]
        a = a + bias[:, None, None, :]
        S = S + np.abs(bias)[:, None, None, :]
        m = m + (bias != 0)[:, None, None, :]
        if ar.u_in:
            prop = prop + ar.u_in * np.abs(bias)[:, None, None, :]
    if not ar.flush:
        return Sum(a, S, Sx, _uniform(m), prop, 0.0, math.inf)
    l1 = X_abs.sum(axis=2)[None, :, :, None] + W_abs.sum(axis=2)[:, None, None, :]
    # a T-value v is a multiple of ulp(v) > u·|v|; a product of two, of u²·|x|·|w|
    q = ar.u * ar.u * min_nonzero(X) * min_nonzero(W)
    for bias in bias_terms:
        q = min(q, ar.u * min_nonzero(bias))
    return Sum(a, S, Sx, _uniform(m), prop, l1, q)


@dataclass
class Constants:
    """The walked directions' constants, stacked on a leading axis (D' = directions walked)."""

    x: Sum  # [D', S, B, rows]: X·Wᵀ + the biases folded into each pre-activation
    R_min: float  # the smallest nonzero |R|
    RT: np.ndarray  # [D', H, rows]: Rᵀ
    RT_abs: np.ndarray
    RT_nz: np.ndarray  # R ≠ 0, as 0/1
    R_dense: bool  # no zero in R
    R_l1: np.ndarray  # [D', 1, rows]: Σ_k |R[row, k]|


def constants(X, W, R, bias_terms, ar) -> Constants:
    RT = R.transpose(0, 2, 1)
    RT_abs = np.abs(RT)
    return Constants(projection(X, W, bias_terms, ar), min_nonzero(R), RT, RT_abs,
                      (RT != 0).astype(np.float64), bool(np.all(R != 0)),
                      RT_abs.sum(axis=1)[:, None, :])


def recurrent(ar, k, rows, h, eh) -> Sum:
    """h·Rᵀ over ``rows`` (a slice of the gate rows): a computed h is a dtype value whose
    product with R is exact in a wider accumulation type, and inexact otherwise."""
    RT_abs = k.RT_abs[..., rows]
    habs = np.abs(h)
    S = habs @ RT_abs
    Sx = 0.0 if ar.products_exact else None
    if k.R_dense and h.all():
        m = float(h.shape[-1])
        live = None
    else:
        live = (h != 0) | (eh > 0)  # an exact 0 stays 0
        m = live.astype(np.float64) @ k.RT_nz[..., rows]
    # R rounded to the dtype: u·|h||R| more; a TF32 kernel rounds R and h as operands: 2u
    prop = eh @ RT_abs + (ar.u_in + 2 * ar.u_gemm) * S
    if not ar.flush:
        return Sum(h @ k.RT[..., rows], S, Sx, m, prop, 0.0, math.inf)
    live = (h != 0) | (eh > 0) if live is None else live
    return Sum(h @ k.RT[..., rows], S, Sx, m, prop,
                habs.sum(axis=-1, keepdims=True) + k.R_l1[..., rows],
                ar.u * ar.u * k.R_min * smallest(h, eh, live))


def smallest(x, ex, live) -> float:
    """A lower bound on the smallest nonzero computed value among the live elements."""
    if not live.any():
        return math.inf
    smallest = float((np.abs(x) - ex)[live].min())
    if math.isnan(smallest):  # NaN values (non-finite problems): the finite ones
        finite = (np.abs(x) - ex)[live]
        finite = finite[np.isfinite(finite)]
        smallest = float(finite.min()) if finite.size else math.inf
    return max(smallest, 0.0)


def elementwise(ar, c, x, ex) -> Sum:
    """One product term c⊙x (peepholes: P⊙C), c an input (exact, or rounded: u·|c| in)."""
    p = c * x
    ap = np.abs(p)
    live = (c != 0) & ((x != 0) | (ex > 0))
    prop = np.abs(c) * ex + ar.u_in * ap
    if not ar.flush:
        return Sum(p, ap, 0.0 if ar.products_exact else None, live.astype(np.float64),
                    prop, 0.0, math.inf)
    return Sum(p, ap, 0.0 if ar.products_exact else None, live.astype(np.float64),
                prop, np.abs(c) + np.abs(x),
                ar.u * ar.u * min_nonzero(c) * smallest(x, ex, live))


def rounding(ar, v, e_in):
    """u·|v| for rounding v to the dtype, 0 where v is computed from exact operands (e_in = 0)
    and the dtype holds it exactly (a float64 trajectory value then is the exact value)."""
    cost = ar.u_el * np.abs(v)
    if ar.acc_dtype is None or ar.dtype not in NUMPY:
        return cost
    exact = e_in == 0
    if not exact.any():
        return cost
    exact &= v.astype(NUMPY[ar.dtype]).astype(np.float64) == v
    return np.where(exact, 0.0, cost)


def mul(ar, x, ex, y, ey):
    p = x * y
    e = np.abs(y) * ex + np.abs(x) * ey + ex * ey
    e = e + rounding(ar, p, e)
    return p, e + flush(ar, p, e)
