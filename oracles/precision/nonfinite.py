"""Non-finite inputs: IEEE classes along the walk, and clip.

With ±Inf or NaN among the inputs the float64 walk meets them too: numpy's arithmetic gives their
IEEE classes, and the reading's choices at the points IEEE leaves open (ieee_points.IEEE_POINTS) are
applied where the oracle's evaluation applies them (ieee.py). A non-finite value carries error 0:
the comparison checks its class, not a distance. A finite value computed from non-finite ones (a
saturated activation, a clip) carries the function's own error at its limit: exact for Relu,
the clamps and clip; the library's k ulps or absolute floor for the exp-based ones, which is
what onnxruntime's GRU kernel shows (tanh(+Inf) = 1 + 4 ulps, sigmoid(-Inf) = -2.4e-7).
*Taint* marks the elements whose class a correct implementation may get otherwise: an infinity
times a finite factor the model may hold as 0 (its bound reaches 0), and everything downstream.
The errors carried by non-finite values are not looked at: a finite value comes from a
non-finite one only through an activation or clip, which take such an input's error as 0
(IEEEFn, IEEEClip); sums and products with a non-finite operand are non-finite themselves.
"""

from __future__ import annotations

import numpy as np

from .arithmetic import KINK_WIDEN, Arithmetic
from .functions import Fn, flush, tanh_own


class Clip:
    """clip (1-Lipschitz, exact where the computed input is beyond the bound too); a narrow dtype
    rounds the float32 bound."""

    def __init__(self, bound: float | None, ar: Arithmetic):
        self.bound = bound
        self.rounding = ar.u * bound if (bound is not None and ar.narrow) else 0.0

    def __call__(self, a, e):
        if self.bound is None:
            return a, e
        c = self.bound
        reach = np.abs(a) + KINK_WIDEN * e
        saturated = np.abs(a) - KINK_WIDEN * e > c  # the computed input is beyond the bound too
        e = np.where(saturated, 0.0, e)
        if self.rounding:  # a narrow dtype rounds the float32 bound where it can bite
            e = e + np.where(reach >= c, self.rounding, 0.0)
        return np.clip(a, -c, c), e



def certain(v, e):
    """The error where the value is ±Inf or NaN is 0: its class is what is checked, exactly (as
    long as nothing overflows)."""
    return np.where(np.isfinite(v), e, 0.0)


def vanish(v, e):
    """A finite factor a correct implementation may compute as 0, or as a nonzero of either sign
    near it: its bound reaches 0 (an exact 0, e = 0, is certain; e NaN or inf is no bound)."""
    return np.isfinite(v) & (e != 0) & ~(np.abs(v) > KINK_WIDEN * e)


def product_taint(x, ex, tx, y, ey, ty):
    """x·y: an infinity times a factor that may vanish is NaN or ±Inf, as the rounding decides."""
    return (tx | ty) | (~np.isfinite(x) & vanish(y, ey)) | (~np.isfinite(y) & vanish(x, ex))


def at_infinity(choice, x, at_pos, at_neg):
    """The values at ±Inf of a function whose documented formula may divide Inf by Inf there:
    its limit, or NaN at the signs the reading names (ieee._at_infinity)."""
    pos, neg = x == np.inf, x == -np.inf
    v = np.where(pos, at_pos, np.where(neg, at_neg, np.nan))
    if choice in ("nan", "nan-pos"):
        v = np.where(pos, np.nan, v)
    if choice in ("nan", "nan-neg"):
        v = np.where(neg, np.nan, v)
    return v


class IEEEFn(Fn):
    """Fn with the readings of IEEE's open points at ±Inf and NaN inputs, and the own error of the
    function at its limit where the finite formula's error terms would read Inf·0."""

    def __init__(self, name, alphas, betas, strict, ar, choices):
        super().__init__(name, alphas, betas, strict, ar)
        self.choices = choices

    def __call__(self, x, e):
        bad = ~np.isfinite(x)
        e = np.where(bad, 0.0, e)  # a non-finite input is its class exactly (see certain)
        f, err = Fn.__call__(self, x, e)
        if bad.any():
            f, err = self._special(x, bad, np.asarray(f, dtype=np.float64),
                                   np.broadcast_to(err, np.shape(f)))
        return f, certain(f, err)

    def _special(self, x, bad, f, err):
        ar, name, c = self.ar, self.name, self.choices
        u = ar.u_el
        nan = np.isnan(x)
        if name == "Tanh":
            f = np.where(bad & ~nan, at_infinity(c["tanh_at_infinity"], x, 1.0, -1.0), f)
        elif name == "Sigmoid":
            f = np.where(bad & ~nan, at_infinity(c["sigmoid_at_infinity"], x, 1.0, 0.0), f)
        elif name == "Relu":
            if c["nan_relu"] == "zero":
                f = np.where(nan, 0.0, f)
        elif name == "ThresholdedRelu":
            if c["nan_thresholded_relu"] == "nan":
                f = np.where(nan, np.nan, f)
        elif name == "HardSigmoid":
            y = self.alpha * x + self.beta
            held = {"nan": np.nan, "zero": 0.0, "one": 1.0}[c["nan_hard_sigmoid"]]
            f = np.where(bad & np.isnan(y), held, f)
            err = np.where(bad, 0.0, err)  # clamped exactly (or NaN)
        elif name == "ScaledTanh":
            bx = self.beta * x
            t = np.where(np.isnan(bx), np.nan, at_infinity(c["tanh_at_infinity"], bx, 1.0, -1.0))
            f = np.where(bad, self.alpha * t, f)
            own = np.abs(self.alpha) * tanh_own(t, ar) + u * np.abs(f)
            if ar.narrow:
                own = own + ar.u * np.abs(f)
            err = np.where(bad, own + flush(ar, f, own), err)
        elif name == "Softsign":
            lim = at_infinity(c["softsign_at_infinity"], x, 1.0, -1.0)
            f = np.where(bad & ~nan, lim, f)
            own = 2 * u * np.abs(f)
            err = np.where(bad, own + flush(ar, f, own), err)
        return f, err


class IEEEClip(Clip):
    """Clip with the reading of clip(NaN): NaN, -c or +c (then exact, as a saturated clip is)."""

    def __init__(self, bound, ar, choice):
        super().__init__(bound, ar)
        self.choice = choice

    def __call__(self, a, e):
        a2, e2 = Clip.__call__(self, a, np.where(np.isfinite(a), e, 0.0))
        if self.bound is None or self.choice == "nan":
            return a2, e2
        nan = np.isnan(a)
        if not nan.any():
            return a2, e2
        held = -self.bound if self.choice == "low" else self.bound
        return np.where(nan, held, a2), np.where(nan, self.rounding, e2)


class Taint:
    """Where the IEEE class of a quantity is not certain (see the comment above), per step."""

    def __init__(self, R):
        nonfinite = ~np.isfinite(R)
        self.rows = R.shape[1]
        #: [D', H, rows]: R's non-finite entries, as 0/1 (None when R is finite)
        self.RT = nonfinite.transpose(0, 2, 1).astype(np.float64) if nonfinite.any() else None

    def dot(self, t, v, e, rows):
        """v·Rᵀ over ``rows``: any tainted v_k (0·NaN is NaN, 0·x is 0), or a vanishing v_k times a
        non-finite R entry of the row."""
        n = len(range(self.rows)[rows])
        out = np.broadcast_to(t.any(axis=-1, keepdims=True), t.shape[:-1] + (n,))
        if self.RT is not None:
            out = out | ((vanish(v, e).astype(np.float64) @ self.RT[..., rows]) > 0)
        return out
