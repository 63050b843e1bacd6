"""Deliberate test doubles for ``conformance bugreport``, named as such: ONNX runtime plugins that wrap
onnxruntime with a known bug. None of them is a runtime under test.

The module imports numpy, onnx and onnxruntime only (no other test module), so a bug report copies it
beside its repro.py and runs it there as the plugin's own API.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def _run(model: onnx.ModelProto, feeds) -> list:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def swapped_gates(model: onnx.ModelProto) -> onnx.ModelProto:
    """A GRU's z and r gate blocks swapped in W, R and B (a gate-order bug)."""
    if model.graph.node[0].op_type != "GRU":
        return model
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if init.name in ("W", "R"):
            h = arr.shape[1] // 3
            arr = np.concatenate([arr[:, h:2 * h], arr[:, :h], arr[:, 2 * h:]], axis=1)
        elif init.name == "B":
            h = arr.shape[1] // 6
            halves = [np.concatenate([b[:, h:2 * h], b[:, :h], b[:, 2 * h:]], axis=1) for b in (arr[:, :3 * h], arr[:, 3 * h:])]
            arr = np.concatenate(halves, axis=1)
        else:
            continue
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr), init.name))
    return model


class SwappedGateGRU:
    """Known-wrong GRU: swaps the z and r gate blocks before running, wherever it runs."""

    name = "swapped-gate-gru"
    format = "onnx"
    version = "test-double"

    def run(self, model: bytes, feeds):
        return _run(swapped_gates(onnx.load_from_string(model)), feeds)


class SuiteOnlyGRU:
    """Known-wrong GRU only inside the suite's worker process (it swaps the gates where the suite's
    worker module is loaded): a stand-in for a divergence that depends on the suite's environment, so
    its bug report does not reproduce outside the suite and must be refused."""

    name = "suite-only-gru"
    format = "onnx"
    version = "test-double"

    def run(self, model: bytes, feeds):
        m = onnx.load_from_string(model)
        return _run(swapped_gates(m) if "conformance.run.serve" in sys.modules else m, feeds)
