"""Meaning checks of one expanded case, each problem with file:line, key, what and a hint.

Structure is the JSON Schema's job; this module checks what a schema can't say: shapes against
hidden_size and direction, activation counts, lengths within seq_length. A case marked
``expect: invalid`` is checked for structure only, since breaking a constraint is its point; what
any case needs in order to be built at all (integer dimensions, distributions that can be drawn
from) is checked for every case. Values from the file appear in messages only clipped
(:func:`conformance.case.limits.shorten`).
"""

from __future__ import annotations

import numpy as np

from conformance.case.limits import shorten
from conformance.case.schema import did_you_mean
from conformance.case.tensors import distribution_problem
from conformance.case.vocabulary import (
    ACTIVATION_FUNCTIONS,
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTE,
    ATTRIBUTES,
    DIRECTIONS,
    MAX_LAYERS,
    canonical_activation,
    input_shapes,
    inputs_of,
    num_directions,
)
from conformance.case.yamlio import Where, where_of


class _Problems:
    """The problems found in one variant so far, each at its key's file:line (a key the matrix sets
    at the matrix's): (where, key, message, hint) per problem, in the order found."""

    def __init__(self, doc, params: dict, top: Where):
        self.doc, self.params, self.top = doc, params, top
        self.found: list[tuple] = []

    def at(self, section: str, key: str) -> Where:
        if key in self.params:
            return where_of(self.doc.get("matrix", {}), key, self.top)
        node = self.doc.get(section, {}) if section else self.doc
        return where_of(node, key, where_of(self.doc, section, self.top) if section else self.top)

    def bad(self, section: str, key: str, message: str, hint: str = "") -> None:
        self.found.append((self.at(section, key), f"{section}.{key}" if section else key, message, hint))


def check(variant: dict, doc, params: dict, top: Where) -> list[tuple]:
    """Every problem of one expanded ``variant`` of ``doc`` (its matrix ``params``), in the order the
    checks below find them: what any case needs to be built, then, for a case not marked
    ``expect: invalid``, its attributes, its form, and last its inputs' shapes and lengths."""
    problems = _Problems(doc, params, top)
    op = variant["op"]
    attrs = variant.get("attributes", {})
    shape = variant.get("shape", {})
    inputs = variant.get("inputs", {})
    form = variant.get("form", "sequence")

    input_names = inputs_of(op, attrs)
    _unknown_inputs(problems, op, attrs, inputs, input_names)
    if not _buildable(problems, shape, inputs):
        return problems.found  # such a case cannot be built, whatever it expects
    if _expects_invalid(problems, variant):
        return problems.found
    direction = attrs.get("direction", "forward")
    _attributes(problems, op, form, attrs, shape)
    _activations(problems, op, attrs, direction)
    _form(problems, form, shape)
    if problems.found:
        return problems.found
    _inputs(problems, op, attrs, direction, shape, inputs, input_names)
    return problems.found


def _unknown_inputs(problems: _Problems, op: str, attrs: dict, inputs: dict, input_names) -> None:
    """Inputs the op (with these num_layers and proj_size) does not have."""
    for name in inputs:
        if name not in ("seed", "distribution") and name not in input_names:
            problems.bad("inputs", name, f"{op} has no input {name!r}" + (" with these num_layers and proj_size"
                                                                           if name not in inputs_of(op) else ""),
                         f"one of {', '.join(input_names)}")


def _buildable(problems: _Problems, shape: dict, inputs: dict) -> bool:
    """What any case needs in order to be built at all: integer dimensions, distributions that can be
    drawn from. False when one of them is missing (its problems found)."""
    known_problems = len(problems.found)
    for key, value in shape.items():
        if not isinstance(value, int) or isinstance(value, bool):
            problems.bad("shape", key, f"shape.{key} must be an integer, got {shorten(value)}",
                         "writing it out in digits (YAML reads 1e9 as a float)")
    distributions = [("distribution", inputs.get("distribution"))] + [
        (name, spec.get("distribution")) for name, spec in inputs.items() if isinstance(spec, dict)]
    for name, distribution in distributions:
        problem = distribution_problem(distribution) if distribution is not None else ""
        if problem:
            problems.bad("inputs", name, f"cannot draw from this distribution: {problem}",
                         "finite bounds, low <= high (`uniform: [-1.0, 1.0]`), a standard deviation >= 0")
    return len(problems.found) == known_problems


def _expects_invalid(problems: _Problems, variant: dict) -> bool:
    """Whether the case is marked ``expect: invalid`` (then checked for structure only: breaking a
    constraint is its point); ``violates`` and a tolerance override checked against that mark."""
    if variant.get("expect", "valid") == "invalid":
        if not str(variant.get("violates", "")).strip():
            problems.bad("", "expect", "an invalid case must say which constraint it breaks",
                         "adding `violates: <the constraint, e.g. W must be [D, G*H, I]>`")
        return True
    if variant.get("violates"):
        problems.bad("", "violates", "`violates` is only meaningful with `expect: invalid`",
                     "removing it, or setting `expect: invalid`")
    if variant.get("tolerance") and not str(variant["tolerance"].get("source", "")).strip():
        problems.bad("", "tolerance", "a tolerance override must name its source",
                     "adding `source: <spec sentence or policy>`")
    return False


def _attributes(problems: _Problems, op: str, form: str, attrs: dict, shape: dict) -> None:
    """Attributes the op does not have, hidden_size, and what the attribute table and torch.nn say of
    each attribute's value (:func:`attribute_problems`)."""
    for key in attrs:
        if key not in ATTRIBUTES[op]:
            owner = [o for o, names in ATTRIBUTES.items() if key in names]
            problems.bad("attributes", key, f"{op} has no attribute {key!r}",
                         f"removing it (it belongs to {', '.join(owner)})" if owner else "removing it")
    hidden = attrs.get("hidden_size")
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 1:
        problems.bad("attributes", "hidden_size", f"hidden_size must be an integer >= 1, got {shorten(hidden)}",
                     "a small value such as 3")
    for name, message, hint in attribute_problems(op, form, attrs, shape):
        problems.bad("attributes", name, message, hint)


def _activations(problems: _Problems, op: str, attrs: dict, direction) -> None:
    """The activations' names and count (per direction), and activation_alpha/beta only with them."""
    if "activations" in attrs and direction in DIRECTIONS:
        names = attrs["activations"]
        unknown = [a for a in names if canonical_activation(a) is None]
        if unknown:
            guess = did_you_mean(unknown[0], ACTIVATION_FUNCTIONS)
            problems.bad("attributes", "activations",
                         f"unknown activation(s) {', '.join(shorten(a, 30) for a in unknown[:4])}"
                         f"{', ...' if len(unknown) > 4 else ''}{guess}",
                         "" if guess else "the eleven ONNX activations: Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                         "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus")
        per_dir = ACTIVATIONS_PER_DIRECTION[op]
        counts = {per_dir, per_dir * num_directions(direction)}
        if len(names) not in counts:
            takes = " or ".join(map(str, sorted(counts)))
            problems.bad("attributes", "activations", f"{op} {direction} takes {takes} activations, got {len(names)}",
                         "`expect: invalid` if the case tests a wrong count")
    for key in ("activation_alpha", "activation_beta"):
        if key in attrs and "activations" not in attrs:
            problems.bad("attributes", key, f"{key} without `activations` has nothing to parameterise",
                         "listing the activations it belongs to")


def _form(problems: _Problems, form: str, shape: dict) -> None:
    """seq_length as the form needs it."""
    if form == "cell" and shape.get("seq_length", 1) != 1:
        problems.bad("shape", "seq_length",
                     f"a cell is one time step: seq_length must be 1, got {shorten(shape['seq_length'])}",
                     "removing seq_length, or `form: sequence`")
    if form == "sequence" and "seq_length" not in shape:
        problems.bad("shape", "seq_length", "a sequence case needs shape.seq_length", "adding `seq_length: 3`")


def _inputs(problems: _Problems, op: str, attrs: dict, direction, shape: dict, inputs: dict, input_names) -> None:
    """Each input the op has: required ones present, ``full`` only for sequence_lens, a literal's
    shape the one the attributes and shape give, sequence_lens within seq_length."""
    hidden = attrs["hidden_size"]   # an integer >= 1 by now: _attributes found no problem
    full_shape = {"seq_length": shape.get("seq_length", 1), **shape}
    expected = input_shapes(op, hidden, direction, full_shape, attrs)
    for name, spec in inputs.items():
        if name in ("seed", "distribution"):
            continue
        if name not in input_names:
            continue
        if name in ("X", "W", "R") and spec == "absent":
            problems.bad("inputs", name, f"{name} is a required input and cannot be absent",
                         "`expect: invalid` if the case tests a missing input")
        if spec == "full" and name != "sequence_lens":
            problems.bad("inputs", name, "`full` is only meaningful for sequence_lens", "`random` or `zeros`")
        given = _literal_shape(spec)
        if given is not None and given != expected[name]:
            problems.bad("inputs", name, f"{name} has shape {list(given)} but should be {list(expected[name])} "
                         f"for {op} hidden_size={hidden} direction={direction} seq_length={full_shape['seq_length']} "
                         f"batch_size={full_shape['batch_size']} input_size={full_shape['input_size']}",
                         "`expect: invalid` if the case tests a wrong shape")
        if name == "sequence_lens" and isinstance(spec, list):
            lens = np.asarray(spec)
            if lens.size and (lens.min() < 0 or lens.max() > full_shape["seq_length"]):
                problems.bad("inputs", name, f"sequence_lens {shorten(spec)} must satisfy 0 <= length <= "
                             f"seq_length = {full_shape['seq_length']}", "`expect: invalid` for an out-of-range length")


def attribute_problems(op: str, form: str, attrs: dict, shape: dict) -> list[tuple[str, str, str]]:
    """What the attribute table says of the values of a valid case's attributes (the allowed values,
    the sign, the forms that have it: conformance/case/vocabulary.py ``ATTRIBUTE_TABLE``), then what
    torch.nn requires of its own axes: (attribute, message, hint) per problem. The fuzzer keeps a
    drawn attribute only where this finds nothing (conformance/fuzz/strategies.py)."""
    out = []
    for name, value in (dict(direction=attrs.get("direction", "forward")) | attrs).items():
        rule = ATTRIBUTE.get(name)
        if rule is None or name not in ATTRIBUTES[op]:
            continue
        if rule.values is not None and value not in rule.values:
            allowed = " or ".join(map(str, rule.values)) if len(rule.values) < 3 else f"one of {list(rule.values)}"
            guess = did_you_mean(value, rule.values)   # a misspelling, not a deliberately bad value
            out.append((name, f"{name} must be {allowed}, got {shorten(value)}{guess}", "" if guess else rule.hint))
        elif rule.positive and not value > 0:
            out.append((name, f"{name} must be > 0, got {shorten(value)}", rule.hint))
        elif form not in rule.forms and value != rule.default:
            out.append((name, f"a {form} has no {name} (only a {' or '.join(rule.forms)} has it), got {shorten(value)}",
                        f"form: {rule.forms[0]}, or removing {name}"))
    return out + _framework(attrs, shape)


def _framework(attrs: dict, shape: dict) -> list[tuple[str, str, str]]:
    """What torch.nn requires of its own axes (num_layers, proj_size, dropout, unbatched):
    (attribute, message, hint) per problem."""
    out = []
    layers = attrs.get("num_layers", 1)
    if not isinstance(layers, int) or isinstance(layers, bool) or not 1 <= layers <= MAX_LAYERS:
        out.append(("num_layers", f"num_layers must be an integer from 1 to {MAX_LAYERS}, got {shorten(layers)}",
                    "2 for a stack of two layers"))
    proj = attrs.get("proj_size", 0)
    hidden = attrs.get("hidden_size")
    if not isinstance(proj, int) or isinstance(proj, bool) or proj < 0 or (
            proj and isinstance(hidden, int) and proj >= hidden):
        out.append(("proj_size", f"proj_size must be 0 or 0 < proj_size < hidden_size, got {shorten(proj)}",
                    "torch.nn.LSTM refuses proj_size >= hidden_size"))
    dropout = attrs.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        out.append(("dropout", f"dropout must be a probability in [0, 1), got {shorten(dropout)}", "0.25"))
    if attrs.get("unbatched") == 1 and shape.get("batch_size") != 1:
        out.append(("unbatched", f"unbatched input is one sequence: batch_size must be 1, got "
                    f"{shorten(shape.get('batch_size'))}", "batch_size: 1"))
    return out


def _literal_shape(spec):
    if isinstance(spec, dict) and "shape" in spec:
        return tuple(spec["shape"])
    if isinstance(spec, list):
        try:
            return np.asarray(spec, dtype=np.float64).shape
        except ValueError:
            return ()
    return None
