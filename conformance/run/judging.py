"""What judging one pair needs besides the comparison itself: the oracle's call (in a worker, or from
its disk cache), the configuration the pair ran in, the path it took, and the judgement's fields as
every judged record carries them (conformance/run/engine.py and conformance/run/planned.py), and
``Judging``, the Engine's judging of a pair."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.compare import for_case, judge_computed_in, judge_outputs
from conformance.compare.silent import DEFAULT_POLICY as SILENT_POLICY
from conformance.compare.silent import apply_policy
from conformance.runtimes.effective import (
    BY_NAME,
    activations_judged,
    activations_label,
    narrower,
    of_dtype,
    probe_finding,
)
from conformance.runtimes.forms import asked
from conformance.specs import SPECS

ORACLE_TIMEOUT = 600.0
#: the narrower-precision bounds kept for reuse across a case's targets
BOUNDS_KEPT = 256


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


@functools.cache
def judge_version() -> str:
    """What judging depends on besides the inputs: the oracle's version, its fast path's model
    (production shapes) and the comparison's code (conformance/compare, its policies, the engine and
    this module), as a digest."""
    import oracles
    from oracles import fast
    h = hashlib.sha256(f"{oracles.ORACLE_VERSION}+{fast.fingerprint()}".encode())
    here = Path(__file__).resolve().parent.parent
    run = Path(__file__).resolve().parent
    for path in sorted((here / "compare").glob("*")) + [run / "engine.py", run / "judging.py", run / "activations.py",
                                                        run / "forms.py", run / "relations.py", run / "planned.py",
                                                        here / "runtimes" / "effective.py"]:
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]



class Judging:
    """The Engine's judging of one pair (conformance/run/engine.py; planned.py judges a plan's calls
    with ``override``, ``silent_policy_of`` and ``declared`` too): the runtime's outcome against the
    oracle's result, and the second judgement against a narrower precision it computed in."""

    # the Engine's state and methods that judging reads
    cases: list
    opt: Any
    oracle: dict
    bounds: dict
    overrides: Any
    silent_policy: Any
    _facts_of: Callable[[Any], tuple[Any, str, frozenset]]
    _write_artefacts: Callable[..., list[str]]
    settle: Callable[..., None]

    def _judge(self, ci: int, target, prog, outcome) -> None:
        case = self.cases[ci]
        extra = {"notes": list(prog.notes) + list(case.notes), "program": prog.files.get("model", ""),
                 "elapsed_s": round(outcome.elapsed, 6)}
        if outcome.output.strip():  # what the runtime printed during the call (its tail), not the terminal's
            extra["runtime_output"] = outcome.output
        if outcome.artefacts:
            extra["artefacts"] = self._write_artefacts(case, target, prog, outcome.artefacts)
        if outcome.status in ("ok", "error", "garbage") or outcome.unsound:
            extra["effective"] = effective_of(case, target, outcome.effective)
            path_of(outcome.effective, extra)
        if outcome.unsound:  # the call raised and left its worker unable to compute (isolation/soundness.py)
            extra["unsound"] = True
        if outcome.status == "crash":
            return self.settle(outcome, ci, target, prog, "crash", outcome.error, extra)
        if outcome.status == "timeout":
            return self.settle(outcome, ci, target, prog, "timeout", outcome.error, extra)
        if outcome.status == "garbage":  # outputs that are not arrays: wrong, whatever the case
            return self.settle(outcome, ci, target, prog, "fail" if case.valid else "accepted-invalid",
                                outcome.error, extra)
        if outcome.status == "error":
            if case.valid:
                return self.settle(outcome, ci, target, prog, "rejected", f"rejected a valid case: {outcome.error}",
                                    extra)
            return self.settle(outcome, ci, target, prog, "pass", f"rejected as the spec requires "
                                f"({case.violates}): {outcome.error}", extra)
        if not case.valid:
            return self.settle(outcome, ci, target, prog, "accepted-invalid",
                                f"ran a case the spec forbids ({case.violates}) and returned "
                                f"{len(outcome.value)} outputs", extra)
        oracle = self.oracle[(ci, SPECS[target.spec].semantics)]
        if oracle.status != "ok":
            return self.settle(outcome, ci, target, prog, "error", f"oracle failed: {oracle.error}", extra)
        res: Any = oracle.value  # the oracle's OracleResult (oracles is imported lazily)
        again = outcome.again if isinstance(outcome.again, list) else None
        tol = for_case(case, self.opt.tolerance, self.override(case, target))
        j = judge_outputs(case, prog, outcome.value, res, tol, repeat=again)
        if isinstance(outcome.again, str):
            extra["repeat"] = outcome.again
        verdict, message = apply_policy(j.verdict, j.message, j.silent, self.silent_policy_of(target))
        extra.update(judgement_fields(j, res, SPECS[target.spec].semantics))
        extra["tolerance"] = j.tolerance or tol.to_json()
        effective = extra["effective"]
        compute = BY_NAME.get(effective["precision"])
        widen = effective.get("activation_ulps") or None
        if compute is not None and (narrower(compute, case.dtype) or widen) and tol.derived:
            extra["declared"] = self.declared(ci, case, target, prog, outcome.value, res, compute,
                                               effective.get("accumulation"), effective.get("rounding", "faithful"),
                                               widen)
        self.settle(outcome, ci, target, prog, verdict, message, extra)

    def override(self, case, target) -> dict | None:
        """The expectations' tolerance override of a pair, or None."""
        return self.overrides(case.id, target.id, self._facts_of(case)[2]) if self.overrides else None

    def silent_policy_of(self, target) -> dict:
        return dict(SILENT_POLICY, **(self.silent_policy(target.id) if self.silent_policy else {}))

    def declared(self, ci: int, case, target, prog, outputs, res, compute, accumulation, rounding,
                 act_ulps: dict | None = None) -> dict:
        """The pair judged against what it computed in (a precision narrower than the model's type,
        a kernel whose measured tanh and sigmoid are less accurate than the model's, ``act_ulps``, or
        both): what a correct implementation in that arithmetic may do."""
        import oracles
        profile = SPECS[target.spec].semantics
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        widen = tuple(sorted((act_ulps or {}).items()))

        def bounds_for(choices):
            key = (ci, profile, compute.dtype, accumulation, rounding, widen, tuple(sorted(choices.items())))
            if key not in self.bounds:
                if len(self.bounds) >= BOUNDS_KEPT:
                    self.bounds.clear()
                self.bounds[key] = oracles.computed_in(case.op, attrs, case.tensors, profile, choices,
                                                       compute.dtype, accumulation, rounding,
                                                       act_ulps=dict(widen) or None)
            return self.bounds[key]
        said = {"activations": ", ".join(f"{fn.lower()} k={k:.3g}" for fn, k in widen)} if widen else {}
        try:
            j = judge_computed_in(case, prog, outputs, res, bounds_for)
        except Exception as exc:  # noqa: BLE001 - the second judgement costs itself, not the verdict
            return {"precision": compute.name, **said, "verdict": "error", "message": f"{type(exc).__name__}: {exc}"}
        tol = j.tolerance or {}
        return {"precision": compute.name, **said, "verdict": j.verdict, "ratio": j.ratio,
                "max_abs_err": j.max_abs_err, "message": j.message, "tolerance": tol.get("source", ""),
                **{k: tol[k] for k in ("judged_by", "rigorous_ratio") if k in tol}}
