"""tract (Sonos' ONNX engine, the ``tract`` wheel): the ONNX model loaded, typed and made runnable on
tract's default CPU runtime, as its README does (``tract.onnx().load(path).into_model().into_runnable()``).

tract reads a model from a file only, so each program is written to a temporary file in the
worker. The step that refused is named in the refusal: ``load`` (tract's ONNX parser and its
inference of types and shapes), ``into_model`` (typing, where tract expands RNN/GRU/LSTM into its
own ops), ``into_runnable`` (where tract optimizes the model for the CPU) or ``run``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from conformance.runtimes.base import RuntimeRejected

#: numpy dtypes tract's Python bindings can carry (tract.DatumType has no bfloat16)
DTYPES = ("float16", "float32", "float64", "int32", "int64")
#: the precision each float type computes in when no FloatPrecision transform is applied
PRECISION = {"float16": "f16", "float32": "f32", "float64": "f64"}


def version() -> str:
    import tract
    return tract.version()


class Tract:
    name = "tract"
    format = "onnx"
    description = "tract: tract.onnx().load().into_model().into_runnable(), default CPU runtime"

    def __init__(self):
        self.version = version()
        self.device = "CPU"
        self.config = "default"
        self._dtype = ""

    def effective(self) -> dict:
        """What the adapter applied: no FloatPrecision transform, so tract computes in the model's
        datum type. Declared because tract has no property to read, and because the arithmetic
        probe's Relu RNN cannot measure it: tract's RNN ignores the activations attribute."""
        if self._dtype not in PRECISION:
            return {}
        return {"precision": PRECISION[self._dtype], "transforms": "none (no FloatPrecision transform applied)"}

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import tract
        self._dtype = feeds["X"].dtype.name if "X" in feeds else ""
        unsupported = sorted({a.dtype.name for a in feeds.values() if a.dtype.name not in DTYPES})
        if unsupported:
            raise RuntimeRejected(f"tract's bindings have no datum type for {', '.join(unsupported)} "
                                  f"(tract.DatumType: {', '.join(DTYPES)}, ...)")
        with tempfile.TemporaryDirectory(prefix="tract-") as tmp:
            path = Path(tmp) / "model.onnx"
            path.write_bytes(model)
            loaded = _step("load", lambda: tract.onnx().load(str(path)))
        names = [loaded.input_name(i) for i in range(loaded.input_count())]
        missing = [n for n in names if n not in feeds]
        if missing:
            raise RuntimeRejected(f"the model's input {missing[0]!r} has no value among {sorted(feeds)}")
        typed = _step("into_model", loaded.into_model)
        runnable = _step("into_runnable", typed.into_runnable)
        outputs = _step("run", lambda: runnable.run([np.ascontiguousarray(feeds[n]) for n in names]))
        return [o.to_numpy() for o in outputs]


def _step(name: str, call):
    """``call()``; a refusal names the step (tract's own message follows, without its stack trace)."""
    import tract
    try:
        return call()
    except tract.TractError as exc:
        message = str(exc).split("Stack backtrace:")[0].strip()
        raise RuntimeRejected(f"tract {name}: {message}") from None


def targets(specs_by_format: dict):
    """One CPU target per ONNX spec version."""
    from conformance.runtimes.base import RuntimeRef, Target
    ref = RuntimeRef("conformance.runtimes.tract:Tract")
    return [Target("tract", version(), "CPU", "default", spec, ref, description=Tract.description)
            for spec in specs_by_format.get("onnx", [])], []
