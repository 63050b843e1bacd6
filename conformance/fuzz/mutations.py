"""Invalid cases: a valid case with exactly one constraint broken. The checker that names the
constraints a case breaks, :func:`~conformance.case.constraints.broken_constraints`, is re-exported.

A mutation breaks one of the constraints of :mod:`conformance.case.features`' table: every id
there but ``layout`` and ``attribute:<name>``, which only the corpus breaks.

X is the reference for S, B and I, and R's last axis for the hidden size the tensors were made
with, so changing one thing breaks one constraint: a shape mutation never touches X or R's last
axis, and a hidden_size mutation changes the attribute only.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from conformance.case.constraints import broken_constraints  # noqa: F401 - the checker of what a mutation breaks
from conformance.case.model import Case
from conformance.case.vocabulary import ACTIVATIONS_PER_DIRECTION, DEFAULT_ACTIVATIONS, DIRECTIONS, GATES, inputs_of

MUTATIONS = ("shape", "hidden_size", "direction", "activations_count", "activation_unknown",
             "sequence_lens_range", "missing_input")
BAD_DIRECTIONS = ("backward", "bidirection", "forwards", "both")
UNKNOWN_ACTIVATIONS = ("Gelu", "Swish", "Identity", "HardSwish", "Mish", "Tanhh")
#: the inputs a shape mutation may change, with the axes it may change
SHAPE_AXES = {"W": (0, 1, 2), "R": (0, 1), "B": (0, 1), "initial_h": (0, 1, 2), "initial_c": (0, 1, 2),
              "P": (0, 1), "sequence_lens": (0,)}

_MEANING = {
    "W": "[num_directions, {g}*hidden_size, input_size]", "R": "[num_directions, {g}*hidden_size, {out}]",
    "B": "[num_directions, {g2}*hidden_size]", "initial_h": "[{layers}num_directions, batch_size, {out}]",
    "initial_c": "[{layers}num_directions, batch_size, hidden_size]", "P": "[num_directions, 3*hidden_size]",
    "sequence_lens": "[batch_size]",
}


def _meaning(name: str, case: Case) -> str:
    """What ``name``'s shape must be, in words; torch.nn's stacks and projections included
    (docs/framework.md: the states hold every layer's, R and h read the projected size)."""
    layers = case.attributes.get("num_layers", 1)
    projected = case.op == "LSTM" and case.attributes.get("proj_size", 0) > 0
    return _MEANING[name].format(g=GATES[case.op], g2=2 * GATES[case.op],
                                 layers="num_layers*" if layers > 1 else "",
                                 out="proj_size" if projected else "hidden_size")


def mutate(rec, base: Case) -> Case:
    """Break exactly one constraint of the valid case ``base`` (``rec`` is the labelled draw)."""
    from conformance.fuzz.signature import with_id
    kind = rec(st.sampled_from(MUTATIONS), "mutation")
    event("mutation", kind)
    attrs, tensors = dict(base.attributes), dict(base.tensors)
    op, H, S, B = base.op, base.hidden_size, base.shape["seq_length"], base.shape["batch_size"]
    per = ACTIVATIONS_PER_DIRECTION[op]
    D = 2 if base.direction == "bidirectional" else 1
    if kind == "shape":
        name = rec(st.sampled_from([n for n in SHAPE_AXES if n in tensors]), "mutation.input")
        axis = rec(st.sampled_from(SHAPE_AXES[name]), "mutation.axis")
        old = tensors[name]
        shape = list(old.shape)
        grow = shape[axis] == 1 or rec(st.booleans(), "mutation.grow")
        shape[axis] += 1 if grow else -1
        tensors[name] = np.resize(old.reshape(-1), shape).astype(old.dtype)
        expected = list(old.shape)
        violates = f"{name} must be {_meaning(name, base)} = {expected}, not {shape}"
    elif kind == "hidden_size":
        attrs["hidden_size"] = H + 1 if H == 1 or rec(st.booleans(), "mutation.grow") else H - 1
        violates = (f"hidden_size must agree with R [num_directions, {GATES[op]}*hidden_size, hidden_size]: "
                    f"R is made for hidden_size {H}, not {attrs['hidden_size']}")
    elif kind == "direction":
        attrs["direction"] = rec(st.sampled_from(BAD_DIRECTIONS), "mutation.direction")
        violates = f"direction must be one of {', '.join(DIRECTIONS)}, not {attrs['direction']!r}"
    elif kind == "activations_count":
        names = list(attrs.get("activations") or DEFAULT_ACTIVATIONS[op] * D)
        count = 2 * per * D + 1
        attrs["activations"] = (names * 3)[:count]
        violates = (f"activations must list {per} functions per direction ({per * D} for {base.direction}), "
                    f"not {count}")
    elif kind == "activation_unknown":
        names = list(attrs.get("activations") or DEFAULT_ACTIVATIONS[op] * D)
        k = rec(st.integers(0, len(names) - 1), "mutation.position")
        names[k] = rec(st.sampled_from(UNKNOWN_ACTIVATIONS), "mutation.activation")
        attrs["activations"] = names
        violates = f"activations must be ONNX activation functions; {names[k]!r} (position {k}) is not one"
    elif kind == "sequence_lens_range":
        lens = np.array(tensors.get("sequence_lens", np.full((B,), S, dtype=np.int32)), dtype=np.int32)
        b = rec(st.integers(0, B - 1), "mutation.batch")
        lens[b] = rec(st.sampled_from([S + 1, -1]), "mutation.length")
        tensors["sequence_lens"] = lens
        violates = (f"sequence_lens must satisfy 0 <= sequence_lens[b] <= seq_length = {S}; "
                    f"sequence_lens[{b}] = {lens[b]}")
    else:
        name = rec(st.sampled_from(("X", "W", "R")), "mutation.input")
        del tensors[name]
        violates = f"X, W and R are required inputs; {name} is absent"
    # every input the base has, its stack's and projection's included (a mutation changes neither)
    tensors = {n: tensors[n] for n in inputs_of(op, base.attributes) if n in tensors}
    case = dataclasses.replace(base, attributes=attrs, tensors=tensors, expect="invalid", violates=violates,
                               params=rec.params)
    return with_id(case)


def expected_constraint(case: Case) -> str:
    """The constraint id the case's mutation meant to break (from its recorded draws)."""
    p = case.params
    kind = p.get("mutation", "")
    return {
        "shape": f"shape:{p.get('mutation.input')}", "hidden_size": "hidden_size", "direction": "direction",
        "activations_count": "activations.count", "activation_unknown": "activations.unknown",
        "sequence_lens_range": "sequence_lens.range", "missing_input": f"required:{p.get('mutation.input')}",
    }.get(kind, "")
