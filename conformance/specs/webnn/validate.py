"""The rules of WebNN's gru(), gruCell(), lstm() and lstmCell() method steps, checked on a graph
document before any browser sees it (Editor's Draft c515210 and CR 2026-01-22, which agree here).

Each rule is the spec's own step, quoted short; a broken rule is a :class:`Violation` naming the
argument, what the step asks and what the document has. The translator records them in the
document (``violations``, each with the case's file:line), and the runtime names them beside the
browser's own refusal; a browser that builds a document with violations has accepted an invalid
graph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import conformance.specs.webnn.vocabulary as v

#: the largest valid dimension: "a valid dimension" is a positive integer below 2^31 (#738)
MAX_DIMENSION = 2 ** 31 - 1


@dataclass(frozen=True)
class Violation:
    op: str          # gru | gruCell | lstm | lstmCell | transpose | document
    argument: str    # weight, options.bias, ...
    message: str     # what the step asks, and what the document has

    def __str__(self) -> str:
        return f"{self.op}() {self.argument}: {self.message}"


class DocumentError(Exception):
    """The document itself is unreadable (not JSON, an unknown schema, a missing operand)."""


def load_document(path) -> dict:
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocumentError(f"{path}: not a WebNN graph document: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != v.SCHEMA:
        raise DocumentError(f"{path}: schema should be {v.SCHEMA!r}")
    return document


def validate_document(document: dict) -> list[Violation]:
    """Every rule of the method steps the document breaks (an empty list: WebNN builds it)."""
    shapes, types, found = {}, {}, []
    for name, operand in document.get("operands", {}).items():
        shapes[name] = [int(x) for x in operand["shape"]]
        types[name] = operand["dataType"]
    for call in document.get("operations", []):
        op = call["op"]
        if op == "transpose":
            source = call["args"][0]
            if source not in shapes:
                found.append(Violation(op, "input", f"names {source!r}, which is no operand"))
                continue
            perm = call["options"]["permutation"]
            if sorted(perm) != list(range(len(shapes[source]))):
                found.append(Violation(op, "options.permutation", f"{perm} is not a permutation of "
                                       f"the rank-{len(shapes[source])} input's axes"))
                continue
            shapes[call["outputs"][0]] = [shapes[source][p] for p in perm]
            types[call["outputs"][0]] = types[source]
            continue
        if op not in v.ARGUMENTS:
            found.append(Violation(op, "op", f"{op!r} is not an operation a document may call"))
            continue
        outs = _recurrent(op, call, shapes, types, found)
        for name, shape in zip(call["outputs"], outs):
            shapes[name] = shape
            types[name] = types.get(call["args"][0], "float32")
    return found


@dataclass
class _Call:
    """One gru/gruCell/lstm/lstmCell call being checked: its arguments by name, its options, and the
    list its violations go to."""
    op: str
    args: dict
    options: dict
    found: list

    @property
    def cell(self) -> bool:
        return self.op in v.CELL_OPS

    @property
    def onnx_op(self) -> str:
        return v.OP_OF[self.op]

    def bad(self, argument: str, message: str) -> None:
        self.found.append(Violation(self.op, argument, message))


def _recurrent(op: str, call: dict, shapes: dict, types: dict, found: list) -> list:
    """Check one gru/gruCell/lstm/lstmCell call; returns its output shapes (as far as they follow)."""
    checked = _Call(op, dict(zip(v.ARGUMENTS[op], call["args"])), call.get("options", {}), found)
    operands = _operands(checked, shapes)
    if operands is None:
        return []
    _data_types(checked, operands, types)
    hidden = checked.args["hiddenSize"]
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 0 or hidden > 2 ** 32 - 1:
        checked.bad("hiddenSize", f"{hidden!r} is not an unsigned long ([EnforceRange])")
        return []
    if not _ranks(checked, operands):
        return []
    d, batch = _shapes(checked, operands, hidden)
    _layout_and_activations(checked)
    if checked.cell:
        return [[batch, hidden]] * (2 if op == "lstmCell" else 1)
    outs = [[d, batch, hidden]] * (2 if op == "lstm" else 1)
    if checked.options.get("returnSequence"):
        outs.append([checked.args["steps"], d, batch, hidden])
    return outs


def _operands(call: _Call, shapes: dict) -> dict[str, Any] | None:
    """The shape of each operand the call names, arguments then operand options; None when one names
    no operand (each such one a violation), which stops the checks before any shape is read."""
    def shape_of(argument: str, name) -> list | None:
        if name not in shapes:
            call.bad(argument, f"names {name!r}, which is no operand")
            return None
        return shapes[name]

    operands: dict[str, Any] = {k: shape_of(k, call.args[k]) for k in v.ARGUMENTS[call.op]
                                if k not in ("steps", "hiddenSize")}
    for key in v.OPERAND_OPTIONS:
        if key in call.options:
            operands[f"options.{key}"] = shape_of(f"options.{key}", call.options[key])
    return None if any(s is None for s in operands.values()) else operands


def _data_types(call: _Call, operands: dict, types: dict) -> None:
    """The input's dataType one of the tensor limits', and every other operand's the input's."""
    kind = types[call.args["input"]]
    if kind not in v.DATA_TYPES:
        call.bad("input", f"dataType {kind!r} is not float32 or float16 (the tensor limits table)")
    for key in operands:
        name = call.args.get(key) if not key.startswith("options.") else call.options[key[8:]]
        if types.get(name) != kind:
            call.bad(key, f"dataType {types.get(name)!r} is not the input's {kind!r} ('same as input')")


def _ranks(call: _Call, operands: dict) -> bool:
    """Each operand argument of the rank its op allows; False when the input or a weight is not
    (the shapes checks then cannot read them)."""
    rank = 2 if call.cell else 3
    for key in ("input", "weight", "recurrentWeight") + (("hiddenState",) if call.cell else ()) + \
            (("cellState",) if call.op == "lstmCell" else ()):
        if len(operands[key]) != rank:
            call.bad(key, f"rank {len(operands[key])}, but its allowed rank is {rank}")
    return not any(len(operands[k]) != rank for k in ("input", "weight", "recurrentWeight"))


def _shapes(call: _Call, operands: dict, hidden: int) -> tuple[int, int]:
    """hiddenSize's dimensions, the direction, steps, and every operand's shape against the one the
    input, hiddenSize and direction give; returns the number of directions and the batch size."""
    gates = v.GATES[call.onnx_op]
    if not (0 < hidden * 2 * gates <= MAX_DIMENSION):
        call.bad("hiddenSize", f"hiddenSize * {2 * gates} = {hidden * 2 * gates} is not a valid dimension "
                 "(a positive integer below 2^31)")
    direction = call.options.get("direction", "forward")
    if not call.cell and direction not in v.DIRECTIONS:
        call.bad("options.direction", f"{direction!r} is not an MLRecurrentNetworkDirection")
    d = 2 if direction == "both" else 1
    if call.cell:
        batch, inputs = operands["input"]
        lead = []
    else:
        steps = call.args["steps"]
        if not isinstance(steps, int) or steps <= 0:
            call.bad("steps", f"{steps!r}: 'If steps is 0, then throw a TypeError'")
        steps_given, batch, inputs = operands["input"]
        if steps_given != steps:
            call.bad("input", f"shape[0] = {steps_given} is not steps = {steps}")
        lead = [d]
    expect = {"weight": lead + [gates * hidden, inputs], "recurrentWeight": lead + [gates * hidden, hidden],
              "options.bias": lead + [gates * hidden], "options.recurrentBias": lead + [gates * hidden],
              "options.peepholeWeight": lead + [3 * hidden],
              "options.initialHiddenState": [d, batch, hidden], "options.initialCellState": [d, batch, hidden],
              "hiddenState": [batch, hidden], "cellState": [batch, hidden]}
    for key, shape in operands.items():
        if key in expect and shape != expect[key]:
            call.bad(key, f"shape {shape} is not {expect[key]}")
    return d, batch


def _layout_and_activations(call: _Call) -> None:
    """options.layout one of the op's weight layouts; options.activations as many as the op takes,
    each an MLRecurrentNetworkActivation."""
    onnx_op = call.onnx_op
    layout = call.options.get("layout", v.DEFAULT_LAYOUT[onnx_op])
    if layout not in v.LAYOUTS[onnx_op]:
        call.bad("options.layout",
                 f"{layout!r} is not an {'MLGruWeightLayout' if onnx_op == 'GRU' else 'MLLstmWeightLayout'}")
    activations = call.options.get("activations")
    if activations is not None:
        k = v.FUNCTIONS[onnx_op]
        if len(activations) != k:
            call.bad("options.activations", f"its size is {len(activations)}, not {k}")
        outside = [a for a in activations if a not in v.ENUM_ACTIVATIONS.values()]
        if outside:
            call.bad("options.activations", f"{outside} are not MLRecurrentNetworkActivation values")
