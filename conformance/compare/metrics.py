"""Error metrics of a runtime output against the oracle: absolute, relative, ULP in the output dtype."""

from __future__ import annotations

import numpy as np

from conformance.case.tensors import finfo, numpy_dtype  # noqa: F401 - finfo is this module's too


def ulp_of(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of `dtype` at each value (the ULP of the exact value, subnormals included)."""
    info = finfo(dtype)
    nmant, minexp = int(info.nmant), int(info.minexp)
    mag = np.abs(values.astype(np.float64))
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    exp = np.where(mag > 0, np.maximum(exp, minexp), minexp)
    return np.ldexp(1.0, (exp - nmant).astype(np.int64))


def errors(got: np.ndarray, hi: np.ndarray, lo: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    """Element-wise abs, rel and ULP errors. The exact value is hi + lo (double-double). Where the
    exact value is an infinity or NaN (IEEE 754 propagation of non-finite inputs), only the same
    value is right: the error is 0 there, else infinite."""
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs((g - hi) - lo)
        same = (np.isnan(g) & np.isnan(hi)) | (np.isinf(hi) & (g == hi))
        diff = np.where(same, 0.0, np.where(~np.isfinite(hi), np.inf, diff))
        diff = np.where(np.isnan(g) & ~np.isnan(hi), np.inf, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(hi != 0, diff / np.abs(hi), np.where(diff == 0, 0.0, np.inf))
        ulp = diff / ulp_of(hi, dtype)
    return {"abs": diff, "rel": rel, "ulp": ulp}
