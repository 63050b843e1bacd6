"""Tangents: the walker's carrier for the statistical model (statistical.py).

Every quantity carries its float64 value and tangents ``d`` [K + C, ...] (float32, in units of the
arithmetic's u): K Gaussian samples of the first-order error's linear form, each operation
injecting its own fresh rounding scale, and C deterministic channels, one per input tensor a
reduced-precision kernel rounds (X, W, R, initial_h, initial_c, P: the known error of rounding it
to nearest). ``inv`` marks the elements the linearisation does not reach (a kink or jump within
KINK_SIGMAS scales, or computed from such an element).
"""

from __future__ import annotations

import math

import numpy as np

from .arithmetic import FORMATS, NUMPY, Arithmetic
from .functions import flush
from .running import Running
from .statistical import KINK_SIGMAS, ROUNDING, dot_scale

#: the deterministic channels: the input tensors a kernel may round (each may also be kept wide)
CHANNELS = ("X", "W", "R", "initial_h", "initial_c", "P")


def rounding_error(values, compute: str):
    """(Δ, tie): the error of rounding ``values`` (float64 holding float32 or float64 values) to
    nearest in ``compute``, ties to even, and where a value lies exactly halfway (another
    round-to-nearest may go the other way)."""
    values = np.asarray(values, dtype=np.float64)
    if compute == "tfloat32":  # float32 with 10 fraction bits: round the low 13 bits of float32
        bits = values.astype(np.float32).view(np.uint32).astype(np.int64)
        low = bits & 0x1FFF
        up = (low > 0x1000) | ((low == 0x1000) & ((bits >> 13) & 1 == 1))
        rounded = ((bits & ~0x1FFF) + np.where(up, 0x2000, 0)).astype(np.uint32).view(np.float32)
        tie = low == 0x1000
    else:
        with np.errstate(over="ignore"):
            rounded = values.astype(NUMPY[compute] if compute in NUMPY else np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):  # half an ulp of |value|'s binade
            half = 2.0 ** (np.floor(np.log2(np.where(values == 0, 1.0, np.abs(values))))
                           - FORMATS[compute][0])
        tie = np.abs(rounded.astype(np.float64) - values) == half
    delta = np.where(np.isfinite(values), rounded.astype(np.float64) - values, 0.0)
    return delta, tie & (delta != 0)


class T:
    """A quantity: value [D', B, n], tangents [K + C, D', B, n] (units of u), ``inv`` or None."""

    __slots__ = ("d", "inv", "v")

    def __init__(self, v, d, inv=None):
        self.v, self.d, self.inv = v, d, inv

    def __getitem__(self, index):
        return T(self.v[index], self.d[index], None if self.inv is None else self.inv[index])


class Part:
    """A sum not yet rounded: its value, Σp², the count of its terms, its propagated tangents."""

    __slots__ = ("a", "d", "inv", "m", "sq")

    def __init__(self, a, sq, m, d, inv=None):
        self.a, self.sq, self.m, self.d, self.inv = a, sq, m, d, inv

    def __getitem__(self, index):
        m = self.m[index] if isinstance(self.m, np.ndarray) else self.m
        return Part(self.a[index], self.sq[index], m, self.d[index],
                    None if self.inv is None else self.inv[index])

    def __add__(self, other):
        return Part(self.a + other.a, self.sq + other.sq, self.m + other.m, self.d + other.d,
                    _or(self.inv, other.inv))


def _or(a, b):
    return a if b is None else b if a is None else a | b


class Tangents:
    """The tangent carrier for one walk: ``samples`` Gaussian tangents (seeded), and the
    deterministic channels where ``offsets`` (a kernel rounding its inputs to nearest)."""

    def __init__(self, ar: Arithmetic, choices: dict, samples: int, seed: int = 0, offsets: bool = False):
        self.ar, self.choices, self.K = ar, choices, samples
        self.rng = np.random.default_rng(seed)
        self.C = len(CHANNELS) if offsets else 0
        self.compute = ar.dtype
        u = ar.u
        self.acc, self.el = ar.u_acc / u, ROUNDING * ar.u_el / u   # per-operation scales, units of u
        self.input, self.gemm = ar.u_in / u, ar.u_gemm / u
        self._bias_draws: dict = {}

    def _noise(self, scale):
        """Fresh Gaussian noise times ``scale`` (broadcast over the samples), 0 on the channels."""
        scale = np.asarray(scale, dtype=np.float32)
        noise = self.rng.standard_normal((self.K, *scale.shape), dtype=np.float32) * scale
        if self.C:
            noise = np.concatenate([noise, np.zeros((self.C, *scale.shape), dtype=np.float32)])
        return noise

    def _channel(self, name, values):
        """``values`` (units of u) on the deterministic channel of input ``name``."""
        out = np.zeros((self.K + self.C, *values.shape), dtype=np.float32)
        if self.C:
            out[self.K + CHANNELS.index(name)] = values
        return out

    def _input(self, values, rate):
        """(the deterministic Δ/u of rounding an input tensor to nearest, the tie elements' |Δ|/u
        as a bounded random scale), 0 where the kernel does not round it (``rate`` 0)."""
        if not rate or not self.C:
            zero = np.zeros_like(values)
            return zero, zero
        delta, tie = rounding_error(values, self.compute)
        delta = delta / self.ar.u
        return np.where(tie, 0.0, delta), np.where(tie, np.abs(delta), 0.0)

    # -- set-up --------------------------------------------------------------------------------
    def functions(self, per_direction) -> list:
        return Running(self.ar, self.choices).functions(per_direction)

    def setup(self, problem, X, W, R, biases, h0, c0):
        self.clip_bound = problem.clip
        Wb, Rb = biases
        D = W.shape[0]
        self.xw = np.stack([X @ W[d].T for d in range(D)]) + Wb[:, None, None, :] + Rb[:, None, None, :]
        self.xsq = (np.stack([(X * X) @ (W[d] * W[d]).T for d in range(D)])
                    + (Wb * Wb)[:, None, None, :] + (Rb * Rb)[:, None, None, :])
        self.m_x = float(X.shape[-1] + np.count_nonzero(Wb) / max(Wb.size, 1)
                         + np.count_nonzero(Rb) / max(Rb.size, 1))
        operand = self.input + self.gemm  # X, W and R: rounded as inputs, or as TF32 operands
        dX, tX = self._input(X, operand)
        dW, tW = self._input(W, operand)
        # X and W rounded: the offsets of each, and the ties' and biases' random terms, per step
        self.oX = np.stack([dX @ W[d].T for d in range(D)])
        self.oW = np.stack([X @ dW[d].T for d in range(D)])
        rand_x = np.sqrt(np.stack([(tX * tX) @ (W[d] * W[d]).T + (X * X) @ (tW[d] * tW[d]).T
                                   for d in range(D)]))
        self.rand_x = rand_x if rand_x.any() else None
        bias_scale = ROUNDING * self.input * (np.abs(Wb) + np.abs(Rb))  # may be pre-summed: random
        self.bias_noise = (self.rng.standard_normal((self.K, D, 1, Wb.shape[-1]), dtype=np.float32)
                           * bias_scale[:, None, :].astype(np.float32)) if bias_scale.any() else None
        self.RT = R.transpose(0, 2, 1)
        self.R2T = self.RT * self.RT
        self.RT32 = self.RT.astype(np.float32)
        dR, tR = self._input(R, operand)
        self.dRT = dR.transpose(0, 2, 1)
        self.tR = (tR * tR).transpose(0, 2, 1) if tR.any() else None
        self.H = R.shape[-1]
        h = self._state("initial_h", h0)
        c = None if c0 is None else self._state("initial_c", c0)
        return h, c

    def _state(self, name, value):
        delta, ties = self._input(value, self.input)
        return T(value, self._channel(name, delta) + self._noise(ties))

    # -- sums ----------------------------------------------------------------------------------
    def x(self, index) -> Part:
        a, sq = self.xw[index], self.xsq[index]
        d = self._channel("X", self.oX[index]) + self._channel("W", self.oW[index])
        if self.rand_x is not None:
            d = d + self._noise(self.rand_x[index])
        if self.bias_noise is not None:
            noise = np.broadcast_to(self.bias_noise, (self.K, *a.shape))
            d[:self.K] += noise
        return Part(a, sq, self.m_x, d)

    def rec(self, rows, h: T) -> Part:
        """h·Rᵀ over ``rows``: h's tangents through R (and, a TF32 kernel, h rounded as an
        operand), R's rounding on its channel."""
        RT = self.RT[..., rows]
        d = h.d
        if self.gemm:
            d = d + self._noise(ROUNDING * self.gemm * np.abs(h.v))
        out = np.matmul(d, self.RT32[..., rows])
        if self.C:
            out[self.K + CHANNELS.index("R")] += (h.v @ self.dRT[..., rows]).astype(np.float32)
        if self.tR is not None:
            out = out + self._noise(np.sqrt((h.v * h.v) @ self.tR[..., rows]))
        inv = None if h.inv is None else np.broadcast_to(h.inv.any(axis=-1, keepdims=True),
                                                         h.inv.shape[:-1] + (RT.shape[-1],))
        return Part(h.v @ RT, (h.v * h.v) @ self.R2T[..., rows], float(self.H), out, inv)

    def bias(self, b) -> Part:
        key = id(b)
        if key not in self._bias_draws:
            scale = ROUNDING * self.input * np.abs(b)
            self._bias_draws[key] = (self.rng.standard_normal((self.K, *b.shape), dtype=np.float32)
                                     * scale.astype(np.float32))
        noise = self._bias_draws[key]
        d = np.zeros((self.K + self.C, *b.shape), dtype=np.float32)
        d[:self.K] = noise
        return Part(b, b * b, (b != 0).astype(np.float64), d)

    def peephole(self, coef, c: T, rows=None) -> Part:
        p = coef * c.v
        d = coef.astype(np.float32) * c.d
        delta, ties = self._input(coef, self.input)
        d = d + self._channel("P", delta * c.v) + self._noise(np.abs(ties * c.v))
        return Part(p, p * p, (coef != 0).astype(np.float64), d, c.inv)

    def repeat(self, q: T, n: int) -> T:
        return T(np.concatenate([q.v] * n, axis=-1), np.concatenate([q.d] * n, axis=-1),
                 None if q.inv is None else np.concatenate([q.inv] * n, axis=-1))

    def value(self, part: Part) -> T:
        a = part.a
        scale = dot_scale(part.sq, a, part.m) * self.acc
        if self.ar.store:
            scale = np.sqrt(scale * scale + (self.el * np.abs(a)) ** 2)
        return T(a, part.d + self._noise(scale + self._flushed(a)), part.inv)

    # -- elementwise ---------------------------------------------------------------------------
    def _flushed(self, v):
        return flush(self.ar, v, 0.0) / self.ar.u if self.ar.flush else 0.0

    def _kinked(self, inv, kink, d):
        """``inv`` with the elements whose kink lies within KINK_SIGMAS scales of their tangents."""
        if not np.isfinite(kink).any():
            return inv
        spread = np.sqrt(np.mean(np.square(d[:self.K], dtype=np.float64), axis=0))
        if self.C:
            spread = spread + np.abs(d[self.K:]).sum(axis=0)
        near = kink <= KINK_SIGMAS * spread * self.ar.u
        return near if inv is None else inv | near

    def act(self, fn, q: T) -> T:
        f, slope, own, rounded, kink = fn.tangent(q.v)
        u = self.ar.u
        scale = np.sqrt((own / u) ** 2 + (ROUNDING * rounded / u) ** 2)
        d = slope.astype(np.float32) * q.d + self._noise(scale)
        return T(f, d, self._kinked(q.inv, kink, q.d))

    def clip(self, q: T) -> T:
        c = self.clip_bound
        if c is None:
            return q
        inside = np.abs(q.v) < c
        return T(np.clip(q.v, -c, c), np.where(inside, q.d, 0.0).astype(np.float32),
                 self._kinked(q.inv, np.abs(np.abs(q.v) - c), q.d))

    def mul(self, x: T, y: T) -> T:
        v = x.v * y.v
        d = x.d * y.v.astype(np.float32) + x.v.astype(np.float32) * y.d
        return T(v, d + self._noise(self.el * np.abs(v) + self._flushed(v)), _or(x.inv, y.inv))

    def add(self, x: T, y: T, exact: bool = False) -> T:
        v = x.v + y.v
        return T(v, x.d + y.d + self._noise(self.el * np.abs(v) + self._flushed(v)), _or(x.inv, y.inv))

    def one_minus(self, x: T) -> T:
        v = 1.0 - x.v
        return T(v, -x.d + self._noise(self.el * np.abs(v) + self._flushed(v)), x.inv)

    def gru_update(self, z: T, hh: T, h: T) -> T:
        one_z = 1.0 - z.v
        new = one_z * hh.v + z.v * h.v
        # each rounding a term of its own: (1 − z)⊙h̃ + z⊙H rounds 1 − z (times h̃), both
        # products and the sum; h̃ + z⊙(H − h̃) rounds H − h̃ (times z), the product and the sum:
        # the larger of the two norms
        spec = 2.0 * (one_z * hh.v) ** 2 + (z.v * h.v) ** 2
        lerp = 2.0 * (z.v * (h.v - hh.v)) ** 2
        upd = self.el * np.sqrt(np.maximum(spec, lerp) + new * new)
        d = ((h.v - hh.v).astype(np.float32) * z.d + (1.0 - z.v).astype(np.float32) * hh.d
             + z.v.astype(np.float32) * h.d + self._noise(upd + self._flushed(new)))
        return T(new, d, _or(_or(z.inv, hh.inv), h.inv))

    # -- states and outputs -----------------------------------------------------------------------
    def where(self, keep, new: T, old: T) -> T:
        inv = None if new.inv is None and old.inv is None else np.where(
            keep, new.inv if new.inv is not None else False, old.inv if old.inv is not None else False)
        return T(np.where(keep, new.v, old.v), np.where(keep, new.d, old.d), inv)

    FIELDS = {"value": math.nan, "sigma": 0.0, "offset": 0.0}

    def fields(self, q: T) -> dict:
        sigma = np.sqrt(np.mean(np.square(q.d[:self.K], dtype=np.float64), axis=0))
        if q.inv is not None:
            sigma = np.where(q.inv, np.inf, sigma)
        offset = 0.0 * sigma
        if self.C:
            o = q.d[self.K:].astype(np.float64)
            offset = np.maximum(np.maximum(o, 0.0).sum(axis=0), np.maximum(-o, 0.0).sum(axis=0))
        return {"value": q.v, "sigma": sigma, "offset": offset}
