"""The configuration one pair ran in (its record's ``effective``) and the path its runtime took
(``path``, ``fallback``): what the judgement of a pair reads of its target and its outcome."""

from __future__ import annotations

from conformance.runtimes.effective import (
    BY_NAME,
    activations_judged,
    activations_label,
    narrower,
    of_dtype,
    probe_finding,
)
from conformance.runtimes.forms import asked


def effective_of(case, target, reported: dict) -> dict:
    """The configuration one pair ran in: the runtime's own report on its compiled object for this
    call where it names a precision (declared), else the target's precision (its declaration for
    the probe's model, else the probe's reading of a known precision) for a float32 case, else the
    model's type (assumed). Where it is narrower than the model's type, how it rounds: as the
    runtime declares, else to nearest. No runtime can loosen its own bound: what the probe read
    beside that is recorded (``probe``), not used (docs/configuration.md)."""
    reported = dict(reported or {})
    reported.pop("path", None)  # the record's own field (``path``)
    precision = reported.pop("precision", "")
    declared_by = reported.pop("precision_declared_by", "the runtime")  # or the converter (docs/converters.md)
    if precision in BY_NAME:
        source = f"declared by {declared_by} for this call"
    elif case.dtype == "float32" and target.precision in BY_NAME:
        declared = ((target.configuration or {}).get("declared") or {}).get("precision")
        precision = target.precision
        source = ("declared by the runtime for the probe's model" if declared in BY_NAME
                  else "measured by the arithmetic probe")
    else:
        precision, source = of_dtype(case.dtype).name, "assumed: the model's type"
    found = {"precision": precision, "source": source, **reported, **asked(target.config)}
    measured = (target.configuration or {}).get("activations")
    widen = activations_judged(measured, case.op) if measured and case.dtype == "float32" else {}
    if widen:  # the kernel's own tanh/sigmoid, measured through the op beyond the model's (run/activations.py)
        found["activations"] = activations_label(measured, case.op)
        found["activation_ulps"] = widen
    if narrower(BY_NAME.get(precision), case.dtype):
        found.setdefault("rounding", "nearest")
        finding = probe_finding(target.configuration or {}, precision)
        if finding:
            found["probe"] = finding
    return found


def path_of(reported: dict, extra: dict) -> None:
    """The path the runtime took (its ``path()``, reported with its configuration), and whether it
    fell back to another device or provider, into the record's ``extra``."""
    path = (reported or {}).get("path")
    if path:
        extra["path"] = path
        if isinstance(path, dict) and path.get("fallback"):
            extra["fallback"] = path["fallback"]
