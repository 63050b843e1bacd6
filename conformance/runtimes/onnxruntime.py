"""onnxruntime, one target per execution provider present."""

from __future__ import annotations

import numpy as np

#: providers that do not execute kernels themselves
NOT_COMPUTE = {"AzureExecutionProvider"}
#: provider options that change the arithmetic (CUDA's TF32 switch, TensorRT's reduced precisions)
PRECISION_OPTIONS = ("use_tf32", "trt_fp16_enable", "trt_bf16_enable", "trt_int8_enable",
                     "enable_cuda_graph")


def providers() -> list[str]:
    import onnxruntime as ort
    return [p for p in ort.get_available_providers() if p not in NOT_COMPUTE]


def device_of(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider")


class OnnxRuntime:
    name = "onnxruntime"
    format = "onnx"

    def __init__(self, provider: str = "CPUExecutionProvider"):
        import onnxruntime as ort
        self._ort = ort
        ort.set_default_logger_severity(4)  # refusals come back as exceptions; keep stderr quiet
        self.provider = provider
        self.version = ort.__version__
        self.device = device_of(provider)
        self.config = "default"

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self._session = None
        options = self._ort.SessionOptions()
        options.log_severity_level = 4  # fatal only: refusals come back as exceptions
        options.intra_op_num_threads = 1
        self._session = self._ort.InferenceSession(model, options, providers=[self.provider])
        return self._session.run(None, feeds)

    def effective(self) -> dict:
        """The session's providers as it resolved them, and the precision options of the ones
        that have them (CUDA's and TensorRT's TF32 and fp16 switches); the CPU provider has none
        and computes in the model's type."""
        session = getattr(self, "_session", None)
        if session is None:
            return {}
        found = {"providers": session.get_providers()}
        options = session.get_provider_options().get(self.provider, {})
        for key in PRECISION_OPTIONS:
            if key in options:
                found[key] = options[key]
        if str(options.get("use_tf32", "0")) == "1" and self.provider == "CUDAExecutionProvider":
            found["precision"] = "tf32"
        elif str(options.get("trt_fp16_enable", "0")).lower() in ("1", "true"):
            found["precision"] = "f16"
        return found

    def describe(self) -> dict:
        return {"provider": self.provider, "available_providers": self._ort.get_available_providers(),
                "device": self._ort.get_device()}


def targets(specs_by_format: dict):
    """One target per execution provider present, for every ONNX spec version."""
    import onnxruntime as ort

    from conformance.runtimes.base import RuntimeRef, Target
    found = []
    for provider in providers():
        ref = RuntimeRef("conformance.runtimes.onnxruntime:OnnxRuntime", (("provider", provider),))
        found += [Target("onnxruntime", ort.__version__, device_of(provider), "default", spec, ref,
                         description=f"onnxruntime {provider}")
                  for spec in specs_by_format.get("onnx", [])]
    return found, []
