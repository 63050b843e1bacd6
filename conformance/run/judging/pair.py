"""The judgement of one pair, whatever way it ran: a plain call, one program of a batch, or a plan of
several calls (an execution form, the relations). :func:`judge` is the one function all three call:
the runtime's outcome against the oracle's result (held in the run's :class:`JudgeState`) under the
run's :class:`Policy`, and the second judgement against what the pair computed in (a declared
narrower precision, a kernel's measured activations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.compare import for_case, judge_computed_in, judge_outputs
from conformance.compare.silent import DEFAULT_POLICY as SILENT_POLICY
from conformance.compare.silent import apply_policy
from conformance.run.judging.configuration import effective_of, path_of
from conformance.run.judging.state import JudgeState
from conformance.runtimes.effective import BY_NAME, narrower
from conformance.specs import SPECS


@dataclass
class Policy:
    """What a run judges its pairs under: the named tolerance policy (None: the derived bound), the
    expectations' tolerance overrides and silent-element policies, and each case's feature tokens."""

    tolerance: str | None = None
    #: (case id, target id, feature tokens) -> an expectations entry's tolerance override, or None
    overrides: Callable | None = None
    #: target id -> {garbage|implausible: fail|report} (expectations)
    silent_policy: Callable | None = None
    features_of: Callable[[Any], frozenset] = field(default=lambda case: frozenset())

    def override(self, case, target) -> dict | None:
        """The expectations' tolerance override of a pair, or None."""
        return self.overrides(case.id, target.id, self.features_of(case)) if self.overrides else None

    def silent_policy_of(self, target) -> dict:
        return dict(SILENT_POLICY, **(self.silent_policy(target.id) if self.silent_policy else {}))


@dataclass
class Judged:
    """A pair's verdict, its message, and the record's other fields (``extra``)."""

    verdict: str
    message: str
    extra: dict


def judge(ci: int, case, target, prog, outcome, state: JudgeState, policy: Policy, plan=None,
          write_artefacts: Callable[..., list[str]] | None = None) -> Judged:
    """The judgement of the pair (case ``ci`` of the run, on ``target``) from its ``outcome``: a call's
    (a plain pair, a batch's program) or, with ``plan`` (conformance/run/forms.py ``PairPlan``), a plan's.
    Its oracle results are in ``state`` (the case's under ``(ci, profile)``, a plan's other inputs'
    under ``(("variant", ci, id), profile)``)."""
    notes = list(prog.notes) + list(case.notes) + (list(plan.notes) if plan is not None else [])
    extra: dict[str, Any] = {"notes": notes, "program": prog.files.get("model", ""),
                             "elapsed_s": round(outcome.elapsed, 6)}
    if outcome.output.strip():  # what the runtime printed during the call (its tail), not the terminal's
        extra["runtime_output"] = outcome.output
    if outcome.artefacts and write_artefacts is not None:  # what the runtime converted the program into
        extra["artefacts"] = write_artefacts(case, target, prog, outcome.artefacts)
    if plan is not None:
        return _plan(ci, case, target, prog, outcome, state, policy, plan, extra)
    if outcome.status in ("ok", "error", "garbage") or outcome.unsound:
        extra["effective"] = effective_of(case, target, outcome.effective)
        path_of(outcome.effective, extra)
    if outcome.unsound:  # the call raised and left its worker unable to compute (isolation/soundness.py)
        extra["unsound"] = True
    if outcome.status in ("crash", "timeout"):
        return Judged(outcome.status, outcome.error, extra)
    if outcome.status == "garbage":  # outputs that are not arrays: wrong, whatever the case
        return Judged("fail" if case.valid else "accepted-invalid", outcome.error, extra)
    if outcome.status == "error":
        if case.valid:
            return Judged("rejected", f"rejected a valid case: {outcome.error}", extra)
        return Judged("pass", f"rejected as the spec requires ({case.violates}): {outcome.error}", extra)
    if not case.valid:
        return Judged("accepted-invalid", f"ran a case the spec forbids ({case.violates}) and returned "
                                          f"{len(outcome.value)} outputs", extra)
    profile = SPECS[target.spec].semantics
    oracle = state.oracle[(ci, profile)]
    if oracle.status != "ok":
        return Judged("error", f"oracle failed: {oracle.error}", extra)
    res: Any = oracle.value  # the oracle's OracleResult (oracles is imported lazily)
    again = outcome.again if isinstance(outcome.again, list) else None
    tol = for_case(case, policy.tolerance, policy.override(case, target))
    j = judge_outputs(case, prog, outcome.value, res, tol, repeat=again)
    if isinstance(outcome.again, str):
        extra["repeat"] = outcome.again
    verdict, message = apply_policy(j.verdict, j.message, j.silent, policy.silent_policy_of(target))
    extra.update(judgement_fields(j, res, profile))
    extra["tolerance"] = j.tolerance or tol.to_json()
    _second(ci, case, target, prog, outcome.value, res, tol, state, extra)
    return Judged(verdict, message, extra)


def _plan(ci: int, case, target, prog, outcome, state: JudgeState, policy: Policy, plan, extra: dict) -> Judged:
    """A plan's pair: its main call judged as a plain pair's call would be, its other calls against
    the oracle at their inputs, and the form's verdict over them (conformance/run/forms.py)."""
    from conformance.run import forms as pair_forms
    if outcome.unsound:  # a call of the plan left its worker unable to compute (isolation/soundness.py)
        extra["unsound"] = True
    if outcome.status in ("crash", "timeout"):
        return Judged(outcome.status, outcome.error, extra)
    extra["effective"] = effective_of(case, target, outcome.effective)
    path_of(outcome.effective, extra)
    if outcome.status != "ok":  # the plan as a whole failed in the worker
        return Judged("rejected" if case.valid else "pass",
                      f"{'rejected a valid case' if case.valid else 'rejected as the spec requires'}: "
                      f"{outcome.error}", extra)
    answer = outcome.value
    extra["loaded_by"] = answer.loaded_by
    main = answer.calls[plan.main]
    if not case.valid:
        if main[0] == "ok":
            return Judged("accepted-invalid", f"ran a case the spec forbids ({case.violates}) and returned "
                                              f"{len(main[1])} outputs", extra)
        return Judged("pass", f"rejected as the spec requires ({case.violates}): {main[2]}", extra)
    profile = SPECS[target.spec].semantics
    tol = for_case(case, policy.tolerance, policy.override(case, target))
    found: dict[int, Any] = {}

    def judge_call(call, outputs):
        okey = (ci, profile) if call.case is case else (("variant", ci, call.case.id), profile)
        oracle = state.oracle[okey]
        if oracle.status != "ok":
            return "error", f"oracle failed: {oracle.error}", None
        j = judge_outputs(call.case, call.program, outputs, oracle.value, tol)
        verdict, message = apply_policy(j.verdict, j.message, j.silent, policy.silent_policy_of(target))
        found[id(call)] = (j, oracle.value)
        return verdict, message, j
    judged = pair_forms.judge(plan, answer.calls, judge_call, case.dtype)
    extra.update(judged.extra)
    j, res = found.get(id(plan.calls[judged.call]), (None, None))
    if j is not None:
        extra.update(judgement_fields(j, res, profile))
        if judged.call == plan.main:
            _second(ci, case, target, prog, main[1], res, tol, state, extra)
    return Judged(judged.verdict, judged.message, extra)


def _second(ci: int, case, target, prog, outputs, res, tol, state: JudgeState, extra: dict) -> None:
    """The second judgement (the record's ``declared``), where the pair computed in a precision narrower
    than its type or with a kernel's measured activations, under the derived bound."""
    effective = extra["effective"]
    compute = BY_NAME.get(effective["precision"])
    widen = effective.get("activation_ulps") or None
    if compute is not None and (narrower(compute, case.dtype) or widen) and tol.derived:
        extra["declared"] = declared(ci, case, target, prog, outputs, res, compute, effective.get("accumulation"),
                                     effective.get("rounding", "faithful"), state, widen)


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


def declared(ci: int, case, target, prog, outputs, res, compute, accumulation, rounding, state: JudgeState,
             act_ulps: dict | None = None) -> dict:
    """The pair judged against what it computed in (a precision narrower than the model's type, a kernel
    whose measured tanh and sigmoid are less accurate than the model's, ``act_ulps``, or both): what a
    correct implementation in that arithmetic may do."""
    import oracles
    profile = SPECS[target.spec].semantics
    attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
    widen = tuple(sorted((act_ulps or {}).items()))

    def bounds_for(choices):
        key = (ci, profile, compute.dtype, accumulation, rounding, widen, tuple(sorted(choices.items())))
        return state.bound(key, lambda: oracles.computed_in(case.op, attrs, case.tensors, profile, choices,
                                                             compute.dtype, accumulation, rounding,
                                                             act_ulps=dict(widen) or None))
    said = {"activations": ", ".join(f"{fn.lower()} k={k:.3g}" for fn, k in widen)} if widen else {}
    try:
        j = judge_computed_in(case, prog, outputs, res, bounds_for)
    except Exception as exc:  # noqa: BLE001 - the second judgement costs itself, not the verdict
        return {"precision": compute.name, **said, "verdict": "error", "message": f"{type(exc).__name__}: {exc}"}
    tol = j.tolerance or {}
    return {"precision": compute.name, **said, "verdict": j.verdict, "ratio": j.ratio,
            "max_abs_err": j.max_abs_err, "message": j.message, "tolerance": tol.get("source", ""),
            **{k: tol[k] for k in ("judged_by", "rigorous_ratio") if k in tol}}
