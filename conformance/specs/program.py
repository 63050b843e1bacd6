"""What a translator returns: a Program in one spec's format, or NotExpressible with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    """A case written in one spec. ``feeds`` are the runtime inputs, in the spec's names and
    layouts; ``outputs`` pairs each program output, in order, with the canonical output it carries,
    and ``transforms`` says how to bring it back to the canonical layout."""

    spec: str                      # e.g. "onnx-14"
    format: str                    # "onnx" | "openvino-ir" | "directml" | "torch"
    model: bytes                   # the serialized program (ONNX ModelProto bytes, IR xml, ...)
    feeds: dict                    # name -> numpy array
    outputs: list                  # [(program output name, canonical name)]
    notes: list = field(default_factory=list)   # each lossy or notable translation step
    files: dict = field(default_factory=dict)   # role -> path of the written artifact
    extra: dict = field(default_factory=dict)   # format-specific payload (e.g. IR weights)
    #: canonical name -> {"transpose": axes, "reshape": shape}, applied in that order
    transforms: dict = field(default_factory=dict)

    @property
    def output_names(self) -> list[str]:
        return [name for name, _ in self.outputs]

    def runtime_input(self):
        """What a runtime's ``run`` receives as its model: the ONNX bytes, or for file formats the
        path of the written main file (the runtime reads the program back from its files)."""
        return self.model if self.format == "onnx" else self.files["model"]

    def to_canonical(self, canonical: str, array: np.ndarray) -> np.ndarray:
        t = self.transforms.get(canonical, {})
        if "transpose" in t and array.ndim == len(t["transpose"]):
            array = np.transpose(array, t["transpose"])
        if "reshape" in t and array.size == int(np.prod(t["reshape"])):
            array = array.reshape(t["reshape"])
        return array


@dataclass(frozen=True)
class NotExpressible:
    spec: str
    reason: str


#: ONNX layout 1 outputs back to layout 0: Y [B,S,D,H] -> [S,D,B,H]; Y_h, Y_c [B,D,H] -> [D,B,H]
LAYOUT1_TO_CANONICAL = {"Y": {"transpose": (1, 2, 0, 3)}, "Y_h": {"transpose": (1, 0, 2)},
                        "Y_c": {"transpose": (1, 0, 2)}}
