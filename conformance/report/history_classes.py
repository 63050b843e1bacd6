"""The divergence classes of a history (conformance/report/history.py): which class a failing pair
belongs to, and how a class is followed along one line, release after release.

A class's *state* in one release of a line is one of :data:`STATES`:

``shows``
    a case of the class fails there the class's way (its expectation entry, its ablation cause, or
    its verdict and case family);
``otherwise``
    the class's cases all ran, none fails the class's way, and none passes: each fails another way
    (a wrong result that became a crash); or the class is one of refusals and its cases now run,
    some of them wrongly, in a way that shows on none of the cases it did not refuse (a refusal
    that became a silent divergence): not a fix. While the
    class is open (it showed and was not fixed since), the release is *affected*: it extends the
    class's range. After a fix it is a regression (the fixed cases fail again) and opens the class
    again; a class of refusals whose cases start failing silently has a regression too (``became``:
    the verdicts they fail with now);
``fixed`` / ``clean``
    the class's cases all ran, none fails the class's way and some pass (the others fail another
    way, another class's): the first such release after the class showed fixes it;
``not-run``
    its cases did not all run there (not-expressible at that spec version, a suite error, no record);
``unstable``
    a case of the class passed in one run of that release and failed in another (``--repeat``,
    conformance/history/repeats.py): the release neither shows, fixes nor brings back the class.
    A pair that fails in every run, in whatever ways, is not unstable: it shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from conformance.case.model import case_family
from conformance.compare.verdicts import Verdict
from conformance.gate import Entry
from conformance.report.causes import VERB
from conformance.report.view import runtime_family
from conformance.results import Record

#: verdicts that say a case did not run on a target: it neither shows a class nor fixes it
NOT_RUN = frozenset({Verdict.NOT_EXPRESSIBLE.value, Verdict.ERROR.value})
#: a runtime that refuses a case says so; one that returns wrong numbers (or runs a forbidden case) does not
REFUSALS = frozenset({Verdict.REJECTED.value})
SILENT = frozenset({Verdict.FAIL.value, Verdict.ACCEPTED_INVALID.value})
#: the states of a class on a line in one release (a timeline's cells); None: no pair on the line there
STATES = ("shows", "otherwise", "fixed", "clean", "not-run", "unstable")
SOURCE_RANK = {"expectation": 0, "cluster": 1, "family": 2}


def relative(where: str) -> str:
    """``FILE:LINE`` with FILE relative to the current folder where it lies under it."""
    path, sep, line = str(where).rpartition(":")
    if not sep or not line.isdigit():
        path, sep, line = str(where), "", ""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:  # another drive
            rel = path
        if not rel.startswith(".."):
            path = rel
    return f"{path}{sep}{line}"


class Clusters:
    """Which ablation cluster explains a failing record: the one naming the pair, else the case,
    else the case family, for the record's runtime family and verdict (first listed wins)."""

    def __init__(self, clusters: Iterable[dict] | None):
        self.by_pair: dict[tuple[str, str], dict] = {}
        self.by_case: dict[tuple[str, str, str], dict] = {}
        self.by_family: dict[tuple[str, str, str], dict] = {}
        for c in clusters or []:
            runtime, verdict = str(c.get("runtime") or ""), str(c.get("verdict") or "")
            by_target = c.get("cases_by_target")
            pairs = ([(str(case), str(t)) for t, ids in by_target.items() for case in ids or []]
                     if isinstance(by_target, dict) else
                     [(str(case), str(c.get("target") or "")) for case in c.get("cases") or []])
            cases = [str(x) for x in c.get("cases") or []] + [case for case, _ in pairs]
            for pair in pairs:
                self.by_pair.setdefault(pair, c)
            for case in cases:
                self.by_case.setdefault((runtime, verdict, case), c)
            for fam in ([str(f) for f in c.get("case_families") or c.get("families") or []]
                        + [case_family(case) for case in cases]):
                self.by_family.setdefault((runtime, verdict, fam), c)

    def find(self, record: Record) -> dict | None:
        key = (runtime_family(record), str(record.verdict))
        pair = self.by_pair.get((record.case, record.target))
        if pair is not None and str(pair.get("verdict") or record.verdict) == key[1]:
            return pair
        return self.by_case.get((*key, record.case)) or self.by_family.get((*key, case_family(record.case)))


def class_of(record: Record, entry: Entry | None, clusters: Clusters, gated_here: bool) -> tuple[tuple, dict]:
    """(key, description) of a failing record's divergence class; without expectations here
    (``gated_here`` false), the entry the record's own gate named (its ``expected``) counts. An
    entry's file is named relative to the current folder."""
    verdict = str(record.verdict)
    runtime = runtime_family(record)
    if entry is not None:
        where = relative(str(entry.where))
        return (("expectation", where), {
            "source": "expectation", "name": f"{where}: {entry.reason}", "where": where, "reason": entry.reason,
            "kind": entry.kind, "link": entry.link, "versions": str(getattr(entry, "versions", "") or "")})
    given = None if gated_here else record.expected
    if isinstance(given, dict) and given.get("where"):        # gated before; no expectations given here
        where = relative(str(given["where"]))
        return (("expectation", where), {
            "source": "expectation", "name": f"{where}: {given.get('reason') or ''}".rstrip(": "),
            "where": where, "reason": str(given.get("reason") or ""), "kind": str(given.get("kind") or ""),
            "link": str(given.get("link") or ""), "versions": str(given.get("versions") or "")})
    cluster = clusters.find(record)
    if cluster is not None:
        cause = str(cluster.get("cause") or "(no cause named)")
        return (("cluster", runtime, verdict, cause), {
            "source": "cluster", "name": f"{runtime}: {cause}", "cause": cause, "cluster": cluster.get("id"),
            "runtime": runtime, "verdict": verdict, "features": list(cluster.get("features") or [])})
    fam = case_family(str(record.case))
    return (("family", runtime, verdict, fam), {
        "source": "family", "name": f"{runtime}: {VERB.get(verdict, verdict)} in {fam}", "family": fam,
        "runtime": runtime, "verdict": verdict})


def follow(releases: list[str], present: set[str], members: dict[str, set[str]], ran: dict[str, set[str]],
           failing: dict[str, dict[str, str]] | None = None, unstable: dict[str, set[str]] | None = None,
           refusal: bool = False, new: dict[str, set[str]] | None = None,
           peers: dict[str, dict[str, set[str]]] | None = None) -> dict[str, Any]:
    """A class on one line: its state in each release (the module's docstring), and ``shows`` (the
    releases where it fails its way), ``affected`` (those and the releases where its cases fail
    otherwise while it is open), ``first`` (its first showing), ``last`` (its last affected
    release), ``fixed`` (the first release after that where its cases all ran and passed; None
    while it is open), ``fixes`` (every fix) and ``regressions``: ``{"shown", "fixed", "again",
    "became", "new"}``: a fix followed by a showing (``became`` ""), a fix followed by failing
    otherwise (``became`` the verdicts), or a class of ``refusal``\\ s whose cases started failing
    silently (``fixed`` None, ``became`` the silent verdicts); ``new`` counts the pairs of the
    regressing release the gate calls new.

    ``members``, ``ran``, ``unstable``, ``new``: release -> cases (failing the class's way, that
    ran, unstable, failing with gate ``new``); ``failing``: release -> {case: verdict} of every
    failing case on the line; ``peers``: release -> {failing case: the cases of its class there}.
    A refusal's case that fails silently counts as the refusal's regression only where its silent
    class stays within the refusal's cases: wrong numbers that show on cases never refused are
    another divergence's."""
    failing, unstable, new, peers = failing or {}, unstable or {}, new or {}, peers or {}
    states: list[str | None] = []
    shows: list[str] = []
    affected: list[str] = []
    fixes: list[str] = []
    regressions: list[dict[str, Any]] = []
    reference: set[str] = set(next((members[r] for r in releases if members.get(r)), set()))
    last_shown: str | None = None
    fixed_at: str | None = None
    became = False
    for r in releases:
        if r not in present:
            states.append(None)
            continue
        mine = members.get(r) or set()
        if unstable.get(r) and (unstable[r] & (mine | reference)):
            states.append("unstable")
            continue
        if mine:
            if fixed_at is not None and last_shown is not None:
                regressions.append({"shown": last_shown, "fixed": fixed_at, "again": r, "became": "",
                                    "new": len(mine & new.get(r, set()))})
            fixed_at, last_shown, reference, became = None, r, set(mine), False
            shows.append(r)
            affected.append(r)
            states.append("shows")
            continue
        if not (reference and reference <= ran.get(r, set())):
            states.append("not-run")
            continue
        other = {case: v for case, v in (failing.get(r) or {}).items() if case in reference}
        silent = {case for case, v in other.items() if v in SILENT
                  and (peers.get(r, {}).get(case) or {case}) <= reference}
        # every case of the class still fails, another way; or a refusal's cases now run, some wrongly
        if len(other) == len(reference) or (refusal and silent and last_shown is not None):
            states.append("otherwise")
            if last_shown is None:
                continue
            if fixed_at is not None:   # fixed, and its cases fail again, another way: open again
                regressions.append({"shown": last_shown, "fixed": fixed_at, "again": r,
                                    "became": ", ".join(sorted(set(other.values()))),
                                    "new": len(set(other) & new.get(r, set()))})
                fixed_at, became = None, True
            affected.append(r)
            if refusal and silent and not became:   # a refusal that became a silent divergence
                became = True
                regressions.append({"shown": last_shown, "fixed": None, "again": r,
                                    "became": ", ".join(sorted({other[c] for c in silent})),
                                    "new": len(silent & new.get(r, set()))})
            continue
        if last_shown is not None and fixed_at is None:
            fixed_at = r
            fixes.append(r)
            states.append("fixed")
        else:
            states.append("clean")
    return {"states": states, "shows": shows, "affected": affected, "first": shows[0] if shows else None,
            "last": affected[-1] if affected else None, "fixed": fixed_at, "fixes": fixes, "regressions": regressions}


def regression_text(r: dict) -> str:
    """One regression in words: ``1.0 → fixed 2.0 → again 3.0``, or ``2024.6.0 rejected → fails
    silently (fail) from 2025.0.0``."""
    if r.get("became") and r.get("fixed") is None:
        return f"{r['shown']} refused → fails silently ({r['became']}) from {r['again']}"
    if r.get("became"):
        return f"{r['shown']} → fixed {r['fixed']} → fails again ({r['became']}) {r['again']}"
    return f"{r['shown']} → fixed {r['fixed']} → again {r['again']}"
