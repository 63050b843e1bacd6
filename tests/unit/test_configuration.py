"""A target's configuration as a value and a target id's parts (conformance/runtimes/configuration.py):
the one parse and the one str every reader goes through."""

from __future__ import annotations

import pytest

from conformance.runtimes.configuration import TargetConfig, TargetName

IDS = [
    "onnxruntime-1.32.0/CPU@onnx-14",
    "openvino-2026.4.1/CPU/precision=default→bf16@onnx-14",
    "openvino-2026.4.1/CPU/precision=pinned→bf16/shape=dynamic@openvino-opset5",
    "onnxruntime-1.32.0/CPU/shape=dynamic/session=reused@onnx-22",
    "torch-2.11.0+cu130/CUDA/precision=default→tf32@torch",
    "plugin-1/default/shape=dynamic/precision→tf32@onnx-14",
    "my-runtime/CPU/fast@onnx-7",
    "onnx-reference-1.23.2/CPU@onnx-7",
    "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU/shape=dynamic@torch",
    "openvino.convert_model-2026.4.1 → openvino-2026.4.1/CPU/precision=pinned@torch",
]


@pytest.mark.parametrize("target_id", IDS)
def test_every_kind_of_target_id_round_trips(target_id):
    assert str(TargetName.parse(target_id)) == target_id


def test_an_ids_parts():
    name = TargetName.parse("openvino-2026.4.1/CPU/precision=pinned→bf16/shape=dynamic@openvino-opset5")
    assert (name.head, name.device, name.spec, name.runtime, name.version) == (
        "openvino-2026.4.1", "CPU", "openvino-opset5", "openvino", "2026.4.1")
    assert name.config.pairs == {"precision": "pinned", "shape": "dynamic"} and name.config.measured == "bf16"
    assert name.config.asked == "precision=pinned/shape=dynamic"
    assert name.without_spec == "openvino-2026.4.1/CPU/precision=pinned→bf16/shape=dynamic"
    converted = TargetName.parse(IDS[8])
    assert converted.config.converter == "torch.onnx-dynamo-2.13.0(opset=18)" and converted.head == "onnxruntime-1.32.0"
    assert TargetName.parse("onnx-reference-1.23.2/CPU@onnx-7").runtime == "onnx-reference"
    assert TargetName.parse("my-runtime/CPU/fast@onnx-7").version == ""


def test_labels_put_the_measured_precision_where_ids_have_it():
    def label(config, measured):
        return TargetConfig(TargetConfig.parse(config).items, measured).label
    assert label("default", "bf16") == "precision=default→bf16"
    assert label("precision=pinned/shape=dynamic", "bf16") == "precision=pinned→bf16/shape=dynamic"
    assert label("shape=dynamic", "tf32") == "shape=dynamic/precision→tf32"
    assert label("fast", "tf32") == "fast/precision→tf32"
    assert label("default", "f32") == label("default", "") == "default"


def test_a_comparison_reads_precision_default_as_the_default_configuration():
    assert TargetConfig.parse("precision=default→bf16").plain == TargetConfig.parse("default").plain == ()
    assert TargetConfig.parse("precision=default").pairs == {"precision": "default"}   # a selection keeps it
    assert TargetConfig.parse("precision=pinned").plain == (("precision", "pinned"),)


def test_a_plugins_own_word_is_kept_in_a_target_and_refused_in_a_selection():
    assert TargetConfig.parse("fast").words == ["fast"] and TargetConfig.parse("fast").asked == "fast"
    with pytest.raises(ValueError):
        TargetConfig.parse("fast", labelled=False)
    with pytest.raises(ValueError):
        TargetConfig.parse("precision→bf16", labelled=False)
    assert TargetName.device_part("CPU/precision=pinned") == ("CPU", TargetConfig((("precision", "pinned"),)))
    with pytest.raises(ValueError):
        TargetName.device_part("CPU/pinned")


def test_the_separators_the_forms_and_the_selection_accept():
    assert TargetConfig.parse("precision=pinned,shape=dynamic").asked == "precision=pinned/shape=dynamic"
    assert TargetConfig.parse("precision=pinned/shape=dynamic").without({"shape"}).asked == "precision=pinned"
    assert TargetConfig.parse("precision=pinned/shape=dynamic").only({"shape"}).asked == "shape=dynamic"
    assert str(TargetConfig.parse(None)) == "default"
