"""The statistical model of a correct implementation's error (probabilistic-v2), and the one call
that walks it: ``sigma``.

The first-order error of a correct implementation at an output element is a linear form Σ_k c_k·δ_k
in its rounding errors δ_k, plus its activations' own errors. Under Higham & Mary's model (δ_k
independent, mean zero, |δ_k| <= u; SIAM J. Sci. Comput. 41(5), 2019) the Azuma-Hoeffding
inequality bounds it by λ·u·‖c‖₂ except with probability 2·exp(-λ²/2). Model v2 sharpens the
rounding terms by ``ROUNDING`` = 1/√3: round to nearest discards bits that are modelled as
uniformly distributed (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.8),
so an addition's or a multiplication's relative error δ = e/(m·2^k) (e uniform in ±u·2^k,
significand m in [1, 2)) is a mixture of uniform distributions on [-u/m, u/m]: symmetric and
unimodal on [-u, u], hence sub-Gaussian with variance proxy u²/3 (a uniform variable on [-a, a]
has E exp(tX) = sinh(ta)/(ta) <= exp(t²a²/6)), and the same λ bounds Σ c_k·δ_k by λ·u·‖c‖₂/√3.
An activation's own error gets no such assumption: its term keeps the full proxy of its bound.
‖c‖₂ per element is estimated by propagating K Gaussian tangents through the signed linearisation
of the float64 trajectory (tangents.py), each operation injecting its own fresh rounding scale.

A reduced-precision kernel (arithmetic.kernel) rounds the model's inputs to its narrow type on the
way in. Those roundings are not random: to nearest, each input's rounding error Δ is known. They
are carried as deterministic tangents, one per input tensor (X, W, R, initial_h, initial_c, P),
and since a kernel may round each tensor or keep it wider, the *offset* at an element is the
largest |Σ_T s_T·o_T| over s_T in {0, 1}: max(Σ_T max(o_T, 0), Σ_T max(-o_T, 0)). A bias may be
pre-summed (Wb + Rb) before it is rounded: its rounding is a random term.
"""

from __future__ import annotations

import math

import numpy as np

#: the statistical model's name (OracleResult.precision["statistical"])
STAT_MODEL = "probabilistic-v2"
#: an addition's or multiplication's rounding error as a sub-Gaussian term, in units of u: 1/√3
#: (its distribution symmetric and unimodal on [-u, u]; see above). 1.0 is v1's Hoeffding scale,
#: which assumes only |δ| <= u.
ROUNDING = 1.0 / math.sqrt(3.0)
#: the tolerance factor and false-alarm probability the fast path assumes when it checks its own
#: error against the tolerance (policies.yaml, derived.statistical)
STAT_FACTOR = 1.25
FALSE_ALARM = 1e-5
#: tangent samples: at least MIN_SAMPLES, at most MAX_SAMPLES, as many as SAMPLE_BUDGET flops allow
MIN_SAMPLES, MAX_SAMPLES = 16, 1024
SAMPLE_BUDGET = 6e10
#: a kink (Relu, LeakyRelu, HardSigmoid's clamps, clip, Elu with alpha != 1) or a jump
#: (ThresholdedRelu) closer to the computed value than this many of its statistical scales: the
#: linearisation does not hold there, and the element and everything computed from it get no
#: statistical scale (the rigorous bound judges them)
KINK_SIGMAS = 8.0


def macs(problem) -> int:
    G = problem.info.gates
    return (problem.seq_length * problem.batch_size * problem.num_directions * G
            * problem.hidden_size * (problem.input_size + problem.hidden_size))


def samples_for(problem) -> int:
    """K: as many tangents as SAMPLE_BUDGET flops allow, within MIN_SAMPLES and MAX_SAMPLES."""
    per_sample = max(macs(problem) * 2, 1)
    return int(min(MAX_SAMPLES, max(MIN_SAMPLES, SAMPLE_BUDGET // per_sample)))


def _lower_gamma_p(a: float, x: float) -> float:
    """The regularised lower incomplete gamma function P(a, x) (series; x small against a here)."""
    if x <= 0:
        return 0.0
    term = total = 1.0 / a
    n = a
    while term > total * 1e-16:
        n += 1.0
        term *= x / n
        total += term
    return math.exp(math.log(total) + a * math.log(x) - x - math.lgamma(a))


def chi2_lower_quantile(k: int, p: float) -> float:
    """x with P(χ²_k <= x) = p, by bisection (p small: the lower tail)."""
    lo, hi = 0.0, float(k)
    if _lower_gamma_p(k / 2, hi / 2) < p:
        return hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if _lower_gamma_p(k / 2, mid / 2) < p:
            lo = mid
        else:
            hi = mid
    return lo


def statistical_factor(elements: int, samples: int, false_alarm: float) -> tuple[float, float]:
    """(λ, c_K): with probability >= 1 - false_alarm, every one of ``elements`` first-order errors
    is within λ·c_K·sigma. Half the probability goes to Azuma-Hoeffding (2·exp(-λ²/2) per element,
    union over the elements), half to sigma's estimate from K Gaussian tangents (σ̂²·K/σ² is χ²_K:
    c_K = sqrt(K / its lower quantile at false_alarm / (2·elements)), union again)."""
    n = max(int(elements), 1)
    lam = math.sqrt(2.0 * math.log(4.0 * n / false_alarm))
    q = chi2_lower_quantile(samples, false_alarm / (2.0 * n))
    return lam, math.sqrt(samples / q) if q > 0 else math.inf


def dot_scale(sq, value, m):
    """The fresh rounding of a sum of m products (Σp² = sq, Σp = value), in units of u, as the ℓ2
    norm of its coefficients: each product rounded once (Σp²), and m - 1 additions whose
    coefficients are the partial sums s_k. Summed term by term in an order that does not depend on
    the terms' values, E Σ_k s_k² = m²·Var(p)/6 + m³·mean(p)²/3 (pairwise, blocked and lane sums
    have smaller ones); taken here as (m - 1)·Σp²/6 + m·(Σp)²/3, at least that expectation, since
    Σp² >= m·Var(p) (v1 took three times the first part). Times ``ROUNDING``, each rounding error's
    sub-Gaussian scale."""
    return ROUNDING * np.sqrt(np.maximum((m - 1.0) * sq / 6.0 + m * value * value / 3.0 + sq, 0.0))


def fingerprint() -> str:
    """The statistical model and its constants."""
    return (f"{STAT_MODEL}:rounding={ROUNDING:.6f}:dot=sixth:samples={MIN_SAMPLES}-{MAX_SAMPLES}/"
            f"{SAMPLE_BUDGET:g}:kinks={KINK_SIGMAS:g}:offsets=per-tensor")


def describe(samples: int, elements: int, ar) -> dict:
    """The record of the statistical model (OracleResult.precision["statistical"])."""
    out = {
        "model": STAT_MODEL, "samples": samples, "elements": elements,
        "tangents": "Gaussian, through the float64 trajectory's linearisation",
        "dot": "u·sqrt((m-1)·Σp²/6 + m·(Σp)²/3 + Σp²) per sum (Higham & Mary's √n·u, with "
               "the partial sums of an order that does not depend on the terms' values)",
        "rounding": f"each rounding error sub-Gaussian with scale u·{ROUNDING:.4f} (uniformly "
                    "distributed discarded bits: symmetric, unimodal on [-u, u])",
        "activations": (f"computed in float32 (≤ {_accuracy(ar.wide)} float32 ulps, a bounded term) and rounded "
                        f"once to {ar.dtype} (a rounding term)" if ar.wide is not None else
                        f"≤ {_accuracy(ar)} ulp, as random terms (mean zero, independent)"),
        "kinks": f"no statistical scale within {KINK_SIGMAS:g} scales of a kink or jump, nor downstream",
    }
    if ar.u_in or ar.u_gemm:
        out["inputs"] = ("each input tensor's rounding to nearest, exactly, as a deterministic "
                         "tangent; the offset admits every subset of tensors rounded; biases as "
                         "random terms (they may be pre-summed)")
    return out


def _accuracy(ar) -> str:
    """'4' or, where measured (arithmetic.with_activations), 'tanh 125, sigmoid 4.1 (measured)'."""
    if not ar.measured:
        return f"{ar.k:g}"
    return ", ".join(f"{name.lower()} {k:.3g}" for name, k in ar.measured) + " (measured)"
