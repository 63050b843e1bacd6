"""WebNN conformance tests in the shape of web-platform-tests' ``webnn/conformance_tests`` (a graph of
named inputs, operator calls with named arguments, expected outputs), each expected output with
its ULP budget derived from the suite's tolerance.

One test per case, from the WebNN graph document the suite runs (conformance/specs/webnn/)::

    {"name": "...", "graph": {
        "inputs":   {"X": {"data": [...], "descriptor": {"shape": [...], "dataType": "float32"}},
                     "W": {"data": [...], "descriptor": {...}, "constant": true}, ...},
        "operators": [{"name": "gru", "arguments": [{"input": "X"}, {"weight": "W"}, ...,
                                                    {"options": {...}}], "outputs": ["gru.Y_h"]}],
        "expectedOutputs": {"gru.Y_h": {"data": [...], "descriptor": {...}}}},
     "tolerance": {"gru.Y_h": {"metricType": "ULP", "value": 3}},
     "source": {...}}

An expected value is the oracle's exact value rounded to the data type. Each element's ULP budget
is the distance, in representable values of the data type, from it to the farther edge of the
element's allowed interval (the suite's derived tolerance around the exact value): ``perElement``
(C order, -1 where the spec leaves the element unspecified; up to 4096 elements) is the suite's own
judgement, and ``value``, their largest, the one budget a WPT-style harness applies to the whole
output (so it passes whatever the suite passes, and may pass more near zero, where an absolute
error spans many representable values). ``conformance/export/wpt_harness.html`` runs such a file in a browser.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from conformance.export.onnx_node import ELEMENTWISE_LIMIT
from conformance.specs.webnn import vocabulary as v

#: numpy's unsigned integer view of each data type, for distances in representable values
BITS = {"float32": (np.float32, np.int32), "float16": (np.float16, np.int16)}


def _values(operand: dict) -> list:
    array = np.frombuffer(base64.b64decode(operand["data"]), dtype=v.NUMPY[operand["dataType"]])
    return [float(x) for x in array]


def _ordered(value: np.ndarray, kind) -> np.ndarray:
    """Floats as integers ordered like the floats (distance = representable values in between)."""
    bits = np.ascontiguousarray(value).view(kind).astype(np.int64)
    top = np.int64(1) << (8 * np.dtype(kind).itemsize - 1)
    return np.where(bits < 0, -(bits + top), bits)


def ulp_budgets(expected: np.ndarray, allowed: np.ndarray, dtype: str) -> np.ndarray:
    """Per element, the number of representable values of ``dtype`` between the expected value
    (rounded to ``dtype``) and the farther edge of its allowed interval; -1 where the element is not
    judged (unspecified: allowed is inf)."""
    ftype, itype = BITS[dtype]
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(allowed, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(e)
    with np.errstate(over="ignore", invalid="ignore"):
        centre = np.where(keep, e, 0.0).astype(ftype)
        lo = np.where(keep, e - a, 0.0).astype(ftype)
        hi = np.where(keep, e + a, 0.0).astype(ftype)
    c = _ordered(centre, itype)
    budget = np.maximum(_ordered(hi, itype) - c, c - _ordered(lo, itype))
    return np.where(keep, budget, -1)


def _argument_objects(op: str, args: list, options: dict) -> list:
    names = v.ARGUMENTS.get(op, ("input",))
    out = [{name: value} for name, value in zip(names, args)]
    return out + ([{"options": options}] if options else [])


def wpt_test(document: dict, vectors, program, dtype: str) -> dict:
    """One WPT-style test from a WebNN graph document and the case's vectors."""
    from conformance.export.vectors import program_layout
    inputs = {}
    for name, operand in document["operands"].items():
        entry: dict = {"data": _values(operand),
                       "descriptor": {"shape": operand["shape"], "dataType": operand["dataType"]}}
        if operand["kind"] == "constant":
            entry["constant"] = True
        inputs[name] = entry
    operators = []
    for call in document["operations"]:
        operators.append({"name": call["op"], "arguments": _argument_objects(call["op"], call["args"],
                                                                               call.get("options") or {}),
                          "outputs": call["outputs"] if len(call["outputs"]) > 1 else call["outputs"][0]})
    expected, tolerance, seen = {}, {}, set()
    for out, (_, canonical) in zip(document["outputs"], program.outputs):
        operand = out["operand"]
        if operand in seen:      # a cell's Y and Y_h are one operand
            continue
        seen.add(operand)
        vec = vectors.outputs[canonical]
        value, _ = program_layout(program, canonical, vec.rounded(dtype))
        allowed, _ = program_layout(program, canonical, vec.allowed)
        exact, _ = program_layout(program, canonical, vec.expected)
        shape = _operand_shape(document, operand, value)
        expected[operand] = {"data": [float(x) for x in value.ravel()],
                             "descriptor": {"shape": shape, "dataType": v.DATA_TYPES[dtype]}}
        budgets = ulp_budgets(exact.ravel(), allowed.ravel(), dtype)
        tolerance[operand] = {"metricType": "ULP", "value": int(max(budgets.max(initial=0), 0))}
        if budgets.size <= ELEMENTWISE_LIMIT:   # the suite's own judgement, element by element
            tolerance[operand]["perElement"] = [int(b) for b in budgets]
    return {"name": f"{vectors.case.id} ({program.spec})",
            "graph": {"inputs": inputs, "operators": operators, "expectedOutputs": expected},
            "tolerance": tolerance,
            "source": {"case": vectors.case.id, "spec": program.spec, "reading": vectors.reading,
                       "derivation": vectors.tolerance.get("source", ""),
                       "budget": "the most representable values between the expected value and the edge of "
                                 "the suite's allowed error (derived bound plus the rounding) over the elements"}}


def _operand_shape(document: dict, operand: str, value: np.ndarray) -> list:
    """An output operand's shape: a cell's outputs are [batch, hidden], the canonical arrays have the
    leading unit axes of a sequence's."""
    for call in document["operations"]:
        if operand in call["outputs"] and call["op"] in v.CELL_OPS:
            return [int(s) for s in value.shape[-2:]]
    return [int(s) for s in value.shape]


def write(tests: list[dict], path) -> None:
    """The tests as one JSON file (an array, as WPT's test files hold them)."""
    from pathlib import Path
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(tests, indent=1) + "\n")
