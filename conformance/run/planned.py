"""The pairs of a run that go as plans (an execution form, the relations: conformance/run/forms.py):
their jobs, the oracle results they wait for, and their records.

The engine (conformance/run/engine.py) hands a pair here when its target's configuration needs a
plan; a plan's pair is judged once its worker's answer and the oracle's result for every input it
judges (the case, and the case at other shapes) are in. The case's own oracle result is the one
every other target of the case shares; an other input's is asked for once, whichever target asks
first, and dropped after its last plan.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.compare import for_case, judge_outputs
from conformance.compare.silent import apply_policy
from conformance.isolation.jobs import Job
from conformance.run import forms as pair_forms
from conformance.run.judging import effective_of, judgement_fields, path_of
from conformance.runtimes.effective import BY_NAME, narrower
from conformance.runtimes.forms import program_form
from conformance.specs import SPECS, NotExpressible, translate

#: the most calls' worth of the run timeout a plan may take
PLAN_TIMEOUTS = 8


class Planned:
    """The plans of one engine run."""

    def __init__(self, engine):
        self.engine = engine
        self.plans: dict[tuple[int, str], dict[str, Any]] = {}   # (case index, target id) -> its state
        self.waiting: defaultdict[Any, list] = defaultdict(list)  # oracle key -> plans waiting on it
        #: oracle keys of other inputs asked for and not yet answered; a result the engine has released
        #: (every plan that needed it judged) is asked for again by a plan scheduled later
        self.in_flight: set = set()

    def jobs(self, ci: int, case, target, prog):
        """The jobs of a pair run as a plan: the oracle for each other input it judges (a variant at
        another shape), then the plan itself."""
        engine = self.engine
        spec = SPECS[target.spec]
        form = program_form(target.config)
        folder = engine.program_folder(case) / _slug(target.config)

        def translated(other):
            found = translate(spec, other, form)
            if isinstance(found, NotExpressible):
                return found.reason
            if found.format != "onnx":  # a file format: the runtime reads what is written
                sub = folder / _slug(other.id.rsplit("~", 1)[-1])
                sub.mkdir(parents=True, exist_ok=True)
                spec.write(found, sub)
            return found
        try:
            pp = pair_forms.build(case, target.config, translated, prog, lambda p: p.runtime_input())
        except Exception as exc:  # noqa: BLE001 - a plan that cannot be built costs its pair, as a suite error
            engine.record(case, target, prog, "error", f"the form's plan failed: {type(exc).__name__}: {exc}")
            if case.valid:
                engine.release((ci, spec.semantics))
            return
        okeys: set[tuple[Any, str]] = {(ci, spec.semantics)} if case.valid else set()
        for other in pp.cases()[1:] if case.valid else ():
            okey = (("variant", ci, other.id), spec.semantics)
            okeys.add(okey)
            engine.runs_left[okey] += 1
            if okey in self.in_flight or okey in engine.oracle:
                continue
            job = engine.oracle_job(okey, other, spec.semantics)   # None: read from the disk cache
            if job is not None:
                self.in_flight.add(okey)
                yield job
        self.plans[(ci, target.id)] = {"target": target, "prog": prog, "plan": pp, "okeys": okeys, "outcome": None}
        yield Job(("plan", ci, target, prog), "plan", (target.ref, pp.plan),
                  engine.opt.timeout * min(PLAN_TIMEOUTS, len(pp.calls)))

    def answered(self, outcome) -> None:
        """A plan's answer from its worker."""
        _, ci, target, _ = outcome.key
        self.engine.spent(target, outcome.elapsed)
        self.plans[(ci, target.id)]["outcome"] = outcome
        self._ready((ci, target.id))

    def oracle_in(self, okey) -> None:
        """An oracle result arrived: the plans waiting on it may be ready."""
        self.in_flight.discard(okey)
        for pkey in self.waiting.pop(okey, []):
            self._ready(pkey)

    def _ready(self, pkey) -> None:
        """Judge a plan's pair once its answer and every oracle result it needs are in."""
        state = self.plans.get(pkey)
        if state is None or state["outcome"] is None:
            return
        missing = [k for k in state["okeys"] if k not in self.engine.oracle]
        if missing:
            self.waiting[missing[0]].append(pkey)
            return
        del self.plans[pkey]
        self._judge(pkey[0], state)
        for okey in state["okeys"]:
            self.engine.release(okey)

    def _judge(self, ci: int, state: dict) -> None:
        engine = self.engine
        case, target, prog, pp, outcome = (engine.cases[ci], state["target"], state["prog"], state["plan"],
                                           state["outcome"])
        extra: dict[str, Any] = {"notes": list(prog.notes) + list(case.notes) + list(pp.notes),
                                 "program": prog.files.get("model", ""), "elapsed_s": round(outcome.elapsed, 6)}
        if outcome.output.strip():
            extra["runtime_output"] = outcome.output
        if outcome.artefacts:  # what a converter target's plan converted the program into
            extra["artefacts"] = engine._write_artefacts(case, target, prog, outcome.artefacts)
        if outcome.unsound:  # a call of the plan left its worker unable to compute (isolation/soundness.py)
            extra["unsound"] = True
        if outcome.status in ("crash", "timeout"):
            return engine.settle(outcome, ci, target, prog, outcome.status, outcome.error, extra)
        extra["effective"] = effective_of(case, target, outcome.effective)
        path_of(outcome.effective, extra)
        if outcome.status != "ok":  # the plan as a whole failed in the worker
            return engine.settle(outcome, ci, target, prog, "rejected" if case.valid else "pass",
                                 f"{'rejected a valid case' if case.valid else 'rejected as the spec requires'}: "
                                 f"{outcome.error}", extra)
        answer = outcome.value
        extra["loaded_by"] = answer.loaded_by
        main = answer.calls[pp.main]
        if not case.valid:
            if main[0] == "ok":
                return engine.settle(outcome, ci, target, prog, "accepted-invalid",
                                     f"ran a case the spec forbids ({case.violates}) and returned {len(main[1])} "
                                     f"outputs", extra)
            return engine.settle(outcome, ci, target, prog, "pass",
                                 f"rejected as the spec requires ({case.violates}): {main[2]}", extra)
        profile = SPECS[target.spec].semantics
        tol = for_case(case, engine.opt.tolerance, engine.override(case, target))
        found: dict[int, Any] = {}

        def judge_call(call, outputs):
            okey = (ci, profile) if call.case is case else (("variant", ci, call.case.id), profile)
            oracle = engine.oracle[okey]
            if oracle.status != "ok":
                return "error", f"oracle failed: {oracle.error}", None
            j = judge_outputs(call.case, call.program, outputs, oracle.value, tol)
            verdict, message = apply_policy(j.verdict, j.message, j.silent, engine.silent_policy_of(target))
            found[id(call)] = (j, oracle.value)
            return verdict, message, j
        judged = pair_forms.judge(pp, answer.calls, judge_call, case.dtype)
        extra.update(judged.extra)
        j, res = found.get(id(pp.calls[judged.call]), (None, None))
        if j is not None:
            extra.update(judgement_fields(j, res, profile))
            effective = extra["effective"]
            compute = BY_NAME.get(effective["precision"])
            if judged.call == pp.main and narrower(compute, case.dtype) and tol.derived:
                extra["declared"] = engine.declared(ci, case, target, prog, main[1], res, compute,
                                                    effective.get("accumulation"),
                                                    effective.get("rounding", "faithful"))
        engine.settle(outcome, ci, target, prog, judged.verdict, judged.message, extra)


def _slug(text: str) -> str:
    from conformance.run.engine import _slug as slug
    return slug(text)
