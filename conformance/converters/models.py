"""What a converted ONNX model says, as the causes compare it with the suite's own program: its
recurrent nodes and their attributes, its inputs' and outputs' dimensions, its ops."""

from __future__ import annotations

RECURRENT = ("RNN", "GRU", "LSTM")


def _dims(value_info) -> list:
    """A graph input's or output's dimensions: an int, a dim_param's name, or None where unknown."""
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in shape.dim]


def facts(model: bytes) -> dict:
    """{"recurrent": [(op type, {attribute: value})], "inputs": {name: dims}, "outputs": {name: dims},
    "ops": sorted op types, "nodes": node count, "opset": the default domain's version}."""
    import onnx
    from onnx import helper
    proto = onnx.load_from_string(model)
    graph = proto.graph
    initializers = {t.name for t in graph.initializer}
    nodes = list(graph.node)
    for function in proto.functions:  # the dynamo exporter may keep a module as a local function
        nodes += list(function.node)
    recurrent = []
    for node in nodes:
        if node.op_type in RECURRENT and node.domain in ("", "ai.onnx"):
            attrs = {}
            for a in node.attribute:
                value = helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    value = value.decode()
                elif isinstance(value, list):
                    value = [v.decode() if isinstance(v, bytes) else v for v in value]
                attrs[a.name] = value
            recurrent.append((node.op_type, attrs))
    return {"recurrent": recurrent,
            "inputs": {i.name: _dims(i) for i in graph.input if i.name not in initializers},
            "outputs": {o.name: _dims(o) for o in graph.output},
            "ops": sorted({n.op_type for n in nodes}), "nodes": len(nodes),
            "opset": next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)}


def fixed_dimensions(model: bytes, case) -> str:
    """'a fixed sequence length (input 'input' has dims [4, 'batch_size', 3])' where a model exported
    for dynamic shapes kept its input's sequence or batch dimension fixed; '' where it kept them
    symbolic (or has no such input)."""
    inputs = facts(model)["inputs"]
    name = "input" if "input" in inputs else "X" if "X" in inputs else None
    if name is None:
        return ""
    dims = inputs[name]
    if case.form == "cell":
        axes = {} if len(dims) < 2 else {0: "batch size"}
    elif len(dims) == 2:  # unbatched: [S, I]
        axes = {0: "sequence length"}
    else:
        axes = {1: "sequence length", 0: "batch size"} if case.layout == 1 else {0: "sequence length", 1: "batch size"}
    fixed = [what for axis, what in sorted(axes.items(), key=lambda kv: kv[1], reverse=True)
             if axis < len(dims) and isinstance(dims[axis], int)]
    return f"a fixed {' and '.join(fixed)} (input {name!r} has dims {dims})" if fixed else ""


def frozen_reshapes(model: bytes, case) -> str:
    """'a Reshape to the constant shape [3, -1, 4] (the traced sequence length 3)': a model exported for
    dynamic shapes whose Reshape bakes in the sequence length or the batch size it was traced with, so
    that at another shape its output has the wrong shape; '' where none does. Only a constant target
    shape whose first entry is the traced length (or batch size) and that holds a -1 is taken, where
    the traced sizes differ from the other sizes of the case (so the value names one dimension)."""
    import onnx
    from onnx import numpy_helper
    proto = onnx.load_from_string(model)
    nodes = list(proto.graph.node) + [n for f in proto.functions for n in f.node]
    constants = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    for node in nodes:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    constants[node.output[0]] = numpy_helper.to_array(a.t)
    S, B = case.shape["seq_length"], case.shape["batch_size"]
    others = {case.shape["input_size"], case.hidden_size, 2 * case.hidden_size}
    said = []
    for node in nodes:
        if node.op_type != "Reshape" or len(node.input) < 2 or node.input[1] not in constants:
            continue
        shape = [int(v) for v in constants[node.input[1]].ravel()]
        if -1 not in shape or not shape:
            continue
        for size, what in ((S, "sequence length"), (B, "batch size")):
            if shape[0] == size and size not in others and S != B:
                said.append(f"a Reshape to the constant shape {shape} (the traced {what} {size})")
    return "; ".join(dict.fromkeys(said))
