"""OpenVINO in memory: the same native ops as the IR specs, built with OpenVINO's Python builders in
the runtime's worker and compiled directly, with no IR file in between.

Specs ``openvino-memory-opset5`` and ``openvino-memory-opset1`` name the same ops as
``openvino-opset5`` and ``openvino-opset1`` (:mod:`conformance.specs.openvino`) and share their
translation: shapes, gate order, folded bias, attributes. What differs is the carrier. The IR
serializer drops v0::LSTMCell's input 6 (P), so the IR specs mark non-zero peepholes
not-expressible; a model built in code keeps it, so here LSTMCell-1 carries P (reordered to its
f,i,o). LSTMSequence-1 is asked of opset1's own table (``NodeFactory("opset1")``), as a user would,
instead of being built as LSTMSequence-5 and relabelled.

The program is a recipe the worker builds from: ``{spec}.json`` (the op, its attributes, dtype and
outputs) and ``{spec}.npz`` (the Constants W, R, B and P; bfloat16 as its raw bits). A builder's
refusal at translation time cannot happen here (nothing is built in the judging process): the
worker raises it as the runtime's refusal, naming the builder (docs/engines.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import OUTPUTS
from conformance.specs.openvino import OpenVINOSpec, fed_weights, write_refusal
from conformance.specs.openvino.build import _attributes, _transforms, dynamic_sizes
from conformance.specs.openvino.expressible import _peephole_reason
from conformance.specs.openvino.inputs import _inputs
from conformance.specs.openvino.vocabulary import (
    CELL_OUTPUTS,
    FEED_NAMES,
    OPSETS,
    SEQUENCE_OUTPUTS,
)
from conformance.specs.program import NotExpressible, Program

FORMAT = "openvino-model"


class OpenVINOMemorySpec(OpenVINOSpec):
    format = FORMAT

    def __init__(self, opset: int):
        super().__init__(opset)
        self.name = f"openvino-memory-opset{opset}"

    def __repr__(self) -> str:
        return f"OpenVINOMemorySpec({self.opset})"

    def peephole_reason(self, op: str, case: Case) -> str | None:
        """v0::LSTMCell takes P as input 6 when built in code; the other ops have no peephole input."""
        return None if op == "LSTMCell-1" else _peephole_reason(op, case)

    def write(self, program: Program, folder) -> None:
        """``{spec}.json`` (the recipe) + ``{spec}.npz`` (the Constants); a refused program as
        ``{spec}.build-error.txt``, as the IR specs write it."""
        folder = Path(folder)
        if write_refusal(self.name, program, folder):
            return
        recipe, constants = folder / f"{self.name}.json", folder / f"{self.name}.npz"
        recipe.write_bytes(program.model)
        arrays: dict[str, np.ndarray] = {k: _raw(v) for k, v in program.extra["constants"].items()}
        with constants.open("wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # the stubs type **kwds as allow_pickle
        program.files["model"] = str(recipe)
        program.files["constants"] = str(constants)

    def translate(self, case: Case, form: dict | None = None) -> Program | NotExpressible:
        started = self._start(case)
        if isinstance(started, NotExpressible):
            return started
        op, notes, refused = started
        if refused is not None:
            return refused
        form = form or {}
        inputs = fed_weights(_inputs(op, case, notes, peepholes=True), form, notes)
        attrs = _attributes(op, case, notes)
        wanted = list(case.outputs or OUTPUTS[case.op])
        names = CELL_OUTPUTS if case.form == "cell" else SEQUENCE_OUTPUTS
        outputs = [(names[c], c) for c in OUTPUTS[case.op] if c in wanted]
        recipe = {"op": op, "case_op": case.op, "form": case.form, "dtype": case.dtype, "wanted": wanted,
                  "attrs": attrs, "name": case.id, "constants": f"{self.name}.npz",
                  "dynamic": dynamic_sizes(case) if form.get("shape") == "dynamic" else None,
                  "shapes": {k: list(v.shape) for k, v in inputs["feeds"].items()}}
        if recipe["dynamic"]:
            notes.append("shape=dynamic: the batch and sequence dimensions of the Parameters built as -1")
        notes.append(f"{op} built in memory with OpenVINO's Python builders in the runtime's process and "
                     f"compiled directly (no IR written or read)")
        if op == "LSTMSequence-1":
            notes.append("LSTMSequence-1 asked of opset1's own table (NodeFactory('opset1')), as code building "
                         "the model would")
        constants = {k: inputs[k] for k in ("W", "R", "B", "P") if k in inputs}
        feeds = {FEED_NAMES.get(k, k): v for k, v in inputs["feeds"].items()}
        return Program(spec=self.name, format=self.format, model=json.dumps(recipe, indent=1).encode(),
                       feeds=feeds, outputs=outputs, notes=notes, extra={"constants": constants, "op": op},
                       transforms=_transforms(case, wanted))


def _raw(arr: np.ndarray) -> np.ndarray:
    """An array numpy's npz can hold: bfloat16 (ml_dtypes) as its 16 raw bits."""
    return arr.view(np.uint16) if arr.dtype.name == "bfloat16" else arr


def load_constants(path, dtype: str) -> dict:
    """The Constants of a recipe, as written by :meth:`OpenVINOMemorySpec.write`."""
    with np.load(path) as data:
        found = {k: np.array(data[k]) for k in data.files}
    if dtype == "bfloat16":
        import ml_dtypes
        found = {k: v.view(ml_dtypes.bfloat16) for k, v in found.items()}
    return found


SPECS = {f"openvino-memory-opset{v}": OpenVINOMemorySpec(v) for v in OPSETS}
