"""The constraints an invalid case breaks, by id (:func:`broken_constraints`).

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

from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTE,
    ATTRIBUTES,
    DIRECTIONS,
    canonical_activation,
    input_shapes,
)


def broken_constraints(case) -> list[str]:
    """The ids of the constraints ``case`` breaks (an empty list for a valid case)."""
    op, a, t = case.op, case.attributes, case.tensors
    broken = [f"required:{n}" for n in ("X", "W", "R") if n not in t]
    broken += [f"attribute:{k}" for k in a if k in ATTRIBUTE and k not in ATTRIBUTES[op]]
    if a.get("layout", 0) not in (ATTRIBUTE["layout"].values or ()):
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
    proj = a.get("proj_size", 0) if op == "LSTM" else 0
    proj = proj if isinstance(proj, int) and not isinstance(proj, bool) and proj > 0 else 0
    if "R" in t and t["R"].ndim == 3:
        made_for = int(t["R"].shape[2])  # R multiplies the state fed back: proj_size wide under a projection
        if made_for != (proj or H) and "hidden_size" not in broken:
            broken.append("hidden_size")
        if not proj:
            H = made_for
    if not isinstance(H, int) or isinstance(H, bool) or H < 1:
        H = 1
    if "X" in t and t["X"].ndim == 3:
        S, B, I = map(int, t["X"].shape)  # noqa: E741  (tensors are kept in layout 0)
    else:
        S, B, I = case.shape["seq_length"], case.shape["batch_size"], case.shape["input_size"]  # noqa: E741
    shapes = input_shapes(op, H, "bidirectional" if D == 2 else "forward", {"seq_length": S, "batch_size": B,
                                                                           "input_size": I}, a)
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

