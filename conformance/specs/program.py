"""The Spec protocol every translator implements, and what it returns: a Program in one spec's
format, or NotExpressible with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class Spec(Protocol):
    """One spec version (``onnx-14``, ``openvino-opset5``, ...), as its family's translator module
    exposes it in ``SPECS`` (docs/extending.md).

    ``family`` names the spec family (the report's column group, the record's ``spec_family``);
    ``format`` the program format its runtimes execute; ``semantics`` the oracle profile
    (oracles/profiles.py) that judges it."""

    name: str
    family: str
    format: str
    semantics: str

    def translate(self, case) -> Program | NotExpressible:
        """The case as a program in this spec, or why this spec cannot say it."""
        ...

    def write(self, program: Program, folder) -> None:
        """Write the program's files into ``folder`` and record them in ``program.files``."""
        ...

    def clause(self, case) -> str:
        """The spec clause a verdict on ``case`` cites (``ONNX GRU-14``)."""
        ...


def foreign_attributes(spec, case) -> str:
    """Why ``spec`` cannot say ``case`` when the case carries an attribute its family's translator does
    not write (``Attribute.families`` in conformance/case/vocabulary.py, e.g. torch.nn's ``num_layers``
    at an ONNX spec): never dropped silently. Every translator asks this first; "" where none."""
    from conformance.case.vocabulary import ATTRIBUTE
    unknown = [k for k in case.attributes if k in ATTRIBUTE and spec.family not in ATTRIBUTE[k].families]
    if not unknown:
        return ""
    return f"{spec.name} has no attribute {unknown[0]!r} (the {spec.family} translator does not write it)"


#: ONNX layout 1 outputs back to layout 0: Y [B,S,D,H] -> [S,D,B,H]; Y_h, Y_c [B,D,H] -> [D,B,H]
LAYOUT1_TO_CANONICAL: dict[str, dict[str, tuple[int, ...]]] = {
    "Y": {"transpose": (1, 2, 0, 3)}, "Y_h": {"transpose": (1, 0, 2)}, "Y_c": {"transpose": (1, 0, 2)}}
