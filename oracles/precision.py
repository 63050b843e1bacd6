"""The precision model: how far a *correct* implementation computing in the case's dtype may land
from the exact result, element by element.

Running error analysis (first order) along the case's own trajectory: every quantity of the
recurrence — a gate's pre-activation, a gate, a new cell or hidden state — carries its value and a
bound e on |computed − exact|, and each primitive turns its operands' (value, e) into its result's:

- a dot product plus biases with m nonzero terms (``_Sum``): e = Σ|coef|·e(operand) +
  u_acc·Σ|products the accumulation type cannot hold| + γ_{m−1}·Σ|terms|, γ_n = n·u/(1 − n·u):
  any summation order or blocking, with or without FMA; exact zeros and exact products cost
  nothing (so a case built to compute exactly gets a zero bound);
- an activation f: e = L·e(a) + own(f, a) (+ |alpha| where a ThresholdedRelu jump lies within
  reach), L the largest |f'| on a ± 2·e(a) (kinks and saturation handled, not linearised), own the
  error of the documented formula evaluated with exp/log/tanh accurate to ACT_ULPS ulps, or of a
  library kernel accurate to ACT_ULPS ulps with an absolute floor of ACT_ABS_ULPS·u, the worse;
- products and sums: the partial derivatives times the operands' errors, plus one rounding
  (u·|result|, none where the result is exact); clip is 1-Lipschitz, a saturated clip exact;
- a state's error at step t is its operand error at step t + 1.

Inputs are exact (e = 0). The bound is evaluated in float64 along a float64 recomputation of the
trajectory (it needs a few correct digits, not the oracle's 128 bits), following the same reading
(choices) as the oracle's evaluation: sequence_lens, clip, peepholes, input_forget,
linear_before_reset, activations and their alpha/beta. "First order" means products of two error
bounds and curvature terms (½|f''|e²) are left out except where they cost nothing; the tolerance
that uses the bound multiplies it by a safety factor for them (conformance/compare/policies.yaml).
See README.md, "Precision model".
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np
from mpmath import libmp

from .evaluation import direction_functions

#: the model's name and version: recorded on every OracleResult; change it with the model.
MODEL = "running-error-v1"

#: how the model treats ±Inf and NaN (problems with a non-finite input; README.md, "Non-finite
#: inputs"): their classes walked in IEEE arithmetic, bound 0 at a non-finite value, and a taint
#: where an infinity meets a factor the model may hold as 0
NONFINITE = "ieee-classes-v1"

#: k_act: a correct library's exp, log, tanh and sigmoid are accurate to this many ulps of the
#: dtype (glibc, MLAS, oneDNN, OpenVINO and CUDA's non-fast-math functions are within 1–4).
ACT_ULPS = 4.0

#: the absolute floor of those functions near zero, in units of u (ulps of ½, the scale of the
#: sigmoid's and tanh's range): vectorised kernels (MLAS's logistic and tanh, a sigmoid computed
#: as ½ + ½·tanh(x/2)) are accurate to a few ulps of their range, not of a tiny result — measured:
#: onnxruntime's float32 tanh 2.8·u, its sigmoid returns 0 where the exact value is 1e-11.
ACT_ABS_ULPS = 4.0

#: kinks (Relu, clip, HardSigmoid's clamps) and jumps (ThresholdedRelu) are looked for within
#: a ± KINK_WIDEN·e(a): the first-order e is trusted to within the tolerance's safety factor.
KINK_WIDEN = 2.0

#: accumulation types a runtime may use for dot products, per dtype: "dtype" (the dtype itself)
#: or "float32". The bound admits the worse of the ones listed.
ACCUMULATIONS = {
    "float64": ("dtype",),
    "float32": ("dtype",),
    "float16": ("dtype", "float32"),
    "bfloat16": ("dtype", "float32"),
    "tfloat32": ("float32",),
}

# significand bits (implicit bit included) and the smallest normal, per dtype
_FORMATS = {
    "float64": (53, 2.0 ** -1022),
    "float32": (24, 2.0 ** -126),
    "float16": (11, 2.0 ** -14),
    "bfloat16": (8, 2.0 ** -126),
    # TF32 (NVIDIA tensor cores, torch's allow_tf32): float32's range with 10 fraction bits; only
    # ever a *compute* type (bound(..., dtype="tfloat32")), never a tensor's dtype
    "tfloat32": (11, 2.0 ** -126),
}


_NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


@dataclass(frozen=True)
class Arithmetic:
    """What a correct implementation in ``dtype`` may do, as unit roundoffs."""

    dtype: str
    bits: int  # significand bits p; u = 2**-p
    u: float  # unit roundoff of the dtype (half an ulp of 1)
    u_acc: float  # unit roundoff of the worst admitted accumulation type
    u_el: float  # one elementwise rounding, double rounding through float32 included
    eta: float  # the dtype's smallest normal: what flushing a subnormal to zero may lose
    flush: bool  # flushes carried operation by operation (float16: η = 2^-14 matters; for the
    #              other types η <= 2^-126 and the tolerance's floor of 2 ulp covers them)
    store: bool  # dot products accumulate wider and are rounded to the dtype when stored
    narrow: bool  # narrower than the FLOAT (float32) attributes: alpha, beta, clip get rounded
    products_exact: bool  # a product of two dtype values is exact in the accumulation type
    acc_dtype: object  # numpy type of the accumulation (None for float64: checked otherwise)
    k: float  # ACT_ULPS
    floor: float  # ACT_ABS_ULPS · u: the absolute floor of exp-based activations near zero
    sigmoid_rel: float  # (2k + 2)·u: 1/(1 + e^{-x}) with exp within k ulps, then two roundings
    tanh_lib: float  # 2k·u: a library tanh within k ulps (k ulps <= 2k·u relative)
    tanh_cancel: float  # k·u: (1 − E)/(1 + E), E within k ulps, near 0 (see _tanh_own)
    tanh_round: float  # 3·u: its three roundings
    accumulation: str
    #: inputs rounded to the dtype before computing (a runtime that computes a wider model in a
    #: narrower type): each input carries u·|value| of error in, where 0 otherwise
    u_in: float = 0.0
    rounding: str = "nearest"
    #: the problem has a non-finite input: errors at ±Inf and NaN values are 0 (their class is
    #: what the comparison checks), see _certain
    ieee: bool = False

    def gamma(self, n):
        """γ_n = n·u/(1 − n·u) of the accumulation type (n: a count or an array of counts)."""
        nu = n * self.u_acc
        return nu / (1.0 - nu)

    def parameters(self) -> dict:
        """What the result records: the model and every parameter it rests on."""
        return {
            "model": MODEL,
            "dtype": self.dtype,
            "u": f"2^{round(math.log2(self.u))}",
            "accumulation": self.accumulation,
            "admitted_accumulations": [self.dtype if a == "dtype" else a
                                       for a in ACCUMULATIONS[self.dtype]],
            "k_act_ulps": self.k,
            "act_abs_floor_u": ACT_ABS_ULPS,
            "fma": "with or without",
            "flush_subnormals": ("admitted, charged per operation" if self.flush else
                                 "admitted, below the tolerance's 2-ulp floor"),
            "kink_widen": KINK_WIDEN,
            "order": "first",
            **({"inputs": f"rounded to {self.dtype}"} if self.u_in else {}),
            **({"rounding": "faithful (any direction)"} if self.rounding != "nearest" else {}),
            **({"nonfinite": NONFINITE} if self.ieee else {}),
        }


#: how results are rounded: to nearest (IEEE's default: u = 2^-p), or faithfully in any
#: direction (toward zero included, as a truncating float32 -> bfloat16 conversion does: 2^(1-p))
ROUNDINGS = ("nearest", "faithful")


@cache
def arithmetic(dtype: str, accumulation: str | None = None, rounds_inputs: bool = False,
               rounding: str = "nearest") -> Arithmetic:
    """The Arithmetic of ``dtype``; ``accumulation`` defaults to the worst admitted one.
    ``rounds_inputs``: the inputs are of a wider type and are rounded to ``dtype`` first.
    ``rounding``: one of ROUNDINGS; "faithful" doubles every unit roundoff of the dtype."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding={rounding!r} is not one of {ROUNDINGS!r}")
    bits, tiny = _FORMATS[dtype]
    admitted = ACCUMULATIONS[dtype]
    if accumulation is None:
        accumulation = admitted[0]
    if accumulation not in admitted:
        raise ValueError(f"accumulation={accumulation!r} is not admitted for {dtype}; "
                         f"admitted: {list(admitted)!r}")
    u = 2.0 ** -bits * (2.0 if rounding == "faithful" else 1.0)  # faithful: one ulp, not half of one
    narrow = bits < 24
    u32 = 2.0 ** -24
    wide = accumulation == "float32"
    u_el = u + u32 + u * u32 if narrow else u
    return Arithmetic(
        dtype=dtype, bits=bits, u=u,
        u_acc=u32 if wide else u,
        u_el=u_el,
        eta=tiny, flush=dtype == "float16", store=wide, narrow=narrow, k=ACT_ULPS,
        floor=ACT_ABS_ULPS * u,
        sigmoid_rel=2 * ACT_ULPS * u + 2 * u_el, tanh_lib=2 * ACT_ULPS * u,
        tanh_cancel=ACT_ULPS * u, tanh_round=3 * u_el,
        products_exact=2 * bits <= (24 if wide else bits),
        acc_dtype=None if dtype == "float64" else (np.float32 if wide else _NUMPY[dtype]),
        accumulation=dtype if accumulation == "dtype" else accumulation,
        u_in=u if rounds_inputs else 0.0,
        rounding=rounding,
    )


# -- activations: value, and the error of the result given the input's ----------------------------

def _flush(ar, v, e):
    """η where a value within e of v may be subnormal (and so flushed to zero), else 0.
    Carried for float16 only (see Arithmetic.flush)."""
    if not ar.flush:
        return 0.0
    return ar.eta * ((np.abs(v) - e < ar.eta) & ((v != 0) | (e > 0)))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))  # exp overflows to inf for x < -709: 1/inf = 0, as wanted


def _nearest_zero(x, w):
    """The point of [x − w, x + w] nearest 0 (where |f'| peaks for tanh, sigmoid, softsign)."""
    return np.sign(x) * np.maximum(np.abs(x) - w, 0.0)


def _tanh_own(f, ar):
    """tanh's own error: a library tanh within k ulps (2k·u·|f|), or the documented
    (1 − E)/(1 + E), E = e^{-2|x|} within k ulps, three roundings: with |f| = (1 − E)/(1 + E) its
    first-order error is k·u·(1 − f²) + 3·u·|f| — about k·u absolute near 0, where 1 − E
    cancels. The worse of the two."""
    af = np.abs(f)
    return np.maximum(np.maximum(2 * ar.k * ar.u * af, ar.k * ar.u * (1.0 - f * f)
                                 + 3 * ar.u_el * af), ar.floor)


def _parameter(values):
    """Raw mpf values, one per direction (None if unused), as a (D, 1, 1) float64 array."""
    if any(v is None for v in values):
        return None
    return np.array([libmp.to_float(v) for v in values]).reshape(-1, 1, 1)


class _PerDirection:
    """Different functions per direction: each direction's slice through its own."""

    def __init__(self, functions):
        self.functions = functions

    def __call__(self, x, e):
        parts = [f(x[i:i + 1], e[i:i + 1]) for i, f in enumerate(self.functions)]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


class _Fn:
    """One activation over numpy arrays whose leading axis is the direction; alpha and beta are
    arrays broadcasting over it (directions may share a function but not its parameters)."""

    def __init__(self, name: str, alphas, betas, strict: bool, ar: Arithmetic):
        self.name = name
        self.alpha = _parameter(alphas)
        self.beta = _parameter(betas)
        self.strict = strict
        self.ar = ar

    def __call__(self, x, e):
        """(f(x), bound on |computed f − f(exact x)|) given |computed x − x| <= e."""
        ar, name = self.ar, self.name
        if name == "Sigmoid":  # the common gate: its own short path
            f = 1.0 / (1.0 + np.exp(-x))  # exp overflows to inf for x < -709: f = 0, as wanted
            # |d/dx log σ'| = |1 − 2σ| <= 1: on x ± w, σ' <= σ(1 − σ)·e^{w} (and <= 1/4)
            slope = np.minimum(f * (1.0 - f) * np.exp(KINK_WIDEN * e), 0.25)
            # 1/(1 + e^{-x}): exp (k ulps), add, divide; a kernel's absolute floor near 0
            err = slope * e + np.maximum(ar.sigmoid_rel * f, ar.floor)
            return f, (err + _flush(ar, f, err)) if ar.flush else err
        if name == "Tanh":
            f = np.tanh(x)
            # |d/dx log(1 − tanh²)| = 2|tanh| <= 2: on x ± w, tanh' <= (1 − f²)·e^{2w} (and <= 1)
            f2 = f * f
            slope = np.minimum((1.0 - f2) * np.exp((2 * KINK_WIDEN) * e), 1.0)
            af = np.abs(f)
            own = np.maximum(np.maximum(ar.tanh_lib * af, ar.tanh_cancel * (1.0 - f2)
                                        + ar.tanh_round * af), ar.floor)
            err = slope * e + own
            return f, (err + _flush(ar, f, err)) if ar.flush else err
        a, b = self.alpha, self.beta
        u, k = ar.u_el, ar.k
        w = KINK_WIDEN * e
        jump = 0.0
        pr = 0.0  # alpha/beta rounded to a narrow dtype: u·(|αx| + |β|)
        if name == "Relu":
            f = np.maximum(x, 0.0)
            slope = (x + w > 0).astype(np.float64)
            own = 0.0
        elif name == "Affine":
            f = a * x + b
            slope = np.abs(a)
            own = u * (np.abs(a * x) + np.abs(f))
            pr = ar.u * (np.abs(a * x) + np.abs(b))
        elif name == "LeakyRelu":
            f = np.where(x >= 0, x, a * x)
            slope = np.maximum((x + w > 0) * 1.0, (x - w < 0) * np.abs(a))
            own = np.where(x - w < 0, u * np.abs(a * x), 0.0)
            pr = np.where(x - w < 0, ar.u * np.abs(a * x), 0.0)
        elif name == "ThresholdedRelu":
            above = (x > a) if self.strict else (x >= a)
            f = np.where(above, x, 0.0)
            slope = (x + w > a).astype(np.float64)
            own = 0.0
            # a computed input on the other side of alpha jumps by |alpha|
            near = (a != 0.0) & (np.abs(x - a) < w)
            jump = np.where(near, np.abs(a) + w, 0.0)
            if ar.narrow:  # alpha rounded to the dtype moves the threshold itself
                pr = np.where((a != 0.0) & (np.abs(x - a) < w + ar.u * np.abs(a)), np.abs(a), 0.0)
        elif name == "ScaledTanh":
            bx = b * x
            t = np.tanh(bx)
            f = a * t
            slope = np.abs(a * b) * (1.0 - np.tanh(_nearest_zero(bx, np.abs(b) * w)) ** 2)
            dt = 1.0 - t * t
            own = np.abs(a) * (_tanh_own(t, ar) + dt * u * np.abs(bx)) + u * np.abs(f)
            pr = ar.u * (np.abs(f) + np.abs(a) * dt * np.abs(bx))
        elif name == "HardSigmoid":
            y = a * x + b
            f = np.clip(y, 0.0, 1.0)
            reach = np.abs(a) * w
            slope = np.where((y + reach > 0) & (y - reach < 1), np.abs(a), 0.0)
            own = u * (np.abs(a * x) + np.abs(y))
            pr = ar.u * (np.abs(a * x) + np.abs(b))
        elif name == "Elu":
            neg = x < 0
            E = np.exp(np.minimum(x, 0.0))
            f = np.where(neg, a * (E - 1.0), x)
            top = np.minimum(x + w, 0.0)
            slope = np.maximum((x + w > 0) * 1.0, (x - w < 0) * np.abs(a) * np.exp(top))
            # α(e^x − 1) with exp within k ulps, or α·expm1(x) with expm1 within k ulps
            own = np.where(neg, np.abs(a) * np.maximum(np.maximum(
                2 * k * ar.u * E + u * (1.0 - E), 2 * k * ar.u * (1.0 - E)), ar.floor)
                + u * np.abs(f), 0.0)
            pr = np.where(neg, ar.u * np.abs(f), 0.0)
        elif name == "Softsign":
            f = x / (1.0 + np.abs(x))
            slope = 1.0 / (1.0 + np.abs(_nearest_zero(x, w))) ** 2
            own = 2 * u * np.abs(f)
        elif name == "Softplus":
            f = np.logaddexp(0.0, x)
            slope = _sigmoid(x + w)
            # log(1 + e^x): log (k ulps) plus the relative error of 1 + e^x (exp, then add)
            own = np.maximum(2 * k * ar.u * np.abs(f) + 2 * k * ar.u * _sigmoid(x) + u, ar.floor)
        else:  # pragma: no cover - the problem checker admits only the eleven
            raise ValueError(f"no precision model for activation {name!r}")
        err = slope * e + own + jump
        err = err + _flush(ar, f, err)
        if ar.narrow:
            err = err + pr
        return f, err


# -- the walk ---------------------------------------------------------------------------------------

class _Clip:
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


# -- non-finite inputs: IEEE classes along the walk --------------------------------------------------
#
# With ±Inf or NaN among the inputs the float64 walk meets them too: numpy's arithmetic gives their
# IEEE classes, and the reading's choices at the points IEEE leaves open (profiles.IEEE_POINTS) are
# applied where the oracle's evaluation applies them (ieee.py). A non-finite value carries error 0:
# the comparison checks its class, not a distance. A finite value computed from non-finite ones (a
# saturated activation, a clip) carries the function's own error at its limit: exact for Relu,
# the clamps and clip; the library's k ulps or absolute floor for the exp-based ones, which is
# what onnxruntime's GRU kernel shows (tanh(+Inf) = 1 + 4 ulps, sigmoid(-Inf) = -2.4e-7).
# *Taint* marks the elements whose class a correct implementation may get otherwise: an infinity
# times a finite factor the model may hold as 0 (its bound reaches 0), and everything downstream.
# The errors carried by non-finite values are not looked at: a finite value comes from a
# non-finite one only through an activation or clip, which take such an input's error as 0
# (_IEEEFn, _IEEEClip); sums and products with a non-finite operand are non-finite themselves.


def _certain(v, e):
    """The error where the value is ±Inf or NaN is 0: its class is what is checked, exactly (as
    long as nothing overflows)."""
    return np.where(np.isfinite(v), e, 0.0)


def _vanish(v, e):
    """A finite factor a correct implementation may compute as 0, or as a nonzero of either sign
    near it: its bound reaches 0 (an exact 0, e = 0, is certain; e NaN or inf is no bound)."""
    return np.isfinite(v) & (e != 0) & ~(np.abs(v) > KINK_WIDEN * e)


def _product_taint(x, ex, tx, y, ey, ty):
    """x·y: an infinity times a factor that may vanish is NaN or ±Inf, as the rounding decides."""
    return (tx | ty) | (~np.isfinite(x) & _vanish(y, ey)) | (~np.isfinite(y) & _vanish(x, ex))


def _at_infinity(choice, x, at_pos, at_neg):
    """The values at ±Inf of a function whose documented formula may divide Inf by Inf there:
    its limit, or NaN at the signs the reading names (ieee._at_infinity)."""
    pos, neg = x == np.inf, x == -np.inf
    v = np.where(pos, at_pos, np.where(neg, at_neg, np.nan))
    if choice in ("nan", "nan-pos"):
        v = np.where(pos, np.nan, v)
    if choice in ("nan", "nan-neg"):
        v = np.where(neg, np.nan, v)
    return v


class _IEEEFn(_Fn):
    """_Fn with the readings of IEEE's open points at ±Inf and NaN inputs, and the own error of the
    function at its limit where the finite formula's error terms would read Inf·0."""

    def __init__(self, name, alphas, betas, strict, ar, choices):
        super().__init__(name, alphas, betas, strict, ar)
        self.choices = choices

    def __call__(self, x, e):
        bad = ~np.isfinite(x)
        e = np.where(bad, 0.0, e)  # a non-finite input is its class exactly (see _certain)
        f, err = _Fn.__call__(self, x, e)
        if bad.any():
            f, err = self._special(x, bad, np.asarray(f, dtype=np.float64),
                                   np.broadcast_to(err, np.shape(f)))
        return f, _certain(f, err)

    def _special(self, x, bad, f, err):
        ar, name, c = self.ar, self.name, self.choices
        u = ar.u_el
        nan = np.isnan(x)
        if name == "Tanh":
            f = np.where(bad & ~nan, _at_infinity(c["tanh_at_infinity"], x, 1.0, -1.0), f)
        elif name == "Sigmoid":
            f = np.where(bad & ~nan, _at_infinity(c["sigmoid_at_infinity"], x, 1.0, 0.0), f)
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
            t = np.where(np.isnan(bx), np.nan, _at_infinity(c["tanh_at_infinity"], bx, 1.0, -1.0))
            f = np.where(bad, self.alpha * t, f)
            own = np.abs(self.alpha) * _tanh_own(t, ar) + u * np.abs(f)
            if ar.narrow:
                own = own + ar.u * np.abs(f)
            err = np.where(bad, own + _flush(ar, f, own), err)
        elif name == "Softsign":
            lim = _at_infinity(c["softsign_at_infinity"], x, 1.0, -1.0)
            f = np.where(bad & ~nan, lim, f)
            own = 2 * u * np.abs(f)
            err = np.where(bad, own + _flush(ar, f, own), err)
        return f, err


class _IEEEClip(_Clip):
    """_Clip with the reading of clip(NaN): NaN, -c or +c (then exact, as a saturated clip is)."""

    def __init__(self, bound, ar, choice):
        super().__init__(bound, ar)
        self.choice = choice

    def __call__(self, a, e):
        a2, e2 = _Clip.__call__(self, a, np.where(np.isfinite(a), e, 0.0))
        if self.bound is None or self.choice == "nan":
            return a2, e2
        nan = np.isnan(a)
        if not nan.any():
            return a2, e2
        held = -self.bound if self.choice == "low" else self.bound
        return np.where(nan, held, a2), np.where(nan, self.rounding, e2)


class _Taint:
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
            out = out | ((_vanish(v, e).astype(np.float64) @ self.RT[..., rows]) > 0)
        return out


class _Sum:
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
        return _Sum(self.a[index], self.S[index], _at(self.Sx, index), _at(self.m, index),
                    _at(self.prop, index), _at(self.l1, index), self.q)

    def __add__(self, other):
        Sx = None if self.Sx is None and other.Sx is None else (
            (self.S if self.Sx is None else self.Sx) + (other.S if other.Sx is None else other.Sx))
        return _Sum(self.a + other.a, self.S + other.S, Sx, self.m + other.m,
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


def _exact_products(X, W, ar):
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


def _min_nonzero(values) -> float:
    values = np.abs(values[values != 0])
    smallest = float(values.min()) if values.size else math.inf
    if math.isnan(smallest):  # a NaN input (non-finite problems): the smallest finite one
        values = values[np.isfinite(values)]
        smallest = float(values.min()) if values.size else math.inf
    return smallest


def _projection(X, W, bias_terms, ar) -> _Sum:
    """X·Wᵀ + biases for every direction, time step, batch entry and row: [D, S, B, rows]."""
    W_abs, X_abs = np.abs(W), np.abs(X)
    # X·Wᵀ per direction as matrix products (BLAS; einsum does not use it for this contraction)
    a = np.stack([X @ W[d].T for d in range(W.shape[0])])
    S = np.stack([X_abs @ W_abs[d].T for d in range(W.shape[0])])
    Xnz, Wnz = (X != 0).astype(np.float64), (W != 0).astype(np.float64)
    m = np.stack([Xnz @ Wnz[d].T for d in range(W.shape[0])])
    if ar.products_exact:
        Sx = 0.0
    elif ar.u_in:
        Sx = None  # the rounded operands' products are not checked for exactness: all inexact
    else:
        exact = _exact_products(X, W, ar)
        Sx = None if exact is None or not exact.any() else np.einsum(
            "dsbri->dsbr", np.where(exact, 0.0, np.abs(X[None, :, :, None, :] * W[:, None, None])))
    # inputs rounded to the dtype: x·w carries (2u + u²)|x||w| in, a bias u|b|
    prop = (2 * ar.u_in + ar.u_in * ar.u_in) * S if ar.u_in else 0.0
    for bias in bias_terms:  # [D, rows]
        a = a + bias[:, None, None, :]
        S = S + np.abs(bias)[:, None, None, :]
        m = m + (bias != 0)[:, None, None, :]
        if ar.u_in:
            prop = prop + ar.u_in * np.abs(bias)[:, None, None, :]
    if not ar.flush:
        return _Sum(a, S, Sx, _uniform(m), prop, 0.0, math.inf)
    l1 = X_abs.sum(axis=2)[None, :, :, None] + W_abs.sum(axis=2)[:, None, None, :]
    # a T-value v is a multiple of ulp(v) > u·|v|; a product of two, of u²·|x|·|w|
    q = ar.u * ar.u * _min_nonzero(X) * _min_nonzero(W)
    for bias in bias_terms:
        q = min(q, ar.u * _min_nonzero(bias))
    return _Sum(a, S, Sx, _uniform(m), prop, l1, q)


@dataclass
class _Constants:
    """The walked directions' constants, stacked on a leading axis (D' = directions walked)."""

    x: _Sum  # [D', S, B, rows]: X·Wᵀ + the biases folded into each pre-activation
    R_min: float  # the smallest nonzero |R|
    RT: np.ndarray  # [D', H, rows]: Rᵀ
    RT_abs: np.ndarray
    RT_nz: np.ndarray  # R ≠ 0, as 0/1
    R_dense: bool  # no zero in R
    R_l1: np.ndarray  # [D', 1, rows]: Σ_k |R[row, k]|


def _constants(X, W, R, bias_terms, ar) -> _Constants:
    RT = R.transpose(0, 2, 1)
    RT_abs = np.abs(RT)
    return _Constants(_projection(X, W, bias_terms, ar), _min_nonzero(R), RT, RT_abs,
                      (RT != 0).astype(np.float64), bool(np.all(R != 0)),
                      RT_abs.sum(axis=1)[:, None, :])


def _recurrent(ar, k, rows, h, eh) -> _Sum:
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
    prop = eh @ RT_abs + ar.u_in * S  # R rounded to the dtype: u·|h||R| more
    if not ar.flush:
        return _Sum(h @ k.RT[..., rows], S, Sx, m, prop, 0.0, math.inf)
    live = (h != 0) | (eh > 0) if live is None else live
    return _Sum(h @ k.RT[..., rows], S, Sx, m, prop,
                habs.sum(axis=-1, keepdims=True) + k.R_l1[..., rows],
                ar.u * ar.u * k.R_min * _smallest(h, eh, live))


def _smallest(x, ex, live) -> float:
    """A lower bound on the smallest nonzero computed value among the live elements."""
    if not live.any():
        return math.inf
    smallest = float((np.abs(x) - ex)[live].min())
    if math.isnan(smallest):  # NaN values (non-finite problems): the finite ones
        finite = (np.abs(x) - ex)[live]
        finite = finite[np.isfinite(finite)]
        smallest = float(finite.min()) if finite.size else math.inf
    return max(smallest, 0.0)


def _elementwise(ar, c, x, ex) -> _Sum:
    """One product term c⊙x (peepholes: P⊙C), c an input (exact, or rounded: u·|c| in)."""
    p = c * x
    ap = np.abs(p)
    live = (c != 0) & ((x != 0) | (ex > 0))
    prop = np.abs(c) * ex + ar.u_in * ap
    if not ar.flush:
        return _Sum(p, ap, 0.0 if ar.products_exact else None, live.astype(np.float64),
                    prop, 0.0, math.inf)
    return _Sum(p, ap, 0.0 if ar.products_exact else None, live.astype(np.float64),
                prop, np.abs(c) + np.abs(x),
                ar.u * ar.u * _min_nonzero(c) * _smallest(x, ex, live))


def _rounding(ar, v, e_in):
    """u·|v| for rounding v to the dtype, 0 where v is computed from exact operands (e_in = 0)
    and the dtype holds it exactly (a float64 trajectory value then is the exact value)."""
    cost = ar.u_el * np.abs(v)
    if ar.acc_dtype is None or ar.dtype not in _NUMPY:
        return cost
    exact = e_in == 0
    if not exact.any():
        return cost
    exact &= v.astype(_NUMPY[ar.dtype]).astype(np.float64) == v
    return np.where(exact, 0.0, cost)


def _mul(ar, x, ex, y, ey):
    p = x * y
    e = np.abs(y) * ex + np.abs(x) * ey + ex * ey
    e = e + _rounding(ar, p, e)
    return p, e + _flush(ar, p, e)


def bound(problem, choices: dict, dtype: str | None = None,
          accumulation: str | None = None, rounding: str = "nearest") -> tuple[dict, dict]:
    """Per-output error bounds (layout 0, float64, NaN where a direction has no functions), and
    the model's parameters, for ``problem`` under the reading ``choices`` (point id -> value).

    ``dtype`` other than the problem's: an implementation that computes in ``dtype`` instead
    (bfloat16 or float16 for a float32 model, float32 for float64, tfloat32): every input is
    rounded to it first, which the walk carries in as an error of u·|value| per input.
    ``rounding`` "faithful" admits rounding in any direction (see ROUNDINGS)."""
    out, parameters, classes = walk(problem, choices, dtype, accumulation, rounding)
    if classes is not None:  # non-finite problems: 0 at ±Inf and NaN, no bound where tainted
        out = {name: np.where(classes["taint"][name], np.inf,
                              np.where(np.isfinite(classes["value"][name]), b, 0.0))
               for name, b in out.items()}
    return out, parameters


def walk(problem, choices: dict, dtype: str | None = None, accumulation: str | None = None,
         rounding: str = "nearest") -> tuple[dict, dict, dict | None]:
    """bound()'s walk, with, for a problem with a non-finite input, the classes it saw: {"value":
    per output the float64 trajectory's values, "taint": per output where the IEEE class is not
    certain} (None for a finite problem). readings.py compares them with the exact classes."""
    compute = dtype or problem.dtype
    rounds = compute != problem.dtype and _FORMATS[compute][0] < _FORMATS[problem.dtype][0]
    ar = arithmetic(compute, accumulation, rounds, rounding)
    if problem.nonfinite:
        ar = dataclasses.replace(ar, ieee=True)
    with np.errstate(all="ignore"):  # a trajectory that overflows gives inf/NaN bounds
        return _bound(problem, choices, ar)


def _functions(choices, ar, per_direction):
    """Per gate function, one callable over the stacked directions."""
    strict = choices["thresholded_relu_boundary"] == ">"

    def fn(name, alphas, betas):
        if ar.ieee:
            return _IEEEFn(name, alphas, betas, strict, ar, choices)
        return _Fn(name, alphas, betas, strict, ar)

    out = []
    for j in range(len(per_direction[0])):
        fs = [fns[j] for fns in per_direction]
        if len({f.name for f in fs}) == 1:
            out.append(fn(fs[0].name, [f.alpha for f in fs], [f.beta for f in fs]))
        else:
            out.append(_PerDirection([fn(f.name, [f.alpha], [f.beta]) for f in fs]))
    return out


def _bound(problem, choices: dict, ar: Arithmetic) -> tuple[dict, dict, dict | None]:
    F = problem.floats
    S, D, B, H = problem.seq_length, problem.num_directions, problem.batch_size, problem.hidden_size
    G, op = problem.info.gates, problem.op
    names = problem.info.outputs
    Hy = problem.output_size  # proj_size under torch's LSTM projection (framework.py)
    out = {"Y": np.zeros((S, D, B, Hy))}
    for name in names[1:]:
        out[name] = np.zeros((D, B, H if name == "Y_c" else Hy))
    # non-finite problems: the trajectory's values and taint, laid out as the outputs
    classes = None
    if ar.ieee:
        classes = {"value": {n: np.full(a.shape, np.nan) for n, a in out.items()},
                   "taint": {n: np.zeros(a.shape, dtype=bool) for n, a in out.items()}}
    walked, functions = [], []
    for d in range(D):
        fns, missing = direction_functions(problem, d, choices)
        if missing:  # a parameter neither given nor defaulted: the outputs are unspecified
            out["Y"][:, d] = np.nan
            for name in names[1:]:
                out[name][d] = np.nan
        else:
            walked.append(d)
            functions.append(fns)
    if not walked:
        return out, ar.parameters(), classes
    dirs = np.array(walked)
    fns = _functions(choices, ar, functions)
    clip = _IEEEClip(problem.clip, ar, choices["nan_clip"]) if ar.ieee else _Clip(problem.clip, ar)
    Bias = F["B"][dirs]
    Wb, Rb = Bias[:, :G * H], Bias[:, G * H:].copy()
    if op == "GRU" and problem.linear_before_reset:
        Rb[:, 2 * H:] = 0.0  # Rbh is added after the reset gate, not in X·Whᵀ + Wbh
    k = _constants(F["X"], F["W"][dirs], F["R"][dirs], (Wb, Rb), ar)
    if F.get("X_error") is not None:  # a stacked layer's input: the layer below's output and its bound
        _carried(k.x, F["X_error"], F["W"][dirs])
    projection = _projection_rows(F["W_hr"][dirs]) if F.get("W_hr") is not None else None
    Rbh = Bias[:, None, 5 * H:] if op == "GRU" else None
    P = F["P"][dirs][:, None, :] if F["P"] is not None else None
    h = F["initial_h"][dirs].copy()
    eh = ar.u_in * np.abs(h)  # 0 unless the inputs are rounded to the dtype
    c = ec = None
    if op == "LSTM":
        c = F["initial_c"][dirs].copy()
        ec = ar.u_in * np.abs(c)
    nf = th = tc = None
    if ar.ieee:
        eh, ec = _certain(h, eh), (None if c is None else _certain(c, ec))
        nf = _Taint(F["R"][dirs])
        th = np.zeros(h.shape, dtype=bool)
        tc = None if c is None else np.zeros(c.shape, dtype=bool)
    lens = np.asarray(problem.sequence_lens)
    reverse = np.array([problem.direction == "reverse" or d == 1 for d in walked])
    di = np.arange(len(walked))
    full = min(problem.sequence_lens) == S  # every sequence runs the whole length: no masking
    if not full:
        dgrid, bgrid = np.meshgrid(di, np.arange(B), indexing="ij")
    for step in range(S):
        if full:
            t = np.where(reverse, S - 1 - step, step)
            index: tuple[np.ndarray, ...] = (di, t)
        else:
            active = np.broadcast_to(step < lens, (len(walked), B))
            if not active.any():
                break
            t = np.where(reverse[:, None], lens[None, :] - 1 - step, step)
            t = np.where(active, t, 0)
            index = (dgrid, t, bgrid)
        x = k.x[index]
        if op == "RNN":
            h_new, eh_new = fns[0](*clip(*_value(ar, x + _recurrent(ar, k, slice(None), h, eh))))
            if nf is not None:
                th_new = nf.dot(th, h, eh, slice(None))
        elif op == "GRU":
            if nf is None:
                h_new, eh_new = _gru(ar, k, problem, Rbh, x, h, eh, fns, clip, H)
            else:
                h_new, eh_new, th_new = _gru(ar, k, problem, Rbh, x, h, eh, fns, clip, H,
                                             (nf, th, choices))
        elif nf is None:
            h_new, eh_new, c_new, ec_new = _lstm(ar, k, problem, choices, P, x, h, eh, c, ec,
                                                 fns, clip, H)
            if projection is not None:  # h_t = W_hr h_t (torch.nn.LSTM's projection)
                h_new, eh_new = _value(ar, _recurrent(ar, projection, slice(None), h_new, eh_new))
        else:
            h_new, eh_new, c_new, ec_new, th_new, tc_new = _lstm(
                ar, k, problem, choices, P, x, h, eh, c, ec, fns, clip, H, (nf, th, tc))
        if full:
            h, eh = h_new, eh_new
            if op == "LSTM":
                c, ec = c_new, ec_new
            out["Y"][t, dirs] = eh
            if nf is not None:
                assert classes is not None  # made with nf, for an IEEE walk
                th = th_new
                if op == "LSTM":
                    tc = tc_new
                classes["value"]["Y"][t, dirs] = h
                classes["taint"]["Y"][t, dirs] = th
            continue
        keep = active[..., None]
        h, eh = np.where(keep, h_new, h), np.where(keep, eh_new, eh)
        if op == "LSTM":
            c, ec = np.where(keep, c_new, c), np.where(keep, ec_new, ec)
        where = (t[active], dirs[dgrid[active]], bgrid[active])
        out["Y"][where] = eh[active]
        if nf is not None:
            assert classes is not None and th is not None  # made with nf, for an IEEE walk
            th = np.where(keep, th_new, th)
            if op == "LSTM":
                assert tc is not None  # an LSTM's IEEE walk has its cell taint
                tc = np.where(keep, tc_new, tc)
            classes["value"]["Y"][where] = h[active]
            classes["taint"]["Y"][where] = th[active]
    out["Y_h"][dirs] = eh
    if op == "LSTM":
        out["Y_c"][dirs] = ec
    if nf is not None:
        assert classes is not None  # made with nf, for an IEEE walk
        classes["value"]["Y_h"][dirs], classes["taint"]["Y_h"][dirs] = h, th
        if op == "LSTM":
            classes["value"]["Y_c"][dirs], classes["taint"]["Y_c"][dirs] = c, tc
    return out, ar.parameters(), classes


def _carried(x: _Sum, X_error, W) -> None:
    """X·Wᵀ of a stacked layer, whose X is the layer below's computed output: its error bound
    (``X_error`` [S, B, I]) carried through |W|, and no product of it exact."""
    x.prop = x.prop + np.stack([X_error @ np.abs(W[d]).T for d in range(W.shape[0])])
    x.Sx = None


def _projection_rows(W_hr):
    """torch's LSTM projection W_hr [D', proj_size, H] as the rows _recurrent multiplies a state by."""
    RT = W_hr.transpose(0, 2, 1)
    RT_abs = np.abs(RT)
    return _Constants(None, _min_nonzero(W_hr), RT, RT_abs, (RT != 0).astype(np.float64),  # type: ignore[arg-type]
                      bool(np.all(W_hr != 0)), RT_abs.sum(axis=1)[:, None, :])


def _value(ar, total: _Sum):
    return total.a, total.error(ar)


def _gru(ar, k, problem, Rbh, x, h, eh, fns, clip, H, nf=None):
    """One GRU step: (new, its error), and with ``nf`` = (taint, th, choices) for a non-finite
    problem, the new state's taint too."""
    f, g = fns
    zr, hs = slice(0, 2 * H), slice(2 * H, 3 * H)
    gate, egate = f(*clip(*_value(ar, x[..., zr] + _recurrent(ar, k, zr, h, eh))))
    z, ez, r, er = gate[..., :H], egate[..., :H], gate[..., H:], egate[..., H:]
    xh = x[..., hs]
    if nf is not None:
        taint, th, choices = nf
        t_zr = taint.dot(th, h, eh, zr)
        t_z, t_r = t_zr[..., :H], t_zr[..., H:]
    if problem.linear_before_reset:
        # q = H·Rhᵀ + Rbh; xh = X·Whᵀ + Wbh; pre = xh + r ⊙ q
        q = _recurrent(ar, k, hs, h, eh)
        q = q + _Sum(Rbh, np.abs(Rbh), 0.0, (Rbh != 0).astype(np.float64), ar.u_in * np.abs(Rbh),
                     0.0, ar.u * _min_nonzero(Rbh))
        qa, qe = _value(ar, q)
        rq, erq = _mul(ar, r, er, qa, qe)
        pre = xh.a + rq
        epre = xh.error(ar) + erq + ar.u_el * np.abs(pre)
        epre = epre + _flush(ar, pre, epre)
        if nf is not None:
            epre = _certain(pre, epre)
            t_pre = _product_taint(r, er, t_r, qa, qe, taint.dot(th, h, eh, hs))
    else:
        # pre = X·Whᵀ + (r ⊙ H)·Rhᵀ + Wbh + Rbh
        rh, erh = _mul(ar, r, er, h, eh)
        pre, epre = _value(ar, xh + _recurrent(ar, k, hs, rh, erh))
        if nf is not None:
            t_pre = taint.dot(_product_taint(r, er, t_r, h, eh, th), rh, erh, hs)
    hh, ehh = g(*clip(pre, epre))
    one_z = 1.0 - z
    new = one_z * hh + z * h
    a1z, az = np.abs(one_z), np.abs(z)
    # (1 − z)⊙h̃ + z⊙H rounds 1 − z, two products and the sum: u·(2|1 − z||h̃| + |z||H| + |new|);
    # h̃ + z⊙(H − h̃) rounds H − h̃, the product and the sum: u·(2|z||H − h̃| + |new|). Both are
    # within u·(2(|1 − z| + |z|)(|H| + |h̃|) + |new|).
    rounding = ar.u_el * (2.0 * (a1z + az) * (np.abs(h) + np.abs(hh)) + np.abs(new))
    e_new = a1z * ehh + az * eh + np.abs(h - hh) * ez + ez * (ehh + eh) + rounding
    e_new = (e_new + _flush(ar, new, e_new) + _flush(ar, one_z * hh, e_new)
             + _flush(ar, z * h, e_new))
    if nf is None:
        return new, e_new
    # with an infinity the two forms may part (ieee.gru_update); finite, they agree
    taint = t_z | t_pre | th
    if choices["gru_update"] == "lerp":
        d = h - hh
        new = np.where(np.isfinite(new), new, hh + z * d)
        taint = taint | _product_taint(z, ez, False, d, eh + ehh + ar.u_el * np.abs(d), False)
    else:
        taint = (taint | _product_taint(one_z, ez + ar.u_el * a1z, False, hh, ehh, False)
                 | _product_taint(z, ez, False, h, eh, False))
    return new, _certain(new, e_new), taint


def _lstm(ar, k, problem, choices, P, x, h, eh, c, ec, fns, clip, H, nf=None):
    """One LSTM step: (h, its error, c, its error), and with ``nf`` = (taint, th, tc) for a
    non-finite problem, the taints of h and c too."""
    f, g, h_fn = fns
    total = x + _recurrent(ar, k, slice(None), h, eh)  # rows i, o, f, c
    new_cell_peephole = P is not None and choices["peephole_output"] == "Ct"
    if nf is not None:
        taint, th, tc = nf
        t_all = taint.dot(th, h, eh, slice(None))
    if P is not None:  # Pi⊙Ct-1, Pf⊙Ct-1 (and Po⊙Ct-1 under the po-ct1 reading)
        zero = np.zeros_like(P[..., :H])
        Pr = np.concatenate([P[..., :H], zero if new_cell_peephole else P[..., H:2 * H],
                             P[..., 2 * H:], zero], axis=-1)
        c4, ec4 = np.concatenate([c] * 4, axis=-1), np.concatenate([ec] * 4, axis=-1)
        if nf is not None:
            # the rows without a peephole term (c, and o under po-ct) add nothing: not 0 x C,
            # which is NaN for an infinite C; a P entry that is 0 does multiply C (IEEE)
            rows = np.concatenate([np.ones_like(zero), zero if new_cell_peephole else
                                   np.ones_like(zero), np.ones_like(zero), zero], axis=-1) != 0
            c4, ec4 = np.where(rows, c4, 0.0), np.where(rows, ec4, 0.0)
            # P is exact: a non-finite P meets a C that may vanish; and C's taint
            t_p = _product_taint(Pr, 0.0, False, c4, ec4, np.concatenate([tc] * 4, axis=-1))
            t_all = t_all | (t_p & rows)
        total = total + _elementwise(ar, Pr, c4, ec4)
    a, e = _value(ar, total)
    i_, o_, f_, c_ = (slice(j * H, (j + 1) * H) for j in range(4))
    coupling = choices["input_forget"] if problem.input_forget else None
    # the gates through f that are ready now, in one call: i and/or f, and o unless it reads Ct
    wanted = [f_] if coupling == "i=1-f" else [i_] if coupling == "f=1-i" else [i_, f_]
    if not new_cell_peephole:
        wanted.append(o_)
    cols = np.concatenate([np.arange(r.start, r.stop) for r in wanted])
    v, ev = f(*clip(a[..., cols], e[..., cols]))
    got = {r.start: (v[..., j * H:(j + 1) * H], ev[..., j * H:(j + 1) * H])
           for j, r in enumerate(wanted)}
    if coupling == "i=1-f":
        ft, eft = got[f_.start]
        it = 1.0 - ft
        eit = eft + ar.u_el * np.abs(it)
        eit = eit + _flush(ar, it, eit)
        if nf is not None:
            eit = _certain(it, eit)
    elif coupling == "f=1-i":
        it, eit = got[i_.start]
        ft = 1.0 - it
        eft = eit + ar.u_el * np.abs(ft)
        eft = eft + _flush(ar, ft, eft)
        if nf is not None:
            eft = _certain(ft, eft)
    else:
        (it, eit), (ft, eft) = got[i_.start], got[f_.start]
    ct, ect = g(*clip(a[..., c_], e[..., c_]))
    fc, efc = _mul(ar, ft, eft, c, ec)
    ic, eic = _mul(ar, it, eit, ct, ect)
    cell = fc + ic
    ecell = efc + eic
    ecell = ecell + _rounding(ar, cell, ecell)
    ecell = ecell + _flush(ar, cell, ecell)
    if nf is not None:
        ecell = _certain(cell, ecell)
        t_i = t_all[..., f_] if coupling == "i=1-f" else t_all[..., i_]
        t_f = t_all[..., i_] if coupling == "f=1-i" else t_all[..., f_]
        t_cell = (_product_taint(ft, eft, t_f, c, ec, tc)
                  | _product_taint(it, eit, t_i, ct, ect, t_all[..., c_]))
        t_o = t_all[..., o_]
    if new_cell_peephole:
        ot, eot = f(*clip(*_value(ar, total[..., o_] + _elementwise(ar, P[..., H:2 * H], cell,
                                                                       ecell))))
        if nf is not None:
            t_o = t_o | _product_taint(P[..., H:2 * H], 0.0, False, cell, ecell, t_cell)
    else:
        ot, eot = got[o_.start]
    if clip.bound is not None and choices["clip_h"]:
        hc, ehc = h_fn(*clip(cell, ecell))
    else:
        hc, ehc = h_fn(cell, ecell)
    h_new, eh_new = _mul(ar, ot, eot, hc, ehc)
    if nf is None:
        return h_new, eh_new, cell, ecell
    return h_new, eh_new, cell, ecell, _product_taint(ot, eot, t_o, hc, ehc, t_cell), t_cell


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
