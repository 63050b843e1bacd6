"""Translators: one per spec family. Only these modules know a spec's shapes, orders and packing."""

from conformance.specs.onnx import SPECS as ONNX_SPECS
from conformance.specs.program import NotExpressible, Program, to_canonical_layout

SPECS = {**ONNX_SPECS}


def spec_names() -> list[str]:
    return list(SPECS)


__all__ = ["SPECS", "NotExpressible", "Program", "spec_names", "to_canonical_layout"]
