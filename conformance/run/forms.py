"""A pair in an execution form (conformance/runtimes/forms.py), or with its relations: the calls its
worker makes (a :class:`~conformance.isolation.plans.Plan`) and one verdict from their answers.

- ``shape=dynamic``: the case and two other shapes (conformance/case/variants.py) through one
  compiled model; each judged by the oracle.
- ``session=reused``: the case on a session of its own (fresh), then on one session after other
  inputs (the other shapes with ``shape=dynamic``, else other values at its shape) in shuffled order;
  both runs of the case judged by the oracle, and the reused one compared with the fresh one.
- ``threads=4``: the case twice among four requests at once on one compiled model with four threads;
  both judged, and compared with each other.
- ``relations=on``: the case fresh, then its relations' derived calls (conformance/run/relations.py).

The verdict is the first that holds of: a judged call that is not ``pass`` (the case's own call first,
then the others, each message naming its call); two runs of the same input that differ
(``state-leak``); a relation that breaks (``inconsistent``); else ``pass``.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field

import numpy as np

from conformance.case import variants
from conformance.case.model import Case
from conformance.isolation.plans import Plan
from conformance.run import relations as rel
from conformance.runtimes.forms import asked, of
from conformance.specs.program import Program

#: the other inputs a reused session runs before the case
OTHERS = 3


@dataclass
class Call:
    """One call of the plan: whose input it is fed, the program as translated for that input (its
    feeds, its way back to canonical), what it is in words, and whether the oracle judges it."""

    case: Case
    program: Program
    label: str
    judged: bool = True
    main: bool = False


@dataclass
class PairPlan:
    calls: list                                  # in the worker plan's answer order
    plan: Plan
    #: (call, call, what): two runs of the same input that must agree (state-leak where they do not)
    same: list = field(default_factory=list)
    #: (Relation, the index of its first derived call)
    relations: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def main(self) -> int:
        return next(k for k, c in enumerate(self.calls) if c.main)

    def cases(self) -> list[Case]:
        """The distinct cases the oracle must judge, the pair's own first."""
        found: dict[str, Case] = {}
        for c in self.calls:
            if c.judged:
                found.setdefault(c.case.id, c.case)
        return list(found.values())


def needs_plan(config: str) -> bool:
    """Whether a pair in ``config`` runs as a plan (several calls), not as one ``run``."""
    return any(k != "weights" for k in asked(config))


def build(case: Case, config: str, translate, program, runtime_input) -> PairPlan:
    """The plan of a pair: ``program`` is the case's own program in the form's program form;
    ``translate(case)`` translates another input (a variant, a relation's case) in that form, or
    returns why it cannot; ``runtime_input(program)`` is what the runtime receives (bytes, or the
    path of the written program)."""
    form = of(config)
    s, b = case.shape["seq_length"], case.shape["batch_size"]
    main = Call(case, program, f"the case ({s}x{b})", main=True)
    calls: list[Call] = []
    steps: list = []
    notes: list[str] = []
    dynamic = form["shape"] == "dynamic" and case.valid
    others = _others(case, dynamic, translate, notes) if case.valid else []

    def step(kind: str, items: list[Call], *extra):
        start = len(calls)
        calls.extend(items)
        steps.append((kind, 0, list(range(start, start + len(items))), *extra))

    if form["session"] == "reused" and case.valid:
        fresh = Call(case, program, f"the case ({s}x{b}) on a fresh session")
        main.label = f"the case ({s}x{b}) on a session that ran {len(others)} other inputs first"
        step("fresh", [fresh])
        order = list(others)
        random.Random(zlib.crc32(case.digest.encode())).shuffle(order)
        step("loaded", order + [main])
        same = [(len(calls) - 1, 0, "the case on a reused session against a fresh one")]
    elif form["threads"] != "1" and case.valid:
        twice = Call(case, program, f"the case ({s}x{b}), a second request at once", judged=True)
        main.label = f"the case ({s}x{b}) among {form['threads']} requests at once"
        pad = (others * 2)[:2] or [Call(case, program, "the case again", judged=False)] * 2
        step("concurrent", [main, pad[0], twice, pad[1]], int(form["threads"]))
        same = [(0, 2, "two requests of the case at once")]
    elif dynamic or (form["session"] == "reused") or form["threads"] != "1":
        step("loaded", [main] + (others if dynamic else []))
        same = []
    else:
        step("fresh", [main])
        same = []
    if dynamic:
        notes.append("shape=dynamic: compiled once, run at " + ", ".join(
            f"{c.case.shape['seq_length']}x{c.case.shape['batch_size']}" for c in [main] + [
                o for o in others if o.judged]) + " (seq_length x batch_size)")
    programs = [runtime_input(program)]
    found_relations = []
    if form["relations"] == "on":
        for relation in rel.relations(case):
            derived = [translate(c) for c in relation.cases]
            bad = next((d for d in derived if isinstance(d, str)), None)
            if bad is not None:
                notes.append(f"relation {relation.name} not run: {bad}")
                continue
            if relation.name == "layout" and derived[0].model == program.model:
                continue  # the spec does not write layout: the same program, nothing to compare
            start = len(calls)
            if relation.chain:
                programs.append(runtime_input(derived[0]))
                carry = _carry(derived[0])
                if carry is None:
                    notes.append(f"relation {relation.name} not run: the cell program's states are not fed")
                    continue
                calls.extend(Call(c, d, f"{relation.name}: {c.id.rsplit('~', 1)[-1]}", judged=False)
                             for c, d in zip(relation.cases, derived))
                steps.append(("chain", len(programs) - 1, list(range(start, len(calls))), carry))
            else:
                for c, d in zip(relation.cases, derived):
                    programs.append(runtime_input(d))
                    calls.append(Call(c, d, f"{relation.name}: {c.id.rsplit('~', 1)[-1]}", judged=False))
                    steps.append(("fresh", len(programs) - 1, [len(calls) - 1]))
            found_relations.append((relation, start))
    plan = Plan(programs, [c.program.feeds for c in calls], steps, notes)
    return PairPlan(calls, plan, same, found_relations, notes)


def _others(case: Case, dynamic: bool, translate, notes: list) -> list[Call]:
    """The other inputs of the plan: the case at two other shapes (``dynamic``), judged; else other
    values at the case's shape, not judged (their job is to run first)."""
    found = []
    if dynamic:
        for k, (s, b) in enumerate(variants.shapes(case)):
            other = variants.at_shape(case, s, b, k)
            prog = translate(other)
            if isinstance(prog, str):
                notes.append(f"the shape {s}x{b} not run: {prog}")
                continue
            found.append(Call(other, prog, f"{s}x{b} through the same compiled model"))
        return found
    for k in range(OTHERS):
        other = variants.other_values(case, k)
        prog = translate(other)
        if not isinstance(prog, str):
            found.append(Call(other, prog, f"other values {k + 1}", judged=False))
    return found


def _carry(program) -> dict | None:
    """{the program's feed of a state: the index of the output that carries it on}, for a chain."""
    names = [canonical for _, canonical in program.outputs]
    carry = {}
    for state, output in (("initial_h", "Y_h"), ("initial_c", "Y_c")):
        fed = _feed_name(program, state)
        if fed is None:
            continue
        if output not in names:
            return None
        carry[fed] = names.index(output)
    return carry or None


def _feed_name(program, canonical: str) -> str | None:
    if canonical in program.feeds:
        return canonical
    from conformance.specs.openvino.vocabulary import FEED_NAMES
    name = FEED_NAMES.get(canonical)
    return name if name in program.feeds else None


# -- the verdict ------------------------------------------------------------------------------------

@dataclass
class Judged:
    verdict: str
    message: str
    call: int                         # the call whose judgement the record's fields carry
    extra: dict = field(default_factory=dict)


def judge(pp: PairPlan, answers: list, judge_call, dtype: str) -> Judged:
    """One verdict from a plan's answers. ``judge_call(call, outputs)`` judges a call's outputs against
    the oracle: (verdict, message, Judgement or None)."""
    runs, judged = [], {}
    for k, (call, (status, outputs, error)) in enumerate(zip(pp.calls, answers)):
        if not call.judged:
            continue
        if status == "ok":
            verdict, message, j = judge_call(call, outputs)
        elif status == "garbage":
            verdict, message, j = "fail", error, None
        else:
            verdict, message, j = "rejected", f"rejected a valid case: {error}", None
        judged[k] = (verdict, message, j)
        runs.append({"call": call.label, "shape": [call.case.shape["seq_length"], call.case.shape["batch_size"]],
                     "verdict": verdict, **({"ratio": j.ratio, "max_ulp": j.max_ulp} if j is not None else {})})
    extra: dict = {"runs": runs} if len(runs) > 1 else {}
    for a, b, what in pp.same:  # the same input fails one way and passes the other: state, not arithmetic
        if a in judged and b in judged and (judged[a][0] == "pass") != (judged[b][0] == "pass"):
            bad, good = (a, b) if judged[b][0] == "pass" else (b, a)
            return Judged("state-leak", f"{what}: {pp.calls[good].label} passes, but {pp.calls[bad].label} is "
                                        f"{judged[bad][0]}: {judged[bad][1]}", bad, extra)
    order = [pp.main] + [k for k in judged if k != pp.main]
    for k in order:
        if k in judged and judged[k][0] not in ("pass", "unspecified"):
            verdict, message, _ = judged[k]
            where = "" if k == pp.main else f"at {pp.calls[k].label}: "
            return Judged(verdict, where + message, k, extra)
    canonical = [_canonical(call, answer) for call, answer in zip(pp.calls, answers)]
    same = []
    for a, b, what in pp.same:
        if canonical[a] is None or canonical[b] is None:
            continue
        gap = max((rel.distance(canonical[a][n], canonical[b][n], dtype) for n in canonical[a] if n in canonical[b]),
                  default=0.0)
        same.append({"what": what, "ulps": gap})
        if gap > rel.ULPS:
            return _found(extra, "same_input", same, "state-leak",
                          f"{what}: the same input gives results {gap:.3g} units in the last place apart (more than "
                          f"{rel.ULPS:g}): {pp.calls[a].label} against {pp.calls[b].label}", pp.main)
    if same:
        extra["same_input"] = same
    checked = []
    for relation, start in pp.relations:
        derived = canonical[start:start + len(relation.cases)]
        if canonical[pp.main] is None or any(d is None for d in derived):
            why = next((a[2] for a in answers[start:start + len(relation.cases)] if a[0] != "ok"), "")
            checked.append({"relation": relation.name, "checked": False, "why": f"a derived call failed: {why}"[:300]})
            continue
        worst = max(((what, rel.distance(x, y, dtype)) for what, x, y in relation.pairs(canonical[pp.main], derived)),
                    key=lambda p: p[1], default=("", 0.0))
        checked.append({"relation": relation.name, "checked": True, "ulps": worst[1], "where": worst[0]})
        if worst[1] > rel.ULPS:
            return _found(extra, "relations", checked, "inconsistent",
                          f"relation {relation.name} breaks: {relation.sentence}, but {worst[0]} differs by "
                          f"{worst[1]:.3g} units in the last place (more than {rel.ULPS:g})", pp.main)
    if checked:
        extra["relations"] = checked
    verdict, message, _ = judged.get(pp.main, ("pass", "", None))
    return Judged(verdict, message, pp.main, extra)


def _found(extra: dict, key: str, checks: list, verdict: str, message: str, main: int) -> Judged:
    """The plan's verdict where a check (the same input twice, a relation) breaks: the checks made so
    far go into the record under ``key``."""
    extra[key] = checks
    return Judged(verdict, message, main, extra)


def _canonical(call: Call, answer) -> dict | None:
    status, outputs, _ = answer
    if status != "ok" or outputs is None:
        return None
    names = [canonical for _, canonical in call.program.outputs]
    if len(outputs) != len(names):
        return None
    return {n: call.program.to_canonical(n, np.asarray(o)) for n, o in zip(names, outputs)}


def representative(cases) -> frozenset:
    """The representative slice of ``cases``: valid cases that together have every (op, form, feature)
    class of the selection, chosen greedily (the case adding the most classes first, the smaller on a
    tie, then by id). The default run runs the sliced forms (``session=reused``, ``threads=4``) on it."""
    from conformance.case.features import features
    classes = {}
    for case in cases:
        if case.valid:
            classes[case.id] = ({(case.op, case.form, token) for token in features(case)}
                                | {(case.op, case.form, "plain")}, case.shape["seq_length"] * case.shape["batch_size"])
    left = set().union(set(), *(c for c, _ in classes.values()))
    chosen = set()
    while left:
        best = min(classes, key=lambda cid: (-len(classes[cid][0] & left), classes[cid][1], cid))
        if not classes[best][0] & left:
            break
        chosen.add(best)
        left -= classes[best][0]
    return frozenset(chosen)
