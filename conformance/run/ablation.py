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
from pathlib import Path
from typing import Any

from conformance.case.features import ABLATIONS, FORM_ABLATIONS, Removal
from conformance.case.model import Case
from conformance.case.vocabulary import DEFAULT_ACTIVATIONS, canonical_activation
from conformance.files import write_atomic
from conformance.results import MemoryStore
from conformance.run.engine import Engine, Options
from conformance.runtimes.forms import BY_KEY, asked, base_config, compose

#: the verdicts worth ablating: a crash or a timeout teaches nothing when re-run without a feature
#: (and a group of hangs would cost its timeout per variant)
ABLATED_VERDICTS = ("fail", "rejected", "state-leak", "inconsistent")
#: a variant whose verdict is one of these no longer shows the failure; "within-declared" is a fail
#: against the model's type that its narrower declared precision accepts
CLEAN = ("pass", "unspecified", "within-declared")
PINNED = "precision=pinned"
VERB = {"fail": "fails", "rejected": "rejects the case", "crash": "crashes", "timeout": "times out",
        "state-leak": "leaks state between runs", "inconsistent": "disagrees with itself"}


def _family(case_id: str) -> str:
    return case_id.split("[", 1)[0]


def _declared(record: dict) -> str:
    """The pair's second judgement, against the narrower precision it computed in: pass, fail, or
    '' where it computed in the model's type."""
    return (record.get("declared") or {}).get("verdict") or ""


def groups(records: list[dict], cases_by_id: dict) -> dict:
    """(target, verdict, family, declared) -> failing case ids, for valid cases only."""
    out = defaultdict(list)
    for r in records:
        if r["verdict"] in ABLATED_VERDICTS and r.get("expect", "valid") == "valid" and r["case"] in cases_by_id:
            out[(r["target"], r["verdict"], _family(r["case"]), _declared(r))].append(r["case"])
    return out


def _label(record: dict) -> str:
    if record["verdict"] == "fail" and _declared(record) == "pass":
        return "within-declared"
    return record["verdict"]


def _run(variants: list, target, pool, folder: Path, timeout: float, deadline: float | None = None) -> dict:
    """Verdicts of the variant cases on one target: {variant id: verdict, or "within-declared"};
    a variant not started before ``deadline`` has none."""
    store = MemoryStore(folder)
    Engine(variants, [target], store, Options(out_dir=folder, timeout=timeout, write_programs=False,
                                              deadline=deadline, repeat_under=0.0)).run(pool)
    return {r["case"]: _label(r) for r in store.records}


def pinned_sibling(target, targets):
    """The same runtime, version, device and spec with its precision pinned to the model's type (none
    for a target pinned already, in any execution form)."""
    if base_config(target.config) == PINNED:
        return None
    return next((t for t in targets if t.config == PINNED and (t.runtime, t.version, t.device, t.spec, t.format)
                 == (target.runtime, target.version, target.device, target.spec, target.format)), None)


def _configuration_cause(target, precision: str, pinned_verdict: str | None, dtype: str = "") -> tuple[str, list]:
    """(cause, features): 'fails only in the default configuration, which computes in bf16 on this
    CPU (AMD EPYC): ...', ["configuration"]. The CPU is named by its model (run.json and the
    report's target list have its flags). Where the precision is pinned to the model's type and it
    still computes narrower (float64 in f32), the cause is the dtype, not the configuration; where
    the pinned configuration fails too, the configuration is not the cause either."""
    from conformance.runtimes.effective import host
    where = f"on this CPU ({host().get('cpu') or '?'})" if target.device == "CPU" else f"on {target.device}"
    if base_config(target.config) == PINNED:   # pinned, in the plain form or in another
        return (f"fails whenever the dtype is {dtype or '?'}: it computes in {precision} {where} even with the "
                f"precision pinned to the model's type (within the {precision} bound)", ["dtype"])
    head = (f"fails only in the {target.config} configuration, which computes in {precision} {where}: "
            f"within the {precision} bound")
    if pinned_verdict is None:
        return head + " (no pinned-precision configuration to compare with)", ["configuration"]
    if pinned_verdict in CLEAN:
        return head + ", and passes with the precision pinned", ["configuration"]
    return (f"fails in both configurations: in the {target.config} one it is within the {precision} bound it "
            f"computes in {where}, and with the precision pinned it is {pinned_verdict} too (the pinned "
            f"target's cluster names the cause)"), []


def ablate(records: list[dict], cases: list, targets: list, pool, out_dir, budget: int = 1500,
           timeout: float = 60.0, seconds: float | None = None) -> list[dict]:
    """Clusters of the failing records; writes out_dir/clusters.json and returns the clusters.
    ``budget`` bounds the runs; ``seconds`` the wall-clock time (groups left are not ablated)."""
    deadline = time.monotonic() + seconds if seconds is not None else None
    cases_by_id = {c.id: c for c in cases}
    targets_by_id = {t.id: t for t in targets}
    folder = Path(out_dir) / "ablation"
    # ((target, verdict, family, declared), case ids, cause, features, ablations)
    explained: list[tuple[tuple[str, str, str, str], list[str], str, list[str], list[dict[str, Any]]]] = []
    spent = 0
    by_target = defaultdict(list)
    for key, ids in sorted(groups(records, cases_by_id).items()):
        by_target[key[0]].append((key, ids))
    # share the budget fairly: every target gets its k-th group ablated before any its (k+1)-th
    quota = _fair_quota(by_target, cases_by_id, budget)
    out_of_time = f"not ablated: the ablation's time budget ({seconds:g} s) was spent" if seconds is not None else ""
    # the plain targets first: a form's group that fails on its plain sibling as well takes the
    # sibling's cause (the form is not part of it) instead of being ablated again
    order = sorted(by_target.items(), key=lambda kv: kv[0] in targets_by_id and bool(asked(targets_by_id[kv[0]].config)))
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
            spent += _ablate_configuration(within, target, targets, cases_by_id, records, pool, folder, timeout,
                                           explained, budget - spent, deadline, out_of_time)
        # a group's cause comes from its first case; the cases that lack the features it names are
        # ablated again as a group of their own (at most three rounds)
        for _round in range(3):
            if not items:
                break
            leftover: list = []
            plans: list[tuple[tuple[str, str, str, str], list[str], Case, list[Removal], dict[str, Case]]] = []
            formed, theirs = _form_siblings(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline)
            spent += formed.pop("", 0)
            if target.converter:  # the converter's fault or the runtime's (conformance/converters/causes.py)
                from conformance.converters.causes import siblings as converted
                through = converted(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline,
                                    _run, _label, CLEAN, out_dir)
                spent += through.pop("", 0)
                formed = {key: formed.get(key, "") + through.get(key, "") for key in set(formed) | set(through)}
            items = _as_in_plain_form(items, target, targets, theirs, formed, explained, cases_by_id)
            removals = FORM_ABLATIONS if asked(target.config) else ABLATIONS
            for key, ids in items:
                case = cases_by_id[ids[0]]
                present = [f for f in removals if f.present(case)]
                if len(plans) >= quota[target_id] or spent + len(present) > budget:
                    explained.append((key, ids, "not ablated: the ablation budget was spent", [], []))
                    continue
                spent += len(present)
                plans.append((key, ids, case, present, {f.name: f.remove(case) for f in present}))
            singles = _run([v for *_, variants in plans for v in variants.values()], target, pool, folder, timeout,
                           deadline)
            pair_plans = []
            for key, ids, case, present, variants in plans:
                if any(v.id not in singles for v in variants.values()):  # the time ran out before they ran
                    explained.append((key, ids, out_of_time, [], []))
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
            pair_variants, pair_index = [], {}
            for _key, _ids, case, present, _results in pair_plans:
                for a, b in itertools.combinations(present, 2):
                    if spent >= budget:
                        break
                    first = a.remove(case)
                    if not b.present(first):  # removing a also removed b (e.g. activations and their spelling)
                        continue
                    spent += 1
                    v = b.remove(first)
                    v = dataclasses.replace(v, id=f"{case.id}~{a.name}+{b.name}")
                    pair_index[v.id] = (a, b)
                    pair_variants.append(v)
            pairs = _run(pair_variants, target, pool, folder, timeout, deadline) if pair_variants else {}
            for key, ids, case, _present, results in pair_plans:
                if any(vid not in pairs for vid in pair_index if vid.startswith(case.id + "~")):
                    explained.append((key, ids, out_of_time, [], results))
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
                else:   # one sentence per op and form, whatever the family had to remove: one cluster
                    cause = (f"{VERB[key[1]]}: the plain {case.op} {case.form} path diverges, whatever single feature "
                             f"is removed") + _beyond(key, records)
                    features = []
                explained.append((key, ids, cause, features, results))
            items = leftover
        explained += [(key, ids, "not ablated: its first case's cause does not hold for these cases, and the "
                                 "ablation's rounds were spent", [], []) for key, ids in items]
    clusters = _merge(explained, cases_by_id, {t.id: t.runtime_family for t in targets})
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(out_dir) / "clusters.json", json.dumps(clusters, indent=2))
    return clusters


def plain_sibling(target, targets):
    """The same runtime, version, device, spec and configuration in the default execution form (the
    plain configuration ``precision=pinned`` of ``precision=pinned/shape=dynamic``), or None."""
    if not asked(target.config):
        return None
    plain = compose(base_config(target.config), {})
    return next((t for t in targets if t.config == plain and (t.runtime, t.version, t.device, t.spec, t.format,
                                                              t.converter)
                 == (target.runtime, target.version, target.device, target.spec, target.format, target.converter)), None)


def _holding(key, ids: list, holds, cases_by_id: dict, leftover: list) -> list:
    """The ids whose case has what a cause names (``holds(case)``); the others go to ``leftover`` as a
    group of their own, with the same key."""
    kept = [i for i in ids if holds(cases_by_id[i])]
    rest = [i for i in ids if i not in kept]
    if rest:
        leftover.append((key, rest))
    return kept


def _as_in_plain_form(items, target, targets, theirs: dict, formed: dict, explained: list,
                      cases_by_id: dict) -> list:
    """The groups of a form's target still to ablate: a group whose first case has the same verdict on
    the plain sibling, whose group of that verdict the ablation explained, takes the sibling's cause
    and features (appended to ``explained``) and is left out."""
    sibling = plain_sibling(target, targets)
    if sibling is None:
        return items
    known = {k: (cause, features) for k, _ids, cause, features, _r in explained
             if k[0] == sibling.id and not cause.startswith("not ablated")}
    left = []
    for key, ids in items:
        same = key not in formed and theirs.get(ids[0]) == _label({"verdict": key[1], "declared": {"verdict": key[3]}})
        said = known.get((sibling.id, *key[1:])) if same else None
        if said is None:
            left.append((key, ids))
            continue
        named = [f for f in FORM_ABLATIONS if f.name in said[1]]
        ids = _holding(key, ids, lambda c, fs=named: all(f.present(c) for f in fs), cases_by_id, left)
        if ids:
            explained.append((key, ids, said[0], list(said[1]), []))
    return left


def _form_siblings(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline
                   ) -> tuple[dict, dict]:
    """For a target in an execution form: ({group key: ", with shape=dynamic, where it runs as X; passes
    with shape=static, where it runs as Y"} for each group whose first case passes on the plain
    sibling, ``""`` -> the runs spent; {first case: the sibling's verdict}), the sibling's verdicts read
    from the run's records, else run now."""
    sibling = plain_sibling(target, targets)
    if sibling is None:
        return {}, {}
    firsts = {ids[0] for _, ids in items}
    theirs = {r["case"]: r for r in records if r["target"] == sibling.id and r["case"] in firsts}
    missing = [cases_by_id[c] for c in sorted(firsts - set(theirs))]
    verdicts = {c: _label(r) for c, r in theirs.items()}
    if missing:
        verdicts.update(_run(missing, sibling, pool, folder, timeout, deadline))
    mine = {r["case"]: r for r in records if r["target"] == target.id and r["case"] in firsts}
    found: dict = {"": len(missing)}
    form = asked(target.config)
    for key, ids in items:
        if verdicts.get(ids[0]) not in CLEAN:
            continue
        said = ", ".join(f"{k}={v}" for k, v in form.items())
        plain = ", ".join(f"{k}={BY_KEY[k].default}" for k in form)
        found[key] = (f", with {said}{_runs_as(mine.get(ids[0]))}; passes with {plain}"
                      f"{_runs_as(theirs.get(ids[0]))}")
    return found, verdicts


def _runs_as(record: dict | None) -> str:
    """', where it runs as RNNSeq (ref_any_f32)' from a record's path, or ''."""
    path = (record or {}).get("path") or {}
    said = path.get("layers") or path.get("nodes") or (
        [f"decomposed into {', '.join(path['decomposed'])}"] if path.get("decomposed") else [])
    return f", where it runs as {' + '.join(said)}" if said else ""


def _precision_of(records: list[dict], target_id: str, case_id: str) -> str:
    for r in records:
        if r["target"] == target_id and r["case"] == case_id:
            return (r.get("declared") or {}).get("precision") or (r.get("effective") or {}).get("precision", "?")
    return "?"


def _beyond(key, records) -> str:
    """' (beyond its declared bf16)' for a group wrong beyond the narrower precision it computed in."""
    if key[3] != "fail":
        return ""
    precision = next(((r.get("declared") or {}).get("precision") for r in records
                      if r["target"] == key[0] and _declared(r) == "fail"), "")
    return f" (beyond its declared {precision})" if precision else ""


def _ablate_configuration(within, target, targets, cases_by_id, records, pool, folder, timeout, explained,
                          budget, deadline=None, out_of_time="") -> int:
    """Groups whose pairs are within their declared narrower precision: each group's first case with
    the precision pinned (the run's own record of it where the pinned target ran, else run now), and
    the group explained by the configuration. Returns the runs spent."""
    sibling = pinned_sibling(target, targets)
    verdicts: dict = {}
    ran = 0
    if sibling is not None:
        # the run itself has the sibling's verdict on most of these cases: read, not run again
        wanted = {ids[0] for _, ids in within}
        verdicts = {r["case"]: _label(r) for r in records if r["target"] == sibling.id and r["case"] in wanted}
        firsts = [cases_by_id[ids[0]] for _, ids in within if ids[0] not in verdicts][:max(0, budget)]
        if firsts:
            verdicts.update(_run(firsts, sibling, pool, folder, timeout, deadline))
            ran = len(firsts)
    for key, ids in within:
        if sibling is not None and ids[0] not in verdicts and deadline is not None and time.monotonic() > deadline:
            explained.append((key, ids, out_of_time, [], []))
            continue
        precision = _precision_of(records, key[0], ids[0])
        pinned = verdicts.get(ids[0]) if sibling is not None else None
        if sibling is not None and pinned is None:
            pinned = "not run (the ablation budget was spent)"
        cause, features = _configuration_cause(target, precision, pinned, cases_by_id[ids[0]].dtype)
        results = [] if sibling is None else [{"case": ids[0], "feature": "configuration",
                                               "change": sibling.config_label, "verdict": pinned}]
        explained.append((key, ids, cause, features, results))
    return ran


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


def _merge(explained, cases_by_id: dict | None = None, family_of_target: dict | None = None) -> list[dict]:
    """One cluster per (runtime family, verdict, cause), merged across spec versions, devices and
    configurations: the targets it shows on are listed (``targets``, and ``cases_by_target``: which
    of its cases failed where). The sentences name no values (clip 0.5, Elu) and no case family, so
    one cause is one cluster (a refusal of every LSTMSequence-1 is one cluster, not one per family);
    the activations a cluster's cases use are listed beside it. ``target`` is the first target, for
    readers of the one-target clusters written before."""
    family_of_target = family_of_target or {}
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (target, verdict, family, _), ids, cause, features, results in explained:
        runtime = family_of_target.get(target) or target.split("/", 1)[0]
        key = (runtime, verdict, cause)
        c = merged.setdefault(key, {"runtime": runtime, "verdict": verdict, "cause": cause, "features": features,
                                    "families": [], "cases": [], "targets": [], "cases_by_target": {},
                                    "ablations": []})
        if family not in c["families"]:
            c["families"].append(family)
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
