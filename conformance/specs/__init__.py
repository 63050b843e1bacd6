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

#: spec name -> Spec, every family's; filled on first use (PEP 562 ``__getattr__`` below), so that a
#: leaf module such as ``conformance.specs.openvino.vocabulary`` imports without the translators'
#: packages (a runtime adapter reads it in a release's environment that has no onnx:
#: conformance/history/)
SPECS: dict[str, Spec]


def _load() -> dict[str, Spec]:
    found: dict[str, Spec] = {}
    for module in FAMILIES:
        try:
            found.update(importlib.import_module(module).SPECS)
        except ModuleNotFoundError as exc:  # a family whose translator needs a package absent here
            if exc.name == module:
                continue
            raise
    globals()["SPECS"] = found
    return found


def __getattr__(name: str):
    if name == "SPECS":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def translate(spec: Spec, case, form: dict | None = None) -> Program | NotExpressible:
    """``spec.translate(case)``, after the checks every family shares: an attribute of the case
    that the family's translator does not know (``Attribute.families`` in
    conformance/case/vocabulary.py) is not expressible, never silently dropped; nor is a program form
    (``form``: conformance/runtimes/forms.py ``program_form``, e.g. ``{"shape": "dynamic"}``) the
    family does not write (its ``forms``)."""
    from conformance.specs.program import foreign_attributes
    unknown = foreign_attributes(spec, case)  # every translator asks this too
    if unknown:
        return NotExpressible(spec.name, unknown)
    if not form:
        return spec.translate(case)
    writes = getattr(spec, "forms", None) or {}
    for key, value in form.items():
        if value not in writes.get(key, ()):
            return NotExpressible(spec.name, f"{spec.name} programs are not written with {key}={value} (the "
                                             f"{spec.family} translator writes "
                                             + (", ".join(f"{k}={'|'.join(v)}" for k, v in writes.items())
                                                or "no program form beyond the defaults") + ")")
    return spec.translate(case, form=form)  # type: ignore[call-arg]  # a family with ``forms`` takes one


def spec_names() -> list[str]:
    return list(globals().get("SPECS") or _load())


__all__ = ["SPECS", "NotExpressible", "Program", "Spec", "spec_names", "translate"]
