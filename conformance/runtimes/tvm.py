"""Apache TVM (the ``apache-tvm`` wheel): the ONNX model imported by TVM's Relax ONNX frontend
(``tvm.relax.frontend.onnx.from_onnx``, with the feeds' shapes and types), compiled for ``llvm``
(``tvm.compile``) and run by the Relax virtual machine on the CPU.

A refusal names its stage (``RuntimeRejected.stage``) and, in its message, the step: ``TVM ONNX
frontend`` (stage converter: an operator the frontend has no converter for is refused there,
``OpNotImplemented``), ``TVM compile`` (stage compiler) or ``TVM VM`` (stage runtime). The imported
Relax module (its TVMScript text) is the pair's artefact ``module.relax.py`` (docs/engines.md).
"""

from __future__ import annotations

import numpy as np

from conformance.runtimes.base import RuntimeRejected

#: the target TVM compiles for
TARGET = "llvm"


def version() -> str:
    import tvm
    return str(tvm.__version__)


class TVMRuntime:
    name = "tvm"
    format = "onnx"
    description = "Apache TVM: Relax ONNX frontend, tvm.compile(target='llvm'), Relax VM on the CPU"

    def __init__(self) -> None:
        self.version = version()
        self.device = "CPU"
        self.config = "default"
        self._script = ""

    def effective(self) -> dict:
        return {"target": TARGET}

    def artefacts(self) -> dict[str, bytes]:
        """The Relax module the last ``run`` imported the program into (none where the frontend refused)."""
        return {"module.relax.py": self._script.encode()} if self._script else {}

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import onnx
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
        self._script = ""
        proto = onnx.load_from_string(model)
        constants = {t.name for t in proto.graph.initializer}
        inputs = [i.name for i in proto.graph.input if i.name not in constants]
        missing = [n for n in inputs if n not in feeds]
        if missing:
            raise RuntimeRejected(f"the model's input {missing[0]!r} has no value among {sorted(feeds)}")
        try:
            mod = from_onnx(proto, shape_dict={n: list(feeds[n].shape) for n in inputs},
                            dtype_dict={n: feeds[n].dtype.name for n in inputs})
        except Exception as exc:  # noqa: BLE001 - the frontend's refusal (OpNotImplemented, ...)
            raise RuntimeRejected(f"TVM ONNX frontend: {type(exc).__name__}: {_short(exc)}",
                                  stage="converter") from None
        self._script = mod.script()
        try:
            executable = tvm.compile(mod, target=TARGET)
        except Exception as exc:  # noqa: BLE001 - the compiler's refusal
            raise RuntimeRejected(f"TVM compile: {type(exc).__name__}: {_short(exc)}", stage="compiler") from None
        try:
            vm = relax.VirtualMachine(executable, tvm.cpu())
            result = vm["main"](*[tvm.runtime.tensor(np.ascontiguousarray(feeds[n])) for n in inputs])
        except Exception as exc:  # noqa: BLE001 - the VM's refusal
            raise RuntimeRejected(f"TVM VM: {type(exc).__name__}: {_short(exc)}", stage="runtime") from None
        results = [result] if hasattr(result, "numpy") else list(result)
        return [r.numpy() for r in results]


def _short(exc: Exception) -> str:
    """The exception's message without TVM's C++ stack trace."""
    return str(exc).split("Stack trace:")[0].strip()[:1500]


def targets(specs_by_format: dict):
    """One CPU target per ONNX spec version."""
    import tvm.relax.frontend.onnx  # noqa: F401 - the frontend must be importable too

    from conformance.runtimes.base import RuntimeRef, Target
    ref = RuntimeRef("conformance.runtimes.tvm:TVMRuntime")
    return [Target("tvm", version(), "CPU", "default", spec, ref, description=TVMRuntime.description)
            for spec in specs_by_format.get("onnx", [])], []
