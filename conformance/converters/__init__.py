"""Converters as a stage of a target: the programs users actually run were written by a converter.

A *converter target* names a converter and a runtime: ``torch.onnx-dynamo-2.13.0(opset=18) →
onnxruntime-1.32.0/CPU@torch`` is the suite's torch program (the module the eager ``torch`` target
runs) exported by torch's dynamo exporter at opset 18, then run by onnxruntime;
``onnx.version_converter-1.23.2(to=22) → onnxruntime-1.32.0/CPU@onnx-14`` is the suite's own
ONNX-14 program converted to opset 22. The spec after ``@`` is what the converter reads (and so the
oracle profile the pair is judged by: torch's or ONNX's); the part before the arrow is the
converter, its version and its options; the rest is the runtime's id as usual, its configuration
keys (``precision=pinned``, ``shape=dynamic``) included. docs/converters.md.

:data:`CONVERTERS` is the one table: a row per converter, with the package its version is read
from, the program format it reads and writes, the function that converts (called through the
library's entry point, in the runtime's worker process, which cannot install packages:
docs/isolation.md), the option sets the suite makes a target of, and the runtimes that run what it
writes. The stages of a converter target's call (``RuntimeRejected.stage``): ``converter`` (it
refused), ``checker`` (``onnx.checker`` rejects what it wrote), ``runtime`` (the runtime rejects or
fails on it); a pair that ran and is off is ``fail``. conformance/converters/outcomes.py keeps the
three apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Converter:
    """One converter: its name, where its version comes from, what it reads and writes, the function
    that converts (``module:function``), the option sets made into targets and the runtimes that run
    what it writes."""

    name: str
    package: str                    # the distribution whose version is the converter's
    reads: str                      # "torch" (the suite's torch program) or "onnx" (an ONNX program)
    writes: str                     # "onnx" or "openvino" (an openvino.Model)
    call: str                       # "module:function", called with (program, options) in the worker
    variants: tuple[dict[str, Any], ...] = ({},)   # option sets: one target each
    runtimes: tuple[str, ...] = ("onnxruntime",)
    #: the ONNX spec versions a converter reading ONNX takes, per option set (its ``from`` option)
    meaning: str = ""
    #: where the default `nox -s conformance-converters` runs it on a representative slice of the corpus
    #: outside cases/torch/ (an exporter costs seconds per case): conformance/converters/targets.py
    sliced: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: where the converter is not one of the table's (``module:attr``): how the worker finds it again
    ref: str = ""
    #: the option sets also made a ``shape=dynamic`` target of: a torch exporter asked for dynamic axes
    #: (the program loaded once and run at the case's shape and two others, where a frozen dimension shows;
    #: conformance/runtimes/forms.py)
    dynamic: tuple[dict[str, Any], ...] = ()
    #: the precision the converter declares the model it writes in, where it narrows the program's type
    #: by design (float16 conversion: "f16"). A converted model holding tensors of that type is judged
    #: in it (the record's ``effective.precision``, "declared by the converter"), not as the float32 it
    #: was: the rounding the converter means is no divergence (docs/converters.md)
    declares: str = ""

    def label(self, version: str, options: dict[str, Any]) -> str:
        """``torch.onnx-dynamo-2.13.0(opset=18)``: the part of a target id before the arrow."""
        said = ",".join(f"{k}={v}" for k, v in options.items() if k != "from")
        return f"{self.name}-{version}" + (f"({said})" if said else "")


#: the torch exporters' options: opset 14 (the TorchScript exporter's oldest commonly pinned target) and
#: the newest each supports (torch.onnx._constants: TorchScript 20; the dynamo exporter is run at the
#: opset the issue's reports used, 18)
CONVERTERS: tuple[Converter, ...] = (
    Converter("torch.onnx-torchscript", "torch", "torch", "onnx", "conformance.converters.torch_export:torchscript",
              ({"opset": 14}, {"opset": 17}, {"opset": 20}),
              meaning="torch.onnx.export(dynamo=False): the TorchScript exporter (traces the module)", sliced=True,
              dynamic=({"opset": 20},)),
    Converter("torch.onnx-dynamo", "torch", "torch", "onnx", "conformance.converters.torch_export:dynamo",
              ({"opset": 18},),
              meaning="torch.onnx.export(dynamo=True): torch.export, then onnxscript's torchlib translation",
              sliced=True, extra={"also": "onnxscript"}, dynamic=({"opset": 18},)),
    Converter("openvino.convert_model", "openvino", "torch", "openvino",
              "conformance.converters.torch_export:openvino_convert", ({},), runtimes=("openvino",),
              meaning="openvino.convert_model(torch module, example_input): OpenVINO's PyTorch frontend",
              sliced=True),
    Converter("onnx.version_converter", "onnx", "onnx", "onnx", "conformance.converters.onnx_transforms:version",
              ({"from": 7, "to": 14}, {"from": 7, "to": 22}, {"from": 14, "to": 22},
               {"from": 22, "to": 14}, {"from": 14, "to": 7}, {"from": 22, "to": 7}),
              meaning="onnx.version_converter.convert_version: the program moved to another opset"),
    Converter("onnxconverter-common.float16", "onnxconverter-common", "onnx", "onnx",
              "conformance.converters.onnx_transforms:float16", ({"from": 14, "keep_io_types": True},),
              meaning="onnxconverter_common.float16.convert_float_to_float16(keep_io_types=True): the model's "
                      "float32 tensors and arithmetic in float16, its inputs and outputs float32", declares="f16"),
    Converter("onnxsim", "onnxsim", "onnx", "onnx", "conformance.converters.onnx_transforms:simplify",
              ({"from": 14},), meaning="onnxsim.simplify: constant folding and graph simplifications"),
)
BY_NAME = {c.name: c for c in CONVERTERS}

def resolve(name: str) -> Converter:
    """A converter by its table name, or a converter of one's own given as ``module:attr`` (a
    :class:`Converter`, e.g. a test double: docs/converters.md, "Adding a converter")."""
    if name in BY_NAME:
        return BY_NAME[name]
    if ":" in name:
        import importlib
        module, _, attr = name.partition(":")
        found = getattr(importlib.import_module(module), attr)
        if not isinstance(found, Converter):
            raise TypeError(f"--converter {name}: {attr} is a {type(found).__name__}, not a conformance.converters."
                            f"Converter")
        return found
    raise KeyError(f"no converter is named {name!r}")


def matching(wanted) -> list[Converter]:
    """The converters ``--converter`` names (a prefix of a name; ``all``: every one of the table;
    ``module:attr``: a converter of one's own)."""
    wanted = [w for w in wanted if w]
    found = [resolve(w) for w in wanted if ":" in w]
    named = [w for w in wanted if ":" not in w]
    if not wanted or "all" in named:
        return list(CONVERTERS) + found
    return [c for c in CONVERTERS if any(c.name == w or c.name.startswith(w) for w in named)] + found
