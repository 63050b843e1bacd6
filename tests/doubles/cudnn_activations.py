"""The activations of the cuDNN-like test doubles (tests/doubles/torch_kernels.py ``CudnnLike`` and
``CudnnLikeTf32``), named as such: tanh and sigmoid with errors like those measured on cuDNN's float32
RNN kernels (an NVIDIA H200, torch 2.11.0+cu130, cuDNN 9.19.0; over 8192 points in [-4, 4]: tanh up to
125 float32 ulps off, median 13, 6656 points beyond 2 ulps; sigmoid within about 4 ulps, median 0.46),
as a deterministic function of the input's float32 bits (:func:`ulp_error`): the exact value is moved by
that many ulps of itself and rounded to float32 (:func:`cudnn_like`). Also the doubles' correct float32
sigmoid (:func:`sigmoid32`)."""

from __future__ import annotations

import math

import numpy as np

#: the error's magnitude in float32 ulps of the exact value, as a quantile function of a uniform draw
#: (the points it interpolates): tanh 18.75 % within 2 ulps, median 13, at most 120 (125 once rounded to
#: float32), log-linear between; sigmoid median 0.32, 90 % within 1, at most 3.5 (about 4 once rounded)
TANH_QUANTILES = ((0.0, 0.0), (0.1875, 2.0),
                  *((q, math.exp(float(np.interp(q, (0.1875, 0.5, 1.0), (math.log(2), math.log(13), math.log(120))))))
                    for q in np.linspace(0.2, 1.0, 41)))
SIGMOID_QUANTILES = ((0.0, 0.0), (0.5, 0.32), (0.9, 1.0), (0.99, 2.5), (1.0, 3.5))
_SALT = {"tanh": 0x7A3C11E5, "sigmoid": 0x1B873593}


def _hash(bits: np.ndarray, salt: int) -> np.ndarray:
    """A 32-bit integer hash (lowbias32) of ``bits ^ salt``: the draw that makes an error deterministic."""
    x = np.asarray(bits, dtype=np.uint32) ^ np.uint32(salt)
    with np.errstate(over="ignore"):  # the products wrap modulo 2^32, as the hash means them to
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def ulp_error(x, function: str) -> np.ndarray:
    """The signed error, in float32 ulps of the exact value, of the cuDNN-like ``function`` ("tanh" or
    "sigmoid") at the float32 ``x``: a function of x's bits alone, distributed as measured."""
    h = _hash(np.asarray(x, dtype=np.float32).view(np.uint32), _SALT[function])
    u = (h >> np.uint32(8)).astype(np.float64) / 2.0 ** 24
    q, v = zip(*(TANH_QUANTILES if function == "tanh" else SIGMOID_QUANTILES))
    return np.where(h & np.uint32(1), 1.0, -1.0) * np.interp(u, q, v)


def _exact(x: np.ndarray, function: str) -> np.ndarray:
    """tanh or sigmoid of float32 ``x`` in float64: the exact value the error is measured from."""
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    if function == "tanh":
        return np.tanh(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def cudnn_like(x, function: str) -> np.ndarray:
    """tanh or sigmoid with cuDNN-like errors: the exact value moved by :func:`ulp_error` float32 ulps
    of itself, kept within the function's range, then rounded to float32 (a non-finite x exactly)."""
    exact = _exact(x, function)
    with np.errstate(invalid="ignore"):
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        moved = exact + ulp_error(x, function) * ulp
    low = -1.0 if function == "tanh" else 0.0
    finite = np.isfinite(np.asarray(x, dtype=np.float32))  # NaN stays NaN, ±inf gives the limit exactly
    return np.where(finite, np.clip(moved, low, 1.0), exact).astype(np.float32)


def sigmoid32(x: np.ndarray) -> np.ndarray:
    """sigmoid in the type of ``x`` (float32 or float64), without overflow: within a few ulps."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))
