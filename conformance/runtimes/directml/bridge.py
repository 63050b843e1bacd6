"""onnxruntime's DirectML execution provider (runtime ``onnxruntime-dml``), where it exists (Windows):
the written descriptor converted back to ONNX (conformance/runtimes/directml/to_onnx.py) and run there."""

from __future__ import annotations

import numpy as np

from conformance.runtimes.directml.loaded import load, no_feeds
from conformance.runtimes.directml.to_onnx import to_onnx

BRIDGE_DESCRIPTION = ("onnxruntime DmlExecutionProvider on an ONNX model converted back from the "
                      "written DirectML descriptor: DirectML through onnxruntime's ONNX-to-DirectML "
                      "lowering, not the descriptor bound directly")


DML_PROVIDER = "DmlExecutionProvider"


class OnnxRuntimeDirectML:
    """onnxruntime on the ONNX model converted back from a descriptor; ``provider`` is the DirectML
    execution provider where it exists (any provider works, which is how the conversion is tested
    where DirectML is absent)."""

    name = "onnxruntime-dml"
    format = "directml"
    family = "onnxruntime"   # onnxruntime's implementation, under another program format
    description = BRIDGE_DESCRIPTION

    def __init__(self, provider: str = DML_PROVIDER):
        import onnxruntime as ort
        self._ort = ort
        ort.set_default_logger_severity(4)
        self.provider = provider
        self.version = ort.__version__
        self.device = provider.removesuffix("ExecutionProvider")
        self.config = "default"

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        no_feeds(feeds)
        p = load(model)
        onnx_model, onnx_feeds = to_onnx(p)
        options = self._ort.SessionOptions()
        options.log_severity_level = 3
        session = self._ort.InferenceSession(onnx_model, options, providers=[self.provider])
        results = session.run(None, onnx_feeds)
        return [np.asarray(r).reshape(p.desc[f]["Desc"]["Sizes"]) for r, f in zip(results, p.outputs)]
