"""IREE (the ``iree-base-compiler`` and ``iree-base-runtime`` wheels): the ONNX model imported by
IREE's ONNX importer (the library behind ``iree-import-onnx``: ONNX shape inference, then
``iree.compiler.extras.onnx_importer``, which writes the ``torch.operator "onnx.LSTM"`` MLIR),
compiled for ``llvm-cpu`` by ``iree.compiler.tools.compile_str`` (input type ``onnx``, a generic
CPU), and run by ``iree.runtime`` on the ``local-sync`` driver.

A refusal names its stage (``RuntimeRejected.stage``) and, in its message, the step: ``IREE ONNX
import`` (stage converter), ``IREE compile`` (stage compiler: the compiler's own diagnostics) or
``IREE runtime`` (stage runtime). The imported MLIR is the pair's artefact ``model.mlir``, with the
compiled ``module.vmfb`` beside it when it is small (docs/engines.md).
"""

from __future__ import annotations

import re

import numpy as np

from conformance.runtimes.base import RuntimeRejected

#: what the compiler is asked for
BACKEND, CPU, DRIVER = "llvm-cpu", "generic", "local-sync"
#: the largest compiled module kept as an artefact
VMFB_KEPT = 256 << 10


def version() -> str:
    from importlib import metadata
    return metadata.version("iree-base-compiler")


class IREERuntime:
    name = "iree"
    format = "onnx"
    description = "IREE: ONNX importer, iree-compile --iree-hal-target-backends=llvm-cpu, iree.runtime local-sync"

    def __init__(self) -> None:
        self.version = version()
        self.device = "CPU"
        self.config = "default"
        self._mlir = ""
        self._vmfb = b""

    def effective(self) -> dict:
        return {"target_backend": BACKEND, "target_cpu": CPU, "driver": DRIVER}

    def artefacts(self) -> dict[str, bytes]:
        """The MLIR the last ``run`` imported the program into, and the module it compiled (where small)."""
        found = {"model.mlir": self._mlir.encode()} if self._mlir else {}
        if self._vmfb and len(self._vmfb) <= VMFB_KEPT:
            found["module.vmfb"] = self._vmfb
        return found

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        import onnx
        self._mlir, self._vmfb = "", b""
        proto = onnx.load_from_string(model)
        constants = {t.name for t in proto.graph.initializer}
        inputs = [i.name for i in proto.graph.input if i.name not in constants]
        missing = [n for n in inputs if n not in feeds]
        if missing:
            raise RuntimeRejected(f"the model's input {missing[0]!r} has no value among {sorted(feeds)}")
        self._mlir = import_onnx(proto)
        self._vmfb = compile_mlir(self._mlir)
        return invoke(self._vmfb, proto.graph.name, [np.ascontiguousarray(feeds[n]) for n in inputs])


def import_onnx(proto) -> str:
    """``proto`` as the MLIR IREE's ONNX importer makes of it (what ``iree-import-onnx`` writes)."""
    import onnx
    from iree.compiler.extras import onnx_importer
    from iree.compiler.ir import Context
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
        module = onnx_importer.ModelInfo(inferred).create_module(context=Context()).operation
        onnx_importer.NodeImporter.define_function(onnx_importer.ModelInfo(inferred).main_graph, module).import_all()
        module.verify()
        return str(module.get_asm())
    except Exception as exc:  # noqa: BLE001 - the importer's refusal
        raise RuntimeRejected(f"IREE ONNX import: {type(exc).__name__}: {str(exc)[:1500]}", stage="converter") from None


def compile_mlir(mlir: str) -> bytes:
    """The imported MLIR compiled for the CPU; a refusal carries the compiler's diagnostics."""
    from iree.compiler.tools import CompilerToolError, compile_str
    try:
        return bytes(compile_str(mlir, target_backends=[BACKEND], input_type="onnx",
                                 extra_args=[f"--iree-llvmcpu-target-cpu={CPU}"]))
    except CompilerToolError as exc:
        raise RuntimeRejected(f"IREE compile: {diagnostics(str(exc))}", stage="compiler") from None


def diagnostics(text: str) -> str:
    """The compiler's error lines (``<stdin>:3:10: error: ...``), without its command line."""
    errors = [line.strip() for line in text.splitlines() if re.search(r"\berror:", line)]
    return "; ".join(dict.fromkeys(errors))[:1500] or text.strip()[:1500]


def invoke(vmfb: bytes, function: str, args: list[np.ndarray]) -> list[np.ndarray]:
    import iree.runtime as rt
    try:
        context = rt.SystemContext(config=rt.Config(DRIVER))
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
        result = context.modules.module[function](*args)
    except Exception as exc:  # noqa: BLE001 - the runtime's refusal
        raise RuntimeRejected(f"IREE runtime: {type(exc).__name__}: {str(exc)[:1500]}", stage="runtime") from None
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in results]


def targets(specs_by_format: dict):
    """One CPU target per ONNX spec version."""
    import iree.compiler.extras.onnx_importer  # noqa: F401 - the importer (needs onnx) and the runtime
    import iree.runtime  # noqa: F401

    from conformance.runtimes.base import RuntimeRef, Target
    ref = RuntimeRef("conformance.runtimes.iree:IREERuntime")
    return [Target("iree", version(), "CPU", "default", spec, ref, description=IREERuntime.description)
            for spec in specs_by_format.get("onnx", [])], []
