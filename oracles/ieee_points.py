"""The IEEE 754 points of the semantics profiles: where the documented formulas, evaluated in IEEE
arithmetic on non-finite inputs, have several results (the same in every spec family)."""

from __future__ import annotations

from .points import Choice, Point

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
