"""Input values that stress an implementation, each exactly representable in the case dtype.

A tensor's values come from a *style* (how they are spread) and a seed, plus a few *overrides*:
single elements set to a special value (a clip bound and its neighbours, an activation threshold,
a subnormal, a signed zero, 1 ± an ulp). Values are drawn in float64 and rounded once to the
dtype; negating or copying a rounded value afterwards is exact.

Styles, simplest first (the shrinker moves toward the first):

- ``grid``: non-zero multiples of 1/8 in [-1, 1] (readable, exact in every dtype, and never a
  zero that hides a term: zeros have their own style);
- ``uniform``: uniform in [-1, 1];
- ``wide``: magnitudes spread log-uniformly over 1e-3 … 10, random signs;
- ``large``: magnitudes 10 … 1000 (64 for float16), which saturate sigmoid and tanh;
- ``tiny``: subnormals and the smallest normals of the dtype (flush-to-zero bugs);
- ``special``: every element one of :func:`specials`;
- ``zeros``: exact zeros;
- ``cancel``: pairs that cancel exactly in a dot product: X and initial_h repeat each value twice
  along their last axis, W and R negate every second column, and B's Rb is -Wb with large
  magnitudes, so Xt·Wᵀ, Ht-1·Rᵀ and Wb + Rb are 0 in exact arithmetic and only rounding is left.

:func:`overflow_free` bounds every intermediate value of a case from above, so the fuzzer never
asks a dtype for a number it cannot hold (that would be a finding about the dtype, not the
implementation).
"""

from __future__ import annotations

import math

import numpy as np

from conformance.case.tensors import numpy_dtype
from conformance.case.vocabulary import DEFAULT_ACTIVATIONS, GATES, num_directions
from conformance.compare.metrics import finfo

STYLES = ("grid", "uniform", "wide", "large", "tiny", "special", "zeros", "cancel")

#: the largest magnitude the ``large`` style draws, per dtype (float16 holds 65504; a product of two
#: such values summed over I + H <= 12 terms must stay well below it)
LARGE = {"float16": 64.0, "bfloat16": 1000.0, "float32": 1000.0, "float64": 1000.0}

#: HardSigmoid's and ThresholdedRelu's operator defaults (ONNX), for the thresholds among the specials
_HARD_SIGMOID_DEFAULT = (0.2, 0.5)
_THRESHOLDED_RELU_DEFAULT = 1.0

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}




def round_to(values, dtype: str) -> np.ndarray:
    """Round float64 values once to the dtype; returned as float64 holding exactly those values."""
    with np.errstate(over="ignore"):      # beyond the dtype's range is inf, which callers drop
        return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def neighbour(x: float, dtype: str, up: bool) -> float:
    """The next representable value of the dtype after ``x`` (a value of the dtype), up or down."""
    dt = numpy_dtype(dtype)
    v = np.asarray([x], dtype=np.float64).astype(dt)
    if not np.isfinite(v[0]):
        return float(v[0])
    bits = v.view(_UINT[dt.itemsize]).copy()
    if float(v[0]) == 0.0:
        out = np.asarray([finfo(dtype).smallest_subnormal], dtype=np.float64).astype(dt)
        return float(out[0]) * (1.0 if up else -1.0)
    away = (float(v[0]) > 0) == up           # moving away from zero adds one to the bit pattern
    bits = bits + 1 if away else bits - 1
    return float(bits.astype(bits.dtype).view(dt)[0])


def specials(dtype: str, attributes: dict) -> tuple[float, ...]:
    """Values near the places where implementations go wrong, all exact in ``dtype``: signed zeros,
    ±1 and its neighbours, the subnormal range's ends, saturating magnitudes, and the case's own
    thresholds (±clip and neighbours, ThresholdedRelu's alpha, HardSigmoid's breakpoints)."""
    fi = finfo(dtype)
    tiny, sub = float(fi.smallest_normal), float(fi.smallest_subnormal)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 4.0, -4.0, 1.0 / 3.0,
              sub, -sub, tiny - sub, tiny, -tiny, neighbour(1.0, dtype, False), neighbour(1.0, dtype, True),
              20.0, -20.0, 40.0, -40.0]
    clip = attributes.get("clip")
    if clip is not None:
        c = float(round_to([clip], dtype)[0])
        values += [c, -c, neighbour(c, dtype, True), neighbour(c, dtype, False), -neighbour(c, dtype, True)]
    names = attributes.get("activations") or ()
    alphas = list(attributes.get("activation_alpha") or ())
    betas = list(attributes.get("activation_beta") or ())
    if "ThresholdedRelu" in names:
        for a in alphas[:2] + [_THRESHOLDED_RELU_DEFAULT]:
            a = float(round_to([a], dtype)[0])
            values += [a, neighbour(a, dtype, True), neighbour(a, dtype, False)]
    if "HardSigmoid" in names:
        pairs = [_HARD_SIGMOID_DEFAULT] + list(zip(alphas[:2], betas[:2]))
        for a, b in pairs:
            if a:
                values += [-b / a, (1.0 - b) / a]
    out, seen = [], set()
    for v in round_to(values, dtype):
        key = (float(v), math.copysign(1.0, float(v)))
        if np.isfinite(v) and key not in seen:
            seen.add(key)
            out.append(float(v))
    return tuple(out)


def style_values(style: str, shape: tuple, dtype: str, seed: int, role: str,
                 special: tuple[float, ...]) -> np.ndarray:
    """float64 values of one tensor, exactly representable in ``dtype``."""
    rng = np.random.default_rng(int(seed))
    n = int(np.prod(shape)) if shape else 1
    sign = lambda: rng.choice([-1.0, 1.0], size=n)  # noqa: E731
    if style == "grid":
        v = sign() * rng.integers(1, 9, size=n) / 8.0
    elif style == "uniform":
        v = rng.uniform(-1.0, 1.0, size=n)
    elif style == "wide":
        v = sign() * 10.0 ** rng.uniform(-3.0, 1.0, size=n)
    elif style == "large":
        v = sign() * 10.0 ** rng.uniform(1.0, math.log10(LARGE[dtype]), size=n)
    elif style == "tiny":
        v = sign() * rng.uniform(0.0, 2.0, size=n) * float(finfo(dtype).smallest_normal)
    elif style == "special":
        v = rng.choice(np.asarray(special, dtype=np.float64), size=n)
    elif style == "zeros":
        v = np.zeros(n)
    elif style == "cancel":
        v = rng.uniform(-1.0, 1.0, size=n)
    else:
        raise ValueError(f"unknown value style {style!r}; one of {', '.join(STYLES)}")
    v = round_to(v, dtype).reshape(shape)
    if style == "cancel":
        v = _cancel(v, role, dtype, rng)
    return v


def _cancel(v: np.ndarray, role: str, dtype: str, rng) -> np.ndarray:
    v = v.copy()
    if v.ndim == 0 or v.shape[-1] < 2 and role != "B":
        return v
    pairs = v.shape[-1] // 2 * 2
    if role in ("X", "initial_h"):       # x0 x0 x1 x1 ...
        v[..., 1:pairs:2] = v[..., 0:pairs:2]
    elif role in ("W", "R"):             # w0 -w0 w1 -w1 ...
        v[..., 1:pairs:2] = -v[..., 0:pairs:2]
    elif role == "B":                    # [Wb, -Wb], large
        half = v.shape[-1] // 2
        big = round_to(np.sign(v[..., :half]) * 10.0 ** rng.uniform(1.0, math.log10(LARGE[dtype]),
                                                                     size=v[..., :half].shape), dtype)
        v[..., :half], v[..., half:] = big, -big
    return v


def apply_overrides(v: np.ndarray, overrides, special: tuple[float, ...]) -> np.ndarray:
    """Set single elements (flat index, index into ``special``) to special values."""
    if not overrides:
        return v
    flat = v.reshape(-1).copy()
    for index, which in overrides:
        flat[int(index) % flat.size] = special[int(which) % len(special)]
    return flat.reshape(v.shape)


# -- overflow ------------------------------------------------------------------------------------

_BOUNDED = {"Sigmoid": 1.0, "Tanh": 1.0, "Softsign": 1.0, "HardSigmoid": 1.0}


def _act_bound(name: str, z: float, a: float, b: float) -> float:
    """An upper bound of |name(x)| for |x| <= z, given |alpha| <= a and |beta| <= b."""
    if name in _BOUNDED:
        return _BOUNDED[name]
    if name == "ScaledTanh":
        return a
    if name == "Affine":
        return a * z + b
    if name == "LeakyRelu":
        return max(1.0, a) * z
    if name == "Elu":
        return max(z, a)
    if name == "Softplus":
        return z + 1.0
    return z                              # Relu, ThresholdedRelu


def magnitude_bound(case) -> float:
    """An upper bound of every intermediate magnitude of the recurrence (pre-activations, gates, cell
    and hidden states), from absolute sums: generous, cheap, and never below the truth."""
    op, t = case.op, case.tensors
    if any(n not in t for n in ("X", "W", "R")):
        return 0.0
    G, H = GATES[op], case.hidden_size
    D = num_directions(case.direction)
    per = len(DEFAULT_ACTIVATIONS[op])
    names = list(case.attributes.get("activations") or DEFAULT_ACTIVATIONS[op] * D)
    if len(names) == per:
        names = names * D
    params = [abs(float(x)) for k in ("activation_alpha", "activation_beta")
              for x in case.attributes.get(k) or ()]
    a = max(params + [1.0])
    clip = case.attributes.get("clip")
    X = np.abs(np.asarray(t["X"], dtype=np.float64))
    worst = 0.0
    for d in range(D):
        W = np.abs(np.asarray(t["W"], dtype=np.float64)[d])
        R = np.abs(np.asarray(t["R"], dtype=np.float64)[d])
        Bt = np.abs(np.asarray(t["B"], dtype=np.float64)[d]) if "B" in t else np.zeros(2 * G * H)
        xw = ((X @ W.T).reshape(-1, G, H).max(axis=(0, 2)) if X.size else np.zeros(G)).tolist()
        rr = R.sum(axis=1).reshape(G, H).max(axis=1).tolist()
        bias = (Bt[:G * H] + Bt[G * H:]).reshape(G, H).max(axis=1).tolist()
        h = float(np.max(np.abs(t["initial_h"][d]))) if "initial_h" in t else 0.0
        c = float(np.max(np.abs(t["initial_c"][d]))) if "initial_c" in t else 0.0
        p = float(np.max(np.abs(t["P"][d]))) if "P" in t else 0.0
        acts = names[d * per:(d + 1) * per]

        def act(k, pre, acts=acts):
            z = min(pre, float(clip)) if clip is not None else pre
            return _act_bound(acts[k], z, a, a)

        for _ in range(case.shape["seq_length"]):
            pre = [xw[k] + rr[k] * h + bias[k] for k in range(G)]
            if op == "RNN":
                h = act(0, pre[0])
            elif op == "GRU":
                z, r = act(0, pre[0]), act(0, pre[1])
                pre[2] = xw[2] + r * rr[2] * h + max(1.0, r) * bias[2]
                ht = act(1, pre[2])
                h = (1.0 + z) * ht + z * h
            else:                             # LSTM gates i, o, f, c
                pre[0] += p * c
                pre[2] += p * c
                i, f = act(0, pre[0]), act(0, pre[2])
                if case.attributes.get("input_forget"):
                    f = max(f, 1.0 + i)
                c = f * c + i * act(1, pre[3])
                pre[1] += p * c
                h = act(0, pre[1]) * act(2, c)
            worst = max(worst, h, c, *pre)
            if not math.isfinite(worst):
                return math.inf
    return worst


def overflow_free(case) -> bool:
    """True when no intermediate value of the case can come near the dtype's largest finite value."""
    return magnitude_bound(case) <= float(finfo(case.dtype).max) / 2
