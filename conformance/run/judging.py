"""What judging one pair needs besides the comparison itself: the oracle's call (in a worker, or from
its disk cache), the configuration the pair ran in, the path it took, and the judgement's fields as
every judged record carries them (conformance/run/engine.py and conformance/run/planned.py)."""

from __future__ import annotations

from conformance.runtimes.effective import BY_NAME, narrower, of_dtype, probe_finding
from conformance.runtimes.forms import asked

ORACLE_TIMEOUT = 600.0


def oracle_for(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """Runs in a worker: the oracle on the canonical case (inputs in layout 0, so no `layout`)."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    return oracles.evaluate(op, attrs, tensors, profile=profile, prec=prec)


def oracle_cached(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """The oracle's result where its disk cache holds it (reading it computes nothing and cannot
    hang), else None: the job goes to the oracle's worker. A cache that does not read is a miss."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    try:
        return oracles.cached(op, attrs, tensors, profile=profile, prec=prec)
    except Exception:  # noqa: BLE001 - an invalid problem or an unreadable entry: the worker says why
        return None


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


def judgement_fields(j, res, profile: str) -> dict:
    """The fields of a judgement against the oracle (``res``, judged under ``profile``)."""
    found = {
        "max_abs_err": j.max_abs_err, "max_rel_err": j.max_rel_err, "max_ulp": j.max_ulp,
        "ratio": j.ratio, "worst": j.worst, "reading": j.reading, "unspecified": j.unspecified,
        "unspecified_values": j.unspecified_values, "tolerance": j.tolerance,
        "worst_elements": j.worst_elements, "error_by_step": j.error_by_step,
        "oracle": dict(res.certificate, profile=profile, readings=[r.name for r in res.readings],
                       ambiguities=list(res.ambiguities), precision=dict(res.precision)),
    }
    if j.silent is not None:
        found["silent"] = j.silent
    return found
