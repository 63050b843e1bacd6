"""Input tensors: generated from a seed and the tensor's name, or given literally.

Every generated value is drawn in float64 and rounded once to the case dtype, so the case holds
exactly representable values and the oracle reads their exact binary value.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np

NUMPY_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "float64": np.dtype(np.float64),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}

DEFAULT_DISTRIBUTION = {"uniform": [-1.0, 1.0]}


def numpy_dtype(name: str) -> np.dtype:
    return NUMPY_DTYPES[name]


def rng_for(seed: int, name: str) -> np.random.Generator:
    """The generator of one tensor: depends on the case seed and the tensor's name only."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def draw(distribution: dict, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    (kind, params), = distribution.items()
    if kind == "uniform":
        return rng.uniform(params[0], params[1], size=shape)
    if kind == "normal":
        return rng.normal(params[0], params[1], size=shape)
    if kind == "choice":
        return rng.choice(np.asarray(params, dtype=np.float64), size=shape)
    raise ValueError(f"unknown distribution {kind!r}")


def make_float(spec, name: str, shape: tuple, dtype: str, seed: int, distribution: dict) -> np.ndarray | None:
    """Build a float input from its spec (already validated); None means absent."""
    dt = numpy_dtype(dtype)
    if spec == "absent":
        return None
    if isinstance(spec, dict):
        shape = tuple(spec.get("shape", shape))
        distribution = spec.get("distribution", distribution)
        spec = spec.get("fill", "random")
    if spec == "random":
        return draw(distribution, shape, rng_for(seed, name)).astype(dt)
    if spec == "zeros":
        return np.zeros(shape, dtype=dt)
    if isinstance(spec, (int, float)):
        return np.full(shape, spec, dtype=np.float64).astype(dt)
    return np.asarray(spec, dtype=np.float64).astype(dt)


def make_lengths(spec, batch_size: int, seq_length: int, seed: int) -> np.ndarray | None:
    """sequence_lens: int32 [B]; `full` is every sequence at seq_length."""
    if spec == "absent":
        return None
    if spec == "full":
        return np.full((batch_size,), seq_length, dtype=np.int32)
    if spec == "random":
        return rng_for(seed, "sequence_lens").integers(0, seq_length + 1, size=batch_size).astype(np.int32)
    if isinstance(spec, dict):
        shape = tuple(spec.get("shape", (batch_size,)))
        fill = spec.get("fill", "random")
        if fill == "random":
            return rng_for(seed, "sequence_lens").integers(0, seq_length + 1, size=shape).astype(np.int32)
        return np.full(shape, 0 if fill == "zeros" else fill, dtype=np.int32)
    return np.asarray(spec, dtype=np.int64).astype(np.int32)
