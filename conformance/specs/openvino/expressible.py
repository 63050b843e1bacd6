"""What OpenVINO's ops cannot say: the reasons a case is not expressible in an opset."""

from __future__ import annotations

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    GATES,
)
from conformance.specs.openvino.vocabulary import ACTIVATIONS


def _peephole_reason(op: str, case: Case) -> str | None:
    p = case.tensors.get("P")
    if p is None or not np.any(p.astype(np.float64)):
        return None
    if op == "LSTMCell-1":
        return ("non-zero P: the LSTMCell-1 spec page has no P input, and OpenVINO's IR serializer "
                "drops input 6 (P) of v0::LSTMCell (\"peephole input shall not be serialized\"), so "
                "peepholes cannot be written in IR")
    if op == "LSTMSequence-1":
        return "non-zero P: the LSTMSequence-1 spec page has no P input (7 inputs, X … B)"
    return f"non-zero P: {op} has no peephole input (peepholes exist only in v0::LSTMCell)"


def _bias_reason(op: str, case: Case) -> str | None:
    bias, g = case.tensors.get("B"), GATES[case.op]
    if bias is None or (bias.ndim >= 1 and bias.shape[-1] % (2 * g) == 0):
        return None
    return (f"B of shape {list(bias.shape)} cannot be split into Wb and Rb (ONNX B is [D, {2 * g}·hidden_size]); "
            f"{op}'s B is their sum, so this B has no OpenVINO form")


def _activation_reason(op: str, case: Case) -> str | None:
    names = case.attributes.get("activations")
    if not names:
        return None
    unknown = [a for a in names if str(a).lower() not in ACTIVATIONS]
    if unknown:
        return (f"activations {unknown!r}: {op} allows relu, sigmoid and tanh only "
                f"(\"any combination of relu, sigmoid, tanh\")")
    n = ACTIVATIONS_PER_DIRECTION[case.op]
    if len(names) == 2 * n:
        fwd, rev = [a.lower() for a in names[:n]], [a.lower() for a in names[n:]]
        if fwd != rev:
            return (f"per-direction activations {fwd} (forward) and {rev} (reverse): {op} has one "
                    f"activation set shared by both directions")
    return None
