"""The pairs of a run that go as plans (an execution form, the relations: conformance/run/forms.py):
their jobs, the oracle results they wait for, and their records.

The engine (conformance/run/engine.py) hands a pair here when its target's configuration needs a
plan; a plan's pair is judged, by the one judgement every pair gets (conformance/run/judging/), once
its worker's answer and the oracle's result for every input it judges (the case, and the case at
other shapes) are in the run's state. The case's own oracle result is the one every other target of
the case shares; an other input's is asked for once, whichever target asks first, and dropped after
its last plan.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.isolation.jobs import Job
from conformance.run import forms as pair_forms
from conformance.run.judging import JudgeState, Policy, judge
from conformance.run.programs import slug
from conformance.run.scheduling import Scheduling
from conformance.runtimes.forms import program_form
from conformance.specs import SPECS, NotExpressible, translate

#: the most calls' worth of the run timeout a plan may take
PLAN_TIMEOUTS = 8


class Planned:
    """The plans of one engine run."""

    def __init__(self, state: JudgeState, policy: Policy, lent: Scheduling):
        self.state, self.policy, self.lent = state, policy, lent
        self.plans: dict[tuple[int, str], dict[str, Any]] = {}   # (case index, target id) -> its state
        self.waiting: defaultdict[Any, list] = defaultdict(list)  # oracle key -> plans waiting on it
        #: oracle keys of other inputs asked for and not yet answered; a result the engine has released
        #: (every plan that needed it judged) is asked for again by a plan scheduled later
        self.in_flight: set = set()

    def jobs(self, ci: int, case, target, prog):
        """The jobs of a pair run as a plan: the oracle for each other input it judges (a variant at
        another shape), then the plan itself."""
        state, lent = self.state, self.lent
        spec = SPECS[target.spec]
        form = program_form(target.config)
        folder = lent.programs.folder(case) / slug(target.config)

        def translated(other):
            found = translate(spec, other, form)
            if isinstance(found, NotExpressible):
                return found.reason
            if found.format != "onnx":  # a file format: the runtime reads what is written
                sub = folder / slug(other.id.rsplit("~", 1)[-1])
                sub.mkdir(parents=True, exist_ok=True)
                spec.write(found, sub)
            return found
        try:
            pp = pair_forms.build(case, target.config, translated, prog, lambda p: p.runtime_input())
        except Exception as exc:  # noqa: BLE001 - a plan that cannot be built costs its pair, as a suite error
            lent.record(case, target, prog, "error", f"the form's plan failed: {type(exc).__name__}: {exc}")
            if case.valid:
                state.release((ci, spec.semantics))
            return
        okeys: set[tuple[Any, str]] = {(ci, spec.semantics)} if case.valid else set()
        for other in pp.cases()[1:] if case.valid else ():
            okey = (("variant", ci, other.id), spec.semantics)
            okeys.add(okey)
            state.runs_left[okey] += 1
            if okey in self.in_flight or okey in state.oracle:
                continue
            job = lent.oracle_job(okey, other, spec.semantics)   # None: read from the disk cache
            if job is not None:
                self.in_flight.add(okey)
                yield job
        self.plans[(ci, target.id)] = {"target": target, "prog": prog, "plan": pp, "okeys": okeys, "outcome": None}
        yield Job(("plan", ci, target, prog), "plan", (target.ref, pp.plan),
                  lent.timeout * min(PLAN_TIMEOUTS, len(pp.calls)))

    def answered(self, outcome) -> None:
        """A plan's answer from its worker."""
        _, ci, target, _ = outcome.key
        self.lent.spent(target, outcome.elapsed)
        self.plans[(ci, target.id)]["outcome"] = outcome
        self._ready((ci, target.id))

    def oracle_in(self, okey) -> None:
        """An oracle result arrived: the plans waiting on it may be ready."""
        self.in_flight.discard(okey)
        for pkey in self.waiting.pop(okey, []):
            self._ready(pkey)

    def _ready(self, pkey) -> None:
        """Judge a plan's pair once its answer and every oracle result it needs are in."""
        plan = self.plans.get(pkey)
        if plan is None or plan["outcome"] is None:
            return
        missing = [k for k in plan["okeys"] if k not in self.state.oracle]
        if missing:
            self.waiting[missing[0]].append(pkey)
            return
        del self.plans[pkey]
        ci, case = pkey[0], self.lent.cases[pkey[0]]
        judged = judge(ci, case, plan["target"], plan["prog"], plan["outcome"], self.state, self.policy,
                       plan=plan["plan"], write_artefacts=self.lent.programs.artefacts)
        self.lent.settle(plan["outcome"], ci, plan["target"], plan["prog"], judged)
        for okey in plan["okeys"]:
            self.state.release(okey)
