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


def _swap(name: str, arr: np.ndarray) -> np.ndarray:
    """A GRU weight with its z and r gate blocks swapped (W and R: [D, 3H, *]; B: [D, 6H])."""
    if name in ("W", "R"):
        h = arr.shape[1] // 3
        return np.concatenate([arr[:, h:2 * h], arr[:, :h], arr[:, 2 * h:]], axis=1)
    if name == "B":
        h = arr.shape[1] // 6
        halves = [np.concatenate([b[:, h:2 * h], b[:, :h], b[:, 2 * h:]], axis=1)
                  for b in (arr[:, :3 * h], arr[:, 3 * h:])]
        return np.concatenate(halves, axis=1)
    return arr


def swapped_gates(model: onnx.ModelProto) -> onnx.ModelProto:
    """A GRU's z and r gate blocks swapped in W, R and B (a gate-order bug)."""
    if model.graph.node[0].op_type != "GRU":
        return model
    for init in model.graph.initializer:
        if init.name in ("W", "R", "B"):
            arr = _swap(init.name, numpy_helper.to_array(init))
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
        return _run(swapped_gates(m) if "conformance.isolation.serve" in sys.modules else m, feeds)


def _swapped_feeds(feeds: dict) -> dict:
    """W, R and B fed as graph inputs (``weights=inputs``) with their z and r gate blocks swapped."""
    return {k: np.ascontiguousarray(_swap(k, np.asarray(v))) for k, v in feeds.items()}


class _FirstShapeSession:
    """A session that is right at the shape of its first call and swaps the gates at any other shape
    (a buffer or a plan sized for the first shape it saw): wrong only when one loaded model runs
    several shapes, as ``shape=dynamic`` does."""

    def __init__(self, model: bytes):
        self.model = onnx.load_from_string(model)
        self.first: tuple | None = None

    def run(self, feeds):
        shape = tuple(np.asarray(feeds["X"]).shape)
        self.first = self.first or shape
        if shape == self.first or self.model.graph.node[0].op_type != "GRU":
            return _run(self.model, feeds)
        wrong = onnx.ModelProto()
        wrong.CopyFrom(self.model)
        return _run(swapped_gates(wrong), _swapped_feeds(feeds))


class FirstShapeGRU:
    """Known-wrong GRU only on a loaded model's calls after the first, at another shape: its plain
    form passes, its ``shape=dynamic`` form fails at the other shapes (a deliberate form-only bug)."""

    name = "first-shape-gru"
    format = "onnx"
    version = "test-double"
    forms = {"shape": ["dynamic"], "weights": ["inputs"], "session": ["reused"]}

    def load(self, model: bytes):
        return _FirstShapeSession(model)

    def run(self, model: bytes, feeds):
        return self.load(model).run(feeds)
