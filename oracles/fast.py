"""The fast path for production shapes: the oracle in float64 numpy, vectorised over the batch, with
a bound on its own error, and mpmath only where that bound is not far below the float32 tolerance.

At production shapes (hundreds of hidden units and steps) the mpmath evaluation takes minutes per
case. Here the documented formulas are evaluated once in float64 (``hi`` = that value, ``lo`` = 0),
and the evaluation carries two things besides:

- **its own error**: the precision model (precision.py) at float64's unit roundoff: the rigorous
  first-order running error bound × 2 where that is finite, and the statistical bound below at
  float64's unit roundoff otherwise (the smaller of the two). It is added to every element's bound,
  so a tolerance built from them covers the oracle's own error too.
- **the statistical bound** (``Expected.sigma``): the first-order error of a correct float32
  implementation is a linear form Σ_k c_k·δ_k in its rounding errors δ_k, |δ_k| <= u, and its
  activations' own errors. Under Higham & Mary's model (δ_k independent, mean zero; SIAM J. Sci.
  Comput. 41(5), 2019) the Azuma-Hoeffding inequality bounds it by λ·u·‖c‖₂ except with probability
  2·exp(-λ²/2). Model v2 sharpens the rounding terms by ``ROUNDING`` = 1/√3: round to nearest
  discards bits that are modelled as uniformly distributed (Higham, *Accuracy and Stability of
  Numerical Algorithms*, 2nd ed., §2.8), so an addition's or a multiplication's relative error
  δ = e/(m·2^k) (e uniform in ±u·2^k, significand m in [1, 2)) is a mixture of uniform
  distributions on [-u/m, u/m]: symmetric and unimodal on [-u, u], hence sub-Gaussian with variance
  proxy u²/3 (a uniform variable on [-a, a] has E exp(tX) = sinh(ta)/(ta) <= exp(t²a²/6)), and the
  same λ bounds Σ c_k·δ_k by λ·u·‖c‖₂/√3. An activation's error gets no such assumption: its term
  keeps the full proxy of its bound (``K_ULPS`` ulp). ‖c‖₂ per
  element is estimated by propagating K Gaussian tangents through the signed linearisation of the
  float64 trajectory (the real Jacobian, not |R|: the worst-case running error grows like
  Σ_j |R_ij| per step and overflows at 128 hidden units), each operation injecting its own fresh
  rounding scale; ``sigma`` is that estimate (already × u of the dtype). The tolerance turns it
  into a bound with a stated false-alarm probability (conformance/compare/tolerance.py).

Where the oracle's own error is not at most ``FAR_BELOW`` × the sharpest float32 tolerance, the batch
rows concerned are evaluated by mpmath (api.evaluate on the sub-problem of those rows; batch rows
are independent) and spliced in. Only problems with one reading, finite inputs, the activations
Sigmoid, Tanh and Relu, no clip, and for LSTM no peepholes and input_forget = 0 take this path
(``ineligible`` says why not); float32 and float64 only. mpmath stays the reference: a test checks
this path against it on every small case of the corpus.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from . import precision
from .evaluation import direction_functions
from .readings import APPLIES, DYNAMIC, _describe
from .result import Expected, OracleResult, Reading

#: the statistical model's name (recorded in OracleResult.precision["statistical"])
STAT_MODEL = "probabilistic-v2"
#: an addition's or multiplication's rounding error as a sub-Gaussian term, in units of u: 1/√3
#: (its distribution symmetric and unimodal on [-u, u]; see the module's docstring). 1.0 is v1's
#: Hoeffding scale, which assumes only |δ| <= u.
ROUNDING = 1.0 / math.sqrt(3.0)
#: the oracle's own error must be at most this fraction of the float32 tolerance, else mpmath
FAR_BELOW = 1e-3
#: the tolerance factor this module assumes when it checks FAR_BELOW (policies.yaml, derived)
STAT_FACTOR = 1.25
#: the false-alarm probability the FAR_BELOW check assumes (policies.yaml, derived.statistical)
FALSE_ALARM = 1e-5
#: tangent samples: at least MIN_SAMPLES, at most MAX_SAMPLES, as many as SAMPLE_BUDGET flops allow
MIN_SAMPLES, MAX_SAMPLES = 16, 1024
SAMPLE_BUDGET = 6e10
#: the problem size (multiply-adds) from which api.evaluate takes this path by default
FAST_MIN_MACS = 1_000_000
#: activations this path knows: value, derivative, own error in units of u (precision.py's model)
ACTIVATIONS = ("Sigmoid", "Tanh", "Relu")
K_ULPS = precision.ACT_ULPS
FLOOR = precision.ACT_ABS_ULPS


def macs(problem) -> int:
    G = problem.info.gates
    return (problem.seq_length * problem.batch_size * problem.num_directions * G
            * problem.hidden_size * (problem.input_size + problem.hidden_size))


def choice_values(profile) -> dict:
    return {pid: point.choices[0].value for pid, point in profile.points.items()}


def ineligible(problem, profile) -> str:
    """Why the fast path cannot evaluate ``problem`` ("" when it can)."""
    if problem.nonfinite:
        return "a non-finite input (IEEE classes: mpmath)"
    if problem.dtype not in ("float32", "float64"):
        return f"dtype {problem.dtype} (the fast path models float32 and float64)"
    if problem.clip is not None:
        return "clip"
    if any(name not in ACTIVATIONS for name in problem.activations):
        return f"activations other than {', '.join(ACTIVATIONS)}"
    if problem.op == "LSTM" and (problem.P is not None or problem.floats.get("P") is not None
                                 or problem.input_forget):
        return "LSTM peepholes or input_forget"
    if problem.proj_size or problem.floats.get("X_error") is not None:
        return "an LSTM projection or a stacked layer (torch.nn: framework.py, stack.py)"
    multi = {pid for pid, point in profile.points.items() if len(point.choices) > 1}
    applicable = {pid for pid, applies in APPLIES.items() if applies(problem, profile)}
    if multi & applicable:
        return f"several readings ({', '.join(sorted(multi & applicable))})"
    if DYNAMIC & applicable:
        return "a reading decided during the evaluation"
    values = choice_values(profile)
    for d in range(problem.num_directions):
        if direction_functions(problem, d, values)[1]:
            return "a missing activation parameter"
    return ""


# -- statistics ---------------------------------------------------------------------------------

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


# -- the walk -------------------------------------------------------------------------------------

def _act(name: str, x):
    """(f(x), f'(x), own error of a correct kernel in units of u: precision.py's bounds)."""
    if name == "Sigmoid":
        with np.errstate(over="ignore"):
            f = 1.0 / (1.0 + np.exp(-x))
        return f, f * (1.0 - f), np.maximum((2 * K_ULPS + 2) * f, FLOOR)
    if name == "Tanh":
        f = np.tanh(x)
        af = np.abs(f)
        return f, 1.0 - f * f, np.maximum(np.maximum(2 * K_ULPS * af, K_ULPS * (1.0 - f * f) + 3 * af),
                                           FLOOR)
    f = np.maximum(x, 0.0)
    return f, (x > 0).astype(np.float64), np.zeros_like(x)


def _dot_scale(sq, value, m):
    """The fresh rounding of a sum of m products (Σp² = sq, Σp = value), in units of u, as the ℓ2
    norm of its coefficients: each product rounded once (Σp²), and m - 1 additions whose
    coefficients are the partial sums s_k. Summed term by term in an order that does not depend on
    the terms' values, E Σ_k s_k² = m²·Var(p)/6 + m³·mean(p)²/3 (pairwise, blocked and lane sums
    have smaller ones); taken here as (m - 1)·Σp²/6 + m·(Σp)²/3, at least that expectation, since
    Σp² >= m·Var(p) (v1 took three times the first part). Times ``ROUNDING``, each rounding error's
    sub-Gaussian scale."""
    return ROUNDING * np.sqrt(np.maximum((m - 1.0) * sq / 6.0 + m * value * value / 3.0 + sq, 0.0))


def fingerprint() -> str:
    """The fast path's model and constants: part of its results' cache key (api.evaluate)."""
    return (f"{STAT_MODEL}:rounding={ROUNDING:.6f}:dot=sixth:samples={MIN_SAMPLES}-{MAX_SAMPLES}/{SAMPLE_BUDGET:g}:own64=scaled:"
            f"far={FAR_BELOW:g}:factor={STAT_FACTOR:g}:alarm={FALSE_ALARM:g}")


def _rms(samples):
    return np.sqrt(np.mean(np.square(samples, dtype=np.float64), axis=0))


class _Rng:
    def __init__(self, seed: int, samples: int):
        self.rng = np.random.default_rng(seed)
        self.K = samples

    def __call__(self, shape):
        return self.rng.standard_normal((self.K, *shape), dtype=np.float32)


def walk(problem, profile, samples: int | None = None, seed: int = 0) -> dict:
    """The float64 trajectory and the tangent estimate of ‖c‖₂ per element (units of u).

    Returns {"values": {output: array (layout 0)}, "sigma_unit": {output: array}, "samples": K};
    ``samples=0``: the values only (sigma_unit 0).
    """
    F = problem.floats
    S, D, B, H = problem.seq_length, problem.num_directions, problem.batch_size, problem.hidden_size
    G, op = problem.info.gates, problem.op
    I = problem.input_size
    if samples is None:
        per_sample = max(macs(problem) * 2, 1)
        samples = int(min(MAX_SAMPLES, max(MIN_SAMPLES, SAMPLE_BUDGET // per_sample)))
    rng = _Rng(seed, samples)
    values = choice_values(profile)
    names = problem.info.outputs
    out = {"Y": np.zeros((S, D, B, H))}
    sig = {"Y": np.zeros((S, D, B, H))}
    for name in names[1:]:
        out[name], sig[name] = np.zeros((D, B, H)), np.zeros((D, B, H))
    lens = np.asarray(problem.sequence_lens)
    X = F["X"]
    X2 = X * X
    for d in range(D):
        fns = [fn.name for fn in direction_functions(problem, d, values)[0]]
        W, R, bias = F["W"][d], F["R"][d], F["B"][d]
        Wb, Rb = bias[:G * H], bias[G * H:].copy()
        lbr = op == "GRU" and problem.linear_before_reset
        Rbh: Any = Rb[2 * H:].copy() if lbr else None
        if lbr:
            Rb[2 * H:] = 0.0
        xw = X @ W.T + Wb + Rb                                       # [S, B, GH]
        xsq = X2 @ (W * W).T + Wb * Wb + Rb * Rb
        m_in = float(I + np.count_nonzero(Wb) / max(G * H, 1) + np.count_nonzero(Rb) / max(G * H, 1))
        RT, R2T = R.T.copy(), (R * R).T.copy()
        RT32 = RT.astype(np.float32)
        h = F["initial_h"][d].copy()
        dh = np.zeros((samples, B, H), dtype=np.float32)
        c: Any = None
        dc: Any = None
        if op == "LSTM":
            c = F["initial_c"][d].copy()
            dc = np.zeros((samples, B, H), dtype=np.float32)
        reverse = problem.direction == "reverse" or d == 1
        for step in range(S):
            active = step < lens
            if not active.any():
                break
            t = np.where(reverse, lens - 1 - step, step)
            t = np.where(active, t, 0)
            x, xs = xw[t, np.arange(B)], xsq[t, np.arange(B)]
            if op == "RNN":
                a = x + h @ RT
                sq = xs + (h * h) @ R2T
                f, df, own = _act(fns[0], a)
                rho = np.sqrt((df * _dot_scale(sq, a, m_in + H)) ** 2 + own ** 2)
                dnew = (df.astype(np.float32) * (dh @ RT32) + rho.astype(np.float32) * rng((B, H)))
                new, cnew, dcnew = f, None, None
            elif op == "GRU":
                zr = slice(0, 2 * H)
                a = x[:, zr] + h @ RT[:, zr]
                sq = xs[:, zr] + (h * h) @ R2T[:, zr]
                g_zr, dg_zr, own = _act(fns[0], a)
                rho = np.sqrt((dg_zr * _dot_scale(sq, a, m_in + H)) ** 2 + own ** 2)
                dgate = dg_zr.astype(np.float32) * (dh @ RT32[:, zr]) + rho.astype(np.float32) * rng((B, 2 * H))
                z, r = g_zr[:, :H], g_zr[:, H:]
                dz, dr = dgate[..., :H], dgate[..., H:]
                hs = slice(2 * H, 3 * H)
                if lbr:
                    q = h @ RT[:, hs] + Rbh
                    q_sq = (h * h) @ R2T[:, hs] + Rbh * Rbh
                    dq = dh @ RT32[:, hs] + _dot_scale(q_sq, q, H + 1.0).astype(np.float32) * rng((B, H))
                    ah = x[:, hs] + r * q
                    fresh_h = np.sqrt(_dot_scale(xs[:, hs], x[:, hs], m_in) ** 2
                                      + (ROUNDING * (np.abs(r * q) + np.abs(ah))) ** 2)
                    dah = dr * q.astype(np.float32) + r.astype(np.float32) * dq
                else:
                    rh = r * h
                    drh = dr * h.astype(np.float32) + r.astype(np.float32) * dh + (ROUNDING * np.abs(rh)).astype(np.float32) * rng((B, H))
                    ah = x[:, hs] + rh @ RT[:, hs]
                    fresh_h = _dot_scale(xs[:, hs] + (rh * rh) @ R2T[:, hs], ah, m_in + H)
                    dah = drh @ RT32[:, hs]
                hh, dgh, own_h = _act(fns[1], ah)
                rho_h = np.sqrt((dgh * fresh_h) ** 2 + own_h ** 2)
                dhh = dgh.astype(np.float32) * dah + rho_h.astype(np.float32) * rng((B, H))
                new = (1.0 - z) * hh + z * h
                upd = ROUNDING * (2.0 * (np.abs(1.0 - z) + np.abs(z)) * (np.abs(h) + np.abs(hh)) + np.abs(new))
                dnew = ((h - hh).astype(np.float32) * dz + (1.0 - z).astype(np.float32) * dhh
                        + z.astype(np.float32) * dh + upd.astype(np.float32) * rng((B, H)))
                cnew = dcnew = None
            else:  # LSTM, rows i, o, f, c; no peepholes, no coupling (ineligible otherwise)
                a = x + h @ RT
                sq = xs + (h * h) @ R2T
                fresh = _dot_scale(sq, a, m_in + H)
                da_prop = dh @ RT32
                i_, o_, f_, c_ = (slice(j * H, (j + 1) * H) for j in range(4))
                gates = {}
                for block, fn in ((i_, fns[0]), (o_, fns[0]), (f_, fns[0]), (c_, fns[1])):
                    v, dv, own = _act(fn, a[:, block])
                    rho = np.sqrt((dv * fresh[:, block]) ** 2 + own ** 2)
                    gates[block.start] = (v, dv.astype(np.float32) * da_prop[..., block]
                                         + rho.astype(np.float32) * rng((B, H)))
                (it, dit), (ot, dot_), (ft, dft), (ct, dct) = (gates[s.start] for s in (i_, o_, f_, c_))
                cnew = ft * c + it * ct
                fresh_c = ROUNDING * (np.abs(ft * c) + np.abs(it * ct) + np.abs(cnew))
                dcnew = (dft * c.astype(np.float32) + ft.astype(np.float32) * dc
                         + dit * ct.astype(np.float32) + it.astype(np.float32) * dct
                         + fresh_c.astype(np.float32) * rng((B, H)))
                hc, dhc, own_c = _act(fns[2], cnew)
                dhc_t = dhc.astype(np.float32) * dcnew + own_c.astype(np.float32) * rng((B, H))
                new = ot * hc
                dnew = (dot_ * hc.astype(np.float32) + ot.astype(np.float32) * dhc_t
                        + (ROUNDING * np.abs(new)).astype(np.float32) * rng((B, H)))
            keep = active[:, None]
            h = np.where(keep, new, h)
            dh = np.where(keep, dnew, dh)
            if op == "LSTM":
                c = np.where(keep, cnew, c)
                dc = np.where(keep, dcnew, dc)
            rows = np.nonzero(active)[0]
            out["Y"][t[rows], d, rows] = h[rows]
            if samples:
                sig["Y"][t[rows], d, rows] = _rms(dh[:, rows])
        out["Y_h"][d] = h
        if samples:
            sig["Y_h"][d] = _rms(dh)
        if op == "LSTM":
            out["Y_c"][d] = c
            if samples:
                sig["Y_c"][d] = _rms(dc)
    return {"values": out, "sigma_unit": sig, "samples": samples}


# -- the result -----------------------------------------------------------------------------------

def _layout(problem, array):
    if problem.layout != 1:
        return array
    return np.ascontiguousarray(array.transpose((2, 0, 1, 3) if array.ndim == 4 else (1, 0, 2)))


def _subproblem_tensors(tensors: dict, layout: int, rows) -> dict:
    """The tensors of the batch rows ``rows`` (layout 0 or 1 as the problem's)."""
    out = {}
    for name, value in tensors.items():
        if value is None:
            continue
        a = np.asarray(value)
        if name == "X":
            out[name] = a[:, rows] if layout == 0 else a[rows]
        elif name in ("initial_h", "initial_c"):
            out[name] = a[:, rows] if layout == 0 else a[rows]
        elif name == "sequence_lens":
            out[name] = a[rows]
        else:
            out[name] = a
    return out


def evaluate(problem, profile, op: str, attributes: dict, tensors: dict, prec: int,
             check_prec: int, fallback) -> OracleResult:
    """The fast path's OracleResult for an eligible ``problem`` (``ineligible(problem) == ""``).

    ``fallback(op, attributes, tensors)`` evaluates a sub-problem by mpmath (api.evaluate)."""
    from .evaluation import BEYOND_LENGTH, REASONS, ZERO_LENGTH
    values = choice_values(profile)
    walked = walk(problem, profile)
    K = walked["samples"]
    dtype = problem.dtype
    u_dtype = 2.0 ** -precision._FORMATS[dtype][0]
    u64 = 2.0 ** -53
    bounds, model = precision.bound(problem, values)
    # the running-error model is linear in u for float32 and float64 (every term is a multiple of
    # u; what is exact in float32 is exact in float64): at float64 it is at most this
    own64 = bounds if dtype == "float64" else {k: b * (u64 / u_dtype) for k, b in bounds.items()}
    S, D, B, H = problem.seq_length, problem.num_directions, problem.batch_size, problem.hidden_size
    lens = np.asarray(problem.sequence_lens)
    # unspecified elements: Y past a length, Y_h/Y_c of an empty sequence (the profiles' rule)
    policy = values["sequence_lens"]
    masks = {"Y": np.zeros((S, D, B, H), dtype=bool)}
    codes = {"Y": np.full((S, D, B, H), None, dtype=object)}
    zeros = {"Y": np.zeros((S, D, B, H), dtype=bool)}
    beyond = np.arange(S)[:, None] >= lens[None, :]                     # [S, B]
    beyond4 = np.broadcast_to(beyond[:, None, :, None], (S, D, B, H))
    if policy["beyond_length"] == "zeros":
        zeros["Y"] = beyond4.copy()
    else:
        masks["Y"] = beyond4.copy()
        codes["Y"][beyond4] = BEYOND_LENGTH
    empty = np.broadcast_to((lens == 0)[None, :, None], (D, B, H))
    for name in problem.info.outputs[1:]:
        masks[name] = np.zeros((D, B, H), dtype=bool)
        codes[name] = np.full((D, B, H), None, dtype=object)
        zeros[name] = np.zeros((D, B, H), dtype=bool)
        if policy["zero_length"] == "unspecified":
            masks[name] = empty.copy()
            codes[name][empty] = ZERO_LENGTH
        elif policy["zero_length"] == "zeros":
            zeros[name] = empty.copy()
    elements = int(sum((~m).sum() for m in masks.values()))
    lam, c_k = statistical_factor(elements, K, FALSE_ALARM)
    reasons_text = {}
    if masks["Y"].any():
        reasons_text[BEYOND_LENGTH] = REASONS[BEYOND_LENGTH].format(
            clause="sequence_lens: " + profile.point("sequence_lens").clause)
    if any(masks[n].any() for n in problem.info.outputs[1:]):
        reasons_text[ZERO_LENGTH] = REASONS[ZERO_LENGTH].format(
            clause="sequence_lens: " + profile.point("sequence_lens").clause)
    outputs, flagged = {}, np.zeros(B, dtype=bool)
    own_error = {}
    worst_own, agree = 0.0, 53.0
    for name in problem.info.outputs:
        hi = np.where(zeros[name], 0.0, walked["values"][name])
        sigma_unit = np.where(zeros[name], 0.0, walked["sigma_unit"][name])
        stat64 = STAT_FACTOR * lam * c_k * sigma_unit * u64
        rig64 = 2.0 * np.where(np.isnan(own64[name]), np.inf, own64[name])
        own = np.where(zeros[name], 0.0, np.minimum(rig64, stat64))
        rigorous = np.where(np.isnan(bounds[name]), np.inf, bounds[name])
        sigma = sigma_unit * u_dtype
        sharpest = np.minimum(2.0 * rigorous, STAT_FACTOR * lam * c_k * sigma)
        floor = 2.0 * u_dtype * np.abs(hi)   # below the tolerance's 2-ulp floor
        allowed = np.maximum(sharpest, floor)
        bad = ~masks[name] & ~(own <= FAR_BELOW * allowed)
        if bad.any():
            axis = 2 if name == "Y" else 1
            flagged |= bad.any(axis=tuple(i for i in range(bad.ndim) if i != axis))
        own_error[name] = own
        spec = ~masks[name]
        if spec.any():
            worst_own = max(worst_own, float(own[spec].max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(own[spec] > 0, own[spec] / np.maximum(np.abs(hi[spec]), 1e-300), 0.0)
            top = float(rel.max())
            agree = min(agree, 53.0 if top <= 0 else -math.log2(top))
        outputs[name] = Expected(
            hi=np.where(masks[name], np.nan, hi), lo=np.where(masks[name], np.nan, 0.0),
            unspecified=masks[name].copy(),
            reasons={code: reasons_text[code] for code in sorted({c for c in codes[name].ravel() if c})},
            bound=np.where(masks[name], np.nan, rigorous + own),
            codes=codes[name], sigma=np.where(masks[name], np.nan, sigma + own / (lam * c_k)))
    fallback_rows = np.nonzero(flagged)[0]
    if fallback_rows.size:  # mpmath for those batch rows (rows are independent): spliced in
        sub = fallback(op, attributes, _subproblem_tensors(tensors, problem.layout, fallback_rows))
        reading = sub.readings[0]
        for name, e in outputs.items():
            got = reading.outputs[name]
            at = (slice(None), slice(None), fallback_rows) if name == "Y" else (slice(None), fallback_rows)
            assert e.bound is not None and e.sigma is not None  # set by this path for every output
            e.hi[at], e.lo[at], e.bound[at] = (_to0(problem, a) for a in (got.hi, got.lo, got.bound))
            e.sigma[at] = e.sigma[at] - (own_error[name] / (lam * c_k))[at]
    for e in outputs.values():  # layout 0 -> the problem's layout
        e.hi, e.lo, e.unspecified, e.bound, e.sigma, e.codes = (
            _layout(problem, a) for a in (e.hi, e.lo, e.unspecified, e.bound, e.sigma, e.codes))
    from . import silent
    if any(e.unspecified.any() for e in outputs.values()):
        continued = None
        if lens.min() < S:
            full = replace(problem, sequence_lens=[S] * B)
            w = walk(full, profile, samples=0)
            cb, _ = precision.bound(full, values)
            continued = (w["values"], {k: np.where(np.isnan(v), np.inf, v) for k, v in cb.items()})
        silent.attach(problem, profile, values, outputs, check_prec, continued=continued)
    model.update(precision.shape_facts(problem))
    model["statistical"] = {
        "model": STAT_MODEL, "samples": K, "elements": elements,
        "tangents": "Gaussian, through the float64 trajectory's linearisation",
        "dot": "u·sqrt((m-1)·Σp²/6 + m·(Σp)²/3 + Σp²) per sum (Higham & Mary's √n·u, with "
               "the partial sums of an order that does not depend on the terms' values)",
        "rounding": f"each rounding error sub-Gaussian with scale u·{ROUNDING:.4f} (uniformly "
                    "distributed discarded bits: symmetric, unimodal on [-u, u])",
        "activations": f"≤ {K_ULPS:g} ulp, as random terms (mean zero, independent)",
    }
    certificate = {"prec": 53, "check_prec": None, "method": "float64-fast",
                   "agree_bits": math.floor(agree * 1000) / 1000, "max_abs_diff": worst_own,
                   "own_error": "min(2 × the precision model at float64, its statistical bound)",
                   "fallback_rows": [int(b) for b in fallback_rows],
                   "mpmath_prec": prec if fallback_rows.size else None}
    listed = {pid for pid, applies in APPLIES.items() if applies(problem, profile)}
    return OracleResult(op=problem.op, profile=profile.name,
                        readings=[Reading("default", _describe(profile, listed, [], {}, []), outputs, {})],
                        certificate=certificate,
                        ambiguities=[pid for pid, point in profile.points.items()
                                     if point.ambiguous and pid in listed],
                        notes=list(problem.notes), precision=model)


def _to0(problem, array):
    if array is None or problem.layout != 1:
        return array
    back = (1, 2, 0, 3) if array.ndim == 4 else (1, 0, 2)
    return np.ascontiguousarray(array.transpose(back))
