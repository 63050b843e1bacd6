"""The running bound: the walker's carrier that gives every quantity its value and a bound e on
|computed − exact| (first order), and, for a problem with a non-finite input, a taint (where its
IEEE class is not certain: nonfinite.py).

Each operation the walker asks for (walker.py: the gate arithmetic of RNN, GRU and LSTM) turns its
operands' (value, e) into its result's: sums (sums.Sum), activations (functions.Fn), products,
sums of two, 1 − x, GRU's update, clip. A state's error at step t is its operand error at step
t + 1.
"""

from __future__ import annotations

import math

import numpy as np

from .arithmetic import Arithmetic
from .functions import Fn, PerDirection, flush
from .nonfinite import Clip, IEEEClip, IEEEFn, Taint, certain, product_taint
from .sums import Constants, Sum, constants, elementwise, min_nonzero, mul, recurrent, rounding

ALL = slice(None)


class Q:
    """A quantity: value, error bound, and (non-finite problems) taint."""

    __slots__ = ("e", "t", "v")

    def __init__(self, v, e, t=None):
        self.v, self.e, self.t = v, e, t

    def __getitem__(self, index):
        return Q(self.v[index], self.e[index], None if self.t is None else self.t[index])


class Part:
    """A sum not yet rounded (sums.Sum), with its taint."""

    __slots__ = ("s", "t")

    def __init__(self, s: Sum, t=None):
        self.s, self.t = s, t

    def __getitem__(self, index):
        return Part(self.s[index], None if self.t is None else self.t[index])

    def __add__(self, other):
        t = self.t if other.t is None else other.t if self.t is None else self.t | other.t
        return Part(self.s + other.s, t)


def _or(a, b):
    return a if b is None else b if a is None else a | b


class Running:
    """The running-bound carrier for one walk (one arithmetic, one reading)."""

    def __init__(self, ar: Arithmetic, choices: dict):
        self.ar, self.choices = ar, choices
        self.ieee = ar.ieee

    # -- set-up --------------------------------------------------------------------------------
    def functions(self, per_direction) -> list:
        """Per gate function, one callable over the stacked directions."""
        ar, choices = self.ar, self.choices
        strict = choices["thresholded_relu_boundary"] == ">"

        def fn(name, alphas, betas):
            if ar.ieee:
                return IEEEFn(name, alphas, betas, strict, ar, choices)
            return Fn(name, alphas, betas, strict, ar)

        out = []
        for j in range(len(per_direction[0])):
            fs = [fns[j] for fns in per_direction]
            if len({f.name for f in fs}) == 1:
                out.append(fn(fs[0].name, [f.alpha for f in fs], [f.beta for f in fs]))
            else:
                out.append(PerDirection([fn(f.name, [f.alpha], [f.beta]) for f in fs]))
        return out

    def setup(self, problem, X, W, R, biases, h0, c0):
        """The walk's constants (the input projection for every step, R) and the initial states."""
        ar = self.ar
        self.clip_ = (IEEEClip(problem.clip, ar, self.choices["nan_clip"]) if ar.ieee
                      else Clip(problem.clip, ar))
        self.k = constants(X, W, R, biases, ar)
        self.taint = Taint(R) if ar.ieee else None
        eh = ar.u_in * np.abs(h0)  # 0 unless the inputs are rounded to the dtype
        ec = None if c0 is None else ar.u_in * np.abs(c0)
        if ar.ieee:
            eh, ec = certain(h0, eh), (None if c0 is None else certain(c0, ec))
            return (Q(h0, eh, np.zeros(h0.shape, dtype=bool)),
                    None if c0 is None else Q(c0, ec, np.zeros(c0.shape, dtype=bool)))
        return Q(h0, eh), None if c0 is None else Q(c0, ec)

    def carried(self, X_error, W) -> None:
        """X·Wᵀ of a stacked layer (num_layers), whose X is the layer below's computed output: its
        error bound (``X_error`` [S, B, I]) carried through |W|, and no product of it exact."""
        x = self.k.x
        x.prop = x.prop + np.stack([X_error @ np.abs(W[d]).T for d in range(W.shape[0])])
        x.Sx = None

    def projection(self, W_hr) -> None:
        """torch's LSTM projection W_hr [D', proj_size, H], as the rows ``project`` multiplies by."""
        RT = W_hr.transpose(0, 2, 1)
        RT_abs = np.abs(RT)
        self.kp = Constants(self.k.x, min_nonzero(W_hr), RT, RT_abs, (RT != 0).astype(np.float64),
                            bool(np.all(W_hr != 0)), RT_abs.sum(axis=1)[:, None, :])

    def project(self, h: Q) -> Part:
        """W_hr·h (the projection; a dot product rounded once)."""
        return Part(recurrent(self.ar, self.kp, ALL, h.v, h.e), h.t)

    @property
    def clip_bound(self):
        return self.clip_.bound

    # -- sums ----------------------------------------------------------------------------------
    def x(self, index) -> Part:
        """X·Wᵀ + the biases folded into each pre-activation, at the step's (direction, t, b)."""
        return Part(self.k.x[index])

    def rec(self, rows, h: Q) -> Part:
        """h·Rᵀ over ``rows`` (a slice of the gate rows)."""
        t = None if self.taint is None else self.taint.dot(h.t, h.v, h.e, rows)
        return Part(recurrent(self.ar, self.k, rows, h.v, h.e), t)

    def bias(self, b) -> Part:
        """A lone bias term (GRU's Rbh after the reset gate), an input of the model."""
        ar = self.ar
        return Part(Sum(b, np.abs(b), 0.0, (b != 0).astype(np.float64), ar.u_in * np.abs(b), 0.0,
                        ar.u * min_nonzero(b)))

    def peephole(self, coef, c: Q, rows=None) -> Part:
        """One product term coef⊙c (P⊙C), coef an input; ``rows`` (IEEE only): where the term
        exists at all (a row without a peephole adds nothing, not 0 × C)."""
        v, e, t = c.v, c.e, None
        if self.ieee:
            if rows is not None:
                v, e = np.where(rows, v, 0.0), np.where(rows, e, 0.0)
            t = product_taint(coef, 0.0, False, v, e, c.t)
            if rows is not None:
                t = t & rows
        return Part(elementwise(self.ar, coef, v, e), t)

    def repeat(self, q: Q, n: int) -> Q:
        """q repeated n times along the gate rows (P⊙C for every gate block at once)."""
        return Q(np.concatenate([q.v] * n, axis=-1), np.concatenate([q.e] * n, axis=-1),
                 None if q.t is None else np.concatenate([q.t] * n, axis=-1))

    def value(self, part: Part) -> Q:
        return Q(part.s.a, part.s.error(self.ar), part.t)

    # -- elementwise ---------------------------------------------------------------------------
    def act(self, fn, q: Q) -> Q:
        v, e = fn(q.v, q.e)
        return Q(v, e, q.t)

    def clip(self, q: Q) -> Q:
        v, e = self.clip_(q.v, q.e)
        return Q(v, e, q.t)

    def mul(self, x: Q, y: Q) -> Q:
        t = None if not self.ieee else product_taint(x.v, x.e, x.t, y.v, y.e, y.t)
        v, e = mul(self.ar, x.v, x.e, y.v, y.e)
        return Q(v, e, t)

    def add(self, x: Q, y: Q, exact: bool = False) -> Q:
        """x + y rounded (``exact``: no rounding where the result is exact)."""
        ar = self.ar
        v = x.v + y.v
        e = x.e + y.e
        e = e + (rounding(ar, v, e) if exact else ar.u_el * np.abs(v))
        e = e + flush(ar, v, e)
        if self.ieee:
            return Q(v, certain(v, e), _or(x.t, y.t))
        return Q(v, e)

    def one_minus(self, x: Q) -> Q:
        ar = self.ar
        v = 1.0 - x.v
        e = x.e + ar.u_el * np.abs(v)
        e = e + flush(ar, v, e)
        return Q(v, certain(v, e), x.t) if self.ieee else Q(v, e)

    def gru_update(self, z: Q, hh: Q, h: Q) -> Q:
        """(1 − z)⊙h̃ + z⊙H. (1 − z)⊙h̃ + z⊙H rounds 1 − z, two products and the sum:
        u·(2|1 − z||h̃| + |z||H| + |new|); h̃ + z⊙(H − h̃) rounds H − h̃, the product and the sum:
        u·(2|z||H − h̃| + |new|). Both are within u·(2(|1 − z| + |z|)(|H| + |h̃|) + |new|)."""
        ar = self.ar
        one_z = 1.0 - z.v
        new = one_z * hh.v + z.v * h.v
        a1z, az = np.abs(one_z), np.abs(z.v)
        cost = ar.u_el * (2.0 * (a1z + az) * (np.abs(h.v) + np.abs(hh.v)) + np.abs(new))
        e_new = a1z * hh.e + az * h.e + np.abs(h.v - hh.v) * z.e + z.e * (hh.e + h.e) + cost
        e_new = (e_new + flush(ar, new, e_new) + flush(ar, one_z * hh.v, e_new)
                 + flush(ar, z.v * h.v, e_new))
        if not self.ieee:
            return Q(new, e_new)
        # with an infinity the two forms may part (ieee.gru_update); finite, they agree
        taint = z.t | hh.t | h.t
        if self.choices["gru_update"] == "lerp":
            d = h.v - hh.v
            new = np.where(np.isfinite(new), new, hh.v + z.v * d)
            taint = taint | product_taint(z.v, z.e, False, d, h.e + hh.e + ar.u_el * np.abs(d), False)
        else:
            taint = (taint | product_taint(one_z, z.e + ar.u_el * a1z, False, hh.v, hh.e, False)
                     | product_taint(z.v, z.e, False, h.v, h.e, False))
        return Q(new, certain(new, e_new), taint)

    # -- states and outputs -----------------------------------------------------------------------
    def where(self, keep, new: Q, old: Q) -> Q:
        return Q(np.where(keep, new.v, old.v), np.where(keep, new.e, old.e),
                 None if new.t is None else np.where(keep, new.t, old.t))

    FIELDS = {"bound": 0.0, "value": math.nan, "taint": False}

    def fields(self, q: Q) -> dict:
        """What the walk records of an output quantity."""
        out = {"bound": q.e, "value": q.v}
        if self.ieee:
            out["taint"] = q.t
        return out
