"""One case from one matrix combination of a case file (conformance/case/load.py): its tensors planned,
checked against the limits (:class:`CaseLimitError`, before any tensor is built) and built."""

from __future__ import annotations

from pathlib import Path

from conformance.case.limits import DEFAULT_LIMITS, Limits, how_to_raise
from conformance.case.model import Case
from conformance.case.schema import SCHEMA
from conformance.case.tensors import DEFAULT_DISTRIBUTION, plan_float, plan_lengths
from conformance.case.tensors import materialize as build_tensor
from conformance.case.vocabulary import (
    DEFAULT_ACTIVATIONS,
    GATES,
    canonical_activation,
    input_shapes,
    inputs_of,
    num_directions,
)
from conformance.case.yamlio import Where, where_of

ATTRIBUTE_KEYS = tuple(SCHEMA["properties"]["attributes"]["properties"])


class CaseLimitError(ValueError):
    """A case over a limit of :class:`Limits`, found before any tensor is built."""

    def __init__(self, where: Where, key: str, message: str, hint: str):
        super().__init__(message)
        self.where, self.key, self.message, self.hint = where, key, message, hint


#: the dimensions each input's shape is made of (for pointing at the one that makes it large)
_DIMENSIONS = {"X": ("seq_length", "batch_size", "input_size"), "W": ("hidden_size", "input_size"),
               "R": ("hidden_size",), "B": ("hidden_size",), "sequence_lens": ("batch_size",),
               "initial_h": ("batch_size", "hidden_size"), "initial_c": ("batch_size", "hidden_size"),
               "P": ("hidden_size",)}


def _dimension_where(doc, params: dict, dims: dict, names, top: Where) -> tuple[Where, str]:
    """The line and key of the largest of the dimensions `names` (its matrix line if it varies)."""
    name = max(names, key=lambda n: dims[n])
    section = "attributes" if name == "hidden_size" else "shape"
    if name in params:
        return where_of(doc.get("matrix", {}), name, top), f"matrix.{name}"
    node = doc.get(section, {})
    return where_of(node, name, where_of(doc, section, top)), f"{section}.{name}"


def check_limits(plans: list, op: str, hidden: int, direction: str, shape: dict, doc, params: dict,
                 limits: Limits, attributes: dict | None = None) -> None:
    """Raise :class:`CaseLimitError` when the case's tensors (as planned, not built) or its
    multiply-adds are over `limits`."""
    top = getattr(doc, "here", Where("", 1))
    dims = {"seq_length": _int_or(shape.get("seq_length"), 1), "batch_size": _int_or(shape.get("batch_size"), 1),
            "input_size": _int_or(shape.get("input_size"), 1), "hidden_size": hidden}
    elements = sum(p.size for p in plans)
    if elements > limits.max_elements:
        largest = max(plans, key=lambda p: p.size)
        if largest.explicit_shape or largest.fill == "literal" or largest.name not in _DIMENSIONS:
            inputs = doc.get("inputs", {})
            where = (where_of(doc.get("matrix", {}), largest.name, top) if largest.name in params
                     else where_of(inputs, largest.name, where_of(doc, "inputs", top)))
            key = f"inputs.{largest.name}"
        else:
            where, key = _dimension_where(doc, params, dims, _DIMENSIONS[largest.name], top)
        raise CaseLimitError(
            where, key,
            f"the case's input tensors would have {elements:,} elements (the largest, {largest.name} "
            f"{list(largest.shape)}, {largest.size:,}), over the limit of {limits.max_elements:,} elements "
            f"(--max-elements)", "smaller shapes; or " + how_to_raise("max_elements"))
    d, g = num_directions(direction), GATES[op]
    s, b, i, h = dims["seq_length"], dims["batch_size"], dims["input_size"], hidden
    layers = _int_or((attributes or {}).get("num_layers"), 1)
    macs = s * b * d * g * h * (i + h) * layers
    if macs > limits.max_macs:
        where, key = _dimension_where(doc, params, dims, ("seq_length", "batch_size", "input_size", "hidden_size"),
                                      top)
        raise CaseLimitError(
            where, key,
            f"the case needs {macs:.3g} multiply-adds (seq_length {s} x batch_size {b} x {d} direction(s) x "
            f"{g} gate(s) x hidden_size {h} x (input_size {i} + hidden_size {h})), over the limit of "
            f"{limits.max_macs:.3g} (--max-macs)", "smaller shapes; or " + how_to_raise("max_macs"))


def build(variant: dict, doc, params: dict, case_id: str, path: Path, limits: Limits = DEFAULT_LIMITS,
          materialize: bool = True) -> Case:
    """The case of one matrix combination. Its tensors are planned and checked against `limits`
    (raising :class:`CaseLimitError`) before any is built; ``materialize=False`` builds none."""
    op = variant["op"]
    form = variant.get("form", "sequence")
    dtype = variant.get("dtype", "float32")
    expect = variant.get("expect", "valid")
    attributes = {k: variant["attributes"][k] for k in ATTRIBUTE_KEYS if k in variant["attributes"]}
    shape = {"seq_length": variant["shape"].get("seq_length", 1),
             "batch_size": variant["shape"]["batch_size"],
             "input_size": variant["shape"]["input_size"]}
    notes = list(variant.get("_notes", ()))
    if expect == "valid":
        attributes.setdefault("direction", "forward")
        if "activations" in attributes:
            names = [canonical_activation(a) or a for a in attributes["activations"]]
            per_dir = len(DEFAULT_ACTIVATIONS[op])
            if attributes["direction"] == "bidirectional" and len(names) == per_dir:
                notes.append(f"activations {names} given once; repeated (with any activation_alpha/beta) "
                             f"for the reverse direction")
                for key in ("activations", "activation_alpha", "activation_beta"):
                    if key in attributes:
                        attributes[key] = list(attributes[key]) * 2
    inputs = variant.get("inputs", {})
    seed = int(inputs.get("seed", 0))
    distribution = inputs.get("distribution", DEFAULT_DISTRIBUTION)
    hidden = _int_or(attributes.get("hidden_size"), 1)
    direction = (attributes.get("direction", "forward")
                 if num_directions_ok(attributes.get("direction", "forward")) else "forward")
    shapes = input_shapes(op, hidden, direction, shape, attributes)
    plans = []
    for name in inputs_of(op, attributes):
        spec = inputs.get(name, _default_spec(name, inputs))
        if name == "sequence_lens":
            plan = plan_lengths(spec, shape["batch_size"], shape["seq_length"], seed)
        else:
            plan = plan_float(spec, name, shapes[name], dtype, seed, distribution)
        if plan is not None:
            plans.append(plan)
    check_limits(plans, op, hidden, direction, shape, doc, params, limits, attributes)
    tensors = {plan.name: build_tensor(plan) for plan in plans} if materialize else {}
    clause = variant.get("clause", ())
    clause = (clause,) if isinstance(clause, str) else tuple(clause)
    return Case(
        id=case_id, op=op, form=form, attributes=attributes, shape=shape, dtype=dtype,
        tensors=tensors, expect=expect, clause=clause,
        description=str(variant.get("description", "")).strip(),
        outputs=tuple(variant.get("outputs", ())), violates=str(variant.get("violates", "")),
        source=getattr(doc, "here", Where(str(path), 1)), params=dict(params), notes=tuple(notes),
        tolerance=variant.get("tolerance"),
    )


def _default_spec(name: str, inputs: dict):
    """What an input the file does not give holds: X, W, R (each layer's too) and the projection's
    W_hr are drawn; a further layer's bias follows B (torch's ``bias`` is one switch for the module);
    the rest is absent."""
    base = name.split("_l", 1)[0] if name[:2] in ("W_", "R_", "B_") else name
    if base in ("X", "W", "R", "W_hr"):
        return "random"
    if base == "B" and name != "B":
        spec = inputs.get("B", "absent")
        return spec if isinstance(spec, str) else "random"
    return "absent"


def num_directions_ok(direction) -> bool:
    return direction in ("forward", "reverse", "bidirectional")


def _int_or(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
