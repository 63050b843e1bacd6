"""The semantics profiles are data: every point cites its clause, and each profile says what the
brief of each spec family requires."""

from __future__ import annotations

import pytest

from oracles import ieee_points, points, profiles

AMBIGUITY_IDS = {"input_forget", "peephole_output", "clip_h", "alpha_beta_consumption",
                 "activation_defaults", "thresholded_relu_boundary", "sequence_lens",
                 "activation_case",
                 # IEEE 754's open points at ±Inf and NaN, the same in every profile
                 "nan_relu", "nan_thresholded_relu", "nan_hard_sigmoid", "nan_clip",
                 "tanh_at_infinity", "sigmoid_at_infinity", "softsign_at_infinity", "gru_update"}


@pytest.mark.parametrize("name", sorted(profiles.PROFILES))
def test_every_point_cites_its_clause(name):
    profile = profiles.PROFILES[name]
    points._check(profile)
    for point in profile.points.values():
        assert len(point.clause) > 20, point.id
        for choice in point.choices:
            assert choice.tag and len(choice.description) > 10, (point.id, choice.tag)
    ambiguous = {pid for pid, p in profile.points.items() if p.ambiguous}
    assert ambiguous <= AMBIGUITY_IDS
    assert all(len(profile.points[pid].choices) == 1
               for pid in profile.points if pid not in AMBIGUITY_IDS)


def _tags(profile, point):
    return profiles.PROFILES[profile].points[point].choice_tags


def test_onnx_profile():
    assert _tags("onnx", "input_forget") == ("f=1-i", "i=1-f")
    assert _tags("onnx", "peephole_output") == ("po-ct",)
    assert set(_tags("onnx", "clip_h")) == {"clip-h", "noclip-h"}
    assert set(_tags("onnx", "alpha_beta_consumption")) == {"ab-pos", "ab-pop"}
    assert _tags("onnx", "thresholded_relu_boundary") == ("tr-ge", "tr-gt")
    assert profiles.ONNX.value("clip_zero") == "clamp"
    assert profiles.ONNX.value("sequence_lens") == {
        "beyond_length": "unspecified", "zero_length": "unspecified", "reverse_start": "length-1"}


def test_directml_profile():
    assert _tags("directml", "input_forget") == ("f=1-i",)
    assert _tags("directml", "peephole_output") == ("po-ct", "po-ct1")
    assert _tags("directml", "thresholded_relu_boundary") == ("tr-gt",)
    assert profiles.DIRECTML.value("clip_ops") == ("LSTM",)


def test_openvino_profile():
    assert _tags("openvino", "input_forget") == ("i=1-f",)
    assert _tags("openvino", "peephole_output") == ("po-ct",)
    assert profiles.OPENVINO.value("clip_zero") == "off"
    assert profiles.OPENVINO.value("activation_names") == ("Relu", "Tanh", "Sigmoid")


def test_a_bad_choice_value_fails_the_check():
    bad = points.Point("input_forget", "clause text long enough here",
                        (points.Choice("x", "f=i", "made up reading"),), True)
    broken = points.Profile("broken", "spec", {**profiles.ONNX.points, "input_forget": bad})
    with pytest.raises(ValueError, match=r"'broken' point 'input_forget' value 'f=i' not in"):
        points._check(broken)


def test_the_ieee_points_are_the_same_in_every_profile():
    for profile in profiles.PROFILES.values():
        for pid, point in ieee_points.IEEE_POINTS.items():
            assert profile.points[pid] is point and point.ambiguous
            assert "IEEE 754" in point.clause
