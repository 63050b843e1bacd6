"""Deliberately wrong converters (test doubles of the suite's own converter machinery: the converter
stage of a target, its outcomes and its causes; docs/converters.md). Each wraps the real TorchScript
exporter and breaks its output in one known way, the way a converter's bug does:

- :data:`WRONG_LBR` writes every GRU with linear_before_reset=0 (torch's GRU is 1: the reset gate
  applied after the recurrent product), as pytorch/pytorch#189225 reported of the dynamo exporter;
- :data:`FROZEN` exports without the dynamic axes it is asked for: the batch and sequence dimensions
  stay those of the example input (a frozen time dimension, pytorch/pytorch#191855);
- :data:`NO_PROJECTION` writes an LSTM with a projection as one without: W_hh·W_hr folded into the
  recurrent weights and the outputs hidden_size wide, the projection dropped;
- :data:`INVALID_NODE` writes a recurrent node whose hidden_size is a string (onnx.checker: a mismatched
  attribute type);
- :data:`TRIES_TO_INSTALL` runs ``pip install`` before it converts, as MNN's mnnconvert script does
  (an ONNX-to-ONNX converter that otherwise writes the program unchanged): in the worker, which finds
  no package index, pip fails and the converter refuses with pip's message (docs/isolation.md).

Use: ``conformance run cases/... --converter tests.doubles.converter:WRONG_LBR``.
"""

from __future__ import annotations

import io

from conformance.converters import Converter
from conformance.converters.torch_export import torchscript
from conformance.converters.written import Written

OPTIONS = ({"opset": 14},)


def _patched(written: Written, change) -> Written:
    import onnx
    proto = onnx.load_from_string(written.model)
    change(proto)
    data = proto.SerializeToString()
    return Written(data, "onnx", {"model.onnx": data}, written.inputs)


def wrong_lbr(program, feeds, options) -> Written:
    def change(proto):
        from onnx import helper
        for node in proto.graph.node:
            if node.op_type == "GRU":
                kept = [a for a in node.attribute if a.name != "linear_before_reset"]
                del node.attribute[:]
                node.attribute.extend(kept + [helper.make_attribute("linear_before_reset", 0)])
    return _patched(torchscript(program, feeds, options), change)


def frozen(program, feeds, options) -> Written:
    import json
    import shutil
    import tempfile
    from pathlib import Path
    path = Path(program)
    desc = json.loads(path.read_text())
    desc.pop("dynamic", None)  # asked for dynamic axes or not, it exports without them
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        copy.write_text(json.dumps(desc))
        shutil.copy(path.parent / desc["weights"], Path(tmp) / desc["weights"])
        return torchscript(copy, feeds, options)


def no_projection(program, feeds, options) -> Written:
    import numpy as np
    import onnx
    import torch
    from onnx import helper

    from conformance.runtimes import torch_program as tp
    desc, weights = tp.read(program)
    proj = desc.get("proj_size") or 0
    if proj:
        weights = {name: np.ascontiguousarray(value @ weights[name.replace("weight_hh", "weight_hr")]
                                              if name.startswith("weight_hh") else value)
                   for name, value in weights.items() if not name.startswith("weight_hr")}
        desc = dict(desc, proj_size=0)
    module = tp.build(torch, desc, weights)
    wide = dict(feeds)
    if proj and "h0" in feeds:  # the state fed back is hidden_size wide now: the case's h0, padded
        h = feeds["h0"]
        wide["h0"] = np.pad(h, [(0, 0)] * (h.ndim - 1) + [(0, desc["hidden_size"] - proj)])
    args = tuple(tp.tensor(torch, wide[name], desc["dtype"]) for name in desc["inputs"])
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=int(options["opset"]),
                          input_names=list(desc["inputs"]), output_names=tp.returns(desc))
    proto = onnx.load_from_string(buffer.getvalue())
    if proj and "h0" in feeds:  # the double's own plumbing: it takes the case's h0 and pads it
        graph = proto.graph
        h0 = next(i for i in graph.input if i.name == "h0")
        dims = [d.dim_value for d in h0.type.tensor_type.shape.dim]
        elem = h0.type.tensor_type.elem_type
        for node in graph.node:
            node.input[:] = ["h0_wide" if n == "h0" else n for n in node.input]
        graph.input.remove(h0)
        graph.input.append(helper.make_tensor_value_info("h0", elem, dims[:-1] + [proj]))
        graph.initializer.append(helper.make_tensor("h0_pads", onnx.TensorProto.INT64, [6],
                                                    [0, 0, 0, 0, 0, desc["hidden_size"] - proj]))
        graph.node.insert(0, helper.make_node("Pad", ["h0", "h0_pads"], ["h0_wide"]))
    data = proto.SerializeToString()
    return Written(data, "onnx", {"model.onnx": data}, list(desc["inputs"]))


def invalid_node(program, feeds, options) -> Written:
    def change(proto):
        from onnx import helper
        for node in proto.graph.node:
            if node.op_type in ("RNN", "GRU", "LSTM"):
                kept = [a for a in node.attribute if a.name != "hidden_size"]
                del node.attribute[:]
                node.attribute.extend(kept + [helper.make_attribute("hidden_size", "four")])
    return _patched(torchscript(program, feeds, options), change)


#: what TRIES_TO_INSTALL asks pip for: a small pure-Python package the suite does not depend on
PACKAGE = "pyjokes"


def tries_to_install(model: bytes, feeds, options) -> Written:
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-cache-dir", PACKAGE],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise RuntimeError(f"pip install {PACKAGE} failed: {said[-1] if said else done.returncode}")
    import onnx
    proto = onnx.load_from_string(model)
    inputs = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    return Written(model, "onnx", {"model.onnx": model}, inputs)


def _double(name: str, function: str, meaning: str) -> Converter:
    return Converter(name, "torch", "torch", "onnx", f"tests.doubles.converter:{function}", OPTIONS,
                     meaning=meaning, ref=f"tests.doubles.converter:{name.upper().replace('-', '_')}",
                     dynamic=OPTIONS)


WRONG_LBR = _double("wrong-lbr", "wrong_lbr",
                    "test double: the TorchScript exporter, GRU linear_before_reset written 0")
FROZEN = _double("frozen", "frozen", "test double: the TorchScript exporter, dynamic axes ignored")
NO_PROJECTION = _double("no-projection", "no_projection", "test double: an LSTM projection folded away")
INVALID_NODE = _double("invalid-node", "invalid_node", "test double: a recurrent node whose hidden_size is a string")
TRIES_TO_INSTALL = Converter("tries-to-install", "onnx", "onnx", "onnx", "tests.doubles.converter:tries_to_install",
                             ({"from": 14},), meaning="test double: runs pip install, then writes the program as it is",
                             ref="tests.doubles.converter:TRIES_TO_INSTALL")
