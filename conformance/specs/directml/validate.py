"""A written DirectML descriptor against DirectML's documented constraints.

Validation reads the JSON document (and the sizes of its buffer files) back from disk; it never
sees the translator's Python objects. Each violation names its constraint (``CONSTRAINTS``: the
documented sentence it rests on), the field, the value, and what the value should be. A violation
is DirectML rejecting the program: the runtime adapters raise it as a refusal.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypeGuard

import conformance.specs.directml.vocabulary as v
from conformance.specs.directml.buffers import (
    UINT32_MAX,
    DescriptorError,
    calc_buffer_tensor_size,
    load_document,
)
from conformance.specs.directml.constraints import CONSTRAINTS, Violation


def validate(path) -> list[Violation]:
    """Read the descriptor document at ``path`` (and its buffer files' sizes) and check it."""
    path = Path(path)
    try:
        document = load_document(path)
    except DescriptorError as exc:
        return [Violation("document", str(path.name), str(exc))]
    return validate_document(document, path.parent)


def validate_document(document, folder=None) -> list[Violation]:
    """Check a descriptor document (as parsed from JSON). ``folder`` holds its buffer files;
    without it the files are not checked."""
    return _Checker(document, folder).run()


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_float(x: object) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class _Checker:
    def __init__(self, document, folder):
        self.document = document
        self.folder = None if folder is None else Path(folder)
        self.found: list[Violation] = []
        self.op = None
        self.desc = {}
        self.buffers = {}  # tensor field -> its DML_BUFFER_TENSOR_DESC, when well formed

    def flag(self, constraint: str, field: str, message: str) -> None:
        self.found.append(Violation(constraint, field, message))

    def run(self) -> list[Violation]:
        doc = self.document
        if not isinstance(doc, dict) or not isinstance(doc.get("OperatorDesc"), dict):
            self.flag("document", "OperatorDesc", "the document has no OperatorDesc object")
            return self.found
        op_desc = doc["OperatorDesc"]
        self.op = v.OP_OF_TYPE.get(op_desc.get("Type"))
        if self.op is None:
            self.flag("operator-type", "OperatorDesc.Type", f"OperatorDesc.Type = {op_desc.get('Type')!r}, "
                      f"but should be one of {sorted(v.OP_OF_TYPE)}")
            return self.found
        if not isinstance(op_desc.get("Desc"), dict):
            self.flag("document", "OperatorDesc.Desc", f"OperatorDesc.Desc should be a "
                      f"{v.STRUCT[self.op]} object")
            return self.found
        self.desc = op_desc["Desc"]
        self.struct_fields()
        self.tensors()
        self.data_types()
        self.sizes_agree()
        self.direction_and_activations()
        self.scalars()
        self.bindings(doc.get("bindings"))
        return self.found

    # -- the struct ---------------------------------------------------------------------------

    def struct_fields(self) -> None:
        expected = v.struct_fields(self.op)
        missing = [f for f in expected if f not in self.desc]
        extra = [f for f in self.desc if f not in expected]
        struct = v.STRUCT[self.op]
        if missing:
            self.flag("struct-fields", struct, f"{struct} lacks {', '.join(missing)}; every field "
                      f"should be present (null for an absent optional tensor)")
        if extra:
            self.flag("struct-fields", struct, f"{struct} has {', '.join(extra)}, which are not "
                      f"fields of {struct}")
        for field in v.REQUIRED_FIELDS:
            if field in self.desc and self.desc[field] is None:
                self.flag("required-tensor", field, f"{field} = null, but should be a tensor: "
                          f"{struct}.{field} is required")

    def tensor_fields(self):
        return v.INPUT_FIELDS[self.op] + v.OUTPUT_FIELDS[self.op]

    def tensors(self) -> None:
        for field in self.tensor_fields():
            tensor = self.desc.get(field)
            if tensor is None:
                continue
            if not isinstance(tensor, dict) or tensor.get("Type") != v.TENSOR_TYPE_BUFFER \
                    or not isinstance(tensor.get("Desc"), dict):
                kind = tensor.get("Type") if isinstance(tensor, dict) else tensor
                self.flag("tensor-type", f"{field}.Type", f"{field}.Type = {kind!r}, but should be "
                          f"{v.TENSOR_TYPE_BUFFER} with a DML_BUFFER_TENSOR_DESC")
                continue
            buf = tensor["Desc"]
            missing = [k for k in v.BUFFER_DESC_FIELDS if k not in buf]
            if missing:
                self.flag("tensor-type", f"{field}.Desc", f"{field}.Desc lacks {', '.join(missing)} "
                          f"of DML_BUFFER_TENSOR_DESC")
                continue
            if self.buffer_desc(field, buf):
                self.buffers[field] = buf

    def buffer_desc(self, field: str, buf: dict) -> bool:
        """Check one DML_BUFFER_TENSOR_DESC on its own; True when its Sizes/Strides are usable."""
        ok = True
        count, sizes, strides = buf["DimensionCount"], buf["Sizes"], buf["Strides"]
        if not isinstance(sizes, list) or not all(_is_int(s) for s in sizes):
            self.flag("sizes", f"{field}.Sizes", f"{field}.Sizes = {sizes!r}, but should be a list "
                      f"of UINT")
            return False
        if count != 4 or len(sizes) != 4:
            self.flag("dimension-count", f"{field}.DimensionCount",
                      f"{field}.DimensionCount = {count!r} with Sizes {sizes}, but should be 4 with "
                      f"4 sizes ({v.STRUCT[self.op]} 'Tensor support')")
            ok = False
        if strides is not None:
            if not isinstance(strides, list) or not all(_is_int(s) for s in strides):
                self.flag("sizes", f"{field}.Strides", f"{field}.Strides = {strides!r}, but should be "
                          f"null or a list of UINT")
                return False
            if len(strides) != len(sizes):
                self.flag("dimension-count", f"{field}.Strides", f"{field}.Strides has {len(strides)} "
                          f"entries, but should have DimensionCount = {len(sizes)}")
                return False
            if any(not 0 <= s <= UINT32_MAX for s in strides):
                self.flag("sizes", f"{field}.Strides", f"{field}.Strides = {strides}, but every stride "
                          f"should satisfy 0 <= stride <= {UINT32_MAX} (UINT)")
                ok = False
        bad = [s for s in sizes if not 1 <= s <= UINT32_MAX]
        if bad:
            self.flag("sizes", f"{field}.Sizes", f"{field}.Sizes = {sizes}, but every size should "
                      f"satisfy 1 <= size <= {UINT32_MAX} (a size of zero is invalid)")
            ok = False
        if buf["Flags"] != v.FLAG_NONE:
            flags = [f.strip() for f in str(buf["Flags"]).split("|")]
            unknown = [f for f in flags if f not in v.TENSOR_FLAGS]
            self.flag("tensor-flags", f"{field}.Flags", f"{field}.Flags = {buf['Flags']!r}, but should "
                      f"be {v.FLAG_NONE}: " + (f"{', '.join(unknown)} is not a DML_TENSOR_FLAGS value"
                                             if unknown else f"{field} doesn't support "
                                             f"{v.FLAG_OWNED_BY_DML}"))
        element = v.ELEMENT_SIZE.get(buf["DataType"])
        alignment = buf["GuaranteedBaseOffsetAlignment"]
        if not _is_int(alignment) or (alignment != 0 and (alignment & (alignment - 1)
                                                          or (element and alignment < element))):
            self.flag("base-alignment", f"{field}.GuaranteedBaseOffsetAlignment",
                      f"{field}.GuaranteedBaseOffsetAlignment = {alignment!r}, but should be 0 or a "
                      f"power of two >= the element size {element}")
        total = buf["TotalTensorSizeInBytes"]
        if not ok or element is None:
            return ok
        implied = calc_buffer_tensor_size(buf["DataType"], sizes, strides)
        if not _is_int(total) or total < implied:
            self.flag("total-size", f"{field}.TotalTensorSizeInBytes",
                      f"{field}.TotalTensorSizeInBytes = {total!r}, but should be >= {implied}, "
                      f"DMLCalcBufferTensorSize({buf['DataType']}, Sizes {sizes}, Strides {strides})")
            return False
        if total % 4:
            self.flag("total-size", f"{field}.TotalTensorSizeInBytes",
                      f"{field}.TotalTensorSizeInBytes = {total}, but should be a multiple of 4 "
                      f"(DWORD-aligned)")
        if total // element > UINT32_MAX:
            self.flag("element-count", f"{field}.TotalTensorSizeInBytes",
                      f"{field}.TotalTensorSizeInBytes = {total} holds {total // element} elements, but "
                      f"should hold at most {UINT32_MAX}")
        return ok

    def data_types(self) -> None:
        float_types = {}
        for field in self.tensor_fields():
            tensor = self.desc.get(field)
            if not isinstance(tensor, dict) or not isinstance(tensor.get("Desc"), dict):
                continue
            data_type = tensor["Desc"].get("DataType")
            if field == "SequenceLengthsTensor":
                if data_type != v.UINT32:
                    self.flag("data-type", f"{field}.DataType", f"{field}.DataType = {data_type!r}, "
                              f"but should be {v.UINT32}")
                continue
            if data_type not in v.FLOAT_TYPES:
                self.flag("data-type", f"{field}.DataType", f"{field}.DataType = {data_type!r}, but "
                          f"should be {v.FLOAT32} or {v.FLOAT16}")
                continue
            float_types[field] = data_type
        if len(set(float_types.values())) > 1:
            listing = ", ".join(f"{f} {t.removeprefix('DML_TENSOR_DATA_TYPE_')}" for f, t in float_types.items())
            self.flag("same-data-type", "DataType", f"the float tensors have different DataTypes "
                      f"({listing}), but should all have the same")

    # -- sizes across tensors -----------------------------------------------------------------

    def sizes_agree(self) -> None:
        sizes = {f: b["Sizes"] for f, b in self.buffers.items() if len(b["Sizes"]) == 4}
        g = v.gates(self.op)
        origin = []
        x = sizes.get("InputTensor")
        s = b = i = None
        if x is not None:
            s, b, i = x[1], x[2], x[3]
            origin.append("seq_length, batch_size, input_size from InputTensor.Sizes")
        d = v.NUM_DIRECTIONS.get(self.desc.get("Direction"))
        if d is not None:
            origin.append(f"num_directions {d} from Direction")
        h = None
        if "RecurrenceTensor" in sizes:
            h = sizes["RecurrenceTensor"][3]
            origin.append(f"hidden_size {h} from RecurrenceTensor.Sizes[3]")
        elif "OutputSingleTensor" in sizes:
            h = sizes["OutputSingleTensor"][3]
            origin.append(f"hidden_size {h} from OutputSingleTensor.Sizes[3]")
        state = ([1, d, b, h], "1, num_directions, batch_size, hidden_size")
        expected = {
            "InputTensor": ([1, s, b, i], "1, seq_length, batch_size, input_size"),
            "WeightTensor": ([1, d, None if h is None else g * h, i],
                             f"1, num_directions, {g}*hidden_size, input_size"),
            "RecurrenceTensor": ([1, d, None if h is None else g * h, h],
                                 f"1, num_directions, {g}*hidden_size, hidden_size"),
            "BiasTensor": ([1, 1, d, None if h is None else 2 * g * h], f"1, 1, num_directions, {2 * g}*hidden_size"),
            "HiddenInitTensor": state, "CellMemInitTensor": state,
            "SequenceLengthsTensor": ([1, 1, 1, b], "1, 1, 1, batch_size"),
            "PeepholeTensor": ([1, 1, d, None if h is None else 3 * h], "1, 1, num_directions, 3*hidden_size"),
            "OutputSequenceTensor": ([s, d, b, h], "seq_length, num_directions, batch_size, hidden_size"),
            "OutputSingleTensor": state, "OutputCellSingleTensor": state,
        }
        for field, got in sizes.items():
            want, formula = expected[field]
            if any(w is not None and w != g_ for w, g_ in zip(want, got)):
                shown = [("?" if w is None else w) for w in want]
                self.flag("tensor-sizes", f"{field}.Sizes", f"{field}.Sizes = {got}, but should be "
                          f"{shown} = {{{formula}}} ({'; '.join(origin)})")

    # -- scalars ------------------------------------------------------------------------------

    def direction_and_activations(self) -> None:
        direction = self.desc.get("Direction")
        d = v.NUM_DIRECTIONS.get(direction)
        if "Direction" in self.desc and d is None:
            self.flag("direction", "Direction", f"Direction = {direction!r}, but should be one of "
                      f"{list(v.NUM_DIRECTIONS)}")
        descs = self.desc.get("ActivationDescs")
        count = self.desc.get("ActivationDescCount")
        if not isinstance(descs, list):
            if "ActivationDescs" in self.desc:
                self.flag("activation-count", "ActivationDescs", f"ActivationDescs = {descs!r}, but "
                          f"should be an array of DML_OPERATOR_DESC")
            return
        k = v.functions_per_direction(self.op)
        if count != len(descs):
            self.flag("activation-count", "ActivationDescCount", f"ActivationDescCount = {count!r}, "
                      f"but ActivationDescs has {len(descs)} entries")
        if d is not None and len(descs) != k * d:
            self.flag("activation-count", "ActivationDescs", f"ActivationDescs has {len(descs)} "
                      f"descs, but {v.STRUCT[self.op]} with {direction} takes exactly {k * d} "
                      f"({k} per direction, forward first)")
        for index, act in enumerate(descs):
            self.activation(f"ActivationDescs[{index}]", act)

    def activation(self, where: str, act) -> None:
        kind = act.get("Type") if isinstance(act, dict) else None
        if kind not in v.ACTIVATION_PARAMETERS:
            names = ", ".join(sorted(t.removeprefix("DML_OPERATOR_ACTIVATION_") for t in v.ACTIVATION_PARAMETERS))
            self.flag("activation-desc", f"{where}.Type", f"{where}.Type = {kind!r}, but should be "
                      f"a DML_OPERATOR_ACTIVATION_* type ({names})")
            return
        params = v.ACTIVATION_PARAMETERS[kind]
        desc = act.get("Desc")
        if not isinstance(desc, dict):
            self.flag("activation-desc", f"{where}.Desc", f"{where}.Desc = {desc!r}, but should be a "
                      f"{kind.replace('DML_OPERATOR_', 'DML_')}_OPERATOR_DESC")
            return
        fields = ("InputTensor", "OutputTensor") + params
        missing = [f for f in fields if f not in desc]
        extra = [f for f in desc if f not in fields]
        if missing or extra:
            self.flag("activation-desc", f"{where}.Desc", f"{where}.Desc has fields {sorted(desc)}, "
                      f"but should have exactly {list(fields)}")
        for tensor in ("InputTensor", "OutputTensor"):
            if desc.get(tensor) is not None:
                self.flag("activation-desc", f"{where}.Desc.{tensor}", f"{where}.Desc.{tensor} = "
                          f"{desc[tensor]!r}, but should be null (an RNN's activations are fused)")
        for param in params:
            if param in desc and not _is_float(desc[param]):
                self.flag("activation-desc", f"{where}.Desc.{param}", f"{where}.Desc.{param} = "
                          f"{desc[param]!r}, but should be a finite FLOAT")
        steepness = desc.get("Steepness")
        if kind == "DML_OPERATOR_ACTIVATION_SOFTPLUS" and _is_float(steepness) and steepness < 1:
            self.flag("activation-parameter", f"{where}.Desc.Steepness", f"{where}.Desc.Steepness = "
                      f"{steepness!r}, but should satisfy Steepness >= 1")

    def scalars(self) -> None:
        for field in v.BOOL_FIELDS:
            value = self.desc.get(field, 0)
            if not _is_int(value) or value not in (0, 1):
                self.flag("scalar-field", field, f"{field} = {value!r}, but should be 0 (FALSE) or "
                          f"1 (TRUE)")
        if "ClipThreshold" in self.desc and not _is_float(self.desc["ClipThreshold"]):
            self.flag("scalar-field", "ClipThreshold", f"ClipThreshold = {self.desc['ClipThreshold']!r}, "
                      f"but should be a finite FLOAT")

    # -- bindings -----------------------------------------------------------------------------

    def bindings(self, bindings) -> None:
        if not isinstance(bindings, dict):
            self.flag("document", "bindings", f"bindings = {bindings!r}, but should map each tensor "
                      f"field to its buffer")
            return
        slots = {f: ("input", i) for i, f in enumerate(v.INPUT_FIELDS[self.op])}
        slots.update({f: ("output", i) for i, f in enumerate(v.OUTPUT_FIELDS[self.op])})
        for field, (kind, index) in slots.items():
            tensor, binding = self.desc.get(field), bindings.get(field)
            if tensor is None:
                if binding is not None:
                    self.flag("bindings", f"bindings.{field}", f"bindings.{field} = {binding!r}, but "
                              f"{field} is null, so it should be null (DML_BINDING_TYPE_NONE)")
                continue
            if not isinstance(binding, dict):
                self.flag("bindings", f"bindings.{field}", f"bindings.{field} = {binding!r}, but "
                          f"{field} is a tensor, so it should name its buffer")
                continue
            if (binding.get("kind"), binding.get("index")) != (kind, index):
                self.flag("bindings", f"bindings.{field}", f"bindings.{field} is {binding.get('kind')!r} "
                          f"slot {binding.get('index')!r}, but should be {kind!r} slot {index}")
            buf = self.buffers.get(field)
            if buf is None:
                continue
            total, size = buf["TotalTensorSizeInBytes"], binding.get("bytes")
            if not _is_int(size) or size < total:
                self.flag("bindings", f"bindings.{field}.bytes", f"bindings.{field}.bytes = {size!r}, "
                          f"but should be >= {field}.TotalTensorSizeInBytes = {total}")
            if kind == "input" and self.folder is not None:
                path = self.folder / str(binding.get("file"))
                have = path.stat().st_size if path.is_file() else None
                if have is None:
                    self.flag("bindings", f"bindings.{field}.file", f"bindings.{field}.file = "
                              f"{binding.get('file')!r}, but there is no such file beside the descriptor")
                elif have < total:
                    self.flag("bindings", f"bindings.{field}.file", f"{path.name} holds {have} bytes, "
                              f"but should hold >= {field}.TotalTensorSizeInBytes = {total}")


__all__ = ["CONSTRAINTS", "Violation", "validate", "validate_document"]
