"""Semantics profiles: what each spec family documents, as data.

A profile is a table of *points*: one per place where the oracle has to decide what a formula
means. Each point quotes the spec sentence it rests on and lists the *choices* (readings) the spec
admits. One choice means the spec settles the point; several mean the oracle evaluates each and
returns one reading per distinct result. ``ambiguous`` marks the points where the spec is silent or
self-contradictory (docs/disagreements.md): those are listed in
``OracleResult.ambiguities`` when they apply to a case.

Adding a spec family, or changing what one says, is an edit to this table; the evaluator reads the
choice values below and nothing else. The values each point accepts are checked at import
(``_check``), so a typo fails loudly instead of silently meaning something else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import OracleError


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


# -- sentences quoted from the specs -------------------------------------------------------------

ONNX_CLIP = (
    "ONNX RNN/GRU/LSTM `clip`: \"Cell clip threshold. Clipping bounds the elements of a tensor in "
    "the range of [-threshold, +threshold] and is applied to the input of activations. No clip if "
    "not specified.\""
)
ONNX_ALPHA = (
    "ONNX `activation_alpha`/`activation_beta`: \"Optional scaling values used by some activation "
    "functions. The values are consumed in the order of activation functions, for example "
    "(f, g, h) in LSTM. Default values are the same as of corresponding ONNX operators.For "
    "example with LeakyRelu, the default alpha is 0.01.\""
)
ONNX_INPUT_FORGET = (
    "ONNX LSTM `input_forget`: \"Couple the input and forget gates if 1.\" The equations do not "
    "say how."
)
ONNX_PEEPHOLE = (
    "ONNX LSTM: \"ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)\" (Ct, the new cell)."
)
ONNX_THRESHOLDED = (
    "ONNX RNN/GRU/LSTM: \"ThresholdedRelu(x) - x if x >= alpha else 0\"; the ONNX ThresholdedRelu "
    "operator: \"y = x for x > alpha, y = 0 otherwise\"."
)
ONNX_SEQUENCE_LENS = (
    "ONNX `sequence_lens`: \"Optional tensor specifying lengths of the sequences in a batch. If "
    "not specified - assumed all sequences in the batch to have length `seq_length`.\" Nothing is "
    "said about Y past a sequence's length, about Y_h/Y_c when a length is 0, or about where the "
    "reverse direction starts for a short sequence."
)
ONNX_ACTIVATIONS = (
    "ONNX `activations`: \"A list of 2 (or 4 if bidirectional) activation functions for update, "
    "reset, and hidden gates. The activation functions must be one of the activation functions "
    "specified above.\" (RNN: one or two; LSTM: three or six.) The case of the names is not said."
)
OPENVINO_CLIP = (
    "OpenVINO *Sequence-5 / *Cell `clip`: \"clip specifies bound values [-C, C] for tensor "
    "clipping. Clipping is performed before activations.\" Range: \"a positive floating-point "
    "number\"; default: \"infinity that means that the clipping is not applied\"."
)
OPENVINO_SEQUENCE_LENGTHS = (
    "OpenVINO *Sequence-5 `sequence_lengths`: \"specifies real sequence lengths for each batch "
    "element. In case of negative values in this input, the operation behavior is undefined.\""
)
DIRECTML_SEQUENCE_LENGTHS = (
    "DML_*_OPERATOR_DESC `SequenceLengthsTensor`: \"An optional tensor containing an independent "
    "seq_length for each element in the batch. If not specified, then all sequences in the batch "
    "have length seq_length.\""
)

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


# -- IEEE 754: where the documented formulas, evaluated in IEEE arithmetic, have several results ----
#
# With ±Inf or NaN in the inputs, every operation of the formulas follows IEEE 754-2019 (ieee.py).
# At these points IEEE does not decide what an implementation returns, because the documented
# formula can be computed in more than one IEEE-correct way; the same in every spec family. They
# are evaluated only when an evaluation reaches them (readings.py, DYNAMIC) and listed only then.

IEEE_MAXIMUM = (
    "IEEE 754-2019 9.6 maximum/minimum propagate NaN (numpy's maximum/minimum); 754-2008 5.3.1 "
    "maxNum/minNum and C's fmax/fmin return the other operand; x86 maxps/minps return their "
    "second operand when either is NaN; `x > 0 ? x : 0` and C++'s std::max(0, x) return 0."
)
IEEE_DIVISION = "IEEE 754-2019 7.2: Inf/Inf, Inf - Inf and 0 x Inf are invalid operations: NaN."


def _ieee(point_id: str, clause: str, *choices: Choice) -> Point:
    return Point(point_id, clause, choices, ambiguous=True)


def _at_infinity(name: str, forms: dict) -> tuple[Choice, ...]:
    """f(+Inf) and f(-Inf): each its limit or NaN, as the form of the formula computed decides."""
    return tuple(Choice(f"{name}-{value}", value, forms[value]) for value in forms)


IEEE_POINTS = {
    "nan_relu": _ieee(
        "nan_relu", "ONNX: \"Relu(x) - max(0, x)\" at x = NaN. " + IEEE_MAXIMUM,
        Choice("relu-nan", "nan", "Relu(NaN) = NaN (IEEE 754-2019 maximum; numpy.maximum)."),
        Choice("relu-zero", "zero", "Relu(NaN) = 0 (maxNum, fmax, `x > 0 ? x : 0`, "
               "std::max(0.0f, x): onnxruntime's RNN, OpenVINO)."),
    ),
    "nan_thresholded_relu": _ieee(
        "nan_thresholded_relu",
        "ONNX: \"ThresholdedRelu(x) - x if x >= alpha else 0\" at x = NaN: the comparison is false "
        "(IEEE 754-2019 5.11), so the formula as written gives 0; `x < alpha ? 0 : x` gives NaN.",
        Choice("thr-zero", "zero", "ThresholdedRelu(NaN) = 0: the comparison is false (the formula "
               "as written; onnxruntime)."),
        Choice("thr-nan", "nan", "ThresholdedRelu(NaN) = NaN (`x < alpha ? 0 : x`, or NaN "
               "propagated)."),
    ),
    "nan_hard_sigmoid": _ieee(
        "nan_hard_sigmoid",
        "ONNX: \"HardSigmoid(x) - min(max(alpha*x + beta, 0), 1)\" where alpha*x + beta is NaN "
        "(x NaN, or alpha = 0 and x infinite). " + IEEE_MAXIMUM,
        Choice("hs-nan", "nan", "HardSigmoid of NaN = NaN (IEEE 754-2019 maximum/minimum)."),
        Choice("hs-zero", "zero", "HardSigmoid of NaN = 0: max(NaN, 0) returns 0 first "
               "(std::min(1, std::max(0, y)): onnxruntime)."),
        Choice("hs-one", "one", "HardSigmoid of NaN = 1: min(NaN, 1) returns 1 first "
               "(max(min(y, 1), 0) with fmin/fmax)."),
    ),
    "nan_clip": _ieee(
        "nan_clip",
        "clip bounds an activation input to [-clip, clip] (ONNX `clip`; OpenVINO `clip`; DirectML "
        "ClipThreshold) at a NaN input; min and max with a NaN operand. " + IEEE_MAXIMUM,
        Choice("clip-nan", "nan", "clip(NaN) = NaN (comparisons false, or NaN propagated: "
               "onnxruntime's RNN, its LSTM without B)."),
        Choice("clip-low", "low", "clip(NaN) = -clip: max(x, -clip) returns -clip first (OpenVINO)."),
        Choice("clip-high", "high", "clip(NaN) = +clip: min(clip, x) returns clip first "
               "(onnxruntime's LSTM with B, clip_add_bias: std::min(b, x) then std::max(-b, x))."),
    ),
    "tanh_at_infinity": _ieee(
        "tanh_at_infinity",
        "ONNX: \"Tanh(x) - (1 - e^{-2x})/(1 + e^{-2x})\" (also inside ScaledTanh) at x = +-Inf. "
        "IEEE 754-2019 9.2's tanh(+-Inf) = +-1; the formula as written gives (1 - Inf)/(1 + Inf) "
        "at -Inf, (e^{2x} - 1)/(e^{2x} + 1) gives Inf/Inf at +Inf (GPU shader tanh). "
        + IEEE_DIVISION,
        *_at_infinity("tanh", {
            "limit": "Tanh(+-Inf) = +-1 (a library tanh: onnxruntime, OpenVINO).",
            "nan-neg": "Tanh(+Inf) = 1, Tanh(-Inf) = NaN: (1 - e^{-2x})/(1 + e^{-2x}) as written.",
            "nan-pos": "Tanh(+Inf) = NaN, Tanh(-Inf) = -1: (e^{2x} - 1)/(e^{2x} + 1).",
            "nan": "Tanh(+-Inf) = NaN: (e^x - e^{-x})/(e^x + e^{-x}).",
        }),
    ),
    "sigmoid_at_infinity": _ieee(
        "sigmoid_at_infinity",
        "ONNX: \"Sigmoid(x) - 1/(1 + e^{-x})\" at x = +-Inf: as written it gives 1 and 0; "
        "e^x/(1 + e^x) gives Inf/Inf at +Inf, (1 + tanh(x/2))/2 inherits tanh's NaN. "
        + IEEE_DIVISION,
        *_at_infinity("sigmoid", {
            "limit": "Sigmoid(+Inf) = 1, Sigmoid(-Inf) = 0 (1/(1 + e^{-x}) as written).",
            "nan-pos": "Sigmoid(+Inf) = NaN, Sigmoid(-Inf) = 0: e^x/(1 + e^x).",
            "nan-neg": "Sigmoid(+Inf) = 1, Sigmoid(-Inf) = NaN: (1 + tanh(x/2))/2 with tanh as "
                       "written.",
            "nan": "Sigmoid(+-Inf) = NaN: (1 + tanh(x/2))/2 with (e^y - e^{-y})/(e^y + e^{-y}).",
        }),
    ),
    "softsign_at_infinity": _ieee(
        "softsign_at_infinity",
        "ONNX: \"Softsign(x) - x/(1 + |x|)\" at x = +-Inf: as written Inf/Inf = NaN; the limit is "
        "+-1 (a form such as sign(x)(1 - 1/(1 + |x|)) gives it). " + IEEE_DIVISION,
        Choice("softsign-limit", "limit", "Softsign(+-Inf) = +-1, the limit."),
        Choice("softsign-nan", "nan", "Softsign(+-Inf) = NaN: x/(1 + |x|) as written "
               "(onnxruntime)."),
    ),
    "gru_update": _ieee(
        "gru_update",
        "ONNX GRU: \"Ht = (1 - zt) (.) ht + zt (.) Ht-1\". Equal for finite values to "
        "ht + zt (.) (Ht-1 - ht) (one multiply fewer, a common rewrite); with an infinite ht or "
        "Ht-1 the two can differ: (1 - z) Inf + z H is Inf, Inf + z (H - Inf) is NaN. "
        + IEEE_DIVISION,
        Choice("gru-convex", "convex", "Ht = (1 - zt)(.)ht + zt(.)Ht-1 as written (OpenVINO; "
               "onnxruntime's source)."),
        Choice("gru-lerp", "lerp", "Ht = ht + zt(.)(Ht-1 - ht)."),
    ),
}


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


ONNX = Profile(
    name="onnx",
    spec="ONNX RNN, GRU, LSTM (opsets 7, 14, 22)",
    points={
        "input_forget": _ambiguous("input_forget", ONNX_INPUT_FORGET,
                                   F_IS_1_MINUS_I, I_IS_1_MINUS_F),
        "peephole_output": _settled("peephole_output", ONNX_PEEPHOLE, PEEPHOLE_NEW_CELL),
        "clip_h": _ambiguous("clip_h", ONNX_CLIP, NO_CLIP_H, CLIP_H),
        "alpha_beta_consumption": _ambiguous("alpha_beta_consumption", ONNX_ALPHA,
                                             POPPED, POSITIONAL),
        "activation_defaults": _ambiguous("activation_defaults", ONNX_ALPHA, ONNX_DEFAULTS),
        "thresholded_relu_boundary": _ambiguous("thresholded_relu_boundary", ONNX_THRESHOLDED,
                                                GE, GT),
        "sequence_lens": _ambiguous("sequence_lens", ONNX_SEQUENCE_LENS, UNSPECIFIED_PAST_LENGTH),
        "activation_case": _ambiguous("activation_case", ONNX_ACTIVATIONS, ANY_CASE),
        **_rules("clamp", ONNX_CLIP, ("RNN", "GRU", "LSTM"), "per_direction", ONNX_ACTIVATION_NAMES,
                 ONNX_ACTIVATIONS),
        **IEEE_POINTS,
    },
)

OPENVINO = Profile(
    name="openvino",
    spec=("OpenVINO RNNSequence-5, GRUSequence-5, LSTMSequence-5/-1, RNNCell, GRUCell-3, "
          "LSTMCell-1/-4"),
    points={
        "input_forget": _settled(
            "input_forget",
            "OpenVINO LSTMCell-1 / LSTMSequence-1 carry `input_forget`; the spec page gives no "
            "formula, the reference implementation computes it = 1 - ft.",
            I_IS_1_MINUS_F),
        "peephole_output": _settled(
            "peephole_output",
            "OpenVINO LSTMCell-1 / LSTMSequence-1 carry P but the spec page shows no peephole "
            "term; the ONNX equation (Po (.) Ct) is taken.",
            PEEPHOLE_NEW_CELL),
        "clip_h": _ambiguous("clip_h", OPENVINO_CLIP, NO_CLIP_H, CLIP_H),
        "alpha_beta_consumption": _ambiguous(
            "alpha_beta_consumption",
            "OpenVINO `activations_alpha, activations_beta`: \"applicability and meaning of these "
            "attributes depends on chosen activation functions\".",
            POPPED, POSITIONAL),
        "activation_defaults": _ambiguous("activation_defaults", ONNX_ALPHA, ONNX_DEFAULTS),
        "thresholded_relu_boundary": _settled(
            "thresholded_relu_boundary", "OpenVINO allows relu, sigmoid and tanh only.", GT),
        "sequence_lens": _ambiguous("sequence_lens", OPENVINO_SEQUENCE_LENGTHS,
                                    UNSPECIFIED_PAST_LENGTH),
        "activation_case": _settled(
            "activation_case", "OpenVINO names are lowercase (relu, sigmoid, tanh).", ANY_CASE),
        **_rules("off", OPENVINO_CLIP + " An IR clip of 0 is how \"not applied\" is written.",
                 ("RNN", "GRU", "LSTM"), "shared_or_per_direction", ("Relu", "Tanh", "Sigmoid"),
                 "OpenVINO `activations`: \"any combination of relu, sigmoid, tanh\"; one set for "
                 "both directions."),
        **IEEE_POINTS,
    },
)

DIRECTML = Profile(
    name="directml",
    spec="DirectML DML_RNN/GRU/LSTM_OPERATOR_DESC (DML_FEATURE_LEVEL_1_0)",
    points={
        "input_forget": _settled(
            "input_forget",
            "DML_LSTM_OPERATOR_DESC `CoupleInputForget`: the doc reads ft = 1 - it.",
            F_IS_1_MINUS_I),
        "peephole_output": _ambiguous(
            "peephole_output",
            "DML_LSTM_OPERATOR_DESC equations: the current doc uses Po (.) Ct as ONNX does; its "
            "older text version writes Po (.) Ct-1.",
            PEEPHOLE_NEW_CELL, PEEPHOLE_OLD_CELL),
        "clip_h": _ambiguous(
            "clip_h",
            "DML_LSTM_OPERATOR_DESC `ClipThreshold`/`UseClipThreshold`: the cell clip threshold, "
            "applied to the input of activations, as in ONNX.",
            NO_CLIP_H, CLIP_H),
        "alpha_beta_consumption": _ambiguous(
            "alpha_beta_consumption",
            "DirectML gives each DML_ACTIVATION_* descriptor its own parameters, so the spec has "
            "no consumption order; the canonical (ONNX) case's lists carry ONNX's ambiguity: "
            + ONNX_ALPHA,
            POPPED, POSITIONAL),
        "activation_defaults": _ambiguous("activation_defaults", ONNX_ALPHA, ONNX_DEFAULTS),
        "thresholded_relu_boundary": _settled(
            "thresholded_relu_boundary",
            "DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC: x where x > Alpha, else 0 "
            "(docs/disagreements.md#thresholdedrelu-boundary).", GT),
        "sequence_lens": _ambiguous("sequence_lens", DIRECTML_SEQUENCE_LENGTHS,
                                    UNSPECIFIED_PAST_LENGTH),
        "activation_case": _settled(
            "activation_case", "DirectML names activations by enum (DML_ACTIVATION_*).", ANY_CASE),
        **_rules("clamp", "DML_LSTM_OPERATOR_DESC: ClipThreshold with UseClipThreshold; "
                 "DML_RNN_OPERATOR_DESC and DML_GRU_OPERATOR_DESC have no clip.",
                 ("LSTM",), "per_direction", ONNX_ACTIVATION_NAMES,
                 "DML_*_OPERATOR_DESC `ActivationDescs`: one descriptor per gate function per "
                 "direction, forward first (1/2, 2/4, 3/6)."),
        **IEEE_POINTS,
    },
)

WEBNN_TR = "https://www.w3.org/TR/webnn/"
WEBNN_PEEPHOLE = (
    "WebNN lstmCell (" + WEBNN_TR + "#api-mlgraphbuilder-lstmcell): the normative method steps give "
    "no formula (the section cites [LSTM]); the only formula is the non-normative emulation, whose "
    "output gate adds `mul(cellState, slice(peepholeWeight, [hiddenSize], [hiddenSize]))` with "
    "cellState the *input* cell state, Ct-1, where ONNX reads the new cell Ct (CR 2024-04-11, CR "
    "2026-01-22 and the Editor's Draft c515210 alike)."
)
WEBNN_NONE = "WebNN's gru/lstm have no {what} ({tr}#api-mlgraphbuilder-gru, #api-mlgraphbuilder-lstm): " \
             "such cases are not expressible and never reach this profile."
WEBNN_ACTIVATIONS = (
    "WebNN MLRecurrentNetworkActivation (" + WEBNN_TR + "#api-mlgraphbuilder-gru): \"relu\", "
    "\"sigmoid\", \"tanh\"; gru takes a list of 2, lstm of 3, one list for both directions "
    "(since webmachinelearning/webnn#718; CR 2026-01-22)."
)

WEBNN = Profile(
    name="webnn",
    spec="WebNN gru, gruCell, lstm, lstmCell (CR 2026-01-22; Editor's Draft c515210)",
    points={
        "input_forget": _settled("input_forget", WEBNN_NONE.format(what="input_forget", tr=WEBNN_TR),
                                 F_IS_1_MINUS_I),
        "peephole_output": _ambiguous("peephole_output", WEBNN_PEEPHOLE,
                                      PEEPHOLE_OLD_CELL, PEEPHOLE_NEW_CELL),
        "clip_h": _settled("clip_h", WEBNN_NONE.format(what="clip", tr=WEBNN_TR), NO_CLIP_H),
        "alpha_beta_consumption": _settled(
            "alpha_beta_consumption", "MLRecurrentNetworkActivation values take no parameters: "
            + WEBNN_NONE.format(what="activation_alpha/activation_beta", tr=WEBNN_TR), POPPED),
        "activation_defaults": _settled("activation_defaults", WEBNN_ACTIVATIONS, ONNX_DEFAULTS),
        "thresholded_relu_boundary": _settled(
            "thresholded_relu_boundary", WEBNN_ACTIVATIONS + " ThresholdedRelu is not among them.", GT),
        "sequence_lens": _settled("sequence_lens", WEBNN_NONE.format(what="sequence lengths", tr=WEBNN_TR),
                                  UNSPECIFIED_PAST_LENGTH),
        "activation_case": _settled("activation_case", WEBNN_ACTIVATIONS + " Enum values are lower case.",
                                    ANY_CASE),
        **_rules("off", WEBNN_NONE.format(what="clip", tr=WEBNN_TR), (), "shared_or_per_direction",
                 ("Relu", "Tanh", "Sigmoid"), WEBNN_ACTIVATIONS),
        **IEEE_POINTS,
    },
)

PROFILES: dict[str, Profile] = {p.name: p for p in (ONNX, OPENVINO, DIRECTML, WEBNN)}

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


from .framework import TORCH  # noqa: E402 - the torch.nn profile is built from this module's pieces

PROFILES[TORCH.name] = TORCH  # type: ignore[has-type]

for _profile in PROFILES.values():
    _check(_profile)


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise OracleError(
            f"profile={name!r} is not a known semantics profile; it should be one of "
            f"{sorted(PROFILES)!r}."
        ) from None
