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
        return compile_properties(model, self.config)

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return infer(self.core, self.core.read_model(model=model), self.device, self.config, feeds)


def compile_properties(model, config: str) -> dict:
    """The compile properties of a configuration: none for ``default``; for ``precision=pinned``,
    INFERENCE_PRECISION_HINT = the model's element type (f32 where the hint has no such value)."""
    import openvino as ov
    if config != "precision=pinned":
        return {}
    element = model.inputs[0].get_element_type()
    hint = element if element in (ov.Type.f32, ov.Type.f16, ov.Type.bf16) else ov.Type.f32
    return {"INFERENCE_PRECISION_HINT": hint}


def infer(core, model, device: str, config: str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Compile ``model`` on ``device`` under ``config``, run it once on ``feeds`` (by input name),
    and return every output in the model's order. bfloat16 travels as raw bits both ways (the
    Python bindings have no numpy bfloat16)."""
    import openvino as ov
    compiled = core.compile_model(model, device, compile_properties(model, config))
    result = compiled.create_infer_request().infer({name: _to_tensor(ov, arr) for name, arr in feeds.items()})
    return [_from_output(ov, out, result[out]) for out in compiled.outputs]


def _to_tensor(ov, arr: np.ndarray):
    if arr.dtype.name != "bfloat16":
        return np.ascontiguousarray(arr)
    tensor = ov.Tensor(ov.Type.bf16, list(arr.shape))
    tensor.data.view(np.uint16)[...] = np.ascontiguousarray(arr).view(np.uint16)
    return tensor


def _from_output(ov, output, value) -> np.ndarray:
    value = np.asarray(value)
    if output.get_element_type() == ov.Type.bf16:
        import ml_dtypes
        return value.view(np.uint16).view(ml_dtypes.bfloat16)
    return value


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
