"""DirectML translator: a canonical case as a DML_RNN/GRU/LSTM_OPERATOR_DESC, written as a JSON
document that mirrors the C structs field for field, plus one raw little-endian buffer per bound
input tensor.

The document (``<spec>.json``)::

    {"schema": ..., "FeatureLevel": "DML_FEATURE_LEVEL_1_0", "case": <case id>,
     "OperatorDesc": {"Type": "DML_OPERATOR_GRU", "Desc": {<every DML_GRU_OPERATOR_DESC field>}},
     "bindings": {<tensor field>: {"kind": "input"|"output", "index": <binding slot>,
                                   "file": <buffer file, relative>, "bytes": <range size>} | null},
     "notes": [...]}

A tensor field is ``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {DataType, Flags, DimensionCount,
Sizes, Strides, TotalTensorSizeInBytes, GuaranteedBaseOffsetAlignment}}`` or null (an absent optional
tensor); Strides are always explicit. Activation descs are ``{"Type": "DML_OPERATOR_ACTIVATION_*",
"Desc": {"InputTensor": null, "OutputTensor": null, <its parameters>}}``. BOOL fields are 0 or 1.
Input files hold exactly TotalTensorSizeInBytes bytes; output files are where a harness writes.

Every tensor, X and the initial states included, is in a buffer: the program needs no feeds.
Tensor Sizes come from the case's tensors as they are (a wrongly shaped input of an invalid case
becomes a wrongly sized desc, which validation rejects); output Sizes come from the attributes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

import conformance.specs.directml.vocabulary as v
from conformance.case.model import Case
from conformance.case.vocabulary import OUTPUTS, canonical_activation, num_directions
from conformance.specs.directml.buffers import (
    calc_buffer_tensor_size,
    packed_strides,
    tensor_bytes,
)
from conformance.specs.program import NotExpressible, Program, foreign_attributes

FOREIGN = {"RNN": ("linear_before_reset", "input_forget"), "GRU": ("input_forget",),
           "LSTM": ("linear_before_reset",)}
FOREIGN_FIELD = {"linear_before_reset": "LinearBeforeReset (DML_GRU_OPERATOR_DESC only)",
                 "input_forget": "CoupleInputForget (DML_LSTM_OPERATOR_DESC only)"}

#: layout 1 keeps these batch-major in their buffers: buffer axis order (of the 4-D Sizes)
BATCH_MAJOR = {"X": (0, 2, 1, 3), "initial_h": (0, 2, 1, 3), "initial_c": (0, 2, 1, 3),
               "Y": (2, 0, 1, 3), "Y_h": (0, 2, 1, 3), "Y_c": (0, 2, 1, 3)}


class DirectMLSpec:
    family = "directml"
    format = "directml"
    semantics = "directml"
    name = "directml-fl1_0"

    def __repr__(self) -> str:
        return "DirectMLSpec('fl1_0')"

    def clause(self, case: Case) -> str:
        return f"{v.STRUCT.get(case.op, case.op)} ({v.FEATURE_LEVEL})"

    # -- what DirectML cannot say -------------------------------------------------------------

    def expressible(self, case: Case) -> str | None:
        """The reason DirectML cannot express the case, or None."""
        if case.dtype == "float64":
            return (f"float64: {v.STRUCT[case.op]} takes FLOAT32 or FLOAT16 tensors only (its "
                    "'Tensor support' table)")
        if case.dtype not in v.DATA_TYPE:
            return (f"{case.dtype}: DirectML has no {case.dtype} DML_TENSOR_DATA_TYPE, and "
                    f"{v.STRUCT[case.op]} takes FLOAT32 or FLOAT16 tensors only")
        if case.attributes.get("clip") is not None and case.op != "LSTM":
            return (f"clip: {v.STRUCT[case.op]} has no clip; ClipThreshold/UseClipThreshold exist "
                    "in DML_LSTM_OPERATOR_DESC only")
        for attr in FOREIGN[case.op]:
            if attr in case.attributes:
                return (f"{attr}: {v.STRUCT[case.op]} has no such field; its counterpart is "
                        f"{FOREIGN_FIELD[attr]}")
        if case.layout not in (0, 1):
            return (f"layout={case.layout!r}: DirectML has no layout field; only ONNX's layouts 0 "
                    "and 1 have a DirectML arrangement (through Strides)")
        hidden = case.attributes.get("hidden_size")
        if isinstance(hidden, int) and hidden < 0:
            return (f"hidden_size={hidden}: DirectML has no hidden_size field; it sizes the outputs "
                    "{.., hidden_size}, and Sizes are UINT, which cannot hold a negative size")
        return None

    # -- translation --------------------------------------------------------------------------

    def translate(self, case: Case) -> Program | NotExpressible:
        reason = foreign_attributes(self, case) or self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        notes = []
        if case.form == "cell":
            notes.append(f"cell form: DirectML has no cell op; {v.STRUCT[case.op]} with seq_length 1")
        op, data_type = case.op, v.DATA_TYPE[case.dtype]
        d = num_directions(case.direction)
        hidden = self._hidden_size(case, notes)
        activations = self._activations(case, d, notes)
        if isinstance(activations, NotExpressible):
            return activations
        if case.layout == 1:
            notes.append("layout=1: DirectML has no layout field; X, the initial states and the "
                         "outputs stay batch-major in their buffers and their Strides say so "
                         "(X buffer [B,S,I], Y buffer [B,S,D,H], states [B,D,H])")

        fields: dict[str, Any] = {}  # the operator desc's fields, as JSON
        buffers: dict[str, bytes] = {}
        bindings: dict[str, dict[str, Any] | None] = {}
        for index, field in enumerate(v.INPUT_FIELDS[op]):
            name = v.CANONICAL_OF_FIELD[field]
            array = case.tensors.get(name)
            if array is None:
                fields[field] = bindings[field] = None
                continue
            array = np.asarray(array)
            if name == "sequence_lens":
                array = self._lengths(array, notes)
                tensor_type = v.UINT32
            else:
                tensor_type = data_type
            sizes = [1] * v.LEADING_ONES[name] + list(array.shape)
            strides = self._strides(name, sizes, case)
            fields[field] = _tensor_desc(tensor_type, sizes, strides)
            total = fields[field]["Desc"]["TotalTensorSizeInBytes"]
            buffers[field] = tensor_bytes(array.reshape(sizes), tensor_type, strides, total)
            bindings[field] = {"kind": "input", "index": index, "file": self._file(field), "bytes": total}

        shapes = self._output_sizes(case, d, hidden)
        wanted = case.outputs or OUTPUTS[op]
        outputs, transforms = [], {}
        for index, field in enumerate(v.OUTPUT_FIELDS[op]):
            name = v.CANONICAL_OF_FIELD[field]
            if name not in wanted:
                fields[field] = bindings[field] = None
                continue
            sizes = shapes[name]
            strides = self._strides(name, sizes, case)
            fields[field] = _tensor_desc(data_type, sizes, strides)
            bindings[field] = {"kind": "output", "index": index, "file": self._file(field, "out.bin"),
                               "bytes": fields[field]["Desc"]["TotalTensorSizeInBytes"]}
            outputs.append((field, name))
            if name != "Y":
                transforms[name] = {"reshape": list(sizes[1:])}

        fields["ActivationDescCount"] = len(activations)
        fields["ActivationDescs"] = activations
        fields["Direction"] = v.DIRECTION.get(case.direction, case.direction)
        if case.direction not in v.DIRECTION:
            notes.append(f"direction={case.direction!r} is not an ONNX direction: written as is, "
                         "which names no DML_RECURRENT_NETWORK_DIRECTION")
        if op == "GRU":
            fields["LinearBeforeReset"] = int(int(case.attributes.get("linear_before_reset", 0)) != 0)
        if op == "LSTM":
            self._lstm_fields(case, fields, notes)
        desc = {field: fields[field] for field in v.struct_fields(op)}
        document = {
            "schema": v.SCHEMA,
            "FeatureLevel": v.FEATURE_LEVEL,
            "case": case.id,
            "OperatorDesc": {"Type": v.OPERATOR_TYPE[op], "Desc": desc},
            "bindings": {f: bindings[f] for f in v.INPUT_FIELDS[op] + v.OUTPUT_FIELDS[op]},
            "notes": notes,
        }
        model = _dumps(document).encode()
        return Program(spec=self.name, format=self.format, model=model, feeds={}, outputs=outputs,
                       notes=notes, extra={"buffers": buffers}, transforms=transforms)

    def write(self, program: Program, folder) -> None:
        """Write the descriptor document and its input buffers into ``folder``."""
        folder = Path(folder)
        path = folder / f"{self.name}.json"
        path.write_bytes(program.model)
        for field, data in program.extra["buffers"].items():
            (folder / self._file(field)).write_bytes(data)
            program.files[field] = str(folder / self._file(field))
        program.files["model"] = str(path)

    # -- pieces -------------------------------------------------------------------------------

    def _file(self, field: str, suffix: str = "bin") -> str:
        return f"{self.name}.{field}.{suffix}"

    def _hidden_size(self, case: Case, notes: list) -> int:
        if "hidden_size" in case.attributes:
            return int(case.attributes["hidden_size"])
        r = case.tensors.get("R")
        hidden = int(r.shape[-1]) if r is not None and r.ndim else 0
        notes.append(f"hidden_size not given: DirectML has no hidden_size field; the outputs are "
                     f"sized with R's last axis, {hidden}")
        return hidden

    def _strides(self, name: str, sizes: list, case: Case) -> list[int]:
        """Packed row-major strides, or layout 1's batch-major arrangement of the buffer."""
        if case.layout == 1 and name in BATCH_MAJOR and len(sizes) == 4:
            order = BATCH_MAJOR[name]  # buffer axes, outermost first, as indices into Sizes
            buffer_strides = packed_strides([sizes[a] for a in order])
            strides = [0] * 4
            for position, axis in enumerate(order):
                strides[axis] = buffer_strides[position]
            return strides
        return packed_strides(sizes)

    def _output_sizes(self, case: Case, d: int, hidden: int) -> dict:
        s, b = case.shape["seq_length"], case.shape["batch_size"]
        state = [1, d, b, hidden]
        return {"Y": [s, d, b, hidden], "Y_h": state, "Y_c": state}

    def _lengths(self, array: np.ndarray, notes: list) -> np.ndarray:
        array = array.astype(np.int32)
        if (array < 0).any():
            notes.append(f"sequence_lens {array.tolist()} has negative lengths: written as UINT32 "
                         f"bit for bit ({array.astype(np.uint32).tolist()}), as a converter "
                         "reinterpreting ONNX's int32 buffer would")
        return array

    def _activations(self, case: Case, d: int, notes: list):
        """The ActivationDescs, or NotExpressible when a parameter has no value to write."""
        k = v.functions_per_direction(case.op)
        given = case.attributes.get("activations")
        names = [canonical_activation(n) or str(n) for n in given] if given is not None else None
        if names is None:
            names = list({"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                          "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[case.op]) * d
        alphas = [float(x) for x in case.attributes.get("activation_alpha", [])]
        betas = [float(x) for x in case.attributes.get("activation_beta", [])]
        params = _popped(names, alphas, betas)
        if given is not None and (alphas or betas):
            notes.append("activation_alpha/activation_beta: each activation that takes a parameter "
                         "takes the next unused value, in list order (the 'popped' reading of "
                         "docs/disagreements.md#activation-parameter-order, as onnxruntime's DML EP reads them); "
                         "DirectML gives each ActivationDesc its own Alpha/Beta, so the reading is fixed here")
        if case.op == "RNN" and d == 1 and len(names) == 2 and names[0] == names[1]:
            notes.append(f"activations {names} for a one-direction RNN: the ONNX schema default is "
                         "['Tanh', 'Tanh'], so two equal names are one function")
            names, params = names[:1], params[:1]
        if d == 2 and len(names) == k:
            notes.append(f"activations {names} given for one direction: repeated for the backward "
                         "direction (DirectML takes one desc per gate function per direction)")
            names, params = names * 2, params * 2
        descs: list[dict[str, Any]] = []
        for index, (name, (alpha, beta)) in enumerate(zip(names, params)):
            if name not in v.ONNX_ACTIVATION:
                notes.append(f"activations[{index}] = {name!r} is not an ONNX activation and has no "
                             f"DML_ACTIVATION_* counterpart: written as {v.OPERATOR_INVALID}")
                descs.append({"Type": v.OPERATOR_INVALID, "Desc": None})
                continue
            dml_type, mapping = v.ONNX_ACTIVATION[name]
            desc: dict[str, float | None] = {"InputTensor": None, "OutputTensor": None}
            for field, source in mapping.items():
                if not isinstance(source, str):
                    desc[field] = float(np.float32(source))
                    continue
                value = alpha if source == "alpha" else beta
                if value is None:
                    default = v.PARAMETER_DEFAULTS.get((name, source))
                    if default is None:
                        return NotExpressible(self.name, (
                            f"activations[{index}] = {name} without activation_{source}: ONNX gives "
                            f"{name} no default and DML_ACTIVATION_LINEAR_OPERATOR_DESC documents "
                            f"none for {field}, so there is no value to write"))
                    value = default[0]
                    note = f"{name} {source} not given: {field} = {value} ({default[1]})"
                    if note not in notes:
                        notes.append(note)
                desc[field] = float(np.float32(value))
            descs.append({"Type": dml_type, "Desc": desc})
        used = set(names)
        if "ThresholdedRelu" in used:
            notes.append("ThresholdedRelu -> DML_ACTIVATION_THRESHOLDED_RELU, which passes x where "
                         "x > Alpha (the ONNX RNN docs write x >= alpha; "
                         "docs/disagreements.md#thresholdedrelu-boundary)")
        if "Softplus" in used:
            notes.append("Softplus -> DML_ACTIVATION_SOFTPLUS with Steepness 1: "
                         "ln(1 + exp(1*x)) / 1 = log(1 + e^x)")
        if "Affine" in used:
            notes.append("Affine -> DML_ACTIVATION_LINEAR (Alpha*x + Beta)")
        return descs

    def _lstm_fields(self, case: Case, fields: dict, notes: list) -> None:
        clip = case.attributes.get("clip")
        fields["ClipThreshold"] = float(np.float32(clip)) if clip is not None else 0.0
        fields["UseClipThreshold"] = int(clip is not None)
        if clip is not None:
            notes.append(f"clip {clip} -> ClipThreshold {fields['ClipThreshold']!r} (FLOAT), "
                         "UseClipThreshold TRUE; DirectML's equations clip the inputs of f and g, "
                         "not of h")
        fields["CoupleInputForget"] = int(int(case.attributes.get("input_forget", 0)) != 0)
        if fields["CoupleInputForget"]:
            notes.append("input_forget -> CoupleInputForget TRUE, which DirectML documents as "
                         "ft = 1 - it (docs/disagreements.md#input_forget)")


def _tensor_desc(data_type: str, sizes: list, strides: list) -> dict:
    return {"Type": v.TENSOR_TYPE_BUFFER, "Desc": {
        "DataType": data_type,
        "Flags": v.FLAG_NONE,
        "DimensionCount": len(sizes),
        "Sizes": [int(s) for s in sizes],
        "Strides": [int(s) for s in strides],
        "TotalTensorSizeInBytes": calc_buffer_tensor_size(data_type, sizes, strides),
        "GuaranteedBaseOffsetAlignment": 0,
    }}


def _dumps(document: dict) -> str:
    """Indented JSON with each list of numbers (Sizes, Strides) on one line."""
    text = json.dumps(document, indent=1)
    return re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def _popped(names, alphas, betas) -> list:
    """(alpha, beta) per activation: each parameterised one takes the next unused value."""
    out, ia, ib = [], 0, 0
    for name in names:
        uses_alpha, uses_beta = v.USES.get(name, (False, False))
        a = b = None
        if uses_alpha and ia < len(alphas):
            a, ia = alphas[ia], ia + 1
        if uses_beta and ib < len(betas):
            b, ib = betas[ib], ib + 1
        out.append((a, b))
    return out


SPEC = DirectMLSpec()
