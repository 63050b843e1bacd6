"""Translators: one per spec family. Only these modules know a spec's shapes, orders and packing.

Each family module exposes ``SPECS``: spec name -> an object with ``name``, ``family``, ``format``
(the program format its runtimes execute), ``semantics`` (the oracle profile that judges it),
``translate(case) -> Program | NotExpressible``, ``write(program, folder)`` (writes the program's
files and records them in ``program.files``) and ``clause(case)``.
"""

import importlib

from conformance.specs.program import NotExpressible, Program

FAMILIES = (
    "conformance.specs.onnx",
    "conformance.specs.openvino",
    "conformance.specs.directml",
    "conformance.specs.torch",
    "conformance.specs.webnn",
)

SPECS = {}
for _module in FAMILIES:
    try:
        SPECS.update(importlib.import_module(_module).SPECS)
    except ModuleNotFoundError as _exc:  # a family whose translator needs a package absent here
        if _exc.name == _module:
            continue
        raise


def spec_names() -> list[str]:
    return list(SPECS)


__all__ = ["SPECS", "NotExpressible", "Program", "spec_names"]
