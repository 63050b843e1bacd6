"""Applying the gate to records: each pair's gate fields (new, expected, fixed, ok, baseline,
fallback) and the entry that covers it, judged again after the ablation with each pair's cluster
cause, so that the entry naming the cause excuses it (docs/gate.md)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypedDict

from conformance.case.features import FEATURES
from conformance.compare import FAILING
from conformance.gate.entry import CONFIGURATION

if TYPE_CHECKING:
    from conformance.gate.baseline import Baseline
    from conformance.gate.expectations import Expectations
    from conformance.results import Expected, Record


class GateFields(TypedDict):
    """What the gate writes on a record (:attr:`Record.gate`, :attr:`Record.expected`)."""
    gate: str
    expected: Expected | None


def classify(record: Record, expectations: Expectations | None, baseline: Baseline | None = None,
             cause=None) -> GateFields:
    """Gate fields for one record: gate = new | expected | fixed | ok | baseline | fallback, and the
    entry (or, for a failing pair within what its configuration declares and no entry covers, that
    declaration: :func:`as_declared`). ``cause``: the feature tokens of the record's cluster cause,
    where the ablation named one: the entry that names it is preferred, and ``expected.names_cause``
    says whether the entry did; for a pair within its declaration, an entry that does not name its
    cause gives way to the declaration.
    A pair whose recurrent node ran on another device or provider than its target's (the record's
    ``fallback``: conformance/runtimes/onnxruntime.py) did not run on the target: its verdict is not
    the target's, whatever it is (``fallback``; docs/forms.md)."""
    if record.fallback:
        return {"gate": "fallback", "expected": None}
    failing = record.verdict in FAILING
    entry = expectations.match(record, cause=cause) if expectations else None
    within = (record.declared or {}).get("verdict") == "pass"
    if failing and entry and within and cause and entry.names_cause(cause) is False:
        entry = None   # an entry for another defect: what the configuration declares accounts for it better
    if entry:
        entry.matched += 1
    expected: Expected | None = entry.to_json() if entry else None
    if failing:
        if entry:
            gate = "expected"
        elif within:   # judged by what its configuration declares
            gate, expected = "expected", as_declared(record)
        elif baseline is not None and not baseline.regressed(record):
            gate = "baseline"
        else:
            gate = "new"
    else:
        gate = "fixed" if entry and record.verdict == "pass" else "ok"
    named = entry.names_cause(cause) if entry is not None and cause and failing else None
    if expected is not None and named is not None:
        expected["names_cause"] = named
    return {"gate": gate, "expected": expected}


#: what a record's ``expected`` names where the configuration it ran in, not an entry, accounts for it
DECLARED = "declared"


def as_declared(record: Record) -> Expected:
    """The ``expected`` of a pair that fails its spec and passes its second judgement, against what its
    configuration computes in (a declared narrower precision, the kernel's measured activations, or both:
    the record's ``declared``): the gate judges it by that declaration, with no expectations entry, and a
    result wrong beyond the declaration still fails (docs/gate.md, "Judged by the declaration")."""
    declared = record.declared or {}
    kernel = (record.effective or {}).get("activations")
    what = declared.get("precision", "?") + (f" with its kernel's activations ({kernel})"
                                             if declared.get("activations") else "")
    return {"kind": DECLARED, "reason": f"computes as its configuration declares, in {what}: within that bound "
                                        f"(the pair's declared judgement)", "link": "docs/configuration.md",
            "where": "its configuration"}


def cause_tokens(names, tokens) -> frozenset[str]:
    """The feature tokens of a cause: the cluster's feature names (``clip``, ``peepholes``,
    ``direction``, ``configuration``, ...) as the tokens a case of it has (``clip``, ``P``,
    ``reverse``, ...; a prefix such as ``act=`` stands for the case's own ``act=Elu``)."""
    names = set(names or ())
    keys = [k for f in FEATURES if f.name in names for k in f.tokens]
    out = {t for t in tokens or () if any(t == k or (k.endswith("=") and t.startswith(k)) for k in keys)}
    if CONFIGURATION in names:
        out.add(CONFIGURATION)
    return frozenset(out)


def _shape(tokens) -> frozenset[str]:
    """Tokens up to their values (``act=Elu`` and ``act=Relu`` are one feature)."""
    return frozenset(t.split("=", 1)[0] + "=" if "=" in t else t for t in tokens)


def cause_of(cluster: dict, record: Record, features_of: dict) -> frozenset[str] | None:
    """The cause tokens of ``record`` in ``cluster``: the tokens of the cluster's named features the
    record has, where they are those of a case the ablation took apart (the ablation names a group's
    cause from its first case; a pair of the group that has other features, a bidirectional one in a
    group explained by "the direction is reverse", is not said to have it). None: no named cause."""
    names = set(cluster.get("features") or ())
    if not names:
        return None
    mine = set(cause_tokens(names, record.features))
    if "direction" in names and "bidirectional" in record.features:
        mine.add("bidirectional")
    if not mine:
        return None
    reps = {str(a.get("case", "")).split("~", 1)[0] for a in cluster.get("ablations") or ()}
    shapes = []
    for rep in reps:
        if rep in features_of:
            tokens = set(cause_tokens(names, features_of[rep]))
            if "direction" in names and "bidirectional" in features_of[rep]:
                tokens.add("bidirectional")
            shapes.append(_shape(tokens))
    if shapes and _shape(mine) not in shapes:
        return None
    return frozenset(mine)


def causes_by_pair(clusters) -> dict:
    """(case, target) -> the cluster it belongs to."""
    out: dict = {}
    for c in clusters or ():
        for target, ids in (c.get("cases_by_target") or {}).items():
            for case in ids:
                out.setdefault((case, target), c)
    return out


def regate(records: list[Record], expectations: Expectations | None, baseline, clusters) -> list[Record]:
    """The records (copies) with their gate fields judged anew, each with its cluster's cause where
    the ablation named one (the entry naming it preferred)."""
    if expectations is None and baseline is None:
        return list(records)
    cluster_of = causes_by_pair(clusters)
    features_of = {r.case: r.features for r in records}
    out = []
    for r in records:
        c = cluster_of.get((r.case, r.target))
        cause = cause_of(c, r, features_of) if c else None
        out.append(gated(r, expectations, baseline, cause))
    return out


def gated(record: Record, expectations: Expectations | None, baseline: Baseline | None = None,
          cause=None) -> Record:
    """A copy of ``record`` with the gate fields :func:`classify` gives it (written where the line
    has them, else after its other fields, as results.jsonl keeps them)."""
    again = dataclasses.replace(record, extra=dict(record.extra))
    again.extra.update(classify(record, expectations, baseline, cause))
    return again
