"""The eleven activation functions of the ONNX RNN, GRU and LSTM docs, in arbitrary precision.

Definitions, as the ONNX docs write them ("Activation functions" in RNN-22, GRU-22, LSTM-22):

    Relu(x)            max(0, x)
    Tanh(x)            (1 - e^{-2x})/(1 + e^{-2x})
    Sigmoid(x)         1/(1 + e^{-x})
    Affine(x)          alpha*x + beta
    LeakyRelu(x)       x if x >= 0 else alpha*x
    ThresholdedRelu(x) x if x >= alpha else 0      (the ThresholdedRelu op says x > alpha)
    ScaledTanh(x)      alpha*Tanh(beta*x)
    HardSigmoid(x)     min(max(alpha*x + beta, 0), 1)
    Elu(x)             x if x >= 0 else alpha*(e^x - 1)
    Softsign(x)        x/(1 + |x|)
    Softplus(x)        log(1 + e^x)

Each function returns its value rounded to ``prec`` bits (transcendentals within an ulp or so: they
run with guard bits, and with extra bits where e^x - 1 or log(1 + y) would cancel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mpmath import libmp

from .arith import ONE, ROUND, ZERO, cmp, exact_sum, is_negative, magnitude, mul, neg, round_to

GUARD = 20

#: canonical spelling -> (uses alpha, uses beta)
PARAMETERS = {
    "Relu": (False, False),
    "Tanh": (False, False),
    "Sigmoid": (False, False),
    "Affine": (True, True),
    "LeakyRelu": (True, False),
    "ThresholdedRelu": (True, False),
    "ScaledTanh": (True, True),
    "HardSigmoid": (True, True),
    "Elu": (True, False),
    "Softsign": (False, False),
    "Softplus": (False, False),
}

CANONICAL = {name.lower(): name for name in PARAMETERS}


def canonical_name(name: str) -> str | None:
    """The ONNX spelling of an activation name given in any case, or None if unknown."""
    return CANONICAL.get(str(name).lower())


def _relu(x, prec, alpha, beta):
    return ZERO if is_negative(x) else round_to(x, prec)


def _tanh(x, prec, alpha, beta):
    return libmp.mpf_tanh(x, prec, ROUND)


def _sigmoid(x, prec, alpha, beta):
    wp = prec + GUARD
    denominator = libmp.mpf_add(ONE, libmp.mpf_exp(neg(x), wp, ROUND), wp, ROUND)
    return libmp.mpf_div(ONE, denominator, prec, ROUND)


def _affine(x, prec, alpha, beta):
    return libmp.mpf_pos(exact_sum([mul(alpha, x), beta]), prec, ROUND)


def _leaky_relu(x, prec, alpha, beta):
    return mul(alpha, x, prec, ROUND) if is_negative(x) else round_to(x, prec)


def _scaled_tanh(x, prec, alpha, beta):
    return mul(alpha, libmp.mpf_tanh(mul(beta, x), prec + GUARD, ROUND), prec, ROUND)


def _hard_sigmoid(x, prec, alpha, beta):
    y = exact_sum([mul(alpha, x), beta])
    if is_negative(y):
        return ZERO
    if cmp(y, ONE) > 0:
        return ONE
    return round_to(y, prec)


def _expm1(x, prec):
    """e^x - 1 for x < 0, with enough bits to survive the cancellation near 0."""
    wp = prec + GUARD + max(0, -magnitude(x))
    return round_to(exact_sum([libmp.mpf_exp(x, wp, ROUND), neg(ONE)]), prec + GUARD)


def _elu(x, prec, alpha, beta):
    if not is_negative(x):
        return round_to(x, prec)
    return mul(alpha, _expm1(x, prec), prec, ROUND)


def _softsign(x, prec, alpha, beta):
    return libmp.mpf_div(x, exact_sum([ONE, libmp.mpf_abs(x)]), prec, ROUND)


def _softplus(x, prec, alpha, beta):
    wp = prec + GUARD
    if not is_negative(x) and magnitude(x) > math.log2(wp) + 1:
        # x > 2*wp: log(1 + e^x) = x + log(1 + e^-x), and e^-x < 2**-(2*wp) x; without this, e^x of
        # a value that grows double-exponentially (Softplus gates feeding c) takes ever longer
        return round_to(x, prec)
    y = libmp.mpf_exp(x, wp, ROUND)
    if is_negative(x) and magnitude(y) < -(prec + GUARD):
        return round_to(y, prec)  # log(1 + y) = y (1 - y/2 + ...): y alone is within 2**-(prec+20)
    wp += max(0, -magnitude(y))
    return round_to(libmp.mpf_log(exact_sum([ONE, y]), wp, ROUND), prec)


FUNCTIONS = {
    "Relu": _relu,
    "Tanh": _tanh,
    "Sigmoid": _sigmoid,
    "Affine": _affine,
    "LeakyRelu": _leaky_relu,
    "ScaledTanh": _scaled_tanh,
    "HardSigmoid": _hard_sigmoid,
    "Elu": _elu,
    "Softsign": _softsign,
    "Softplus": _softplus,
}


@dataclass
class Activation:
    """One activation function with its parameters resolved (raw mpf values, or None if absent).

    ``strict_threshold`` picks ThresholdedRelu's boundary: False reads ``x >= alpha`` (the ONNX
    RNN docs), True reads ``x > alpha`` (the ThresholdedRelu op). ``ties`` counts the calls where
    the two readings gave different values, so the oracle knows whether the other one matters.
    """

    name: str
    alpha: tuple | None = None
    beta: tuple | None = None
    strict_threshold: bool = False
    ties: int = field(default=0, compare=False)

    def __call__(self, x, prec: int):
        if self.name == "ThresholdedRelu":
            order = cmp(x, self.alpha)
            if order == 0 and self.alpha != ZERO:
                self.ties += 1
            above = order > 0 or (order == 0 and not self.strict_threshold)
            return round_to(x, prec) if above else ZERO
        return FUNCTIONS[self.name](x, prec, self.alpha, self.beta)


def assign_parameters(names, alpha, beta, consumption: str):
    """Which activation_alpha/activation_beta value each activation receives (None: not given).

    ``consumption`` is "positional" (alpha[k] belongs to the k-th name) or "popped" (each
    activation that takes a parameter takes the next unused value, in list order).
    Returns one (alpha, beta) pair of floats-or-None per name.
    """
    assigned = []
    next_alpha = next_beta = 0
    for k, name in enumerate(names):
        uses_alpha, uses_beta = PARAMETERS[name]
        a = b = None
        if consumption == "positional":
            if uses_alpha and k < len(alpha):
                a = alpha[k]
            if uses_beta and k < len(beta):
                b = beta[k]
        else:
            if uses_alpha and next_alpha < len(alpha):
                a, next_alpha = alpha[next_alpha], next_alpha + 1
            if uses_beta and next_beta < len(beta):
                b, next_beta = beta[next_beta], next_beta + 1
        assigned.append((a, b))
    return assigned


def missing_parameters(name: str, alpha, beta, defaults: dict) -> tuple[str, ...]:
    """The parameters ``name`` needs that are neither given nor defaulted."""
    uses_alpha, uses_beta = PARAMETERS[name]
    own = defaults.get(name, {})
    missing = []
    if uses_alpha and alpha is None and "alpha" not in own:
        missing.append("alpha")
    if uses_beta and beta is None and "beta" not in own:
        missing.append("beta")
    return tuple(missing)
