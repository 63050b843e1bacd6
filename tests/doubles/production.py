"""Deliberate test doubles for the production tier's tolerance, named as such: float32 variants of
the numpy implementation (tests/doubles/wrong/numpy_rnn.py) that a sharp tolerance must accept, and two
that it must reject (docs/production.md, "What the tolerance catches").

Legitimate float32 variants (each a correct implementation; only the order or the kernel differs):

- :class:`ReversedSum`: every dot product summed term by term in float32, last term first;
- :class:`PairwiseSum`: every dot product summed pairwise (a balanced tree) in float32;
- :class:`FourLaneSum`: every dot product in 4 float32 accumulators (term k into lane k mod 4, as a
  4-wide SIMD loop does), the lanes added at the end;
- :class:`FusedMultiplyAdd`: every dot product summed term by term with a fused multiply-add (the
  exact product added to the float32 accumulator, one rounding per term);
- :class:`RationalTanh`: tanh by Eigen's float32 rational approximation (x·P(x²)/Q(x²), degree
  13/6, clamped at ±7.9053, Horner with fused multiply-adds), within a few ulp of tanh (measured
  here over [-9, 9]: at most 4.4 ulp);
- :class:`FlushToZero`: every float32 result below the smallest normal in magnitude flushed to 0
  (FTZ/DAZ).

Deliberately wrong (must fail):

- :class:`TanhOff3e6`: tanh off by a relative 3e-6 (about 50 ulp);
- :class:`HiddenDrift1e6`: the hidden state scaled by (1 + 1e-6) at every step.
"""

from __future__ import annotations

import numpy as np

from tests.doubles.wrong.numpy_rnn import NumpyRNN

F32 = np.float32


class _Variant(NumpyRNN):
    version = "test-double"
    device = "CPU"

    @property
    def description(self) -> str:
        return f"test double: {self.__doc__.splitlines()[0]}"


def _products(a, w):
    """[B, N, K] float32 products a[b, k]·w[n, k], each rounded to float32."""
    return (a[:, None, :].astype(F32) * w[None, :, :].astype(F32)).astype(F32)


class ReversedSum(_Variant):
    """Legitimate: dot products summed last term first, in float32."""

    name = "reversed-sum-double"

    def matmul(self, a, w):
        if a.dtype != F32:
            return super().matmul(a, w)
        p = _products(a, w)
        acc = np.zeros(p.shape[:2], F32)
        for k in range(p.shape[2] - 1, -1, -1):
            acc = acc + p[:, :, k]
        return acc


class PairwiseSum(_Variant):
    """Legitimate: dot products summed pairwise (a balanced tree), in float32."""

    name = "pairwise-sum-double"

    def matmul(self, a, w):
        if a.dtype != F32:
            return super().matmul(a, w)
        p = _products(a, w)
        while p.shape[2] > 1:
            if p.shape[2] % 2:
                p = np.concatenate([p, np.zeros(p.shape[:2] + (1,), F32)], axis=2)
            p = (p[:, :, 0::2] + p[:, :, 1::2]).astype(F32)
        return p[:, :, 0]


class FourLaneSum(_Variant):
    """Legitimate: dot products in 4 float32 lanes (term k into lane k mod 4), lanes added last."""

    name = "four-lane-sum-double"

    def matmul(self, a, w):
        if a.dtype != F32:
            return super().matmul(a, w)
        p = _products(a, w)
        lanes = np.zeros(p.shape[:2] + (4,), F32)
        for k in range(p.shape[2]):
            lanes[:, :, k % 4] = lanes[:, :, k % 4] + p[:, :, k]
        return ((lanes[:, :, 0] + lanes[:, :, 1]) + (lanes[:, :, 2] + lanes[:, :, 3])).astype(F32)


class FusedMultiplyAdd(_Variant):
    """Legitimate: dot products term by term with a fused multiply-add (one rounding per term)."""

    name = "fma-double"

    def matmul(self, a, w):
        if a.dtype != F32:
            return super().matmul(a, w)
        a64, w64 = a.astype(np.float64), w.astype(np.float64)
        acc = np.zeros((a.shape[0], w.shape[0]), F32)
        for k in range(a.shape[1]):
            # a float32 product is exact in float64; the sum rounded once to float32 (the float64
            # addition's own rounding is 2^-29 of that, below a float32 tie in all but rare cases)
            acc = (acc.astype(np.float64) + a64[:, None, k] * w64[None, :, k]).astype(F32)
        return acc


#: Eigen's generic_fast_tanh_float (Eigen/src/Core/arch/Default/GenericPacketMathFunctions.h)
_ALPHA = (4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
          -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16)
_BETA = (4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06)
_CLAMP = 7.90531110763549805


def rational_tanh(x: np.ndarray) -> np.ndarray:
    """Eigen's float32 tanh: x·P(x²)/Q(x²) on |x| <= 7.9053, x itself below 4e-4, in float32."""
    t = x.dtype.type
    xc = np.clip(x, t(-_CLAMP), t(_CLAMP))
    x2 = (xc * xc).astype(np.float64)

    def fma(a, b, c):  # a·b + c rounded once to float32, as Eigen's pmadd (exact in float64 here)
        return (a.astype(np.float64) * b + np.float64(t(c))).astype(t)

    p = np.full(x.shape, t(_ALPHA[6]))
    for c in _ALPHA[5::-1]:
        p = fma(p, x2, c)
    q = np.full(x.shape, t(_BETA[3]))
    for c in _BETA[2::-1]:
        q = fma(q, x2, c)
    return np.where(np.abs(x) < t(0.0004), x, (xc * p) / q).astype(x.dtype)


class RationalTanh(_Variant):
    """Legitimate: tanh by Eigen's float32 rational approximation (a few ulp)."""

    name = "rational-tanh-double"

    def tanh(self, x):
        return rational_tanh(x) if x.dtype == F32 else super().tanh(x)


class FlushToZero(_Variant):
    """Legitimate: float32 results below the smallest normal flushed to zero (FTZ/DAZ)."""

    name = "flush-to-zero-double"

    @staticmethod
    def _flush(x):
        if x.dtype != F32:
            return x
        return np.where(np.abs(x) < np.finfo(F32).tiny, F32(0), x).astype(F32)

    def matmul(self, a, w):
        return self._flush(super().matmul(self._flush(a), self._flush(w)))

    def activation(self, name, alpha, beta, x):
        return self._flush(super().activation(name, alpha, beta, self._flush(x)))


class TanhOff3e6(_Variant):
    """Wrong: tanh off by a relative 3e-6 (about 50 ulp)."""

    name = "tanh-off-3e-6-double"

    def tanh(self, x):
        return (super().tanh(x) * x.dtype.type(1 + 3e-6)).astype(x.dtype)


class HiddenDrift1e6(_Variant):
    """Wrong: the hidden state scaled by (1 + 1e-6) at every step."""

    name = "hidden-drift-1e-6-double"

    def cell(self, p, d, x, h, c, w, r, wb, rb):
        h_new, c_new = super().cell(p, d, x, h, c, w, r, wb, rb)
        return (h_new * h_new.dtype.type(1 + 1e-6)).astype(h_new.dtype), c_new


LEGITIMATE = (ReversedSum, PairwiseSum, FourLaneSum, FusedMultiplyAdd, RationalTanh, FlushToZero)
WRONG = (TanhOff3e6, HiddenDrift1e6)
