"""The OpenVINO IR translator and adapter, on the real OpenVINO.

The IR executes from its written files; every attribute is in the XML; the gate reorder, the bias
fold and the batch-major layouts agree with onnxruntime on the ONNX translation and with the oracle
under the OpenVINO profile; a deliberately wrong translation is caught; what an opset cannot say
is not-expressible with the reason; an op OpenVINO refuses to build is a refusal at run time.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from conformance.case import load_file, load_paths
from conformance.case.vocabulary import canonical_activation, num_directions
from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.forms import asked, base_config
from conformance.runtimes.openvino_ir import OpenVINOIR, targets
from conformance.specs import SPECS, NotExpressible
from conformance.specs import openvino as ovspec
from conformance.specs.openvino import inputs as ovinputs
from conformance.specs.openvino import vocabulary as ovvocab
from tests import conftest
from tests.conftest import ROOT

conftest.runtime("openvino")  # the translator builds its programs with OpenVINO's own builders

#: accepted distance between two float32 implementations of the same op on the corpus' small cases
AGREEMENT = 1e-4
#: a deliberately wrong translation must miss by far more than that
CAUGHT = 100 * AGREEMENT


@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors
    return cases


@pytest.fixture(scope="module")
def picked(corpus):
    return representative(corpus)


@pytest.fixture(scope="module")
def runtime():
    return OpenVINOIR("CPU", "precision=pinned")


def _case(tmp_path, text):
    (tmp_path / "c.yaml").write_text(text)
    (case,), errors = load_file(tmp_path / "c.yaml")
    assert not errors
    return case


def _by_id(corpus, case_id):
    (case,) = [c for c in corpus if c.id == case_id]
    return case


def run_ir(case, spec, folder, runtime):
    """Translate, write and run from the files; outputs in canonical layout, by canonical name."""
    prog = SPECS[spec].translate(case)
    assert not isinstance(prog, NotExpressible), prog.reason
    folder.mkdir(parents=True, exist_ok=True)
    SPECS[spec].write(prog, folder)
    return prog, canonical(prog, runtime.run(prog.runtime_input(), prog.feeds))


def canonical(prog, outs) -> dict:
    return {name: prog.to_canonical(name, np.asarray(o)) for (_, name), o in zip(prog.outputs, outs)}


def run_onnxruntime(case):
    """onnxruntime on the ONNX translation of the canonical case (layout 0, canonical activation
    spelling: the layout and name-case scenarios are ONNX's, not what is compared here)."""
    ort = conftest.runtime("onnxruntime")
    from conformance.runtimes.onnxruntime import OnnxRuntime
    attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
    if "activations" in attrs:
        attrs["activations"] = [canonical_activation(a) for a in attrs["activations"]]
    prog = SPECS["onnx-22"].translate(dataclasses.replace(case, attributes=attrs))
    ort.set_default_logger_severity(4)
    return canonical(prog, OnnxRuntime().run(prog.model, prog.feeds))


def distance(got: dict, want: dict) -> float:
    assert set(got) == set(want), (set(got), set(want))
    worst = 0.0
    for name, expected in want.items():
        if got[name].shape != expected.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(got[name].astype(np.float64) - expected.astype(np.float64)))))
    return worst


def expressible(case, spec="openvino-opset5") -> bool:
    return not isinstance(SPECS[spec].translate(case), NotExpressible)


def representative(corpus) -> list:
    """Valid float32 cases, one per distinct (op, form, direction, linear_before_reset, which
    inputs are present, layout, clip, activations, requested outputs), that opset 5 expresses."""
    seen, picked = set(), []
    for case in corpus:
        if not case.valid or case.dtype != "float32":
            continue
        if not expressible(case):
            continue
        a = case.attributes
        key = (case.op, case.form, case.direction, a.get("linear_before_reset", 0), tuple(sorted(case.tensors)),
               case.layout, "clip" in a, tuple(a.get("activations", ())), case.outputs)
        if key not in seen:
            seen.add(key)
            picked.append(case)
    return picked


# -- the IR is what runs ------------------------------------------------------------------------


def test_the_ir_runs_from_its_files_and_nothing_else(corpus, runtime, tmp_path):
    case = _by_id(corpus, "lstm/basic[direction=bidirectional,B=random,initial_h=random,initial_c=random]")
    prog, first = run_ir(case, "openvino-opset5", tmp_path, runtime)
    xml, weights = Path(prog.files["model"]), Path(prog.files["weights"])
    assert (xml.name, weights.name) == ("openvino-opset5.xml", "openvino-opset5.bin")
    # the in-memory program is not needed to run it
    prog.model, prog.extra = b"", {}
    again = runtime.run(prog.runtime_input(), prog.feeds)
    assert distance(canonical(prog, again), first) == 0
    # changing the weights on disk changes the result: the .bin beside the .xml is what executes
    saved = weights.read_bytes()
    weights.write_bytes(bytes(len(saved)))
    zeroed = runtime.run(prog.runtime_input(), prog.feeds)
    assert distance(canonical(prog, zeroed), first) > CAUGHT
    weights.write_bytes(saved[: len(saved) // 2])
    with pytest.raises(RuntimeError):
        runtime.run(prog.runtime_input(), prog.feeds)
    weights.unlink()
    with pytest.raises(RuntimeRejected, match="weights"):
        runtime.run(prog.runtime_input(), prog.feeds)
    weights.write_bytes(saved)
    restored = runtime.run(prog.runtime_input(), prog.feeds)
    assert distance(canonical(prog, restored), first) == 0


def test_weights_are_constants_at_full_precision_and_the_feeds_are_parameters(corpus, tmp_path):
    for dtype, element in (("float32", "f32"), ("float16", "f16"), ("float64", "f64"), ("bfloat16", "bf16")):
        case = next(c for c in corpus if c.valid and c.dtype == dtype and c.op == "LSTM" and expressible(c))
        prog = SPECS["openvino-opset5"].translate(case)
        SPECS["openvino-opset5"].write(prog, tmp_path)
        layers = ET.parse(prog.files["model"]).getroot().find("layers")
        types = [layer.get("type") for layer in layers]
        assert "Convert" not in types, f"{case.id}: weights were compressed"
        consts = [layer.find("data").get("element_type") for layer in layers if layer.get("type") == "Const"]
        assert consts == [element] * 3, (case.id, consts)  # W, R, B
        params = {layer.get("name"): layer.find("data").get("element_type")
                  for layer in layers if layer.get("type") == "Parameter"}
        assert params == {"X": element, "initial_hidden_state": element, "initial_cell_state": element,
                          "sequence_lengths": "i32"}
        assert set(prog.feeds) == set(params)


# -- every attribute written ----------------------------------------------------------------------

COMMON = {"hidden_size", "activations", "activations_alpha", "activations_beta", "clip"}
EXPECTED_LAYERS = {
    # (spec, case id): (layer type, IR version, attributes)
    ("openvino-opset5", "rnn/basic[direction=forward,B=random,initial_h=random]"):
        ("RNNSequence", "opset5", COMMON | {"direction"}),
    ("openvino-opset5", "gru/linear_before_reset[linear_before_reset=1,B=random,direction=reverse]"):
        ("GRUSequence", "opset5", COMMON | {"direction", "linear_before_reset"}),
    ("openvino-opset5", "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]"):
        ("LSTMSequence", "opset5", COMMON | {"direction"}),
    ("openvino-opset1", "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]"):
        ("LSTMSequence", "opset1", COMMON | {"direction"}),
    ("openvino-opset5", "rnn/cell[B=random,initial_h=random,activations=Relu]"): ("RNNCell", "opset1", COMMON),
    ("openvino-opset1", "rnn/cell[B=random,initial_h=random,activations=Relu]"): ("RNNCell", "opset1", COMMON),
    ("openvino-opset5", "gru/cell[B=random,initial_h=random,linear_before_reset=1]"):
        ("GRUCell", "opset3", COMMON | {"linear_before_reset"}),
    ("openvino-opset5", "lstm/cell[B=random,initial_h=random,initial_c=random]"): ("LSTMCell", "opset4", COMMON),
    ("openvino-opset1", "lstm/cell_peepholes[P=zeros,input_forget=1]"):
        ("LSTMCell", "opset1", COMMON | {"input_forget", "weights_format"}),
}


@pytest.mark.parametrize("spec,case_id", list(EXPECTED_LAYERS), ids=lambda v: v)
def test_the_xml_carries_every_attribute(corpus, tmp_path, spec, case_id):
    case = _by_id(corpus, case_id)
    kind, version, names = EXPECTED_LAYERS[(spec, case_id)]
    prog = SPECS[spec].translate(case)
    SPECS[spec].write(prog, tmp_path)
    (layer,) = [layer for layer in ET.parse(prog.files["model"]).getroot().find("layers")
                if layer.get("type") not in ("Parameter", "Const", "Result")]
    assert (layer.get("type"), layer.get("version")) == (kind, version)
    data = layer.find("data").attrib
    assert set(data) == names, f"{kind}: written {sorted(data)}, but should be {sorted(names)}"
    assert int(data["hidden_size"]) == case.hidden_size
    assert data["clip"] == "0"  # clipping off, written out
    if "direction" in names:
        assert data["direction"] == case.direction
    if "linear_before_reset" in names:
        assert data["linear_before_reset"] == "true"
    if kind == "LSTMCell" and version == "opset1":
        assert (data["input_forget"], data["weights_format"]) == ("true", "fico")
    assert all(a in ovvocab.ACTIVATIONS for a in data["activations"].split(", "))


def test_clip_alpha_and_beta_are_written_at_float32(tmp_path):
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 2, clip: 0.123456789, "
                 "activations: [Relu, Tanh], activation_alpha: [0.1, 0.2], activation_beta: [0.3, 0.4]}\n"
                 "shape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    prog = SPECS["openvino-opset5"].translate(case)
    import openvino as ov
    SPECS["openvino-opset5"].write(prog, tmp_path)
    (op,) = [o for o in ov.Core().read_model(prog.files["model"]).get_ops() if o.get_type_name() == "GRUSequence"]
    attrs = op.get_attributes()
    assert np.float32(attrs["clip"]) == np.float32(0.123456789)
    assert attrs["activations"] == ["relu", "tanh"]
    assert [np.float32(a) for a in attrs["activations_alpha"]] == [np.float32(0.1), np.float32(0.2)]
    assert [np.float32(b) for b in attrs["activations_beta"]] == [np.float32(0.3), np.float32(0.4)]
    assert any("change nothing" in n for n in prog.notes)


# -- agreement with onnxruntime and the oracle ------------------------------------------------------


def test_representative_cases_cover_every_op_form_and_direction(picked):
    covered = {(c.op, c.form, c.direction) for c in picked}
    for op in ("RNN", "GRU", "LSTM"):
        assert (op, "cell", "forward") in covered
        for direction in ("forward", "reverse", "bidirectional"):
            assert (op, "sequence", direction) in covered
    assert any(c.layout == 1 for c in picked) and any("clip" in c.attributes for c in picked)
    assert any(c.attributes.get("linear_before_reset") for c in picked)
    assert any("sequence_lens" in c.tensors for c in picked) and any("B" not in c.tensors for c in picked)


def test_matches_onnxruntime_on_the_onnx_translation(picked, runtime, tmp_path):
    """Gate reorder, bias fold, filled inputs and the batch-major layouts, case by case."""
    far = {}
    for i, case in enumerate(picked):
        _, got = run_ir(case, "openvino-opset5", tmp_path / str(i), runtime)
        d = distance(got, run_onnxruntime(case))
        if not d <= AGREEMENT:
            far[case.id] = d
    assert not far, f"OpenVINO IR and onnxruntime differ by more than {AGREEMENT}: {far}"
    assert len(picked) > 60


def test_opset1_cells_match_onnxruntime(corpus, runtime, tmp_path):
    ids = ["rnn/cell[B=absent,initial_h=absent,activations=Relu]",
           "lstm/cell[B=random,initial_h=absent,initial_c=random]",
           "lstm/cell_peepholes[P=zeros,input_forget=0]"]
    for i, case_id in enumerate(ids):
        case = _by_id(corpus, case_id)
        _, got = run_ir(case, "openvino-opset1", tmp_path / str(i), runtime)
        assert distance(got, run_onnxruntime(case)) <= AGREEMENT, case_id


def test_matches_the_oracle_under_the_openvino_profile(picked, runtime, tmp_path):
    import oracles
    far = {}
    for i, case in enumerate(picked):
        _, got = run_ir(case, "openvino-opset5", tmp_path / str(i), runtime)
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        result = oracles.evaluate(case.op, attrs, case.tensors, profile="openvino")
        best = float("inf")
        for reading in result.readings:
            worst = 0.0
            for name, arr in got.items():
                exp = reading.outputs[name]
                assert arr.shape == exp.hi.shape, (case.id, name)
                keep = ~exp.unspecified
                if keep.any():
                    worst = max(worst, float(np.max(np.abs(arr.astype(np.float64)[keep] - exp.hi[keep]))))
            best = min(best, worst)
        if not best <= AGREEMENT:
            far[case.id] = best
    assert not far, f"OpenVINO IR and the oracle differ by more than {AGREEMENT}: {far}"


# -- a wrong translation is caught ---------------------------------------------------------------


@pytest.mark.parametrize("case_id", [
    "lstm/basic[direction=bidirectional,B=random,initial_h=random,initial_c=random]",
    "lstm/cell[B=random,initial_h=random,initial_c=random]",
])
def test_lstm_gates_left_in_onnx_order_are_caught(corpus, runtime, tmp_path, monkeypatch, case_id):
    case = _by_id(corpus, case_id)
    _, right = run_ir(case, "openvino-opset5", tmp_path / "right", runtime)
    reference = run_onnxruntime(case)
    assert distance(right, reference) <= AGREEMENT
    monkeypatch.setattr(ovinputs, "reorder_lstm_gates", lambda arr, axis: arr)
    _, wrong = run_ir(case, "openvino-opset5", tmp_path / "wrong", runtime)
    assert distance(wrong, reference) > CAUGHT


@pytest.mark.parametrize("case_id", [
    "gru/linear_before_reset[linear_before_reset=1,B=random,direction=bidirectional]",
    "gru/linear_before_reset[linear_before_reset=0,B=random,direction=forward]",
    "rnn/basic[direction=reverse,B=random,initial_h=random]",
    "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]",
])
def test_a_bias_not_folded_is_caught(corpus, runtime, tmp_path, monkeypatch, case_id):
    case = _by_id(corpus, case_id)
    reference = run_onnxruntime(case)
    _, right = run_ir(case, "openvino-opset5", tmp_path / "right", runtime)
    assert distance(right, reference) <= AGREEMENT
    fold = ovinputs.fold_bias

    def wb_only(bias, case, notes):  # Wb where Wb + Rb belongs (Rbh kept for linear_before_reset)
        folded = fold(bias, case, notes)
        g, h = ovinputs.GATES[case.op], bias.shape[-1] // (2 * ovinputs.GATES[case.op])
        folded[..., :g * h if not ovinputs._linear_before_reset(case) else 2 * h] = \
            bias[..., :g * h if not ovinputs._linear_before_reset(case) else 2 * h]
        return folded

    monkeypatch.setattr(ovinputs, "fold_bias", wb_only)
    _, wrong = run_ir(case, "openvino-opset5", tmp_path / "wrong", runtime)
    assert distance(wrong, reference) > CAUGHT


def test_a_sequence_walked_batch_major_is_caught(runtime, tmp_path, monkeypatch):
    """X fed as [B,S,I] by reshaping [S,B,I] instead of transposing it (S == B here, so the shapes
    still fit): the outputs move far from onnxruntime's."""
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 3, direction: bidirectional}\n"
                 "shape: {seq_length: 3, batch_size: 3, input_size: 2}\ninputs: {B: random, initial_h: random}\n")
    reference = run_onnxruntime(case)
    _, right = run_ir(case, "openvino-opset5", tmp_path / "right", runtime)
    assert distance(right, reference) <= AGREEMENT
    inputs = ovspec._inputs

    def reshaped(op, case, notes):
        got = inputs(op, case, notes)
        x = case.tensors["X"]
        got["feeds"]["X"] = np.ascontiguousarray(x.reshape(x.shape[1], x.shape[0], x.shape[2]))
        return got

    monkeypatch.setattr(ovspec, "_inputs", reshaped)
    _, wrong = run_ir(case, "openvino-opset5", tmp_path / "wrong", runtime)
    assert distance(wrong, reference) > CAUGHT


def test_outputs_map_back_to_canonical_layout(corpus, runtime, tmp_path):
    """Y's last forward step is Y_h's forward half and Y's first reverse step its reverse half."""
    case = _by_id(corpus, "lstm/basic[direction=bidirectional,B=random,initial_h=random,initial_c=random]")
    prog, got = run_ir(case, "openvino-opset5", tmp_path, runtime)
    s, b, h = case.shape["seq_length"], case.shape["batch_size"], case.hidden_size
    assert got["Y"].shape == (s, 2, b, h) and got["Y_h"].shape == got["Y_c"].shape == (2, b, h)
    np.testing.assert_array_equal(got["Y"][-1, 0], got["Y_h"][0])
    np.testing.assert_array_equal(got["Y"][0, 1], got["Y_h"][1])
    assert [name for name, _ in prog.outputs] == ["Y", "Ho", "Co"]


def test_a_cell_gives_y_and_y_h_from_ho(corpus, runtime, tmp_path):
    case = _by_id(corpus, "gru/cell[B=random,initial_h=random,linear_before_reset=1]")
    prog, got = run_ir(case, "openvino-opset5", tmp_path, runtime)
    b, h = case.shape["batch_size"], case.hidden_size
    assert prog.outputs == [("Ho", "Y"), ("Ho", "Y_h")]
    assert got["Y"].shape == (1, 1, b, h) and got["Y_h"].shape == (1, b, h)
    np.testing.assert_array_equal(got["Y"][0], got["Y_h"])


# -- translation details ---------------------------------------------------------------------------


def test_lstm_gate_order_and_bias_fold_by_value(tmp_path):
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 1}\n"
                 "shape: {seq_length: 1, batch_size: 1, input_size: 1}\n"
                 "inputs: {W: [[[1], [2], [3], [4]]], R: [[[5], [6], [7], [8]]], "
                 "B: [[10, 20, 30, 40, 1, 2, 3, 4]]}\n")
    prog = SPECS["openvino-opset5"].translate(case)
    import openvino as ov
    SPECS["openvino-opset5"].write(prog, tmp_path)
    model = ov.Core().read_model(prog.files["model"])
    (op,) = [o for o in model.get_ops() if o.get_type_name() == "LSTMSequence"]
    consts = [op.input_value(i).get_node().get_data().ravel().tolist() for i in (4, 5, 6)]  # W, R, B
    # ONNX i,o,f,c -> OpenVINO f,i,c,o
    assert consts == [[3, 1, 4, 2], [7, 5, 8, 6], [33, 11, 44, 22]]


def test_gru_linear_before_reset_bias_is_4h(tmp_path):
    case = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 1, linear_before_reset: 1}\n"
                 "shape: {seq_length: 1, batch_size: 1, input_size: 1}\n"
                 "inputs: {B: [[1, 2, 3, 10, 20, 30]]}\n")
    prog = SPECS["openvino-opset5"].translate(case)
    import openvino as ov
    SPECS["openvino-opset5"].write(prog, tmp_path)
    model = ov.Core().read_model(prog.files["model"])
    (op,) = [o for o in model.get_ops() if o.get_type_name() == "GRUSequence"]
    bias = op.input_value(5).get_node().get_data()
    assert bias.tolist() == [[11, 22, 3, 30]]  # [Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]


def test_bias_fold_is_the_correctly_rounded_sum_and_says_so(tmp_path):
    case = _case(tmp_path, "op: RNN\nclause: c\nattributes: {hidden_size: 2}\n"
                 "shape: {seq_length: 1, batch_size: 1, input_size: 1}\n"
                 "inputs: {B: [[1.0, 0.5, 1.0e-8, 0.25]]}\n")
    notes = []
    folded = ovinputs.fold_bias(case.tensors["B"], case, notes)
    exact = case.tensors["B"][:, :2].astype(np.float64) + case.tensors["B"][:, 2:].astype(np.float64)
    assert folded.dtype == np.float32
    assert folded.tolist() == exact.astype(np.float32).tolist()
    assert "1 of 2 elements rounded" in notes[0] and "float64" in notes[0]


def test_bfloat16_rounds_once():
    import ml_dtypes
    # 1 + 2^-8 + 2^-30: through float32 it lands on the bfloat16 tie 1 + 2^-8 and rounds to 1.0
    x = np.array([1 + 2 ** -8 + 2 ** -30, -(1 + 2 ** -8 + 2 ** -30), 1 + 2 ** -8, 3.0])
    got = ovinputs.round_once(x, np.dtype(ml_dtypes.bfloat16)).astype(np.float64).tolist()
    assert got == [1 + 2 ** -7, -(1 + 2 ** -7), 1.0, 3.0]


def test_absent_required_inputs_are_filled_and_noted(tmp_path):
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 2, direction: bidirectional}\n"
                 "shape: {seq_length: 3, batch_size: 4, input_size: 1}\n")
    prog = SPECS["openvino-opset5"].translate(case)
    assert prog.feeds["initial_hidden_state"].shape == (4, 2, 2) and not prog.feeds["initial_hidden_state"].any()
    assert not prog.feeds["initial_cell_state"].any()
    assert prog.feeds["sequence_lengths"].tolist() == [3, 3, 3, 3]
    assert prog.feeds["sequence_lengths"].dtype == np.int32
    assert prog.feeds["X"].shape == (4, 3, 1)
    text = " | ".join(prog.notes)
    for what in ("initial_h absent", "initial_c absent", "sequence_lens absent", "B absent", "clip absent",
                 "reordered"):
        assert what in text, what


def test_layout_1_is_translated_as_layout_0_with_a_note(corpus, runtime, tmp_path):
    case = next(c for c in corpus if c.valid and c.layout == 1 and c.op == "LSTM" and c.dtype == "float32"
                and c.direction == "bidirectional")
    prog, got = run_ir(case, "openvino-opset5", tmp_path, runtime)
    assert any("layout=1 is an ONNX-only attribute" in n for n in prog.notes)
    np.testing.assert_array_equal(prog.feeds["X"], np.transpose(case.tensors["X"], (1, 0, 2)))
    assert distance(got, run_onnxruntime(case)) <= AGREEMENT


def test_equal_activation_sets_are_written_once(corpus, tmp_path):
    case = _by_id(corpus, "gru/activations[activations=Sigmoid+Relu]")
    bidirectional = _case(tmp_path, "op: GRU\nclause: c\nattributes: {hidden_size: 2, direction: bidirectional, "
                          "activations: [Sigmoid, Relu, sigmoid, RELU]}\n"
                          "shape: {seq_length: 2, batch_size: 1, input_size: 1}\n")
    for c in (case, bidirectional):
        prog = SPECS["openvino-opset5"].translate(c)
        SPECS["openvino-opset5"].write(prog, tmp_path)
        assert re.search(r'activations="sigmoid, relu"', Path(prog.files["model"]).read_text())


def test_zero_sequence_lengths_are_expressible(corpus, runtime, tmp_path):
    case = next(c for c in corpus if c.valid and "sequence_lens" in c.tensors and 0 in c.tensors["sequence_lens"]
                and c.dtype == "float32" and expressible(c))
    _, got = run_ir(case, "openvino-opset5", tmp_path, runtime)
    assert got["Y_h"].shape[0] == num_directions(case.direction)


# -- what cannot be said, and refusals -------------------------------------------------------------

NOT_EXPRESSIBLE = [
    ("openvino-opset5", "gru/activations_per_direction[activations=Sigmoid+Tanh+Relu+Tanh]", "one activation set"),
    ("openvino-opset5", "lstm/activations_per_direction[activations=HardSigmoid+Tanh+Tanh+Sigmoid+Tanh+Tanh]",
     "relu, sigmoid and tanh only"),
    ("openvino-opset5", "lstm/cell_peepholes[P=random,input_forget=0]", "LSTMCell-4 has no peephole input"),
    ("openvino-opset5", "lstm/cell_peepholes[P=zeros,input_forget=1]", "LSTMCell-4 has no input_forget"),
    ("openvino-opset1", "lstm/cell_peepholes[P=random,input_forget=1]", "serializer drops input 6 (P)"),
    ("openvino-opset1", "lstm/peepholes_input_forget[P=random,input_forget=0,direction=forward]",
     "LSTMSequence-1 spec page has no P"),
    ("openvino-opset1", "lstm/peepholes_input_forget[P=absent,input_forget=1,direction=forward]",
     "LSTMSequence-1 has no input_forget"),
    ("openvino-opset1", "gru/cell[B=random,initial_h=random,linear_before_reset=0]",
     "GRUCell first appears in opset 3"),
    ("openvino-opset1", "rnn/basic[direction=forward,B=random,initial_h=random]",
     "RNNSequence first appears in opset 5"),
    ("openvino-opset5", "invalid/rnn/layout[layout=2]", "layout is an ONNX-only attribute"),
    ("openvino-opset5", "invalid/gru/foreign_attribute[input_forget=1]", "has no attribute 'input_forget'"),
    ("openvino-opset5", 'invalid/rnn/B_shape[B={"shape":[1,9]}]', "cannot be split into Wb and Rb"),
]


@pytest.mark.parametrize("spec,case_id,reason", NOT_EXPRESSIBLE, ids=[f"{s}:{c}" for s, c, _ in NOT_EXPRESSIBLE])
def test_not_expressible_says_why(corpus, spec, case_id, reason):
    result = SPECS[spec].translate(_by_id(corpus, case_id))
    assert isinstance(result, NotExpressible), f"{case_id} should not be expressible in {spec}"
    assert result.spec == spec and reason in result.reason, result.reason


def test_a_bidirectional_cell_is_not_expressible(tmp_path):
    case = _case(tmp_path, "op: RNN\nform: cell\nclause: c\nattributes: {hidden_size: 2, direction: bidirectional}\n"
                 "shape: {batch_size: 1, input_size: 1}\n")
    result = SPECS["openvino-opset5"].translate(case)
    assert isinstance(result, NotExpressible) and "one direction" in result.reason


def test_a_zero_peephole_is_omitted_and_noted(corpus):
    for spec, case_id in (("openvino-opset5", "lstm/peepholes_input_forget[P=zeros,input_forget=0,direction=reverse]"),
                          ("openvino-opset1", "lstm/cell_peepholes[P=zeros,input_forget=0]")):
        prog = SPECS[spec].translate(_by_id(corpus, case_id))
        assert any("P is all zeros" in n for n in prog.notes), prog.notes


def test_opset1_lstm_sequence_is_labelled_opset1(corpus, runtime, tmp_path):
    """LSTMSequence-1 is written as its spec page describes; this OpenVINO reads no such op, which
    is the runtime's answer, a refusal, not the translator's."""
    case = _by_id(corpus, "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]")
    prog = SPECS["openvino-opset1"].translate(case)
    SPECS["openvino-opset1"].write(prog, tmp_path)
    assert 'type="LSTMSequence" version="opset1"' in Path(prog.files["model"]).read_text()
    assert any("LSTMSequence-1 has no builder" in n for n in prog.notes)
    try:
        runtime.run(prog.runtime_input(), prog.feeds)
    except RuntimeError as exc:  # this OpenVINO: "Opset opset1 doesn't contain the operation ..."
        assert "LSTMSequence" in str(exc)
    else:  # a runtime that reads it must compute LSTMSequence-5's result
        _, five = run_ir(case, "openvino-opset5", tmp_path / "five", runtime)
        again = runtime.run(prog.runtime_input(), prog.feeds)
        assert distance(canonical(prog, again), five) == 0


def test_an_op_openvino_refuses_to_build_is_a_refusal_at_run_time(corpus, runtime, tmp_path):
    case = _by_id(corpus, 'invalid/gru/W_shape[W={"shape":[1,6,2]}]')
    prog = SPECS["openvino-opset5"].translate(case)
    assert "Second dimension of W" in prog.extra["build_error"]
    SPECS["openvino-opset5"].write(prog, tmp_path)
    assert prog.files["model"].endswith(".build-error.txt") and "weights" not in prog.files
    with pytest.raises(RuntimeRejected, match="OpenVINO refused to build GRUSequence-5"):
        runtime.run(prog.runtime_input(), prog.feeds)
    missing = SPECS["openvino-opset5"].translate(
        _by_id(corpus, "invalid/lstm/required_inputs[X=random,W=absent,R=random]"))
    assert "requires input W" in missing.extra["build_error"]


def test_the_engine_runs_the_ir_and_passes_a_refusal_of_an_invalid_case(tmp_path):
    """The whole path: translated, written, pickled to a worker, read back from the files there."""
    from conformance.run import read_results
    from tests.conftest import conformance
    out = tmp_path / "out"
    # the shipped expectations accept a default configuration within the narrower precision it
    # declares (bf16 on AVX512-BF16/AMX CPUs), so the run is green on every machine
    conformance("run", ROOT / "tests" / "data" / "cases", "--spec", "openvino-opset5", "--runtime", "openvino",
                "--out", out, "-q", "--expectations", ROOT / "expectations", "--artifacts", "full", check=0)
    records = read_results(out / "results.jsonl")
    assert {r["case"] for r in records} == {"gru/small[direction=forward]", "gru/small[direction=reverse]",
                                            "gru/invalid_w"}
    for r in records:
        assert r["spec"] == "openvino-opset5"
        # the default configuration may compute in a narrower precision on this CPU (bf16 with
        # AVX512-BF16 or AMX): then its id says so, and the pair is judged within that precision
        if r["verdict"] == "fail" and "→" in r["target"]:
            assert r["config"] == "default" and r["declared"]["verdict"] == "pass", r["declared"]
        else:
            assert r["verdict"] == "pass", (r["case"], r["config"], r["message"])
        assert r["program"].endswith(".build-error.txt" if r["expect"] == "invalid" else ".xml")
    assert any(r["verdict"] == "pass" and r["config"] == "precision=pinned" for r in records)


def test_targets_one_per_device_and_configuration():
    found, gaps = targets({"openvino-ir": ["openvino-opset5", "openvino-opset1"], "onnx": ["onnx-14"]})
    assert not gaps
    assert {t.spec for t in found} == {"openvino-opset5", "openvino-opset1"}
    plain = {t.config for t in found if not asked(t.config)}
    assert plain == {"default", "precision=pinned"}
    assert {t.config for t in found} - plain, "the execution forms ride on precision=pinned"
    assert all(base_config(t.config) == "precision=pinned" for t in found if asked(t.config))
    assert all(t.format == "openvino-ir" and t.runtime == "openvino" for t in found)
    assert len({t.id for t in found}) == len(found)
    assert targets({"onnx": ["onnx-14"]}) == ([], [])


def test_bin_sits_beside_the_xml_after_a_copy(corpus, runtime, tmp_path):
    """A program folder moved elsewhere still runs: the xml names no absolute weights path."""
    case = _by_id(corpus, "rnn/basic[direction=bidirectional,B=random,initial_h=random]")
    prog, first = run_ir(case, "openvino-opset5", tmp_path / "a", runtime)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    moved = runtime.run(str(tmp_path / "b" / "openvino-opset5.xml"), prog.feeds)
    assert distance(canonical(prog, moved), first) == 0
