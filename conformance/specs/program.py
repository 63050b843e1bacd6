"""What a translator returns: a Program in one spec's format, or NotExpressible with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    """A case written in one spec. ``feeds`` are the runtime inputs (in the spec's layout);
    ``outputs`` pairs each program output name with the canonical output it carries."""

    spec: str                      # e.g. "onnx-14"
    format: str                    # "onnx" | "openvino-ir" | "directml" | "torch"
    model: bytes                   # the serialized program (ONNX ModelProto bytes, IR xml, ...)
    feeds: dict                    # name -> numpy array
    outputs: list                  # [(program output name, canonical name)]
    notes: list = field(default_factory=list)   # each lossy or notable translation step
    files: dict = field(default_factory=dict)   # role -> path of the written artifact
    extra: dict = field(default_factory=dict)   # format-specific payload (e.g. IR weights)
    layout: int = 0                # the spec layout outputs come back in

    @property
    def output_names(self) -> list[str]:
        return [name for name, _ in self.outputs]


@dataclass(frozen=True)
class NotExpressible:
    spec: str
    reason: str


def to_canonical_layout(name: str, array: np.ndarray, layout: int) -> np.ndarray:
    """ONNX layout 1 outputs back to layout 0: Y [B,S,D,H] -> [S,D,B,H]; Y_h [B,D,H] -> [D,B,H]."""
    if layout == 0:
        return array
    if name == "Y" and array.ndim == 4:
        return np.transpose(array, (1, 2, 0, 3))
    if name in ("Y_h", "Y_c") and array.ndim == 3:
        return np.transpose(array, (1, 0, 2))
    return array
