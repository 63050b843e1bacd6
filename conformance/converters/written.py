"""What a converter wrote: the model, in which format, the files kept as the pair's artefacts, and
which program feed each of the model's inputs takes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Written:
    model: object                   # ONNX ModelProto bytes, or an openvino.Model
    format: str                     # "onnx" | "openvino"
    files: dict[str, bytes] = field(default_factory=dict)   # artefacts: model.onnx, or model.xml + model.bin
    inputs: list[str] = field(default_factory=list)          # the program feeds, in the model's input order
