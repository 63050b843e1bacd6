"""The ablation's groups and runs: which failures are ablated and which verdicts count as clean, the
groups of failing cases (by target, verdict, case family and declared verdict), and the variant cases run
on one target (conformance/run/ablation.py, which drives them)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from conformance.case.model import case_family
from conformance.results import MemoryStore, Record, records_of
from conformance.run.engine import Engine, Options

#: the verdicts worth ablating: a crash or a timeout teaches nothing when re-run without a feature
#: (and a group of hangs would cost its timeout per variant)
ABLATED_VERDICTS = ("fail", "rejected", "state-leak", "inconsistent")
#: a variant whose verdict is one of these no longer shows the failure; "within-declared" is a fail
#: against the model's type that its narrower declared precision accepts
CLEAN = ("pass", "unspecified", "within-declared")
PINNED = "precision=pinned"
VERB = {"fail": "fails", "rejected": "rejects the case", "crash": "crashes", "timeout": "times out",
        "state-leak": "leaks state between runs", "inconsistent": "disagrees with itself"}


def _declared(record: Record) -> str:
    """The pair's second judgement, against the narrower precision it computed in: pass, fail, or
    '' where it computed in the model's type."""
    return (record.declared or {}).get("verdict") or ""


def groups(records: list[Record], cases_by_id: dict) -> dict:
    """(target, verdict, case family, declared) -> failing case ids, for valid cases only: a case's family
    is its id before the parameters (``gru/clip`` of ``gru/clip[clip=0.5]``), the cases of one matrix."""
    out = defaultdict(list)
    for r in records:
        if r.verdict in ABLATED_VERDICTS and (r.expect or "valid") == "valid" and r.case in cases_by_id:
            out[(r.target, r.verdict, case_family(r.case), _declared(r))].append(r.case)
    return out


def _label(record: Record) -> str:
    return label_of(record.verdict, _declared(record))


def label_of(verdict: str, declared: str) -> str:
    """A verdict as the ablation compares it: a fail its declared precision accepts is "within-declared"."""
    return "within-declared" if verdict == "fail" and declared == "pass" else verdict


def _run(variants: list, target, pool, folder: Path, timeout: float, deadline: float | None = None) -> dict:
    """Verdicts of the variant cases on one target: {variant id: verdict, or "within-declared"};
    a variant not started before ``deadline`` has none."""
    store = MemoryStore(folder)
    Engine(variants, [target], store, Options(out_dir=folder, timeout=timeout, write_programs=False,
                                              deadline=deadline, repeat_under=0.0)).run(pool)
    return {r.case: _label(r) for r in records_of(store.records)}


def _holding(key, ids: list, holds, cases_by_id: dict, leftover: list) -> list:
    """The ids whose case has what a cause names (``holds(case)``); the others go to ``leftover`` as a
    group of their own, with the same key."""
    kept = [i for i in ids if holds(cases_by_id[i])]
    rest = [i for i in ids if i not in kept]
    if rest:
        leftover.append((key, rest))
    return kept
