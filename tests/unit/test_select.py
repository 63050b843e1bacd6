"""This module holds the unit tier's tests of it (no runtime, no process); the others: tests/runtime/test_select.py."""

import pytest

from conformance.run import SelectError, compile_expression

IDS = ["gru/basic[direction=forward]", "gru/basic[direction=reverse]", "lstm/peepholes[direction=reverse]"]


@pytest.mark.parametrize("expr, expected", [
    ("", IDS),
    ("gru", IDS[:2]),
    ("reverse and not lstm", [IDS[1]]),
    ("lstm or direction=forward", [IDS[0], IDS[2]]),
    ("(gru and reverse) or peepholes", IDS[1:]),
    ("gru/basic[direction=reverse]", [IDS[1]]),
])
def test_expressions(expr, expected):
    pred = compile_expression(expr)
    assert [i for i in IDS if pred(i)] == expected


@pytest.mark.parametrize("expr", ["gru and", "(gru", "or gru", "gru )"])
def test_bad_expressions_raise(expr):
    with pytest.raises(SelectError):
        compile_expression(expr)


# -- target selection: --runtime, --device, --config (conformance/selection.py) -------------------

import click  # noqa: E402

from conformance.runtimes.base import RuntimeRef, Target  # noqa: E402
from conformance.selection import narrow, parse_config  # noqa: E402

_REF = RuntimeRef("tests.doubles.plugins:Nothing")
TARGETS = [Target("onnxruntime", "1.32.0", "CPU", "default", "onnx-14", _REF),
           Target("openvino", "2026.4.1", "CPU", "default", "onnx-14", _REF),
           Target("openvino", "2026.4.1", "CPU", "precision=pinned", "onnx-14", _REF),
           Target("openvino", "2026.4.1", "CPU", "precision=pinned", "openvino-opset5", _REF)]


def _ids(**selection):
    kept, warnings = narrow(TARGETS, **selection)
    return [t.id for t in kept], warnings


def test_config_selects_by_the_configuration_asked_for():
    pinned = ["openvino-2026.4.1/CPU/precision=pinned@onnx-14",
              "openvino-2026.4.1/CPU/precision=pinned@openvino-opset5"]
    assert _ids(configs=["precision=pinned"]) == (pinned, [])
    # as the id names it, device first; the measured part after the arrow is not selection
    assert _ids(devices=["CPU/precision=pinned"]) == (pinned, [])
    assert _ids(devices=["CPU/precision=default→bf16"])[0] == ["onnxruntime-1.32.0/CPU@onnx-14",
                                                             "openvino-2026.4.1/CPU@onnx-14"]
    assert _ids(configs=["precision=default"], runtimes=["openvino"]) == (["openvino-2026.4.1/CPU@onnx-14"], [])
    with pytest.raises(click.UsageError, match="expected KEY=VALUE, e.g. precision=pinned"):
        parse_config("pinned")


@pytest.mark.parametrize("selection, words", [
    ({"runtimes": ["onnxrutime"]}, ["--runtime onnxrutime", "did you mean 'onnxruntime'?", "onnx-reference"]),
    ({"devices": ["GPU"]}, ["--device GPU", "Devices present: CPU"]),
    ({"devices": ["CPU/precision=pined"]}, ["did you mean 'precision=pinned'?", "precision=pinned (openvino)"]),
    ({"configs": ["precision=pined"]}, ["did you mean 'precision=pinned'?", "default (onnxruntime, openvino)"]),
    ({"runtimes": ["onnxruntime"], "configs": ["precision=pinned"]}, ["Configurations present: default (onnxruntime)"]),
])
def test_no_target_matches_lists_what_exists_with_the_closest_name(selection, words):
    with pytest.raises(click.UsageError) as info:
        narrow(TARGETS, **selection)
    assert all(w in info.value.message for w in words), info.value.message


def test_a_value_matching_nothing_beside_one_that_matches_is_a_warning():
    ids, warnings = _ids(runtimes=["onnxruntime", "onnxrutime"])
    assert ids == ["onnxruntime-1.32.0/CPU@onnx-14"] and "did you mean 'onnxruntime'?" in warnings[0]


