"""Translators: one per spec family. Only these modules know a spec's shapes, orders and packing.

Each family module exposes ``SPECS``: spec name -> a :class:`~conformance.specs.program.Spec`.
"""

import importlib

from conformance.specs.program import NotExpressible, Program, Spec

FAMILIES = (
    "conformance.specs.onnx",
    "conformance.specs.openvino",
    "conformance.specs.directml",
    "conformance.specs.torch",
    "conformance.specs.webnn",
)

SPECS: dict[str, Spec] = {}
for _module in FAMILIES:
    try:
        SPECS.update(importlib.import_module(_module).SPECS)
    except ModuleNotFoundError as _exc:  # a family whose translator needs a package absent here
        if _exc.name == _module:
            continue
        raise


def translate(spec: Spec, case) -> Program | NotExpressible:
    """``spec.translate(case)``, after the one check every family shares: an attribute of the case
    that the family's translator does not know (``Attribute.families`` in
    conformance/case/vocabulary.py) is not expressible, never silently dropped."""
    from conformance.case.vocabulary import ATTRIBUTE
    unknown = [k for k in case.attributes if k in ATTRIBUTE and spec.family not in ATTRIBUTE[k].families]
    if unknown:
        return NotExpressible(spec.name, f"{spec.name} has no attribute {unknown[0]!r} (the {spec.family} "
                                         f"translator does not write it)")
    return spec.translate(case)


def spec_names() -> list[str]:
    return list(SPECS)


__all__ = ["SPECS", "NotExpressible", "Program", "Spec", "spec_names", "translate"]
