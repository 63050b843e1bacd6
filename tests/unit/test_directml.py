"""DirectML (DML_RNN/GRU/LSTM_OPERATOR_DESC, feature level 1.0): the translator's descriptor files,
their validation against DirectML's documented constraints, and the descriptor interpreter.

Test names follow the struct fields and constraint ids (conformance/specs/directml/validate.py,
CONSTRAINTS), so a failing id leads to the documented sentence.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_directml.py, tests/runtime/test_directml.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conformance.case import load_file
from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.directml.interpreter import DirectMLInterpreter
from conformance.specs import SPECS, NotExpressible
from conformance.specs.directml import calc_buffer_tensor_size, validate
from conformance.specs.directml import vocabulary as v
from conformance.specs.directml.constraints import CONSTRAINTS


def _folder(tmp_path, n) -> Path:
    folder = tmp_path / str(n)
    folder.mkdir()
    return folder

SPEC = SPECS["directml-fl1_0"]


def _case(tmp_path, text):
    (tmp_path / "c.yaml").write_text(text)
    (case,), errors = load_file(tmp_path / "c.yaml")
    assert not errors
    return case


def _written(case, folder: Path):
    """Translate and write ``case`` into ``folder``; the Program."""
    program = SPEC.translate(case)
    assert not isinstance(program, NotExpressible), program
    folder.mkdir(parents=True, exist_ok=True)
    SPEC.write(program, folder)
    return program


def _mutate(program, change) -> Path:
    """Apply ``change(document, folder)`` to the written descriptor document; its path."""
    path = Path(program.files["model"])
    document = json.loads(path.read_text())
    change(document, path.parent)
    path.write_text(json.dumps(document))
    return path


LSTM_ALL = """op: LSTM
clause: DML_LSTM_OPERATOR_DESC
attributes: {hidden_size: 3, direction: bidirectional, input_forget: 0}
shape: {seq_length: 4, batch_size: 2, input_size: 5}
inputs: {seed: 5, B: random, initial_h: random, initial_c: random, P: random, sequence_lens: [4, 2]}
"""


@pytest.fixture
def lstm(tmp_path):
    """A bidirectional LSTM with every optional tensor present, written."""
    case = _case(tmp_path, LSTM_ALL)
    return case, _written(case, tmp_path / "prog")


def _set(path, value):
    def change(document, folder):
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


def _desc(*keys):
    return ("OperatorDesc", "Desc") + keys


def _buf(field, key):
    return _desc(field, "Desc", key)


def _truncate(field):
    def change(document, folder):
        path = folder / document["bindings"][field]["file"]
        path.write_bytes(path.read_bytes()[:-4])
    return change


def _drop_activation(document, folder):
    desc = document["OperatorDesc"]["Desc"]
    desc["ActivationDescs"].pop()
    desc["ActivationDescCount"] -= 1


def _resize_weight_columns(document, folder):
    """WeightTensor with input_size + 1 columns, everything else about it consistent."""
    buf = document["OperatorDesc"]["Desc"]["WeightTensor"]["Desc"]
    buf["Sizes"][3] += 1
    buf["Strides"] = [2 * 12 * 6, 12 * 6, 6, 1]
    buf["TotalTensorSizeInBytes"] = calc_buffer_tensor_size(buf["DataType"], buf["Sizes"], buf["Strides"])
    document["bindings"]["WeightTensor"]["bytes"] = buf["TotalTensorSizeInBytes"]
    path = folder / document["bindings"]["WeightTensor"]["file"]
    path.write_bytes(bytes(buf["TotalTensorSizeInBytes"]))


BREAKS = {
    "document": (lambda d, f: d.pop("OperatorDesc"), "no OperatorDesc"),
    "operator-type": (_set(("OperatorDesc", "Type"), "DML_OPERATOR_CONVOLUTION"), "DML_OPERATOR_CONVOLUTION"),
    "struct-fields": (lambda d, f: d["OperatorDesc"]["Desc"].pop("PeepholeTensor"), "lacks PeepholeTensor"),
    "required-tensor": (_set(_desc("RecurrenceTensor"), None), "RecurrenceTensor = null"),
    "tensor-type": (_set(_desc("InputTensor", "Type"), "DML_TENSOR_TYPE_INVALID"), "InputTensor.Type"),
    "dimension-count": (_set(_buf("BiasTensor", "DimensionCount"), 3), "BiasTensor.DimensionCount = 3"),
    "sizes": (_set(_buf("HiddenInitTensor", "Sizes"), [1, 2, 0, 3]), "a size of zero is invalid"),
    "data-type": (_set(_buf("SequenceLengthsTensor", "DataType"), "DML_TENSOR_DATA_TYPE_INT32"),
                  "should be DML_TENSOR_DATA_TYPE_UINT32"),
    "same-data-type": (_set(_buf("PeepholeTensor", "DataType"), v.FLOAT16), "PeepholeTensor FLOAT16"),
    "tensor-flags": (_set(_buf("WeightTensor", "Flags"), "DML_TENSOR_FLAG_OWNED_BY_DML"),
                     "doesn't support DML_TENSOR_FLAG_OWNED_BY_DML"),
    "total-size": (_set(_buf("RecurrenceTensor", "TotalTensorSizeInBytes"), 4), "should be >= "),
    "element-count": (_set(_buf("OutputSequenceTensor", "TotalTensorSizeInBytes"), 2**34), "at most"),
    "base-alignment": (_set(_buf("InputTensor", "GuaranteedBaseOffsetAlignment"), 2), "power of two"),
    "tensor-sizes": (_resize_weight_columns, "WeightTensor.Sizes = [1, 2, 12, 6]"),
    "direction": (_set(_desc("Direction"), "DML_RECURRENT_NETWORK_DIRECTION_REVERSE"), "Direction ="),
    "activation-count": (_drop_activation, "takes exactly 6"),
    "activation-desc": (_set(_desc("ActivationDescs", 0, "Type"), "DML_OPERATOR_ACTIVATION_SOFTMAX"),
                        "ActivationDescs[0].Type"),
    "activation-parameter": (_set(_desc("ActivationDescs", 1), {
        "Type": "DML_OPERATOR_ACTIVATION_SOFTPLUS",
        "Desc": {"InputTensor": None, "OutputTensor": None, "Steepness": 0.5}}), "Steepness >= 1"),
    "scalar-field": (_set(_desc("CoupleInputForget"), 2), "CoupleInputForget = 2"),
    "bindings": (_truncate("PeepholeTensor"), "holds 68 bytes"),
}


def test_TotalTensorSizeInBytes_is_DMLCalcBufferTensorSize():
    assert calc_buffer_tensor_size(v.FLOAT32, [1, 2, 3, 4], [24, 12, 4, 1]) == 96
    assert calc_buffer_tensor_size(v.FLOAT16, [1, 1, 1, 3], [3, 3, 3, 1]) == 8     # 6 bytes, rounded to 4
    assert calc_buffer_tensor_size(v.FLOAT32, [1, 1, 2, 3], [6, 6, 4, 1]) == 28    # padded rows: last at 6
    assert calc_buffer_tensor_size(v.FLOAT16, [1, 1, 2, 3], None) == 12
    assert calc_buffer_tensor_size(v.UINT32, [1, 1, 1, 3], [3, 3, 3, 1]) == 12


def test_strides_are_explicit_and_packed_row_major_for_layout_0(lstm):
    case, program = lstm
    desc = json.loads(Path(program.files["model"]).read_text())["OperatorDesc"]["Desc"]
    assert desc["WeightTensor"]["Desc"]["Sizes"] == [1, 2, 12, 5]
    assert desc["WeightTensor"]["Desc"]["Strides"] == [120, 60, 5, 1]
    assert desc["BiasTensor"]["Desc"]["Sizes"] == [1, 1, 2, 24]
    assert desc["PeepholeTensor"]["Desc"]["Sizes"] == [1, 1, 2, 9]
    assert desc["SequenceLengthsTensor"]["Desc"]["DataType"] == "DML_TENSOR_DATA_TYPE_UINT32"
    raw = Path(program.files["WeightTensor"]).read_bytes()
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4").reshape(2, 12, 5), case.tensors["W"])


def test_layout_1_keeps_buffers_batch_major_through_strides(tmp_path):
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 2, layout: 1}\n"
                 "shape: {seq_length: 3, batch_size: 4, input_size: 5}\ninputs: {initial_h: random}\n")
    program = _written(case, tmp_path / "prog")
    desc = json.loads(Path(program.files["model"]).read_text())["OperatorDesc"]["Desc"]
    x = desc["InputTensor"]["Desc"]
    assert x["Sizes"] == [1, 3, 4, 5] and x["Strides"] == [60, 5, 15, 1]
    raw = Path(program.files["InputTensor"]).read_bytes()
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4"), np.transpose(case.tensors["X"], (1, 0, 2)).ravel())
    assert desc["OutputSequenceTensor"]["Desc"]["Strides"] == [2, 2, 6, 1]  # Y buffer [B,S,D,H]
    assert any("layout=1" in note for note in program.notes)


def test_outputs_map_to_canonical_names_with_reshape_transforms(lstm):
    _, program = lstm
    assert program.outputs == [("OutputSequenceTensor", "Y"), ("OutputSingleTensor", "Y_h"),
                               ("OutputCellSingleTensor", "Y_c")]
    assert program.transforms == {"Y_h": {"reshape": [2, 2, 3]}, "Y_c": {"reshape": [2, 2, 3]}}


@pytest.mark.parametrize("name, dml, params", [
    ("Relu", "RELU", {}), ("Tanh", "TANH", {}), ("Sigmoid", "SIGMOID", {}),
    ("Affine", "LINEAR", {"Alpha": 0.5, "Beta": 0.25}), ("LeakyRelu", "LEAKY_RELU", {"Alpha": 0.5}),
    ("ThresholdedRelu", "THRESHOLDED_RELU", {"Alpha": 0.5}),
    ("ScaledTanh", "SCALED_TANH", {"Alpha": 0.5, "Beta": 0.25}),
    ("HardSigmoid", "HARD_SIGMOID", {"Alpha": 0.5, "Beta": 0.25}), ("Elu", "ELU", {"Alpha": 0.5}),
    ("Softsign", "SOFTSIGN", {}), ("Softplus", "SOFTPLUS", {"Steepness": 1.0}),
])
def test_ActivationDescs_map_each_onnx_activation_with_its_parameters(tmp_path, name, dml, params):
    case = _case(tmp_path, f"op: RNN\nclause: c\nattributes: {{hidden_size: 2, direction: bidirectional, "
                 f"activations: [{name}, Tanh], activation_alpha: [0.5], activation_beta: [0.25]}}\n"
                 "shape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    desc = json.loads(SPEC.translate(case).model)["OperatorDesc"]["Desc"]
    assert desc["ActivationDescCount"] == 2
    first, second = desc["ActivationDescs"]
    assert first == {"Type": f"DML_OPERATOR_ACTIVATION_{dml}",
                     "Desc": {"InputTensor": None, "OutputTensor": None, **params}}
    assert second["Type"] == "DML_OPERATOR_ACTIVATION_TANH"


def test_defaulted_activation_parameters_are_named_in_the_notes(tmp_path):
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 2, activations: [HardSigmoid, "
                 "ScaledTanh]}\nshape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    program = SPEC.translate(case)
    acts = json.loads(program.model)["OperatorDesc"]["Desc"]["ActivationDescs"]
    assert acts[0]["Desc"]["Alpha"] == pytest.approx(0.2) and acts[0]["Desc"]["Beta"] == 0.5
    assert acts[1]["Desc"]["Alpha"] == 1.0 and acts[1]["Desc"]["Beta"] == 0.5
    assert any("HardSigmoid alpha not given" in n and "ONNX HardSigmoid" in n for n in program.notes)
    assert any("ScaledTanh beta not given" in n and "typical default" in n for n in program.notes)


def test_one_direction_activation_list_is_repeated_for_bidirectional(tmp_path):
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 2, direction: bidirectional, "
                 "activations: [Sigmoid, Relu]}\nshape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    desc = json.loads(SPEC.translate(case).model)["OperatorDesc"]["Desc"]
    assert [a["Type"].rsplit("_", 1)[1] for a in desc["ActivationDescs"]] == ["SIGMOID", "RELU"] * 2
    assert desc["Direction"] == "DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL"


@pytest.mark.parametrize("text, words", [
    ("op: RNN\nattributes: {hidden_size: 2}\ndtype: float64\n", ["float64", "FLOAT32 or FLOAT16"]),
    ("op: GRU\nattributes: {hidden_size: 2}\ndtype: bfloat16\n", ["bfloat16", "no bfloat16"]),
    ("op: RNN\nattributes: {hidden_size: 2, clip: 1.0}\n", ["clip", "DML_LSTM_OPERATOR_DESC only"]),
    ("op: GRU\nattributes: {hidden_size: 2, clip: 1.0}\n", ["clip", "DML_GRU_OPERATOR_DESC has no clip"]),
    ("op: RNN\nattributes: {hidden_size: 2, activations: [Affine]}\n", ["Affine", "no default"]),
])
def test_not_expressible_with_the_reason(tmp_path, text, words):
    case = _case(tmp_path, text + "clause: c\nshape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    result = SPEC.translate(case)
    assert isinstance(result, NotExpressible)
    assert all(w in result.reason for w in words), result.reason


def test_every_constraint_has_a_breaking_test():
    assert set(BREAKS) == set(CONSTRAINTS)


@pytest.mark.parametrize("change, words", [
    (_set(_desc("ActivationDescs", 2, "Desc", "InputTensor"), {"Type": "DML_TENSOR_TYPE_BUFFER"}),
     "should be null"),
    (lambda d, f: d["OperatorDesc"]["Desc"].update(Clip=1.0), "has Clip"),
    (_set(_buf("WeightTensor", "Flags"), "DML_TENSOR_FLAG_NONE | DML_TENSOR_FLAG_PACKED"),
     "DML_TENSOR_FLAG_PACKED is not a DML_TENSOR_FLAGS value"),
    (_set(_buf("InputTensor", "DataType"), "DML_TENSOR_DATA_TYPE_FLOAT64"), "FLOAT32 or"),
    (_set(_desc("ActivationDescCount"), 7), "ActivationDescCount = 7"),
    (_set(("bindings", "OutputSingleTensor", "bytes"), 8), "bindings.OutputSingleTensor.bytes = 8"),
    (_set(_buf("RecurrenceTensor", "TotalTensorSizeInBytes"), 290), "multiple of 4"),
    (_set(("bindings", "WeightTensor", "file"), "missing.bin"), "no such file"),
])
def test_validation_flags_more_ways_to_break_a_constraint(lstm, change, words):
    _, program = lstm
    violations = validate(_mutate(program, change))
    assert any(words in x.message for x in violations), [str(x) for x in violations]


def test_a_weight_stride_off_by_one_past_the_buffer_is_a_violation(lstm):
    _, program = lstm
    path = _mutate(program, _set(_buf("WeightTensor", "Strides"), [120, 60, 6, 1]))
    violations = validate(path)
    assert [x.constraint for x in violations] == ["total-size"]
    assert "WeightTensor.TotalTensorSizeInBytes = 480, but should be >= " in violations[0].message


def test_absent_outputs_are_null_and_not_returned(tmp_path):
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 2}\noutputs: [Y_c]\n"
                 "shape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    program = _written(case, tmp_path / "prog")
    desc = json.loads(Path(program.files["model"]).read_text())["OperatorDesc"]["Desc"]
    assert desc["OutputSequenceTensor"] is None and desc["OutputSingleTensor"] is None
    got = DirectMLInterpreter().run(program.runtime_input(), {})
    assert [g.shape for g in got] == [(1, 1, 1, 2)] and program.outputs == [("OutputCellSingleTensor", "Y_c")]


@pytest.mark.parametrize("constraint", sorted(BREAKS))
def test_validation_names_the_broken_constraint(lstm, constraint):
    _, program = lstm
    change, words = BREAKS[constraint]
    path = _mutate(program, change)
    violations = validate(path)
    named = [x for x in violations if x.constraint == constraint]
    assert named, f"{constraint} not flagged; got {[str(x) for x in violations]}"
    assert any(words in x.message for x in named), [x.message for x in named]
    with pytest.raises(RuntimeRejected, match=constraint):
        DirectMLInterpreter().run(str(path), {})


def test_a_weight_stride_off_by_one_changes_the_result_far_beyond_tolerance(lstm):
    _, program = lstm
    interpreter = DirectMLInterpreter()
    right = interpreter.run(program.runtime_input(), {})
    path = _mutate(program, _set(_buf("WeightTensor", "Strides"), [120, 60, 4, 1]))  # rows of 5: stride 4
    assert validate(path) == []   # the buffer is large enough: only the numbers can tell
    wrong = interpreter.run(str(path), {})
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(right, wrong)) > 1e-2


def test_a_layout_1_input_read_with_packed_strides_changes_the_result(tmp_path):
    case = _case(tmp_path, "op: RNN\nclause: c\nattributes: {hidden_size: 3, layout: 1}\n"
                 "shape: {seq_length: 3, batch_size: 2, input_size: 2}\n")
    program = _written(case, tmp_path / "prog")
    right = DirectMLInterpreter().run(program.runtime_input(), {})
    path = _mutate(program, _set(_buf("InputTensor", "Strides"), [12, 4, 2, 1]))
    wrong = DirectMLInterpreter().run(str(path), {})
    assert float(np.max(np.abs(right[0] - wrong[0]))) > 1e-2


def test_output_peephole_reading_Ct_minus_1_is_the_oracle_reading_po_ct1(tmp_path):
    import oracles
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 3}\n"
                 "shape: {seq_length: 3, batch_size: 2, input_size: 2}\ninputs: {seed: 9, P: random}\n")
    program = _written(case, tmp_path / "prog")
    new_cell = DirectMLInterpreter().run(program.runtime_input(), {})
    old_cell = DirectMLInterpreter(output_peephole="Ct-1").run(program.runtime_input(), {})
    assert float(np.max(np.abs(new_cell[0] - old_cell[0]))) > 1e-3
    result = oracles.evaluate("LSTM", case.attributes, case.tensors, profile="directml", cache=False)
    reading = next(r for r in result.readings if r.choices.get("peephole_output") == "po-ct1")
    np.testing.assert_allclose(old_cell[0], reading.outputs["Y"].hi, atol=1e-5)


def test_coupled_input_forget_is_f_equals_1_minus_i(tmp_path):
    """CoupleInputForget: DirectML's equations set ft = 1 - it; with it the forget gate's weights
    (block 2 of W, R, B) and Pf are unused, so changing them changes nothing."""
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 2, input_forget: 1}\n"
                 "shape: {seq_length: 3, batch_size: 1, input_size: 2}\n"
                 "inputs: {seed: 3, B: random, P: random, initial_c: random}\n")
    program = _written(case, tmp_path / "prog")
    before = DirectMLInterpreter().run(program.runtime_input(), {})
    w = Path(program.files["WeightTensor"])
    raw = np.frombuffer(w.read_bytes(), "<f4").copy().reshape(8, 2)
    raw[4:6] += 1.0       # rows of f (order i, o, f, c)
    w.write_bytes(raw.tobytes())
    after = DirectMLInterpreter().run(program.runtime_input(), {})
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_a_negative_ClipThreshold_is_refused_and_feeds_are_not_taken(lstm):
    _, program = lstm
    with pytest.raises(TypeError, match="feeds should be empty"):
        DirectMLInterpreter().run(program.runtime_input(), {"X": np.zeros(1)})
    path = _mutate(program, lambda d, f: d["OperatorDesc"]["Desc"].update(ClipThreshold=-1.0, UseClipThreshold=1))
    with pytest.raises(RuntimeRejected, match="ClipThreshold = -1.0"):
        DirectMLInterpreter().run(str(path), {})


