"""WebNN: the translator on every feature, the document's refusals, the real browser, a renderer
crash and a hang, and the declared gap (docs/webnn.md).

The real-browser tests need a browser whose WebNN works: CONFORMANCE_WEBNN_BROWSER, one on the
machine, or the project's (``python -m conformance.runtimes.webnn_browser --install``, which
``nox -s tests`` and ``.ci/run`` run where npm is present); they are skipped, saying so, only where
none can be found.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_webnn.py."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from conformance.case.model import Case
from conformance.case.yamlio import Where
from conformance.specs import SPECS, NotExpressible
from conformance.specs.webnn import validate_document
from conformance.specs.webnn.document import WebNNSpec

ED = "webnn-ed-20260626"


RNG = np.random.default_rng(7)


def make(op="GRU", form="sequence", dtype="float32", S=3, N=2, I=2, H=3, outputs=(), source=True, **kw):
    """A canonical case with random tensors; ``kw`` sets attributes, or tensors (name=array|'random')."""
    g = {"GRU": 3, "LSTM": 4}[op]
    attributes = {"hidden_size": H}
    tensors = {}
    for key, value in kw.items():
        if key in ("X", "W", "R", "B", "P", "initial_h", "initial_c", "sequence_lens"):
            tensors[key] = value
        else:
            attributes[key] = value
    d = 2 if attributes.get("direction") == "bidirectional" else 1
    shapes = {"X": (S, N, I), "W": (d, g * H, I), "R": (d, g * H, H), "B": (d, 2 * g * H), "P": (d, 3 * H),
              "initial_h": (d, N, H), "initial_c": (d, N, H)}
    for name in ("X", "W", "R"):
        tensors.setdefault(name, "random")
    for name, value in list(tensors.items()):
        if isinstance(value, str) and value == "random":
            tensors[name] = RNG.uniform(-1, 1, shapes[name]).astype(dtype if dtype != "bfloat16" else "float32")
    return Case(id=f"test/{op.lower()}["
                f"{','.join(f'{k}={v}' for k, v in sorted(kw.items()) if not hasattr(v, 'shape'))}]",
                op=op, form=form, attributes=attributes, shape={"seq_length": S, "batch_size": N, "input_size": I},
                dtype=dtype, tensors=tensors, outputs=tuple(outputs),
                source=Where("cases/test/webnn.yaml", 3) if source else None)


def document(case, spec=None):
    program = (spec or SPECS[ED]).translate(case)
    assert not isinstance(program, NotExpressible), program
    return program, json.loads(program.model)


def operand(doc, name):
    o = doc["operands"][name]
    return np.frombuffer(base64.b64decode(o["data"]), dtype="<f4" if o["dataType"] == "float32" else "<f2"
                         ).reshape(o["shape"])


def call(doc):
    return next(c for c in doc["operations"] if c["op"] != "transpose")


def test_specs_are_registered_with_the_webnn_profile():
    assert {s for s in SPECS if s.startswith("webnn-")} == {"webnn-cr-20260122", ED}
    assert all(SPECS[s].semantics == "webnn" and SPECS[s].format == "webnn" for s in SPECS if s.startswith("webnn-"))
    from oracles.profiles import get_profile
    assert get_profile("webnn").point("peephole_output").choice_tags == ("po-ct1", "po-ct")


@pytest.mark.parametrize("layout", ["default", "permuted"])
def test_gru_layouts_reorder_weights_and_split_the_bias(layout):
    case = make("GRU", B="random", linear_before_reset=1)
    _, doc = document(case, WebNNSpec("ed-20260626", gate_layout=layout))
    c = call(doc)
    assert c["op"] == "gru" and c["args"] == ["X", "W", "R", 3, 3]
    assert c["options"]["layout"] == ("zrn" if layout == "default" else "rzn")
    assert c["options"]["resetAfter"] is True
    W, B = case.tensors["W"], case.tensors["B"]
    order = (0, 1, 2) if layout == "default" else (1, 0, 2)
    blocks = np.split(W, 3, axis=1)
    np.testing.assert_array_equal(operand(doc, "W"), np.concatenate([blocks[k] for k in order], axis=1))
    wb, rb = np.split(B, 2, axis=1)
    np.testing.assert_array_equal(operand(doc, "bias"), np.concatenate([np.split(wb, 3, 1)[k] for k in order], 1))
    np.testing.assert_array_equal(operand(doc, "recurrentBias"),
                                  np.concatenate([np.split(rb, 3, 1)[k] for k in order], 1))


def test_linear_before_reset_0_is_written_as_reset_after_false():
    _, doc = document(make("GRU"))
    assert call(doc)["options"]["resetAfter"] is False  # WebNN's default is true: always written


@pytest.mark.parametrize("layout", ["default", "permuted"])
def test_lstm_layouts_keep_the_peephole_order(layout):
    case = make("LSTM", P="random", B="random")
    _, doc = document(case, WebNNSpec("ed-20260626", gate_layout=layout))
    c = call(doc)
    assert c["options"]["layout"] == ("iofg" if layout == "default" else "ifgo")
    order = (0, 1, 2, 3) if layout == "default" else (0, 2, 3, 1)  # ONNX i, o, f, c
    blocks = np.split(case.tensors["W"], 4, axis=1)
    np.testing.assert_array_equal(operand(doc, "W"), np.concatenate([blocks[k] for k in order], axis=1))
    np.testing.assert_array_equal(operand(doc, "peepholeWeight"), case.tensors["P"])  # i, o, f always


@pytest.mark.parametrize("direction, webnn", [("forward", "forward"), ("reverse", "backward"),
                                              ("bidirectional", "both")])
def test_directions_and_the_sequence_output(direction, webnn):
    program, doc = document(make("LSTM", direction=direction, initial_h="random", initial_c="random"))
    c = call(doc)
    assert c["options"]["direction"] == webnn and c["options"]["returnSequence"] is True
    assert c["options"]["initialHiddenState"] == "initial_h" and c["options"]["initialCellState"] == "initial_c"
    assert c["outputs"] == ["lstm.Y_h", "lstm.Y_c", "lstm.Y"]
    assert [o for o, _ in program.outputs] == ["Y", "Y_h", "Y_c"]
    assert doc["violations"] == []


def test_return_sequence_only_when_y_is_asked_for():
    _, doc = document(make("GRU", outputs=("Y_h",)))
    assert call(doc)["options"]["returnSequence"] is False and call(doc)["outputs"] == ["gru.Y_h"]


def test_activations_are_the_enum_written_once_for_both_directions():
    _, doc = document(make("GRU", direction="bidirectional", activations=["SIGMOID", "relu", "Sigmoid", "Relu"]))
    assert call(doc)["options"]["activations"] == ["sigmoid", "relu"]


def test_layout_1_is_transposes_around_the_operator():
    case = make("GRU", layout=1, initial_h="random")
    program, doc = document(case)
    ops = [c["op"] for c in doc["operations"]]
    assert ops == ["transpose", "transpose", "gru", "transpose", "transpose"]
    assert doc["operands"]["X.batch_major"]["shape"] == [2, 3, 2]
    assert program.transforms["Y"] == {"transpose": (1, 2, 0, 3)}


def test_cell_form_and_its_absent_state():
    program, doc = document(make("LSTM", form="cell", S=1, initial_h="random"))
    c = call(doc)
    assert c["op"] == "lstmCell" and c["args"] == ["X", "W", "R", "initial_h", "initial_c", 3]
    assert doc["operands"]["initial_c"]["kind"] == "constant"  # cellState is required: zeros
    assert not operand(doc, "initial_c").any()
    assert doc["operands"]["W"]["shape"] == [12, 2]
    assert program.transforms["Y"] == {"reshape": [1, 1, 2, 3]}


def test_float16_and_full_lengths():
    lens = np.array([3, 3], dtype=np.int32)
    _, doc = document(make("GRU", dtype="float16", sequence_lens=lens))
    assert {o["dataType"] for o in doc["operands"].values()} == {"float16"}
    assert any("sequence_lens" in n for n in doc["notes"]) and "sequence_lens" not in doc["operands"]


@pytest.mark.parametrize("case, reason", [
    (lambda: make("GRU", clip=1.0), "clip"),
    (lambda: make("LSTM", input_forget=1), "input_forget=1"),
    (lambda: make("GRU", sequence_lens=np.array([3, 1], dtype=np.int32)), "sequence_lens [3, 1]"),
    (lambda: make("GRU", activations=["Sigmoid", "LeakyRelu"]), "MLRecurrentNetworkActivation"),
    (lambda: make("GRU", activations=["Sigmoid", "Tanh"], activation_alpha=[0.1]), "activation_alpha"),
    (lambda: make("GRU", direction="bidirectional", activations=["Sigmoid", "Tanh", "Sigmoid", "Relu"]),
     "differ per direction"),
    (lambda: make("GRU", dtype="float64"), "float64"),
    (lambda: make("GRU", dtype="bfloat16"), "bfloat16"),
    (lambda: make("GRU", form="cell", S=1, direction="bidirectional"), "bidirectional cell"),
    (lambda: make("GRU", layout=2), "layout=2"),
])
def test_what_webnn_cannot_say_is_not_expressible(case, reason):
    result = SPECS[ED].translate(case())
    assert isinstance(result, NotExpressible) and reason in result.reason


def test_a_plain_rnn_is_not_expressible():
    case = Case(id="t/rnn", op="RNN", form="sequence", attributes={"hidden_size": 1},
                shape={"seq_length": 1, "batch_size": 1, "input_size": 1}, dtype="float32",
                tensors={"X": np.zeros((1, 1, 1), "f4"), "W": np.zeros((1, 1, 1), "f4"),
                         "R": np.zeros((1, 1, 1), "f4")})
    assert "no plain RNN" in SPECS[ED].translate(case).reason


def test_a_document_that_breaks_the_method_steps_says_where_and_why():
    bad_w = RNG.uniform(-1, 1, (1, 8, 2)).astype("f4")      # 3*hidden = 9
    _, doc = document(make("GRU", W=bad_w, B=RNG.uniform(-1, 1, (1, 12)).astype("f4")))
    assert doc["source"] == "cases/test/webnn.yaml:3"
    text = " | ".join(doc["violations"])
    assert "cases/test/webnn.yaml:3: gru() weight: shape [1, 8, 2] is not [1, 9, 2]" in text
    assert "options.bias: shape [1, 6] is not [1, 9]" in text  # an invalid B is split as it is


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c["args"].__setitem__(3, 0), "steps"),
    (lambda c: c["options"].__setitem__("layout", "ifgo"), "options.layout"),
    (lambda c: c["options"].__setitem__("activations", ["sigmoid"]), "its size is 1"),
    (lambda c: c["options"].__setitem__("direction", "sideways"), "options.direction"),
    (lambda c: c["args"].__setitem__(4, -1), "hiddenSize"),
])
def test_validation_of_hand_broken_documents(edit, expected):
    _, doc = document(make("GRU"))
    edit(call(doc))
    assert any(expected in str(v) for v in validate_document(doc))
