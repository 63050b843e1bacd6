"""IEEE 754 infinities and NaN in the exact evaluation: the primitives a problem with a non-finite
input (``Problem.nonfinite``) is evaluated with. Finite problems never come here: they run the
primitives of :mod:`oracles.exact` and :mod:`oracles.activations` as they always did.

The special values are mpmath's raw ``libmp.finf``, ``libmp.fninf`` and ``libmp.fnan`` (mantissa 0,
exponent not 0). Every operation of the documented formulas gets IEEE 754-2019 semantics
(oracles/README.md, "Non-finite inputs"):

- products, sums and dot products: exact, with mpmath's IEEE rules for the specials (any NaN
  operand gives NaN; Inf − Inf and 0 × Inf give NaN; Inf + finite = Inf; Inf × nonzero finite is a
  signed Inf); a dot product is the sum of its products, so a NaN or 0 × Inf term, or +Inf and −Inf
  terms together, make it NaN;
- activations at ±Inf take their limits and at NaN give NaN, except at the points where IEEE does
  not decide what an implementation of the documented formula returns. Those are profile points
  (``IEEE_POINTS``, ieee_points.py) whose choice this module reads from the reading in force and
  reports as *touched* when an evaluation reaches them, so that readings.py evaluates each way.
"""

from __future__ import annotations

from types import FunctionType

from mpmath import libmp

from . import exact
from .arith import (
    ONE,
    ROUND,
    ZERO,
    exact_sum,
    mul,
    neg,
    one_minus,
    round_to,
    rounded_sum,
)

INF = libmp.finf
NINF = libmp.fninf
NAN = libmp.fnan

#: the profile points where IEEE 754 leaves the result open (ieee_points.py, ``IEEE_POINTS``)
NAN_RELU = "nan_relu"
NAN_THRESHOLDED_RELU = "nan_thresholded_relu"
NAN_HARD_SIGMOID = "nan_hard_sigmoid"
NAN_CLIP = "nan_clip"
TANH_AT_INFINITY = "tanh_at_infinity"
SIGMOID_AT_INFINITY = "sigmoid_at_infinity"
SOFTSIGN_AT_INFINITY = "softsign_at_infinity"
GRU_UPDATE = "gru_update"
POINTS = (NAN_RELU, NAN_THRESHOLDED_RELU, NAN_HARD_SIGMOID, NAN_CLIP, TANH_AT_INFINITY,
          SIGMOID_AT_INFINITY, SOFTSIGN_AT_INFINITY, GRU_UPDATE)

#: the reason code of elements whose IEEE class depends on rounding (readings.py marks them)
VANISHING = "ieee754.vanishing_factor"
VANISHING_REASON = (
    "an infinity meets a factor whose value is zero or within the precision model's error bound "
    "of zero (a sigmoid gate at 0, 1 - z at 0, a tiny state): a correct implementation computing "
    "in the dtype may hold that factor as 0, and 0 x Inf = NaN (IEEE 754-2019 7.2), or as a tiny "
    "nonzero, and then the product is an infinity; this element depends on which (the "
    "activations' own error admits |f| <= 4u near 0: onnxruntime's GRU kernel returns "
    "sigmoid(-20) = -2.4e-7)"
)


#: the reason code of elements where the precision model's float64 trajectory and the exact
#: evaluation give different classes (a value the model's float64 walk underflows to 0 meets an
#: infinity): the model cannot vouch for the class. Random cases never need it (test_nonfinite.py),
#: so that an evaluation bug cannot hide behind it.
DISAGREES = "ieee754.model_disagrees"
DISAGREES_REASON = (
    "the precision model's float64 trajectory reaches another IEEE class here than the exact "
    "evaluation (a product its float64 arithmetic underflows to 0 meets an infinity: 0 x Inf = "
    "NaN, IEEE 754-2019 7.2, where the exact product is nonzero), so a correct implementation in "
    "the dtype may get either"
)


def special(value) -> bool:
    """Whether a raw value is +Inf, -Inf or NaN (zero has exponent 0, the specials do not)."""
    return not value[1] and value[2] != 0


# -- exact dot products with specials --------------------------------------------------------------

def fixed_point(values):
    """exact.fixed_point, keeping the raw values and where the specials are: (ints, base, raw,
    special indices). The specials stand as 0 in ints; dot_plus decides their class."""
    specials = tuple(k for k, v in enumerate(values) if special(v))
    plain = [ZERO if special(v) else v for v in values] if specials else values
    ints, base = exact.fixed_point(plain)
    return ints, base, values, specials


def fixed_rows(rows) -> list:
    return [fixed_point(row) for row in rows]


def dot_plus(vector, row, terms=(), prec: int = 0):
    """exact.dot_plus with IEEE classes: a special product or term makes the result their sum's
    class (each product exact: mpf_mul gives NaN for 0 x Inf; mpf_sum NaN for Inf - Inf)."""
    specials = [t for t in terms if special(t)]
    indices = set(vector[3]) | set(row[3])
    if not (indices or specials):
        return exact.dot_plus(vector, row, terms, prec)
    specials.extend(libmp.mpf_mul(vector[2][k], row[2][k]) for k in indices)
    return libmp.mpf_sum(specials, 0)


def input_projection(X, W_rows, *biases):
    """exact.input_projection with IEEE classes."""
    rows = fixed_rows(W_rows)
    bias = [list(terms) for terms in zip(*biases)] if biases else [[] for _ in W_rows]
    return [[[dot_plus(x, row, extra) for row, extra in zip(rows, bias)]
             for x in map(fixed_point, x_t)] for x_t in X]


# -- the activations at ±Inf and NaN ------------------------------------------------------------------

def _at_infinity(point: str, x, limit, ctx):
    """A function whose documented formula may be evaluated as Inf/Inf at an infinity: its limit,
    or NaN at the signs the reading says (limit, nan-neg, nan-pos, nan)."""
    ctx.touched.add(point)
    choice = ctx.choices[point]
    positive = x == INF
    if choice == "nan" or (choice == "nan-pos" and positive) or (choice == "nan-neg"
                                                                  and not positive):
        return NAN
    return limit


def _tanh(x, ctx):
    if x == NAN:
        return NAN
    return _at_infinity(TANH_AT_INFINITY, x, ONE if x == INF else neg(ONE), ctx)


def at_special(fn, x, prec: int, ctx):
    """Activation ``fn`` (an activations.Activation) of a special input x, to ``prec`` bits."""
    name, alpha, beta = fn.name, fn.alpha, fn.beta
    choices, touched = ctx.choices, ctx.touched
    nan, positive = x == NAN, x == INF
    if name == "Tanh":
        return _tanh(x, ctx)
    if name == "Sigmoid":
        if nan:
            return NAN
        return _at_infinity(SIGMOID_AT_INFINITY, x, ONE if positive else ZERO, ctx)
    if name == "Relu":  # max(0, x)
        if nan:
            touched.add(NAN_RELU)
            return NAN if choices[NAN_RELU] == "nan" else ZERO
        return INF if positive else ZERO
    if name == "Affine":  # alpha*x + beta, IEEE (alpha = 0 gives 0 x Inf = NaN)
        return exact_sum([mul(alpha, x), beta])
    if name == "LeakyRelu":  # x if x >= 0 else alpha*x: NaN >= 0 is false, alpha*NaN is NaN
        return INF if positive else mul(alpha, x)
    if name == "ThresholdedRelu":  # x if x >= alpha else 0 (alpha finite)
        if nan:
            touched.add(NAN_THRESHOLDED_RELU)
            return ZERO if choices[NAN_THRESHOLDED_RELU] == "zero" else NAN
        return INF if positive else ZERO
    if name == "ScaledTanh":  # alpha*Tanh(beta*x): beta = 0 gives NaN
        return mul(alpha, _tanh(mul(beta, x), ctx), prec, ROUND)
    if name == "HardSigmoid":  # min(max(alpha*x + beta, 0), 1)
        y = exact_sum([mul(alpha, x), beta])
        if y == NAN:
            touched.add(NAN_HARD_SIGMOID)
            return {"nan": NAN, "zero": ZERO, "one": ONE}[choices[NAN_HARD_SIGMOID]]
        return ONE if y == INF else ZERO
    if name == "Elu":  # x if x >= 0 else alpha*(e^x - 1): alpha*(0 - 1) at -Inf
        if nan or positive:
            return x
        return round_to(neg(alpha), prec)
    if name == "Softsign":  # x/(1 + |x|): Inf/Inf taken literally
        if nan:
            return NAN
        return _at_infinity(SOFTSIGN_AT_INFINITY, x, ONE if positive else neg(ONE), ctx)
    if name == "Softplus":  # log(1 + e^x)
        return ZERO if x == NINF else x
    raise ValueError(f"no IEEE rule for activation {name!r}")  # pragma: no cover


class Activation:
    """An activations.Activation that takes special inputs by the rules above."""

    def __init__(self, fn, ctx):
        self.fn = fn
        self.ctx = ctx

    def __call__(self, x, prec: int):
        if not x[1] and x[2]:
            return at_special(self.fn, x, prec, self.ctx)
        return self.fn(x, prec)


def clip(value, ctx):
    """clip to [-c, c]: ±Inf goes to ±c; NaN as the reading says (min/max with a NaN operand)."""
    if ctx.clip_bound is None or not special(value):
        return exact.clip_to(value, ctx.clip_bound, ctx.clip_bound_neg)
    if value == NAN:
        ctx.touched.add(NAN_CLIP)
        return {"nan": NAN, "low": ctx.clip_bound_neg,
                "high": ctx.clip_bound}[ctx.choices[NAN_CLIP]]
    return ctx.clip_bound if value == INF else ctx.clip_bound_neg


def gru_update(z, hidden, h_prev, prec: int, ctx):
    """Ht = (1 - z)(.)h + z(.)Ht-1 (the documented form, ``convex``), or h + z(.)(Ht-1 - h)
    (``lerp``); equal for finite operands, and where they are not, possibly different classes."""
    convex = rounded_sum([mul(one_minus(z), hidden), mul(z, h_prev)], prec)
    if not (special(z) or special(hidden) or special(h_prev)):
        return convex
    lerp = exact_sum([hidden, mul(z, exact_sum([h_prev, neg(hidden)]))])
    if lerp != convex:
        ctx.touched.add(GRU_UPDATE)
    return convex if ctx.choices[GRU_UPDATE] == "convex" else lerp


def variant(namespace: dict, *functions):
    """The same functions compiled against ``namespace`` with this module's primitives in place
    of exact.py's (dot_plus, fixed_point, fixed_rows, input_projection): a cell's prepare and step
    for a problem with a non-finite input, while the finite path runs its own code untouched.
    Each returned function is also bound in the new namespace under its name, so that the others
    call it (lstm.step calls _gate)."""
    scope = dict(namespace, dot_plus=dot_plus, fixed_point=fixed_point, fixed_rows=fixed_rows,
                 input_projection=input_projection)
    out = []
    for fn in functions:
        copy = FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__doc__, copy.__qualname__ = fn.__doc__, fn.__qualname__ + " (IEEE)"
        scope[fn.__name__] = copy
        out.append(copy)
    return out
