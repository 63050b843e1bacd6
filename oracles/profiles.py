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

from .errors import OracleError
from .framework import TORCH
from .ieee_points import IEEE_POINTS
from .points import (
    ANY_CASE,
    CLIP_H,
    F_IS_1_MINUS_I,
    GE,
    GT,
    I_IS_1_MINUS_F,
    NO_CLIP_H,
    ONNX_ACTIVATION_NAMES,
    ONNX_DEFAULTS,
    PEEPHOLE_NEW_CELL,
    PEEPHOLE_OLD_CELL,
    POPPED,
    POSITIONAL,
    UNSPECIFIED_PAST_LENGTH,
    Profile,
    _ambiguous,
    _check,
    _rules,
    _settled,
)

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

PROFILES[TORCH.name] = TORCH

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
