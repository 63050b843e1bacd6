"""Divergence clusters with a named cause: ablate each group of failures, one feature at a time.

For every group of failing valid cases sharing a target, a verdict and a case family, the first
case is re-run on that target with one feature taken away at a time (clip removed, peepholes
zeroed, sequence lengths full, direction forward, ...). A feature whose removal makes the case pass
is necessary to the failure; when no single removal flips the verdict, pairs are tried. Groups on a
target whose features explain them the same way form one cluster, stated as a sentence:
"fails whenever peepholes are non-zero".

The configuration is an axis too. A group on a target that computes in a narrower precision than
the model's type (OpenVINO's default configuration on a bf16 CPU) is split by its pairs' second
judgement, against that precision (the record's ``declared``). Where that passes, the group's first
case is re-run with the precision pinned (the runtime's ``precision=pinned`` target, where it has
one): "fails only in the default configuration, which computes in bf16 on this CPU". Where it
fails, the features are ablated on the target itself, a variant counting as clean when it is
within its declared precision, so the cause is what is wrong beyond the precision: "fails whenever
peepholes are non-zero (beyond its declared bf16)".

The execution form is an axis as well (conformance/runtimes/forms.py). A group on a target in a
form other than the default (``shape=dynamic``, ``session=reused``, ...) is compared with its plain
sibling, the same runtime, device and spec in the default form (the run's own record of the case
where it has one, else run now); where that passes, the form is part of the cause, with the path
each took: "fails whenever sequence_lens is given (full), with shape=dynamic, where it runs as
RNNSeq (ref_any_f32); passes with shape=static, where it runs as TensorIterator (unknown_f32)".
The features are ablated on the form's target, whether sequence_lens is given at all among them.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.case.features import ABLATIONS, FORM_ABLATIONS, Removal
from conformance.case.model import Case
from conformance.case.vocabulary import DEFAULT_ACTIVATIONS, canonical_activation
from conformance.files import write_atomic
from conformance.results import Record
from conformance.run.ablation_axes import _ablate_configuration, _as_in_plain_form, _form_siblings, plain_sibling
from conformance.run.ablation_runs import ABLATED_VERDICTS, CLEAN, VERB, _declared, _holding, _label, _run, groups
from conformance.runtimes.forms import asked

__all__ = ["ABLATED_VERDICTS", "ablate", "groups"]

#: one group explained: ((target, verdict, case family, declared), case ids, cause, features, ablations)
Explained = tuple[tuple[str, str, str, str], list[str], str, list[str], list[dict[str, Any]]]
#: one group's single-feature plan: (key, ids, its first case, the features present, {feature: variant})
Plan = tuple[tuple[str, str, str, str], list[str], Case, list[Removal], dict[str, Case]]


@dataclass
class _Ablation:
    """What the ablation's rounds share: the run's cases, targets, records and pool, and its limits;
    and what they change: the runs ``spent`` and the groups ``explained``."""

    cases_by_id: dict
    targets: list
    records: list[Record]
    pool: Any
    out_dir: Any
    folder: Path
    timeout: float
    deadline: float | None
    budget: int
    out_of_time: str
    explained: list[Explained] = field(default_factory=list)
    spent: int = 0


def ablate(records: list[Record], cases: list, targets: list, pool, out_dir, budget: int = 1500,
           timeout: float = 60.0, seconds: float | None = None) -> list[dict]:
    """Clusters of the failing records; writes out_dir/clusters.json and returns the clusters.
    ``budget`` bounds the runs; ``seconds`` the wall-clock time (groups left are not ablated)."""
    deadline = time.monotonic() + seconds if seconds is not None else None
    cases_by_id = {c.id: c for c in cases}
    targets_by_id = {t.id: t for t in targets}
    by_target = defaultdict(list)
    for key, ids in sorted(groups(records, cases_by_id).items()):
        by_target[key[0]].append((key, ids))
    # share the budget fairly: every target gets its k-th group ablated before any its (k+1)-th
    quota = _fair_quota(by_target, cases_by_id, budget)
    out_of_time = f"not ablated: the ablation's time budget ({seconds:g} s) was spent" if seconds is not None else ""
    state = _Ablation(cases_by_id, targets, records, pool, out_dir, Path(out_dir) / "ablation", timeout, deadline,
                      budget, out_of_time)
    explained = state.explained
    # the plain targets first: a form's group that fails on its plain sibling as well takes the
    # sibling's cause (the form is not part of it) instead of being ablated again
    order = sorted(by_target.items(),
                   key=lambda kv: kv[0] in targets_by_id and bool(asked(targets_by_id[kv[0]].config)))
    for target_id, items in order:
        target = targets_by_id.get(target_id)
        if target is None:
            continue
        if deadline is not None and time.monotonic() > deadline:
            explained += [(key, ids, out_of_time, [], []) for key, ids in items]
            continue
        within = [(key, ids) for key, ids in items if key[3] == "pass"]
        items = [(key, ids) for key, ids in items if key[3] != "pass"]
        if within:
            state.spent += _ablate_configuration(within, target, targets, cases_by_id, records, pool, state.folder,
                                                 timeout, explained, budget - state.spent, deadline, out_of_time)
        # a group's cause comes from its first case; the cases that lack the features it names are
        # ablated again as a group of their own (at most three rounds)
        for _round in range(3):
            if not items:
                break
            items = _ablation_round(state, target, items, quota[target_id])
        explained += [(key, ids, "not ablated: its first case's cause does not hold for these cases, and the "
                                 "ablation's rounds were spent", [], []) for key, ids in items]
    clusters = _merge(explained, cases_by_id, {t.id: t.runtime_family for t in targets})
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(out_dir) / "clusters.json", json.dumps(clusters, indent=2))
    return clusters


def _ablation_round(state: _Ablation, target, items: list, quota: int) -> list:
    """One round on one target: each group's first case without one feature at a time, then pairs of
    features for the groups no single removal explains. Returns the groups left for the next round
    (the cases that lack what their group's cause names)."""
    targets, cases_by_id, records = state.targets, state.cases_by_id, state.records
    pool, folder, timeout, deadline = state.pool, state.folder, state.timeout, state.deadline
    explained = state.explained
    leftover: list = []
    plans: list[Plan] = []
    formed, theirs = _form_siblings(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline)
    state.spent += formed.pop("", 0)
    if target.converter:  # the converter's fault or the runtime's (conformance/converters/causes.py)
        from conformance.converters.causes import siblings as converted
        through = converted(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline,
                            _run, _label, CLEAN, state.out_dir)
        state.spent += through.pop("", 0)
        formed = {key: formed.get(key, "") + through.get(key, "") for key in set(formed) | set(through)}
    items = _as_in_plain_form(items, target, targets, theirs, formed, explained, cases_by_id)
    removals = FORM_ABLATIONS if asked(target.config) else ABLATIONS
    for key, ids in items:
        case = cases_by_id[ids[0]]
        present = [f for f in removals if f.present(case)]
        if len(plans) >= quota or state.spent + len(present) > state.budget:
            explained.append((key, ids, "not ablated: the ablation budget was spent", [], []))
            continue
        state.spent += len(present)
        plans.append((key, ids, case, present, {f.name: f.remove(case) for f in present}))
    pair_plans = _singles(state, target, plans, formed, leftover)
    _pairs(state, target, pair_plans, leftover)
    return leftover


def _singles(state: _Ablation, target, plans: list[Plan], formed: dict, leftover: list) -> list:
    """Runs the single-feature variants of ``plans`` and explains each group that one removal flips (or
    whose form is the cause); returns the plans no single removal explains, for pairs."""
    cases_by_id, records, explained = state.cases_by_id, state.records, state.explained
    singles = _run([v for *_, variants in plans for v in variants.values()], target, state.pool, state.folder,
                   state.timeout, state.deadline)
    pair_plans = []
    for key, ids, case, present, variants in plans:
        if any(v.id not in singles for v in variants.values()):  # the time ran out before they ran
            explained.append((key, ids, state.out_of_time, [], []))
            continue
        results = [{"case": v.id, "feature": name, "change": v.id.rsplit("~", 1)[1],
                    "verdict": singles.get(v.id, "missing")} for name, v in variants.items()]
        necessary = [f for f in present if singles.get(variants[f.name].id) in CLEAN]
        if necessary:
            cause = (f"{VERB[key[1]]} whenever " + " and ".join(f.sentence(case) for f in necessary)
                     + _beyond(key, records) + formed.get(key, ""))
            ids = _holding(key, ids, lambda c, fs=necessary: all(f.present(c) for f in fs), cases_by_id, leftover)
            explained.append((key, ids, cause, [f.name for f in necessary] + (["form"] if key in formed else []),
                              results))
        elif key in formed:  # no feature needed, the form is: the form is the cause
            explained.append((key, ids, VERB[key[1]] + formed[key] + _beyond(key, records), ["form"], results))
        else:
            pair_plans.append((key, ids, case, present, results))
    return pair_plans


def _pairs(state: _Ablation, target, pair_plans: list, leftover: list) -> None:
    """Runs pairs of removals for the groups no single removal explained, and explains each: by the
    first pair that flips it, else by the path that diverges whatever is removed."""
    targets, cases_by_id, records, explained = state.targets, state.cases_by_id, state.records, state.explained
    pair_variants, pair_index = [], {}
    for _key, _ids, case, present, _results in pair_plans:
        for a, b in itertools.combinations(present, 2):
            if state.spent >= state.budget:
                break
            first = a.remove(case)
            if not b.present(first):  # removing a also removed b (e.g. activations and their spelling)
                continue
            state.spent += 1
            v = b.remove(first)
            v = dataclasses.replace(v, id=f"{case.id}~{a.name}+{b.name}")
            pair_index[v.id] = (a, b)
            pair_variants.append(v)
    pairs = (_run(pair_variants, target, state.pool, state.folder, state.timeout, state.deadline)
             if pair_variants else {})
    for key, ids, case, _present, results in pair_plans:
        if any(vid not in pairs for vid in pair_index if vid.startswith(case.id + "~")):
            explained.append((key, ids, state.out_of_time, [], results))
            continue
        flipped = [pair_index[vid] for vid, verdict in pairs.items()
                   if verdict in CLEAN and vid.startswith(case.id + "~")]
        results += [{"case": vid, "feature": "+".join(x.name for x in pair_index[vid]),
                     "change": vid.rsplit("~", 1)[1], "verdict": verdict}
                    for vid, verdict in pairs.items() if vid.startswith(case.id + "~")]
        if flipped:
            a, b = flipped[0]
            cause = (f"{VERB[key[1]]} whenever {a.sentence(case)} or {b.sentence(case)} "
                     f"(removing either alone is not enough)" + _beyond(key, records))
            features = [a.name, b.name]
            ids = _holding(key, ids, lambda c, fs=(a, b): any(f.present(c) for f in fs), cases_by_id, leftover)
        elif asked(target.config) and plain_sibling(target, targets) is None:
            said = ", ".join(f"{k}={v}" for k, v in asked(target.config).items())
            cause = (f"{VERB[key[1]]}: the {case.op} {case.form} path diverges with {said}, whatever single "
                     f"feature is removed (no plain-form target in this run to tell whether the form is part "
                     f"of the cause)") + _beyond(key, records)
            features = []
        else:   # one sentence per op and form, whatever the case family had to remove: one cluster
            cause = (f"{VERB[key[1]]}: the plain {case.op} {case.form} path diverges, whatever single feature "
                     f"is removed") + _beyond(key, records)
            features = []
        explained.append((key, ids, cause, features, results))


def _beyond(key, records) -> str:
    """' (beyond its declared bf16)' for a group wrong beyond the narrower precision it computed in."""
    if key[3] != "fail":
        return ""
    precision = next(((r.declared or {}).get("precision") for r in records
                      if r.target == key[0] and _declared(r) == "fail"), "")
    return f" (beyond its declared {precision})" if precision else ""


def _fair_quota(by_target: dict, cases_by_id: dict, budget: int) -> dict:
    """How many groups of each target to ablate: round-robin over the targets until the budget
    (in single-feature runs, leaving a fifth for pairs) is spent."""
    costs = {t: [sum(f.present(cases_by_id[ids[0]]) for f in ABLATIONS) for _, ids in items]
             for t, items in by_target.items()}
    quota = dict.fromkeys(by_target, 0)
    left = int(budget * 0.8)
    progressed = True
    while progressed:
        progressed = False
        for t, cost in costs.items():
            k = quota[t]
            if k < len(cost) and cost[k] <= left:
                left -= cost[k]
                quota[t] += 1
                progressed = True
    return quota


def _merge(explained, cases_by_id: dict | None = None, runtime_family_of: dict | None = None) -> list[dict]:
    """One cluster per (runtime family, verdict, cause), merged across spec versions, devices and
    configurations: the targets it shows on are listed (``targets``, and ``cases_by_target``: which
    of its cases failed where). The sentences name no values (clip 0.5, Elu) and no case family, so
    one cause is one cluster (a refusal of every LSTMSequence-1 is one cluster, not one per case family);
    the activations a cluster's cases use are listed beside it. ``target`` is the first target, for
    readers of the one-target clusters written before."""
    runtime_family_of = runtime_family_of or {}
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (target, verdict, family, _), ids, cause, features, results in explained:
        runtime = runtime_family_of.get(target) or target.split("/", 1)[0]
        key = (runtime, verdict, cause)
        c = merged.setdefault(key, {"runtime": runtime, "verdict": verdict, "cause": cause, "features": features,
                                    "case_families": [], "cases": [], "targets": [], "cases_by_target": {},
                                    "ablations": []})
        if family not in c["case_families"]:
            c["case_families"].append(family)
        c["cases"] += [i for i in ids if i not in c["cases"]]
        if target not in c["targets"]:
            c["targets"].append(target)
        c["cases_by_target"].setdefault(target, []).extend(ids)
        c["ablations"] += [dict(a, target=target) for a in results]
    for c in merged.values():
        c["targets"].sort()
        c["target"] = c["targets"][0]
        if "activations" in c["features"] and cases_by_id:
            names = sorted({name for cid in c["cases"] if cid in cases_by_id
                            for name in cases_by_id[cid].attributes.get("activations", ())
                            if canonical_activation(name) not in DEFAULT_ACTIVATIONS[cases_by_id[cid].op]})
            if names:
                c["activations"] = names
                c["cause"] += f" (seen with {', '.join(names)})"
    out = sorted(merged.values(), key=lambda c: (-len(c["cases"]), c["runtime"], c["cause"]))
    for i, c in enumerate(out, 1):
        c["id"] = f"c{i}"
        c["size"] = len(c["cases"])
        c["pairs"] = sum(len(v) for v in c["cases_by_target"].values())
    return out
