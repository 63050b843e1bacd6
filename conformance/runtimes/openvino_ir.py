"""OpenVINO reading an IR (xml + bin) from its files, per device and configuration.

``run`` receives the path of the written ``.xml``; ``Core.read_model`` reads the ``.bin`` beside
it, so what executes is what the translator wrote. The configurations are those of the ONNX-frontend
adapter (``conformance.runtimes.openvino``): ``default`` and ``precision=pinned``.
"""

from __future__ import annotations

import numpy as np

from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.openvino import Adapter
from conformance.runtimes.openvino_targets import targets_of

FORMAT = "openvino-ir"


class OpenVINOIR(Adapter):
    name = "openvino"
    format = FORMAT
    description = "OpenVINO reading the IR (xml + bin) from its files"

    def prepare(self, model: str, feeds: dict[str, np.ndarray]):
        return read_ir(self, model, feeds)


def read_ir(adapter: Adapter, model: str, feeds: dict[str, np.ndarray]):
    """``prepare`` for the path of an IR's ``.xml``, its ``.bin`` beside it."""
    path = adapter.program(model, ".xml", "an OpenVINO IR .xml file")
    weights = path.with_suffix(".bin")
    if not weights.exists():
        raise RuntimeRejected(f"the IR's weights {str(weights)!r} are missing beside {path.name!r}")
    key = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in (path, weights))
    return key, lambda: adapter.core.read_model(str(path), str(weights))


def targets(specs_by_format: dict):
    """Per device and configuration, for every spec whose programs are OpenVINO IR."""
    specs = specs_by_format.get(FORMAT, [])
    if not specs:
        return [], []
    found = targets_of(FORMAT, specs, OpenVINOIR.description)
    gaps = [] if found else [("openvino", "no CPU, GPU or NPU device available to read OpenVINO IR")]
    return found, gaps
