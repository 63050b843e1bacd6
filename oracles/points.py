"""Points and choices: the vocabulary the semantics profiles (profiles.py) are written in.

A *point* is one place where the oracle has to decide what a formula means; it quotes the spec
sentence it rests on and lists the *choices* (readings) the spec admits. Here: the ``Choice``,
``Point`` and ``Profile`` records, the choices several spec families share, the settled points every
profile carries (``_rules``), and the values each point may take, checked at import (``_check``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Choice:
    tag: str  # short, stable id used in reading names, e.g. "f=1-i"
    value: object  # what the evaluator does (see ALLOWED_VALUES)
    description: str  # one sentence: what this reading assumes, citing its source


@dataclass(frozen=True)
class Point:
    id: str
    clause: str  # the spec text the point rests on, quoted
    choices: tuple[Choice, ...]
    ambiguous: bool = False

    @property
    def choice_tags(self) -> tuple[str, ...]:
        return tuple(c.tag for c in self.choices)


@dataclass(frozen=True)
class Profile:
    name: str
    spec: str
    points: dict[str, Point]

    def point(self, point_id: str) -> Point:
        return self.points[point_id]

    def value(self, point_id: str):
        """The first (preferred) choice's value: the one used for settled points."""
        return self.points[point_id].choices[0].value


def _f32(x: float) -> float:
    return float(np.float32(x))


# -- choices shared by several profiles ----------------------------------------------------------

F_IS_1_MINUS_I = Choice(
    "f=1-i", "f=1-i",
    "input_forget couples the gates as ft = 1 - it (DirectML's DML_LSTM_OPERATOR_DESC "
    "CoupleInputForget); Pf is then unused.",
)
I_IS_1_MINUS_F = Choice(
    "i=1-f", "i=1-f",
    "input_forget couples the gates as it = 1 - ft (OpenVINO's LSTMCell-1 reference "
    "implementation); Pi is then unused.",
)
PEEPHOLE_NEW_CELL = Choice("po-ct", "Ct", "the output-gate peephole reads the new cell: Po (.) Ct.")
PEEPHOLE_OLD_CELL = Choice(
    "po-ct1", "Ct-1",
    "the output-gate peephole reads the previous cell: Po (.) Ct-1 (DirectML's older text doc).",
)
CLIP_H = Choice(
    "clip-h", True,
    "clip also bounds the input of h (the cell activation h(Ct)), reading \"applied to the input "
    "of activations\" as all activations.",
)
NO_CLIP_H = Choice(
    "noclip-h", False,
    "clip bounds only the gate pre-activations (the inputs of f and g), not Ct before h.",
)
POSITIONAL = Choice(
    "ab-pos", "positional",
    "activation_alpha[k]/activation_beta[k] belong to the k-th activation in the list (forward set "
    "first); entries for activations without that parameter are ignored.",
)
POPPED = Choice(
    "ab-pop", "popped",
    "only activations that take a parameter consume the next value of activation_alpha / "
    "activation_beta, in list order.",
)
GE = Choice("tr-ge", ">=", "ThresholdedRelu(x) = x if x >= alpha (the ONNX RNN/GRU/LSTM doc).")
GT = Choice("tr-gt", ">", "ThresholdedRelu(x) = x if x > alpha (the ThresholdedRelu op, DirectML).")

ONNX_DEFAULTS = Choice(
    "onnx-op-defaults",
    {
        "defaults": {
            "LeakyRelu": {"alpha": _f32(0.01)},
            "ThresholdedRelu": {"alpha": _f32(1.0)},
            "HardSigmoid": {"alpha": _f32(0.2), "beta": _f32(0.5)},
            "Elu": {"alpha": _f32(1.0)},
        },
        "missing": "unspecified",
    },
    "a parameter not given takes the default of the standalone ONNX operator (LeakyRelu alpha "
    "0.01, ThresholdedRelu alpha 1.0, HardSigmoid alpha 0.2 beta 0.5, Elu alpha 1.0, all float32); "
    "ScaledTanh and Affine have no standalone operator, so without their parameters the outputs "
    "they feed are unspecified.",
)
UNSPECIFIED_PAST_LENGTH = Choice(
    "seq-unspecified",
    {"beyond_length": "unspecified", "zero_length": "unspecified", "reverse_start": "length-1"},
    "Y[t, d, b, :] for t >= sequence_lens[b] and Y_h/Y_c[d, b, :] for sequence_lens[b] == 0 are "
    "unspecified; the reverse direction starts at t = sequence_lens[b]-1; Y_h is the state after "
    "the last valid step (forward: t = len-1; reverse: t = 0).",
)
ANY_CASE = Choice(
    "any-case", "insensitive",
    "activation names are matched without regard to case.",
)
ONNX_ACTIVATION_NAMES = (
    "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
    "HardSigmoid", "Elu", "Softsign", "Softplus",
)


def _settled(point_id: str, clause: str, choice: Choice) -> Point:
    """A point the spec settles: one choice, not listed as an ambiguity."""
    return Point(point_id, clause, (choice,), ambiguous=False)


def _ambiguous(point_id: str, clause: str, *choices: Choice) -> Point:
    """A point where the spec is silent or contradicts itself: listed when it applies."""
    return Point(point_id, clause, choices, ambiguous=True)


def _rules(clip_zero: str, clip_clause: str, clip_ops: tuple[str, ...], activation_sets: str,
           activation_names: tuple[str, ...], activation_clause: str) -> dict[str, Point]:
    """The settled points every profile carries, differing only in the values passed."""
    return {
        "clip_zero": _settled("clip_zero", clip_clause, Choice(
            f"clip0-{clip_zero}", clip_zero,
            "clip = 0 bounds every activation input to [0, 0]" if clip_zero == "clamp"
            else "clip = 0 means no clipping")),
        "clip_ops": _settled("clip_ops", clip_clause, Choice(
            "clip-ops", clip_ops, f"clip is defined for {', '.join(clip_ops)}")),
        "activation_sets": _settled("activation_sets", activation_clause, Choice(
            activation_sets, activation_sets,
            "bidirectional takes one set of activations per direction, forward first"
            if activation_sets == "per_direction"
            else "bidirectional takes one shared set (a per-direction list is accepted too)")),
        "activation_names": _settled("activation_names", activation_clause, Choice(
            "names", activation_names,
            "activation functions allowed: " + ", ".join(activation_names))),
        "attribute_precision": _settled(
            "attribute_precision",
            "clip, activation_alpha and activation_beta are FLOAT attributes (32-bit) in ONNX, "
            "f32 attributes in OpenVINO IR and FLOAT fields in DirectML.",
            Choice("f32", "float32", "clip, alpha and beta are rounded to float32 before use")),
        "framework_axes": _settled(
            "framework_axes", "One node (operator, descriptor, method) is one layer, without a projection.",
            Choice("none", "none", "no stacked layers and no projection: num_layers 1, proj_size 0")),
    }


#: the values each point's choices may take; the evaluator understands exactly these.
ALLOWED_VALUES: dict[str, set[str | bool]] = {
    "input_forget": {"f=1-i", "i=1-f"},
    "peephole_output": {"Ct", "Ct-1"},
    "clip_h": {True, False},
    "alpha_beta_consumption": {"positional", "popped"},
    "thresholded_relu_boundary": {">=", ">"},
    "activation_case": {"insensitive"},
    "clip_zero": {"clamp", "off"},
    "activation_sets": {"per_direction", "shared_or_per_direction"},
    "attribute_precision": {"float32"},
    "nan_relu": {"nan", "zero"},
    "nan_thresholded_relu": {"zero", "nan"},
    "nan_hard_sigmoid": {"nan", "zero", "one"},
    "nan_clip": {"nan", "low", "high"},
    "tanh_at_infinity": {"limit", "nan-neg", "nan-pos", "nan"},
    "sigmoid_at_infinity": {"limit", "nan-neg", "nan-pos", "nan"},
    "softsign_at_infinity": {"limit", "nan"},
    "gru_update": {"convex", "lerp"},
    "framework_axes": {"none", "torch.nn"},
}
SEQUENCE_LENS_POLICIES = {
    "beyond_length": {"unspecified", "zeros"},
    "zero_length": {"unspecified", "zeros", "initial_state"},
    "reverse_start": {"length-1"},
}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"invalid semantics profile: {message}")


def _check(profile: Profile) -> None:
    """Fail loudly on a profile the evaluator would misread (run on every profile at import)."""
    expected = set(ALLOWED_VALUES) | {"sequence_lens", "activation_defaults", "clip_ops",
                                      "activation_names"}
    _require(set(profile.points) == expected,
             f"{profile.name!r} has points {sorted(profile.points)!r}, "
             f"expected {sorted(expected)!r}")
    for point_id, point in profile.points.items():
        where = f"{profile.name!r} point {point_id!r}"
        _require(bool(point.choices) and point.id == point_id,
                 f"{where} has no choices or a wrong id")
        _require(len(set(point.choice_tags)) == len(point.choices), f"{where} repeats a tag")
        for choice in point.choices:
            if point_id in ALLOWED_VALUES:
                _require(choice.value in ALLOWED_VALUES[point_id],
                         f"{where} value {choice.value!r} not in {ALLOWED_VALUES[point_id]!r}")
            elif point_id == "sequence_lens":
                assert isinstance(choice.value, dict), f"{where}: a sequence_lens value is a dict"
                for key, allowed in SEQUENCE_LENS_POLICIES.items():
                    _require(choice.value.get(key) in allowed,
                             f"{where} {key}={choice.value.get(key)!r} not in {allowed!r}")
            elif point_id == "activation_defaults":
                assert isinstance(choice.value, dict), f"{where}: an activation_defaults value is a dict"
                _require(choice.value.get("missing") == "unspecified",
                         f"{where} missing={choice.value.get('missing')!r}")
            else:
                _require(isinstance(choice.value, tuple), f"{where} value should be a tuple")
