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


def _recurrent(op: str, call: dict, shapes: dict, types: dict, found: list) -> list:
    """Check one gru/gruCell/lstm/lstmCell call; returns its output shapes (as far as they follow)."""
    args = dict(zip(v.ARGUMENTS[op], call["args"]))
    options = call.get("options", {})
    onnx_op = v.OP_OF[op]
    gates = v.GATES[onnx_op]

    def bad(argument: str, message: str) -> None:
        found.append(Violation(op, argument, message))

    def shape_of(argument: str, name) -> list | None:
        if name not in shapes:
            bad(argument, f"names {name!r}, which is no operand")
            return None
        return shapes[name]

    # None marks an unknown operand, and stops the checks below before any shape is read
    operands: dict[str, Any] = {k: shape_of(k, args[k]) for k in v.ARGUMENTS[op] if k not in ("steps", "hiddenSize")}
    for key in v.OPERAND_OPTIONS:
        if key in options:
            operands[f"options.{key}"] = shape_of(f"options.{key}", options[key])
    if any(s is None for s in operands.values()):
        return []
    kind = types[args["input"]]
    if kind not in v.DATA_TYPES:
        bad("input", f"dataType {kind!r} is not float32 or float16 (the tensor limits table)")
    for key in operands:
        name = args.get(key) if not key.startswith("options.") else options[key[8:]]
        if types.get(name) != kind:
            bad(key, f"dataType {types.get(name)!r} is not the input's {kind!r} ('same as input')")
    hidden = args["hiddenSize"]
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 0 or hidden > 2 ** 32 - 1:
        bad("hiddenSize", f"{hidden!r} is not an unsigned long ([EnforceRange])")
        return []
    cell = op in v.CELL_OPS
    rank = 2 if cell else 3
    for key in ("input", "weight", "recurrentWeight") + (("hiddenState",) if cell else ()) + \
            (("cellState",) if op == "lstmCell" else ()):
        if len(operands[key]) != rank:
            bad(key, f"rank {len(operands[key])}, but its allowed rank is {rank}")
    if any(len(operands[k]) != rank for k in ("input", "weight", "recurrentWeight")):
        return []
    if not (0 < hidden * 2 * gates <= MAX_DIMENSION):
        bad("hiddenSize", f"hiddenSize * {2 * gates} = {hidden * 2 * gates} is not a valid dimension "
            "(a positive integer below 2^31)")
    direction = options.get("direction", "forward")
    if not cell and direction not in v.DIRECTIONS:
        bad("options.direction", f"{direction!r} is not an MLRecurrentNetworkDirection")
    d = 2 if direction == "both" else 1
    if cell:
        batch, inputs = operands["input"]
        lead = []
    else:
        steps = args["steps"]
        if not isinstance(steps, int) or steps <= 0:
            bad("steps", f"{steps!r}: 'If steps is 0, then throw a TypeError'")
        steps_given, batch, inputs = operands["input"]
        if steps_given != steps:
            bad("input", f"shape[0] = {steps_given} is not steps = {steps}")
        lead = [d]
    expect = {"weight": lead + [gates * hidden, inputs], "recurrentWeight": lead + [gates * hidden, hidden],
              "options.bias": lead + [gates * hidden], "options.recurrentBias": lead + [gates * hidden],
              "options.peepholeWeight": lead + [3 * hidden],
              "options.initialHiddenState": [d, batch, hidden], "options.initialCellState": [d, batch, hidden],
              "hiddenState": [batch, hidden], "cellState": [batch, hidden]}
    for key, shape in operands.items():
        if key in expect and shape != expect[key]:
            bad(key, f"shape {shape} is not {expect[key]}")
    layout = options.get("layout", v.DEFAULT_LAYOUT[onnx_op])
    if layout not in v.LAYOUTS[onnx_op]:
        bad("options.layout",
            f"{layout!r} is not an {'MLGruWeightLayout' if onnx_op == 'GRU' else 'MLLstmWeightLayout'}")
    activations = options.get("activations")
    if activations is not None:
        k = v.FUNCTIONS[onnx_op]
        if len(activations) != k:
            bad("options.activations", f"its size is {len(activations)}, not {k}")
        outside = [a for a in activations if a not in v.ENUM_ACTIVATIONS.values()]
        if outside:
            bad("options.activations", f"{outside} are not MLRecurrentNetworkActivation values")
    if cell:
        return [[batch, hidden]] * (2 if op == "lstmCell" else 1)
    outs = [[d, batch, hidden]] * (2 if op == "lstm" else 1)
    if options.get("returnSequence"):
        outs.append([args["steps"], d, batch, hidden])
    return outs
