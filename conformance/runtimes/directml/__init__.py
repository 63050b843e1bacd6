"""Runtimes of DirectML descriptors (format "directml"): the descriptor interpreter everywhere, and
onnxruntime's DirectML execution provider where it exists (Windows).

Both read the program back from its files: ``run(model, feeds)`` takes the path of the written
descriptor document, validates it against DirectML's documented constraints (a violation is a
refusal, raised as RuntimeRejected), reads every tensor from its buffer file through the desc's own
Sizes and Strides, and returns the outputs in the struct's output order (absent outputs are not
returned), each shaped like its desc's Sizes. ``feeds`` is empty: X and the initial states are in
buffers too, so that a C++ harness can bind the same files.
"""

from __future__ import annotations

from conformance import __version__
from conformance.runtimes.directml.bridge import BRIDGE_DESCRIPTION, DML_PROVIDER, OnnxRuntimeDirectML
from conformance.runtimes.directml.interpreter import INTERPRETER_DESCRIPTION


def targets(specs_by_format: dict):
    """The interpreter for every DirectML spec; onnxruntime-dml where its provider exists, else a gap."""
    from conformance.runtimes.base import RuntimeRef, Target
    specs = specs_by_format.get("directml", [])
    if not specs:
        return [], []
    found = [Target("directml-interpreter", __version__, "CPU", "default", spec,
                    RuntimeRef("conformance.runtimes.directml.interpreter:DirectMLInterpreter"), format="directml",
                    description=INTERPRETER_DESCRIPTION) for spec in specs]
    gaps = []
    try:
        import onnxruntime as ort
        providers = ort.get_available_providers()
    except ImportError as exc:
        reason = (f"onnxruntime not installed here ({exc}); DirectML descriptors are checked by the "
                  "interpreter only")
        return found, [("onnxruntime-dml", reason)]
    if DML_PROVIDER in providers:
        ref = RuntimeRef("conformance.runtimes.directml.bridge:OnnxRuntimeDirectML")
        found += [Target("onnxruntime-dml", ort.__version__, "DML", "default", spec, ref,
                         format="directml", description=BRIDGE_DESCRIPTION, family=OnnxRuntimeDirectML.family)
                  for spec in specs]
    else:
        reason = ("DirectML execution provider not present: Windows-only (onnxruntime "
                  f"{ort.__version__} offers {', '.join(providers)}); DirectML descriptors are checked "
                  "by the interpreter only")
        gaps.append(("onnxruntime-dml", reason))
    return found, gaps
