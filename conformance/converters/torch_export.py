"""The torch converters: the suite's torch program (conformance/runtimes/torch_program.py, the
module the eager ``torch`` target runs) handed to torch.onnx's two exporters and to OpenVINO's
PyTorch frontend, each through its library entry point.

Each takes the program's description path, the pair's feeds (the example inputs an exporter traces
with, in the description's ``inputs`` order) and the target's options, and returns
:class:`~conformance.converters.written.Written`. Where the description is ``dynamic``
(``shape=dynamic``: conformance/specs/torch.py), the exporter is asked for symbolic batch and
sequence dimensions (``dynamic_axes``, ``dynamic_shapes``). Whatever an exporter raises is its
refusal: the adapter (conformance/converters/converted.py) records it at stage ``converter``.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from conformance.converters.written import Written


def _module(program, feeds):
    """(torch, description, the program's module, its example inputs)."""
    import torch

    from conformance.runtimes import torch_program as tp
    desc, weights = tp.read(program)
    module = tp.build(torch, desc, weights)
    args = tuple(tp.tensor(torch, feeds[name], desc["dtype"]) for name in desc["inputs"])
    return torch, desc, module, args


def axes(desc: dict) -> dict[str, dict[int, str]]:
    """The batch and sequence axes of every input and output of the program's module (by name), for
    an exporter asked for dynamic dimensions."""
    from conformance.runtimes import torch_program as tp
    cell, unbatched = desc["module"].endswith("Cell"), bool(desc.get("unbatched"))
    found: dict[str, dict[int, str]] = {}
    if cell:
        x = {} if unbatched else {0: "batch_size"}
        found.update({"input": x, "h0": x, "c0": x, "h": x, "c": x})
    else:
        if unbatched:
            x, states = {0: "seq_length"}, {}
        elif desc["batch_first"]:
            x, states = {0: "batch_size", 1: "seq_length"}, {1: "batch_size"}
        else:
            x, states = {0: "seq_length", 1: "batch_size"}, {1: "batch_size"}
        found.update({"input": x, "output": x, "h0": states, "c0": states, "h_n": states, "c_n": states,
                      "lengths": {0: "batch_size"}})
    names = list(desc["inputs"]) + tp.returns(desc)
    return {name: found[name] for name in names if found.get(name)}


def torchscript(program, feeds, options) -> Written:
    """``torch.onnx.export(dynamo=False)``: the TorchScript exporter at ``options["opset"]``."""
    torch, desc, module, args = _module(program, feeds)
    from conformance.runtimes import torch_program as tp
    buffer = io.BytesIO()
    dynamic = axes(desc) if desc.get("dynamic") else None
    with torch.no_grad():
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=int(options["opset"]),
                          input_names=list(desc["inputs"]), output_names=tp.returns(desc), dynamic_axes=dynamic)
    data = buffer.getvalue()
    return Written(data, "onnx", {"model.onnx": data}, list(desc["inputs"]))


def dynamo(program, feeds, options) -> Written:
    """``torch.onnx.export(dynamo=True)``: torch.export, then onnxscript's translation, at
    ``options["opset"]``; with dynamic dimensions, the same ``dynamic_axes`` a user passes to either
    exporter (torch.onnx turns them into torch.export's dynamic shapes)."""
    torch, desc, module, args = _module(program, feeds)
    from conformance.runtimes import torch_program as tp
    dynamic = axes(desc) if desc.get("dynamic") else None
    with torch.no_grad():
        exported = torch.onnx.export(module, args, dynamo=True, opset_version=int(options["opset"]),
                                     input_names=list(desc["inputs"]), output_names=tp.returns(desc),
                                     dynamic_axes=dynamic, verify=False, report=False)
    data = exported.model_proto.SerializeToString()
    return Written(data, "onnx", {"model.onnx": data}, list(desc["inputs"]))


def openvino_convert(program, feeds, options) -> Written:
    """``openvino.convert_model(module, example_input=...)``: OpenVINO's PyTorch frontend, in memory;
    the model it made is kept as IR (``model.xml``, ``model.bin``, full precision)."""
    torch, desc, module, args = _module(program, feeds)
    import openvino as ov
    with torch.no_grad():
        model = ov.convert_model(module, example_input=args)
    with tempfile.TemporaryDirectory(prefix="ov-convert-") as tmp:
        xml = Path(tmp) / "model.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
        files = {"model.xml": xml.read_bytes(), "model.bin": xml.with_suffix(".bin").read_bytes()}
    return Written(model, "openvino", files, list(desc["inputs"]))
