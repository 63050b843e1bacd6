"""onnxruntime, one target per execution provider present."""

from __future__ import annotations

import numpy as np

#: providers that do not execute kernels themselves
NOT_COMPUTE = {"AzureExecutionProvider"}


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
        options = self._ort.SessionOptions()
        options.log_severity_level = 4  # fatal only: refusals come back as exceptions
        options.intra_op_num_threads = 1
        session = self._ort.InferenceSession(model, options, providers=[self.provider])
        return session.run(None, feeds)


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
