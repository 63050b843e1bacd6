"""Input tensors: generated from a seed and the tensor's name, or given literally.

Every generated value is drawn in float64 and rounded once to the case dtype, so the case holds
exactly representable values and the oracle reads their exact binary value.

Building is in two steps: :func:`plan_float` / :func:`plan_lengths` read a tensor's spec and say
what would be built (shape, dtype, how it is filled) without allocating it, checking everything
that could fail; :func:`materialize` builds it. The loader checks the plans against the size limits
before building anything, and ``conformance list`` never builds at all.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

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


def finfo(dtype: str):
    """numpy's (or ml_dtypes' for bfloat16) floating-point facts of a case dtype."""
    dt = numpy_dtype(dtype)
    return ml_dtypes.finfo(dt) if dtype == "bfloat16" else np.finfo(dt)


def rng_for(seed: int, name: str) -> np.random.Generator:
    """The generator of one tensor: depends on the case seed and the tensor's name only."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def distribution_problem(distribution) -> str:
    """Why a distribution cannot be drawn from ("" when it can): bounds must be finite numbers,
    low <= high, a standard deviation >= 0, choices finite."""
    if not isinstance(distribution, dict) or len(distribution) != 1:
        return "a distribution is one of {uniform: [low, high]}, {normal: [mean, std]}, {choice: [values]}"
    (kind, params), = distribution.items()
    if kind not in ("uniform", "normal", "choice"):
        return "a distribution is uniform, normal or choice"
    if (not isinstance(params, list) or not params
            or not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in params)):
        return f"{kind} takes a list of numbers"
    if not all(math.isfinite(p) for p in params):
        return f"{kind} needs finite numbers, got {', '.join(map(str, params[:4]))}{', ...' if len(params) > 4 else ''}"
    if kind == "uniform" and len(params) == 2:
        low, high = params
        if low > high:
            return f"uniform [low, high] needs low <= high, got [{low}, {high}]"
        if not math.isfinite(float(high) - float(low)):
            return f"uniform [{low}, {high}]: high - low is not a finite float64"
    if kind == "normal" and len(params) == 2 and params[1] < 0:
        return f"normal [mean, std] needs std >= 0, got {params[1]}"
    if kind in ("uniform", "normal") and len(params) != 2:
        return f"{kind} takes two numbers"
    return ""


def draw(distribution: dict, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    (kind, params), = distribution.items()
    if kind == "uniform":
        return rng.uniform(params[0], params[1], size=shape)
    if kind == "normal":
        return rng.normal(params[0], params[1], size=shape)
    if kind == "choice":
        return rng.choice(np.asarray(params, dtype=np.float64), size=shape)
    raise ValueError(f"unknown distribution {kind!r}")


@dataclass(frozen=True)
class TensorPlan:
    """What :func:`materialize` will build: nothing is allocated until then (a literal tensor,
    already in memory as the file's lists, is held converted)."""

    name: str
    shape: tuple
    dtype: np.dtype
    fill: str                   # random | zeros | value | literal | lengths-full | lengths-random
    value: object = None        # the scalar of `value`, the array of `literal`
    distribution: dict | None = None
    seed: int = 0
    high: int = 0               # lengths-random: drawn in [0, high]
    explicit_shape: bool = False  # the spec gave {shape: ...}

    @property
    def size(self) -> int:
        return math.prod(int(d) for d in self.shape)


def _shape(shape) -> tuple:
    out = tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in out):
        raise ValueError(f"a shape is a list of integers >= 0, got {list(out)[:8]}")
    return tuple(int(d) for d in out)


def plan_float(spec, name: str, shape: tuple, dtype: str, seed: int, distribution: dict) -> TensorPlan | None:
    """The plan of a float input from its spec (already validated); None means absent."""
    dt = numpy_dtype(dtype)
    if spec == "absent":
        return None
    explicit = False
    if isinstance(spec, dict):
        explicit = "shape" in spec
        shape = spec.get("shape", shape)
        distribution = spec.get("distribution", distribution)
        spec = spec.get("fill", "random")
    shape = _shape(shape)
    if spec == "random":
        problem = distribution_problem(distribution)
        if problem:
            raise ValueError(problem)
        return TensorPlan(name, shape, dt, "random", distribution=distribution, seed=int(seed),
                          explicit_shape=explicit)
    if spec == "zeros":
        return TensorPlan(name, shape, dt, "zeros", explicit_shape=explicit)
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        np.full((), spec, dtype=np.float64).astype(dt)  # fails here, not when built
        return TensorPlan(name, shape, dt, "value", value=spec, explicit_shape=explicit)
    arr = np.asarray(spec, dtype=np.float64).astype(dt)
    return TensorPlan(name, tuple(arr.shape), dt, "literal", value=arr)


def plan_lengths(spec, batch_size: int, seq_length: int, seed: int) -> TensorPlan | None:
    """The plan of sequence_lens (int32 [B]); `full` is every sequence at seq_length."""
    i32 = np.dtype(np.int32)
    if spec == "absent":
        return None
    if spec == "full":
        np.full((), seq_length, dtype=np.int32)
        return TensorPlan("sequence_lens", _shape((batch_size,)), i32, "value", value=seq_length)
    if spec == "random":
        return TensorPlan("sequence_lens", _shape((batch_size,)), i32, "lengths-random", seed=int(seed),
                          high=seq_length)
    if isinstance(spec, dict):
        shape = _shape(spec.get("shape", (batch_size,)))
        fill = spec.get("fill", "random")
        if fill == "random":
            return TensorPlan("sequence_lens", shape, i32, "lengths-random", seed=int(seed), high=seq_length,
                              explicit_shape="shape" in spec)
        value = 0 if fill == "zeros" else fill
        np.full((), value, dtype=np.int32)  # fails here (out of int32), not when built
        return TensorPlan("sequence_lens", shape, i32, "value", value=value, explicit_shape="shape" in spec)
    arr = np.asarray(spec, dtype=np.int64).astype(np.int32)
    return TensorPlan("sequence_lens", tuple(arr.shape), i32, "literal", value=arr)


def materialize(plan: TensorPlan) -> np.ndarray:
    """Build the tensor a plan describes."""
    if plan.fill == "literal":
        assert isinstance(plan.value, np.ndarray)  # a literal plan holds its converted array
        return plan.value
    if plan.fill == "lengths-random":
        return rng_for(plan.seed, "sequence_lens").integers(0, plan.high + 1, size=plan.shape).astype(np.int32)
    if plan.dtype == np.int32:
        return np.full(plan.shape, plan.value, dtype=np.int32)
    if plan.fill == "random":
        assert plan.distribution is not None  # a random plan names its distribution
        return draw(plan.distribution, plan.shape, rng_for(plan.seed, plan.name)).astype(plan.dtype)
    if plan.fill == "zeros":
        return np.zeros(plan.shape, dtype=plan.dtype)
    return np.full(plan.shape, plan.value, dtype=np.float64).astype(plan.dtype)


def make_float(spec, name: str, shape: tuple, dtype: str, seed: int, distribution: dict) -> np.ndarray | None:
    """Build a float input from its spec (already validated); None means absent."""
    plan = plan_float(spec, name, shape, dtype, seed, distribution)
    return None if plan is None else materialize(plan)


def make_lengths(spec, batch_size: int, seq_length: int, seed: int) -> np.ndarray | None:
    """sequence_lens: int32 [B]; `full` is every sequence at seq_length."""
    plan = plan_lengths(spec, batch_size, seq_length, seed)
    return None if plan is None else materialize(plan)
