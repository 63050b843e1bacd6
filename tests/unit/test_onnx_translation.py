"""The ONNX translator: every valid corpus case passes onnx.checker at each version that can
express it; what a version cannot express is not-expressible with the reason.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_onnx_translation.py."""


import numpy as np
import onnx

from conformance.case import load_file
from conformance.specs import SPECS, NotExpressible


def _case(tmp_path, text):
    (tmp_path / "c.yaml").write_text(text)
    (case,), errors = load_file(tmp_path / "c.yaml")
    assert not errors
    return case


def test_layout_before_14_and_bfloat16_before_22_are_not_expressible(tmp_path):
    case = _case(tmp_path, "op: RNN\nclause: c\nattributes: {hidden_size: 2, layout: 1}\n"
                 "shape: {seq_length: 2, batch_size: 3, input_size: 1}\ndtype: bfloat16\n")
    r7, r14, r22 = (SPECS[s].translate(case) for s in ("onnx-7", "onnx-14", "onnx-22"))
    assert isinstance(r7, NotExpressible) and "layout" in r7.reason
    assert isinstance(r14, NotExpressible) and "bfloat16" in r14.reason
    assert not isinstance(r22, NotExpressible)


def test_layout_1_feeds_batch_major_inputs(tmp_path):
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 2, layout: 1}\n"
                 "shape: {seq_length: 2, batch_size: 3, input_size: 1}\ninputs: {initial_h: random}\n")
    prog = SPECS["onnx-14"].translate(case)
    np.testing.assert_array_equal(prog.feeds["X"], np.transpose(case.tensors["X"], (1, 0, 2)))
    assert prog.feeds["initial_h"].shape == (3, 1, 2)
    model = onnx.load_from_string(prog.model)
    assert {a.name: a.i for a in model.graph.node[0].attribute}["layout"] == 1


def test_absent_optional_inputs_are_empty_names_and_weights_are_initializers(tmp_path):
    case = _case(tmp_path, "op: LSTM\nclause: c\nattributes: {hidden_size: 2}\n"
                 "shape: {seq_length: 2, batch_size: 1, input_size: 1}\ninputs: {P: random}\n")
    model = onnx.load_from_string(SPECS["onnx-22"].translate(case).model)
    assert list(model.graph.node[0].input) == ["X", "W", "R", "", "", "", "", "P"]
    assert {i.name for i in model.graph.initializer} == {"W", "R", "P"}
