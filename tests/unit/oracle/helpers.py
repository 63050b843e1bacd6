"""Helpers shared by the oracle's tests."""

from __future__ import annotations

import numpy as np

import oracles


def tensors(**arrays):
    """Nested lists -> float64 arrays (sequence_lens -> int32); None stays absent."""
    out = {}
    for name, value in arrays.items():
        if value is None:
            continue
        dtype = np.int32 if name == "sequence_lens" else np.float64
        out[name] = np.asarray(value, dtype=dtype)
    return out


def evaluate(op, attributes, profile="onnx", **arrays):
    return oracles.evaluate(op, attributes, tensors(**arrays), profile=profile, cache=False)


def single(result):
    """The outputs of a result that must have exactly one reading, as {name: hi array}."""
    assert [r.name for r in result.readings] == ["default"], [r.name for r in result.readings]
    return {name: e.hi for name, e in result.readings[0].outputs.items()}
