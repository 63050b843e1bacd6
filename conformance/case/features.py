"""A case's *features*: the tokens that name what it exercises, from its content alone.

A feature is a token such as ``reverse``, ``clip``, ``act=ThresholdedRelu``, ``dtype=float16``,
``sequence_lens=partial``, ``subnormal``, ``nan``, ``inf`` or, for an invalid case, the constraint it breaks
(``violates=shape:W``). Only non-default choices are tokens. A bidirectional case has both
``reverse`` and ``bidirectional`` (it has a reverse pass); a zero length is also
``sequence_lens=partial``; ``activation_spelling`` marks a known function spelled otherwise than
ONNX spells it (``relu``).

Every result record carries its case's features, so an expectations entry can name the
divergence it knows by feature (``features: [P]``: "ignores peepholes") and cover a fuzzer's case
as well as a corpus case; the fuzzer de-duplicates its findings by them
(:mod:`conformance.fuzz.signature`).

:func:`broken_constraints` names the constraints an invalid case breaks, by id:

| id | constraint |
|---|---|
| ``required:X`` (W, R) | X, W and R are required inputs |
| ``direction`` | direction is forward, reverse or bidirectional |
| ``hidden_size`` | hidden_size is a positive integer and agrees with R [D, G*H, H] |
| ``shape:<input>`` | each input has its documented shape, given D, G, hidden_size and X's [S, B, I] |
| ``activations.count`` | G activations per direction: 1/2/3 (or twice that for bidirectional) |
| ``activations.unknown`` | each activation is one of the eleven ONNX functions |
| ``sequence_lens.range`` | 0 <= sequence_lens[b] <= seq_length |
| ``layout`` | layout is 0 or 1 |
| ``attribute:<name>`` | the op has the attribute (input_forget is LSTM's, linear_before_reset GRU's) |
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTES,
    DEFAULT_ACTIVATIONS,
    DIRECTIONS,
    OUTPUTS,
    canonical_activation,
    input_shapes,
)
from conformance.compare.metrics import finfo

_CACHE: OrderedDict = OrderedDict()   # case digest -> features (a run asks once per target)


def features(case) -> frozenset[str]:
    """The case's non-default features (cached by the case's content digest)."""
    key = getattr(case, "digest", None)
    if key is not None and key in _CACHE:
        return _CACHE[key]
    out = _features(case)
    if key is not None:
        _CACHE[key] = out
        if len(_CACHE) > 4096:
            _CACHE.popitem(last=False)
    return out


def _features(case) -> frozenset[str]:
    a, t = case.attributes, case.tensors
    tokens = set()
    if case.form != "sequence":
        tokens.add(f"form={case.form}")
    direction = a.get("direction", "forward")
    if direction in ("reverse", "bidirectional"):
        tokens.add("reverse")            # a pass that walks time backwards (bidirectional has one too)
    if direction == "bidirectional":
        tokens.add("bidirectional")
    elif direction not in ("forward", "reverse"):
        tokens.add(f"direction={direction}")
    if case.dtype != "float32":
        tokens.add(f"dtype={case.dtype}")
    for name in ("B", "initial_h", "initial_c", "P"):
        if name in t:
            tokens.add(name)
    lens = t.get("sequence_lens")
    if lens is not None and np.ndim(lens) == 1 and lens.size:
        S = case.shape["seq_length"]
        tokens.add("sequence_lens=full" if np.all(lens == S) else "sequence_lens=partial")
        if np.any(lens == 0):
            tokens.add("zero_length")
    names = a.get("activations")
    if names:
        defaults = DEFAULT_ACTIVATIONS.get(case.op, ())
        per = len(defaults) or 1
        for k, name in enumerate(names):
            if k // per < 2 and defaults and name != defaults[k % per]:
                tokens.add(f"act={name}")
        if any(canonical_activation(n) not in (None, n) for n in names):
            tokens.add("activation_spelling")   # a known function in another spelling (e.g. `relu`)
        if (direction == "bidirectional" and len(names) == 2 * per
                and list(names[:per]) != list(names[per:])):
            tokens.add("per_direction_activations")
    for key in ("activation_alpha", "activation_beta", "clip"):
        if key in a:
            tokens.add(key)
    if a.get("linear_before_reset"):
        tokens.add("linear_before_reset")
    if a.get("input_forget"):
        tokens.add("input_forget")
    if a.get("layout", 0) != 0:
        tokens.add(f"layout={a['layout']}")
    if case.outputs and tuple(case.outputs) != OUTPUTS.get(case.op):
        tokens.add("outputs=" + "+".join(case.outputs))
    tokens |= _value_tokens(case)
    if not case.valid:
        tokens |= {f"violates={c}" for c in broken_constraints(case)}
    return frozenset(tokens)


def _value_tokens(case) -> set[str]:
    out = set()
    try:
        tiny = float(finfo(case.dtype).smallest_normal)
    except (KeyError, ValueError, TypeError):
        return out
    for name, arr in case.tensors.items():
        if name == "sequence_lens":
            continue
        v = np.abs(np.asarray(arr, dtype=np.float64))
        if np.any((v > 0) & (v < tiny)):
            out.add("subnormal")
        if np.any(np.isnan(v)):
            out.add("nan")
        if np.any(np.isinf(v)):
            out.add("inf")
        if np.any((v > 8.0) & np.isfinite(v)):
            out.add("large")
    return out


def broken_constraints(case) -> list[str]:
    """The ids of the constraints ``case`` breaks (an empty list for a valid case)."""
    op, a, t = case.op, case.attributes, case.tensors
    broken = [f"required:{n}" for n in ("X", "W", "R") if n not in t]
    broken += [f"attribute:{k}" for k in ("linear_before_reset", "input_forget")
               if k in a and k not in ATTRIBUTES[op]]
    if a.get("layout", 0) not in (0, 1):
        broken.append("layout")
    direction = a.get("direction", "forward")
    if direction in DIRECTIONS:
        D = 2 if direction == "bidirectional" else 1
    else:
        broken.append("direction")
        D = t["W"].shape[0] if "W" in t and t["W"].ndim == 3 else 1
    H = a.get("hidden_size")
    if not isinstance(H, int) or isinstance(H, bool) or H < 1:
        broken.append("hidden_size")
    if "R" in t and t["R"].ndim == 3:
        made_for = int(t["R"].shape[2])
        if made_for != H and "hidden_size" not in broken:
            broken.append("hidden_size")
        H = made_for
    elif not isinstance(H, int) or H < 1:
        H = 1
    if "X" in t and t["X"].ndim == 3:
        S, B, I = map(int, t["X"].shape)  # noqa: E741  (tensors are kept in layout 0)
    else:
        S, B, I = case.shape["seq_length"], case.shape["batch_size"], case.shape["input_size"]  # noqa: E741
    shapes = input_shapes(op, H, "bidirectional" if D == 2 else "forward", {"seq_length": S, "batch_size": B,
                                                                           "input_size": I})
    for name, arr in t.items():
        if name != "X" and tuple(arr.shape) != shapes.get(name):
            broken.append(f"shape:{name}")
    lens = t.get("sequence_lens")
    if lens is not None and "shape:sequence_lens" not in broken and lens.size:
        if int(lens.min()) < 0 or int(lens.max()) > S:
            broken.append("sequence_lens.range")
    names = a.get("activations")
    if names is not None:
        if any(canonical_activation(n) is None for n in names):
            broken.append("activations.unknown")
        per = ACTIVATIONS_PER_DIRECTION[op]
        if len(names) not in (per, per * D):
            broken.append("activations.count")
    return broken

