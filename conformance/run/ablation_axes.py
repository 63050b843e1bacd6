"""The configuration and the execution form as axes of the ablation (conformance/run/ablation.py): a
group within its declared narrower precision is compared with the target's pinned-precision sibling,
and a group on a target in a non-default execution form with its plain-form sibling."""

from __future__ import annotations

import time

from conformance.case.features import FORM_ABLATIONS
from conformance.results import Record
from conformance.run.ablation_runs import CLEAN, PINNED, _holding, _label, _run, label_of
from conformance.runtimes.forms import BY_KEY, asked, base_config, compose


def pinned_sibling(target, targets):
    """The same runtime, version, device and spec with its precision pinned to the model's type (none
    for a target pinned already, in any execution form)."""
    if base_config(target.config) == PINNED:
        return None
    return next((t for t in targets if t.config == PINNED and (t.runtime, t.version, t.device, t.spec, t.format)
                 == (target.runtime, target.version, target.device, target.spec, target.format)), None)


def _configuration_cause(target, precision: str, pinned_verdict: str | None, dtype: str = "",
                         activations: str = "") -> tuple[str, list]:
    """(cause, features): 'fails only in the default configuration, which computes in bf16 on this
    CPU (AMD EPYC): ...', ["configuration"]. The CPU is named by its model (run.json and the
    report's target list have its flags). Where the precision is pinned to the model's type and it
    still computes narrower (float64 in f32), the cause is the dtype, not the configuration; where
    the pinned configuration fails too, the configuration is not the cause either. ``activations``:
    the kernel's own tanh and sigmoid, measured through the op beyond the model's (the record's
    ``effective``; docs/precision.md, "Measured activations"), which the declared judgement admitted."""
    from conformance.runtimes.effective import host, of_dtype
    where = f"on this CPU ({host().get('cpu') or '?'})" if target.device == "CPU" else f"on {target.device}"
    if activations and dtype and precision == of_dtype(dtype).name:  # the model's type: the activations alone
        return (f"fails only through its kernel's own activations {where} ({activations}, measured through the "
                f"op): within the bound of a {dtype} kernel with them", ["configuration"])
    if base_config(target.config) == PINNED:   # pinned, in the plain form or in another
        return (f"fails whenever the dtype is {dtype or '?'}: it computes in {precision} {where} even with the "
                f"precision pinned to the model's type (within the {precision} bound)", ["dtype"])
    kernel = f" with its kernel's own activations ({activations}, measured through the op)" if activations else ""
    head = (f"fails only in the {target.config} configuration, which computes in {precision}{kernel} {where}: "
            f"within that bound" if kernel else
            f"fails only in the {target.config} configuration, which computes in {precision} {where}: "
            f"within the {precision} bound")
    if pinned_verdict is None:
        return head + " (no pinned-precision configuration to compare with)", ["configuration"]
    if pinned_verdict == "within-declared":
        return (head + ", and with the precision pinned it fails only through its kernel's own activations "
                "(within their measured bound)", ["configuration"])
    if pinned_verdict in CLEAN:
        return head + ", and passes with the precision pinned", ["configuration"]
    return (f"fails in both configurations: in the {target.config} one it is within the {precision} bound it "
            f"computes in {where}, and with the precision pinned it is {pinned_verdict} too (the pinned "
            f"target's cluster names the cause)"), []


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
        verdicts = {r.case: _label(r) for r in records if r.target == sibling.id and r.case in wanted}
        firsts = [cases_by_id[ids[0]] for _, ids in within if ids[0] not in verdicts][:max(0, budget)]
        if firsts:
            verdicts.update(_run(firsts, sibling, pool, folder, timeout, deadline))
            ran = len(firsts)
    for key, ids in within:
        if sibling is not None and ids[0] not in verdicts and deadline is not None and time.monotonic() > deadline:
            explained.append((key, ids, out_of_time, [], []))
            continue
        precision, activations = _precision_of(records, key[0], ids[0])
        pinned = verdicts.get(ids[0]) if sibling is not None else None
        if sibling is not None and pinned is None:
            pinned = "not run (the ablation budget was spent)"
        theirs = _precision_of(records, sibling.id, ids[0]) if pinned == "within-declared" else ("?", "")
        if theirs[0] != "?" and not theirs[1]:
            pinned = "pass"   # within what the pinned configuration computes in (float64 in f32), not activations
        cause, features = _configuration_cause(target, precision, pinned, cases_by_id[ids[0]].dtype, activations)
        results = [] if sibling is None else [{"case": ids[0], "feature": "configuration",
                                               "change": sibling.config_label, "verdict": pinned}]
        explained.append((key, ids, cause, features, results))
    return ran


def _precision_of(records: list[Record], target_id: str, case_id: str) -> tuple[str, str]:
    """(the precision the pair's declared judgement is at, the kernel's measured activations it admitted, or
    '') from the run's record of it."""
    for r in records:
        if r.target == target_id and r.case == case_id:
            return ((r.declared or {}).get("precision") or (r.effective or {}).get("precision", "?"),
                    str((r.effective or {}).get("activations", "")) if (r.declared or {}).get("activations") else "")
    return "?", ""


def plain_sibling(target, targets):
    """The same runtime, version, device, spec and configuration in the default execution form (the
    plain configuration ``precision=pinned`` of ``precision=pinned/shape=dynamic``), or None."""
    if not asked(target.config):
        return None
    plain = compose(base_config(target.config), {})
    return next((t for t in targets if t.config == plain and (t.runtime, t.version, t.device, t.spec, t.format,
                                                              t.converter)
                 == (target.runtime, target.version, target.device, target.spec, target.format,
                     target.converter)), None)


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
        same = key not in formed and theirs.get(ids[0]) == label_of(key[1], key[3])
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
    theirs = {r.case: r for r in records if r.target == sibling.id and r.case in firsts}
    missing = [cases_by_id[c] for c in sorted(firsts - set(theirs))]
    verdicts = {c: _label(r) for c, r in theirs.items()}
    if missing:
        verdicts.update(_run(missing, sibling, pool, folder, timeout, deadline))
    mine = {r.case: r for r in records if r.target == target.id and r.case in firsts}
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


def _runs_as(record: Record | None) -> str:
    """', where it runs as RNNSeq (ref_any_f32)' from a record's path, or ''."""
    path = (record.path if record is not None else None) or {}
    said = path.get("layers") or path.get("nodes") or (
        [f"decomposed into {', '.join(path['decomposed'])}"] if path.get("decomposed") else [])
    return f", where it runs as {' + '.join(said)}" if said else ""
