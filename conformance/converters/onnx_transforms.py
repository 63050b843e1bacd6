"""ONNX-to-ONNX transforms applied to the suite's own ONNX programs: ``onnx.version_converter``
(the program moved to another opset), onnxconverter-common's float16 conversion and onnxsim's
simplifier, each through its library entry point. Each takes the program's ONNX bytes, the pair's
feeds and the target's options and returns :class:`~conformance.converters.written.Written`;
whatever it raises is its refusal (stage ``converter``)."""

from __future__ import annotations

from conformance.converters.written import Written


def _written(proto, feeds) -> Written:
    data = proto.SerializeToString()
    graph_inputs = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    return Written(data, "onnx", {"model.onnx": data}, graph_inputs)


def version(model: bytes, feeds, options) -> Written:
    """``onnx.version_converter.convert_version(model, options["to"])``."""
    import onnx
    from onnx import version_converter
    converted = version_converter.convert_version(onnx.load_from_string(model), int(options["to"]))
    return _written(converted, feeds)


def float16(model: bytes, feeds, options) -> Written:
    """``onnxconverter_common.float16.convert_float_to_float16(model, keep_io_types=True)``: the model's
    float32 initializers and arithmetic in float16, its inputs and outputs still float32 (Cast nodes)."""
    import onnx
    from onnxconverter_common import float16 as f16
    converted = f16.convert_float_to_float16(onnx.load_from_string(model),
                                             keep_io_types=bool(options.get("keep_io_types", True)))
    return _written(converted, feeds)


def simplify(model: bytes, feeds, options) -> Written:
    """``onnxsim.simplify(model, check_n=0)``: constant folding and onnxsim's graph rewrites (its own
    check with random inputs off: the suite judges the result against the oracle)."""
    import onnx
    import onnxsim
    simplified, ok = onnxsim.simplify(onnx.load_from_string(model), check_n=0)
    if not ok:
        raise RuntimeError("onnxsim.simplify returned check=False: the simplified model could not be validated")
    return _written(simplified, feeds)
