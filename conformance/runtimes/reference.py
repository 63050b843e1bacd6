"""``onnx.reference``: ONNX's own Python reference evaluator, an implementation under test here."""

from __future__ import annotations

import numpy as np


class OnnxReference:
    name = "onnx-reference"
    format = "onnx"

    def __init__(self):
        import onnx
        self.version = onnx.__version__
        self.device = "CPU"
        self.config = "default"

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, feeds)
