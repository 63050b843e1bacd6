"""``onnx.reference``: ONNX's own Python reference evaluator, an implementation under test here."""

from __future__ import annotations

from typing import cast

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
        # the stubs say dict | list; with output names None it is the list of outputs
        return cast("list[np.ndarray]", ReferenceEvaluator(model).run(None, feeds))


def targets(specs_by_format: dict):
    import onnx
    from onnx.reference import ReferenceEvaluator  # noqa: F401

    from conformance.runtimes.base import RuntimeRef, Target
    ref = RuntimeRef("conformance.runtimes.reference:OnnxReference")
    return [Target("onnx-reference", onnx.__version__, "CPU", "default", spec, ref,
                   description="onnx.reference.ReferenceEvaluator")
            for spec in specs_by_format.get("onnx", [])], []
