"""OpenVINO in memory: the native op built with OpenVINO's Python builders in this worker and
compiled directly, per device and configuration (no IR file in between).

``run`` receives the path of the recipe ``.json`` (``conformance.specs.openvino.memory``); the
Constants are in the ``.npz`` beside it and the Parameters take the fed arrays' shapes. A builder's
refusal is the runtime's, and says so ("OpenVINO's builders refused ..."); the configurations are
the ONNX-frontend adapter's (``default``, ``precision=pinned``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.openvino import Adapter
from conformance.runtimes.openvino_targets import targets_of
from conformance.specs.openvino.vocabulary import FEED_NAMES

FORMAT = "openvino-model"
#: the fed names (OpenVINO's) back to the canonical ones the builders take
CANONICAL_FEEDS = {v: k for k, v in FEED_NAMES.items()}


class OpenVINOMemory(Adapter):
    name = "openvino"
    format = FORMAT
    description = "OpenVINO: the op built with its Python builders and compiled in memory (no IR)"

    def prepare(self, model: str, feeds: dict[str, np.ndarray]):
        return read_recipe(self, model, feeds)


def read_recipe(adapter: Adapter, model: str, feeds: dict[str, np.ndarray]):
    """``prepare`` for the path of an in-memory recipe's ``.json``."""
    path = adapter.program(model, ".json", "an in-memory OpenVINO recipe (.json)")
    key = (str(path), path.stat().st_size, path.stat().st_mtime_ns)
    return key, lambda: build(path, feeds)


def build(path: Path, feeds: dict[str, np.ndarray]):
    """The ov.Model of the recipe at ``path``, its Parameters shaped as the recipe says (a recipe written
    before it said: as ``feeds``)."""
    from conformance.specs.openvino.build import BuildError, build_model
    from conformance.specs.openvino.memory import load_constants
    recipe = json.loads(path.read_text())
    constants = load_constants(path.with_name(recipe["constants"]), recipe["dtype"])
    canonical = ({name: tuple(shape) for name, shape in recipe["shapes"].items()} if "shapes" in recipe else
                 {CANONICAL_FEEDS.get(name, name): arr for name, arr in feeds.items()})
    try:
        model, _ = build_model(recipe["op"], recipe["case_op"], recipe["form"], recipe["dtype"], recipe["wanted"],
                               canonical, constants, recipe["attrs"], recipe["name"], native=True,
                               dynamic=recipe.get("dynamic"))
    except BuildError as exc:
        raise RuntimeRejected(f"OpenVINO's builders refused {recipe['op']}: {exc}") from None
    return model


def targets(specs_by_format: dict):
    """Per device and configuration, for every spec whose programs are built in memory."""
    specs = specs_by_format.get(FORMAT, [])
    if not specs:
        return [], []
    found = targets_of(FORMAT, specs, OpenVINOMemory.description)
    gaps = [] if found else [("openvino", "no CPU, GPU or NPU device available to compile in memory")]
    return found, gaps
