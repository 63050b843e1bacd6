"""An OpenVINO model compiled and run (conformance/runtimes/openvino.py's adapters): the compile
properties of a configuration, one inference, a compiled model as the runtime contract's loaded
handle, and the path a compiled model runs (its recurrent layers, or what the op was decomposed into)."""

from __future__ import annotations

from collections import Counter, OrderedDict

import numpy as np


def compile_properties(model, config: str) -> dict:
    """The compile properties of a configuration: none for ``default``; for ``precision=pinned``,
    INFERENCE_PRECISION_HINT = the model's element type (f32 where the hint has no such value);
    for ``precision=bf16`` (f16, f32), that type; with ``threads=4``, the throughput hint (several
    streams, for requests at once) and four inference threads."""
    import openvino as ov

    from conformance.runtimes.forms import of, pairs
    found: dict = {}
    if of(config)["threads"] != "1":
        found = {"PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_NUM_THREADS": int(of(config)["threads"])}
    asked = pairs(config).get("precision")
    if asked is None:
        return found
    hints = {"f32": ov.Type.f32, "f16": ov.Type.f16, "bf16": ov.Type.bf16}
    if asked in hints:
        return dict(found, INFERENCE_PRECISION_HINT=hints[asked])
    element = model.inputs[0].get_element_type()
    hint = element if element in hints.values() else ov.Type.f32
    return dict(found, INFERENCE_PRECISION_HINT=hint)


def compile_model(core, model, device: str, config: str):
    """``model`` compiled on ``device`` under ``config``."""
    return core.compile_model(model, device, compile_properties(model, config))


def run_compiled(compiled, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """One inference on a fresh infer request: every output in the model's order. bfloat16 travels
    as raw bits both ways (the Python bindings have no numpy bfloat16)."""
    import openvino as ov
    result = compiled.create_infer_request().infer({name: _to_tensor(ov, arr) for name, arr in feeds.items()})
    return [_from_output(ov, out, result[out]) for out in compiled.outputs]


def infer(core, model, device: str, config: str, feeds: dict[str, np.ndarray]):
    """Compile ``model`` on ``device`` under ``config`` and run it once on ``feeds`` (by input
    name): every output in the model's order, and the compiled model."""
    compiled = compile_model(core, model, device, config)
    return run_compiled(compiled, feeds), compiled


class Loaded:
    """A compiled model as the runtime contract's loaded handle: ``run(feeds)`` infers on it with
    this thread's own infer request (kept: a request reused from call to call)."""

    def __init__(self, compiled):
        import threading
        self.compiled = compiled
        self._local = threading.local()

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import openvino as ov
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        result = request.infer({name: _to_tensor(ov, arr) for name, arr in feeds.items()})
        return [np.array(_from_output(ov, out, result[out]), copy=True) for out in self.compiled.outputs]


#: the runtime model's layer types that run a recurrent op as one layer (a sequence or cell kernel,
#: or a loop over its body); any other layer is part of the op decomposed
RECURRENT_LAYERS = ("RNNSeq", "RNNCell", "TensorIterator", "Loop", "LSTMSequence", "GRUSequence", "RNNSequence",
                    "LSTMCell", "GRUCell", "AUGRUSequence", "AUGRUCell")
#: layers every model has, left out of a path
PLUMBING = ("Input", "Output", "Parameter", "Result", "Const", "Constant", "Reshape", "Reorder", "Transpose",
            "Gather", "ShapeOf", "Convert", "Squeeze", "Unsqueeze", "Concatenation", "Broadcast", "Split")
_PATHS: OrderedDict = OrderedDict()  # id(compiled model) -> (compiled model, its path): read once per compile


def layers_of(compiled, prefix: str = "") -> dict:
    """The path a compiled model runs (its runtime model, read once per compiled model): the layers
    that run the recurrent op as ``layerType (primitiveType)`` (``RNNSeq (ref_any_f32)``,
    ``TensorIterator (unknown_f32)``), or, where none is one layer, the kinds of the layers it was
    decomposed into. ``prefix``: only the layers whose name starts with it (one program of a batch)."""
    kept = _PATHS.get((id(compiled), prefix))
    if kept is not None and kept[0] is compiled:
        return kept[1]
    recurrent, other = [], set()
    for op in compiled.get_runtime_model().get_ordered_ops():
        if prefix and not op.get_friendly_name().startswith(prefix):
            continue
        info = op.get_rt_info()
        kind = info["layerType"].astype(str) if "layerType" in info else op.get_type_name()
        primitive = info["primitiveType"].astype(str) if "primitiveType" in info else ""
        if kind in RECURRENT_LAYERS:
            recurrent.append(f"{kind} ({primitive})" if primitive else kind)
        elif kind not in PLUMBING:
            other.add(kind)
    counted = Counter(recurrent)
    named = [f"{n} × {kind}" if n > 1 else kind for kind, n in counted.items()]
    found = {"layers": named} if recurrent else {"decomposed": sorted(other)}
    _PATHS[(id(compiled), prefix)] = (compiled, found)
    while len(_PATHS) > 64:
        _PATHS.popitem(last=False)
    return found


def _to_tensor(ov, arr: np.ndarray):
    if arr.dtype.name != "bfloat16":
        return np.ascontiguousarray(arr)
    tensor = ov.Tensor(ov.Type.bf16, list(arr.shape))
    tensor.data.view(np.uint16)[...] = np.ascontiguousarray(arr).view(np.uint16)
    return tensor


def _from_output(ov, output, value) -> np.ndarray:
    value = np.asarray(value)
    if output.get_element_type() == ov.Type.bf16:
        import ml_dtypes
        return value.view(np.uint16).view(ml_dtypes.bfloat16)
    return value


def _text(value) -> str | list:
    """An OpenVINO property value as plain data: ov.Type 'bfloat16' -> 'bf16', enums by name."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    from conformance.runtimes.effective import parse
    if "Type" in type(value).__name__:
        precision = parse(repr(value))
        return precision.name if precision else str(value)
    return getattr(value, "name", None) or str(value)
