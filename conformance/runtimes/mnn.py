"""MNN (Alibaba's engine, the ``MNN`` wheel): the ONNX model converted by MNN's converter, then run by
its interpreter (``MNN.nn.load_module_from_file``, the Express module API, which runs models with
control flow: what the converter makes of an LSTM by default).

The conversion is part of what is tested, and runs in this worker through the converter's library
entry point (``_tools.mnnconvert``), never the ``mnnconvert`` console script, whose wrapper imports
``MNN.tools.utils.log``, which runs ``pip install`` and sends telemetry. A refusal names its stage
(``RuntimeRejected.stage``) and, in its message, the step: ``MNN converter`` (stage converter),
``MNN load`` or ``MNN interpreter`` (stage runtime). What the converter printed is in the verdict's
runtime output; the converted model is the pair's artefact ``model.mnn`` (docs/engines.md).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import numpy as np

from conformance.runtimes.base import RuntimeRejected

#: numpy dtypes MNN's Express API takes as inputs, and the expr dtype each is fed as
DTYPES = {"float32": "float", "int32": "int"}


def version() -> str:
    import MNN
    return str(MNN.version())


class MNNRuntime:
    name = "mnn"
    format = "onnx"
    description = "MNN: MNNConvert (library entry point), then the Express module interpreter, CPU"

    def __init__(self) -> None:
        self.version = version()
        self.device = "CPU"
        self.config = "default"
        self._converted: dict = {}
        self._model = b""

    def effective(self) -> dict:
        """The converted model (size, digest), and the precision: MNN's default (``Precision_Normal``)
        computes float32 models in float32 on x86 CPUs."""
        return dict(self._converted, precision="f32") if self._converted else {}

    def artefacts(self) -> dict[str, bytes]:
        """The .mnn model the last ``run`` converted the program into (none where the converter refused)."""
        return {"model.mnn": self._model} if self._model else {}

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import MNN
        import onnx
        self._converted, self._model = {}, b""
        unsupported = sorted({a.dtype.name for a in feeds.values() if a.dtype.name not in DTYPES})
        if unsupported:
            raise RuntimeRejected(f"MNN interpreter: the Express API takes no {', '.join(unsupported)} input "
                                  f"(float32 and int32 only)", stage="runtime")
        proto = onnx.load_from_string(model)
        constants = {t.name for t in proto.graph.initializer}
        inputs = [i.name for i in proto.graph.input if i.name not in constants]
        outputs = [o.name for o in proto.graph.output]
        missing = [n for n in inputs if n not in feeds]
        if missing:
            raise RuntimeRejected(f"the model's input {missing[0]!r} has no value among {sorted(feeds)}")
        with tempfile.TemporaryDirectory(prefix="mnn-") as tmp:
            source, converted = Path(tmp) / "model.onnx", Path(tmp) / "model.mnn"
            source.write_bytes(model)
            convert(source, converted)
            self._model = converted.read_bytes()
            self._converted = {"converted": "MNNConvert -f ONNX", "converted_bytes": len(self._model),
                               "converted_sha256": hashlib.sha256(self._model).hexdigest()[:16]}
            try:
                module = MNN.nn.load_module_from_file(str(converted), inputs, outputs)
            except Exception as exc:  # noqa: BLE001 - MNN's loader raises plain exceptions
                raise RuntimeRejected(f"MNN load: {type(exc).__name__}: {exc}", stage="runtime") from None
        if module is None:
            raise RuntimeRejected("MNN load: load_module_from_file returned no module", stage="runtime")
        expr = MNN.expr
        values = [expr.const(np.ascontiguousarray(feeds[n]), list(feeds[n].shape), expr.NCHW,
                             getattr(expr, DTYPES[feeds[n].dtype.name])) for n in inputs]
        try:
            results = module.onForward(values)
        except Exception as exc:  # noqa: BLE001 - the interpreter's refusal
            raise RuntimeRejected(f"MNN interpreter: {type(exc).__name__}: {exc}", stage="runtime") from None
        if results is None or len(results) != len(outputs):
            raise RuntimeRejected(f"MNN interpreter: returned {0 if results is None else len(results)} outputs "
                                  f"for the model's {len(outputs)}", stage="runtime")
        return [np.array(r.read()) for r in results]


def convert(source: Path, converted: Path) -> None:
    """``source`` (ONNX) converted to ``converted`` (.mnn) by MNN's converter, called through its
    library entry point with MNNConvert's default options. A refusal's message is the converter's
    own reasons (the lines it printed naming what it does not support)."""
    import _tools  # MNN's converter (the extension the mnnconvert script wraps)
    args = ["mnnconvert", "-f", "ONNX", "--modelFile", str(source), "--MNNModel", str(converted),
            "--bizCode", "rnn-conformance"]
    try:
        done, printed = _printed(lambda: _in_folder(source.parent, lambda: _tools.mnnconvert(args)))
    except Exception as exc:  # noqa: BLE001 - the converter's own refusal
        raise RuntimeRejected(f"MNN converter: {type(exc).__name__}: {exc}", stage="converter") from None
    if not done or not converted.exists() or converted.stat().st_size == 0:
        reasons = list(dict.fromkeys(re.sub(r"^(\[[^]]*\] *)?(:\d+: *)?", "", line.strip())
                                     for line in printed.splitlines()
                                     if any(m in line for m in REFUSALS)))
        raise RuntimeRejected(f"MNN converter: {'; '.join(reasons) or 'conversion failed'}", stage="converter")


#: what the converter's lines naming a refusal contain ("MNN LSTM not support 8th input (peepholes)",
#: "MNN LSTM Don't support activation: Elu", "These Op Not Support: ONNX::LSTM")
REFUSALS = ("not support", "Not Support", "Don't support", "Can't ")


def _in_folder(folder: Path, call):
    """``call()`` with ``folder`` as the working directory: the converter writes a scratch file
    (``.__convert_external_data.bin``) into the working directory, which is the user's otherwise."""
    import os
    before = os.getcwd()
    os.chdir(folder)
    try:
        return call()
    finally:
        os.chdir(before)


def _printed(call):
    """``call()`` and what native code printed meanwhile (file descriptors 1 and 2), which is then
    printed again, so that it stays in the verdict's runtime output."""
    import ctypes
    import os
    import sys
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    sys.stderr.flush()
    libc.fflush(None)
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            result = call()
        finally:
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        sink.seek(0)
        text = sink.read()
    os.write(1, text)
    return result, text.decode("utf-8", "replace")


def targets(specs_by_format: dict):
    """One CPU target per ONNX spec version."""
    import _tools  # noqa: F401 - the converter must be importable too

    from conformance.runtimes.base import RuntimeRef, Target
    ref = RuntimeRef("conformance.runtimes.mnn:MNNRuntime")
    return [Target("mnn", version(), "CPU", "default", spec, ref, description=MNNRuntime.description)
            for spec in specs_by_format.get("onnx", [])], []
