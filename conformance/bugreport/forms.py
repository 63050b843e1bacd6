"""A pair of an execution form (conformance/runtimes/forms.py; docs/forms.md), as repro.py replays it.

A form target's pair is several calls on one runtime (conformance/run/forms.py builds the plan): with
``shape=dynamic`` the program has symbolic batch and sequence dimensions, is loaded once and runs the
case and two other shapes; with ``session=reused`` the case runs on one session after other inputs;
with ``weights=inputs`` W, R, B and P are fed. The report replays the calls the failing one needs, in
the order the suite made them, and compares that call's outputs with the spec's values:

- the program is the form's program, as the suite wrote it (symbolic dimensions, weights as inputs);
- the calls are the plan's step that holds the failing call, up to it: one loaded model (session)
  for a loaded step, a model of its own per call for a fresh one;
- the expected values and the allowed errors are those of the failing call's input.

What repro.py does not replay is refused up front, saying so: ``threads=4`` (requests at once from
several threads: a race, which a single-threaded script does not reproduce), a ``state-leak`` whose
runs both pass and differ from each other (a comparison of two runs, not with the spec), and an
``inconsistent`` pair (a relation: the runtime compared with itself). ``relations=on`` adds no
call the case's own verdict needs: the pair's other verdicts are replayed as the plain form's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

from dataclasses import dataclass
from typing import Any

from conformance.runtimes.forms import asked, compose, describe


class FormNotReproduced(Exception):
    """repro.py does not replay this pair's form; the message says why."""


@dataclass
class Replay:
    """The calls repro.py makes: ``feeds[k]`` in order, through one loaded model (``loaded``) or a
    model of their own each; the last is the failing call, whose outputs are compared."""

    loaded: bool
    feeds: list                 # feed dicts, in call order; the last is the judged call's
    labels: list                # each call in words, as the suite's record names it
    case: Any                   # the judged call's input as a case (its expected values)
    program: Any                # the judged call's program (its feeds, outputs, layout)
    config: str                 # the form part of the target's configuration (``shape=dynamic/...``)
    verdict: str                # the judged call's own verdict (fail, rejected, accepted-invalid)
    words: str                  # what the form is, for ISSUE.md

    @property
    def several(self) -> bool:
        return len(self.feeds) > 1


def replay_of(ran) -> Replay | None:
    """How repro.py replays ``ran`` (conformance.bugreport.pair.Ran), or None for a pair of the default
    form (one call, one fresh model); raises :class:`FormNotReproduced`."""
    record = ran.record
    config = str(record.config or "default")
    forms = asked(config)
    if not forms:
        return None
    verdict = str(record.verdict or "")
    if forms.get("threads", "1") != "1":
        raise FormNotReproduced(f"threads={forms['threads']}: the suite saw it with requests running at once from "
                                f"several threads, which a single-threaded repro.py does not replay (the suite's "
                                f"repro command does)")
    if verdict == "inconsistent":
        raise FormNotReproduced("an inconsistent pair breaks a self-consistency relation (the runtime compared with "
                                "itself, not with the spec): repro.py compares with the spec only (the suite's repro "
                                "command shows the relation)")
    form = {k: v for k, v in forms.items() if k != "relations"}
    words = describe(compose("default", form)) if form else ""
    if not form:
        return None
    if verdict == "state-leak" and not any(r.get("verdict") not in ("pass", "unspecified")
                                           for r in record.runs or []):
        raise FormNotReproduced("the state leak is two runs of the same input that both pass but differ from each "
                                "other by more than the runtime may; repro.py compares a run with the spec only "
                                "(the suite's repro command shows both runs)")
    plan = _plan(ran, compose("default", form))
    judged = _judged(plan, record)
    step = next(s for s in plan.plan.steps if judged in s[2])
    upto = step[2][:step[2].index(judged) + 1]
    calls = [plan.calls[k] for k in upto]
    judged_calls = [k for k, c in enumerate(plan.calls) if c.judged]
    runs = record.runs or []
    own = runs[judged_calls.index(judged)].get("verdict") if len(runs) == len(judged_calls) else None
    return Replay(step[0] == "loaded", [c.program.feeds for c in calls], [c.label for c in calls],
                  calls[-1].case, calls[-1].program, compose("default", form),
                  own if own and own != "pass" else verdict, words)


def _plan(ran, config: str):
    from conformance.run import forms as pair_forms
    from conformance.runtimes.forms import program_form
    from conformance.specs import SPECS, NotExpressible, translate
    spec = SPECS[ran.target.spec]

    def translated(other):
        found = translate(spec, other, program_form(config))
        return found.reason if isinstance(found, NotExpressible) else found
    return pair_forms.build(ran.case, config, translated, ran.program, lambda p: p)


def _judged(plan, record: Record) -> int:
    """The call whose judgement the record carries (conformance/run/forms.py ``judge``): the call of a
    state leak that is not pass, else the case's own call where it is not pass, else the first judged
    call that is not; the record's ``runs`` list the judged calls' verdicts in order."""
    judged = [k for k, c in enumerate(plan.calls) if c.judged]
    runs = record.runs or []
    if len(runs) != len(judged):
        return plan.main
    verdicts = {k: r.get("verdict") for k, r in zip(judged, runs)}
    for a, b, _ in plan.same:
        if a in verdicts and b in verdicts and (verdicts[a] == "pass") != (verdicts[b] == "pass"):
            return a if verdicts[b] == "pass" else b
    for k in [plan.main] + [k for k in judged if k != plan.main]:
        if verdicts.get(k) not in ("pass", "unspecified", None):
            return k
    return plan.main
