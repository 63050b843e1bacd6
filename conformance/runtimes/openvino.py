"""OpenVINO reading the ONNX model through its ONNX frontend, per device and configuration.

Two configurations: ``default`` (the device's own defaults, which on some CPUs compute in bf16)
and ``precision=pinned`` (INFERENCE_PRECISION_HINT set to the model's element type).
"""

from __future__ import annotations

import numpy as np

CONFIGS = ("default", "precision=pinned")


def devices() -> list[str]:
    import openvino as ov
    return [d for d in ov.Core().available_devices if d.split(".")[0] in ("CPU", "GPU", "NPU")]


def version() -> str:
    import openvino as ov
    return ov.get_version().split("-")[0]


class OpenVINOOnnxFrontend:
    name = "openvino"
    format = "onnx"

    def __init__(self, device: str = "CPU", config: str = "default"):
        import openvino as ov
        self._ov = ov
        self.core = ov.Core()
        self.device = device
        self.config = config
        self.version = version()

    def properties(self, model) -> dict:
        if self.config != "precision=pinned":
            return {}
        element = model.inputs[0].get_element_type()
        hint = element if element in (self._ov.Type.f32, self._ov.Type.f16, self._ov.Type.bf16) else self._ov.Type.f32
        return {"INFERENCE_PRECISION_HINT": hint}

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        ov_model = self.core.read_model(model=model)
        compiled = self.core.compile_model(ov_model, self.device, self.properties(ov_model))
        result = compiled.create_infer_request().infer(feeds)
        return [np.asarray(result[out]) for out in compiled.outputs]


def targets(specs_by_format: dict):
    """Per device and configuration, for every ONNX spec version (through the ONNX frontend)."""
    from conformance.runtimes.base import RuntimeRef, Target
    found = []
    for device in devices():
        for config in CONFIGS:
            ref = RuntimeRef("conformance.runtimes.openvino:OpenVINOOnnxFrontend",
                             (("device", device), ("config", config)))
            found += [Target("openvino", version(), device, config, spec, ref,
                             description="OpenVINO reading the ONNX model (ONNX frontend)")
                      for spec in specs_by_format.get("onnx", [])]
    return found, []
