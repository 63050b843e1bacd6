"""ONNX translator: a canonical case as a ModelProto of RNN/GRU/LSTM at opset 7, 14 or 22.

X, sequence_lens, initial_h and initial_c are graph inputs; W, R, B and P are initializers, as in
exported models. Absent optional inputs are empty input names.

Two program forms (conformance/runtimes/forms.py): ``shape=dynamic`` writes the batch and sequence
dimensions of the inputs and outputs as ``dim_param`` (``batch_size``, ``seq_length``), as exporters
with dynamic axes do; ``weights=inputs`` moves W, R, B and P from the initializers to graph inputs
fed at run time, as ONNX's own node tests feed them.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conformance.case.model import Case
from conformance.case.vocabulary import INPUTS, OUTPUTS, output_shapes
from conformance.specs.program import LAYOUT1_TO_CANONICAL, NotExpressible, Program, foreign_attributes

VERSIONS = (7, 14, 22)
GRAPH_INPUTS = ("X", "sequence_lens", "initial_h", "initial_c")
#: the graph inputs whose layout 1 is batch-major
LAYOUT_INPUTS = ("X", "initial_h", "initial_c")

ELEM_TYPE = {
    "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
    "float64": TensorProto.DOUBLE, "bfloat16": TensorProto.BFLOAT16,
}
#: the float types each operator version admits (ONNX RNN/GRU/LSTM type constraint T)
TYPES = {
    7: ("float16", "float32", "float64"),
    14: ("float16", "float32", "float64"),
    22: ("bfloat16", "float16", "float32", "float64"),
}


#: the symbolic dimensions of ``shape=dynamic``
DYNAMIC_DIMS = {"S": "seq_length", "B": "batch_size"}
WEIGHTS = ("W", "R", "B", "P")


class OnnxSpec:
    family = "onnx"
    format = "onnx"
    semantics = "onnx"
    #: the program forms this family writes (conformance/runtimes/forms.py)
    forms = {"shape": ("dynamic",), "weights": ("inputs",)}

    def __init__(self, version: int):
        self.version = version
        self.name = f"onnx-{version}"

    def __repr__(self) -> str:
        return f"OnnxSpec({self.version})"

    def write(self, program: Program, folder) -> None:
        path = folder / f"{self.name}.onnx"
        path.write_bytes(program.model)
        program.files["model"] = str(path)

    def clause(self, case: Case) -> str:
        return f"ONNX {case.op}-{self.version}"

    def expressible(self, case: Case) -> str | None:
        """The reason this version cannot express the case, or None."""
        if case.valid and case.layout == 1 and self.version < 14:
            return f"layout=1 needs ONNX {case.op}-14 or later (opset {self.version} has no layout attribute)"
        if case.dtype not in TYPES[self.version]:
            return (f"{case.dtype} is not among ONNX {case.op}-{self.version}'s types "
                    f"{list(TYPES[self.version])}" + (" (bfloat16 from opset 22)" if case.dtype == "bfloat16" else ""))
        return None

    def translate(self, case: Case, form: dict | None = None) -> Program | NotExpressible:
        form = form or {}
        reason = foreign_attributes(self, case) or self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        notes = []
        if case.form == "cell":
            notes.append(f"cell form: ONNX has no cell op; {case.op} sequence op with seq_length 1")
        layout = case.layout
        feeds, initializers, inputs = {}, [], []
        node_inputs = []
        for name in INPUTS[case.op]:
            arr = case.tensors.get(name)
            if arr is None:
                node_inputs.append("")
                continue
            node_inputs.append(name)
            if name in GRAPH_INPUTS or (name in WEIGHTS and form.get("weights") == "inputs"):
                if layout == 1 and name in LAYOUT_INPUTS and arr.ndim == 3:
                    arr = np.ascontiguousarray(np.transpose(arr, (1, 0, 2)))
                feeds[name] = arr
                inputs.append(helper.make_tensor_value_info(name, _elem(arr, case), list(arr.shape)))
            else:
                initializers.append(_initializer(name, arr, case))
        while node_inputs and node_inputs[-1] == "":
            node_inputs.pop()

        wanted = case.outputs or OUTPUTS[case.op]
        node_outputs = [n if n in wanted else "" for n in OUTPUTS[case.op]]
        while node_outputs and node_outputs[-1] == "":
            node_outputs.pop()
        shapes = self._output_shapes(case)
        if form.get("shape") == "dynamic":
            inputs = [_symbolic(v, case) for v in inputs]
            shapes = {n: _dims(n, s, case) for n, s in shapes.items()}
            notes.append("shape=dynamic: the batch and sequence dimensions of X, the states, sequence_lens and the "
                         "outputs written as dim_param batch_size and seq_length")
        if form.get("weights") == "inputs":
            notes.append("weights=inputs: " + ", ".join(n for n in WEIGHTS if n in feeds)
                         + " are graph inputs fed at run time, not initializers")
        outputs = [helper.make_tensor_value_info(n, ELEM_TYPE[case.dtype], shapes.get(n)) for n in node_outputs if n]

        node = helper.make_node(case.op, node_inputs, node_outputs, name=f"{case.op.lower()}0",
                                **self._attributes(case))
        graph = helper.make_graph([node], "case", inputs, outputs, initializer=initializers)
        graph.doc_string = case.id
        opset = helper.make_opsetid("", self.version)
        model = helper.make_model(graph, opset_imports=[opset], producer_name="rnn-conformance",
                                  ir_version=max(4, helper.find_min_ir_version_for([opset])))
        if case.valid:
            try:
                onnx.checker.check_model(model, full_check=True)
            except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
                notes.append(f"onnx.checker rejected the model: {str(exc).splitlines()[0]}")
        return Program(spec=self.name, format="onnx", model=model.SerializeToString(), feeds=feeds,
                       outputs=[(n, n) for n in node_outputs if n], notes=notes,
                       transforms=LAYOUT1_TO_CANONICAL if layout == 1 else {})

    def _attributes(self, case: Case) -> dict:
        attrs = dict(case.attributes)
        if self.version < 14 and attrs.get("layout") == 0:
            attrs.pop("layout")  # layout 0 is what every earlier version computes
        return attrs

    def _output_shapes(self, case: Case) -> dict:
        if not case.valid:
            return {}
        shapes = output_shapes(case.op, case.hidden_size, case.direction, case.shape)
        if case.layout == 1:
            s, d, b, h = shapes["Y"]
            shapes = {k: ((b, s, d, h) if k == "Y" else (b, d, h)) for k in shapes}
        return {k: list(v) for k, v in shapes.items()}


def _positions(name: str, rank: int, case: Case) -> dict[int, str]:
    """Which axes of a graph input or output are the sequence (S) and batch (B) dimensions, in the
    program's layout: {axis: "S" | "B"} (none where the rank is not the spec's)."""
    layout1 = case.layout == 1
    if name == "sequence_lens":
        return {0: "B"} if rank == 1 else {}
    if name == "X":
        return ({0: "B", 1: "S"} if layout1 else {0: "S", 1: "B"}) if rank == 3 else {}
    if name in ("initial_h", "initial_c", "Y_h", "Y_c"):
        return ({0: "B"} if layout1 else {1: "B"}) if rank == 3 else {}
    if name == "Y":
        return ({0: "B", 1: "S"} if layout1 else {0: "S", 2: "B"}) if rank == 4 else {}
    return {}


def _dims(name: str, shape, case: Case):
    """A shape with its batch and sequence axes symbolic (only where the case's own size stands there:
    an invalid case's deliberately wrong dimension stays what it is)."""
    if shape is None:
        return None
    sizes = {"S": case.shape["seq_length"], "B": case.shape["batch_size"]}
    axes = _positions(name, len(shape), case)
    return [DYNAMIC_DIMS[axes[i]] if i in axes and dim == sizes[axes[i]] else dim for i, dim in enumerate(shape)]


def _symbolic(value_info: onnx.ValueInfoProto, case: Case) -> onnx.ValueInfoProto:
    """A graph input's value info with its batch and sequence dimensions as dim_param."""
    tensor = value_info.type.tensor_type
    shape = [d.dim_value for d in tensor.shape.dim]
    return helper.make_tensor_value_info(value_info.name, tensor.elem_type, _dims(value_info.name, shape, case))


def _elem(arr: np.ndarray, case: Case) -> int:
    return TensorProto.INT32 if arr.dtype == np.int32 else ELEM_TYPE[case.dtype]


def _initializer(name: str, arr: np.ndarray, case: Case) -> onnx.TensorProto:
    return numpy_helper.from_array(arr, name)  # ml_dtypes.bfloat16 arrays become BFLOAT16 tensors


SPECS = {f"onnx-{v}": OnnxSpec(v) for v in VERSIONS}
