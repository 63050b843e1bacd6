"""Whether the gate excuses each divergence for the defect its expectation names.

The gate (:mod:`conformance.gate.expectations`) matches an expectations entry by the pair's case, target,
features and configuration; the ablation (:mod:`conformance.run.ablation`) then names each failing
group's cause, a set of features ("fails whenever clip is set"). After the ablation, a run judges
its pairs again with each pair's cause: where several entries cover a pair, the one whose features
name the cause excuses it (:meth:`conformance.gate.expectations.Expectations.match`; the judging
again is :func:`conformance.gate.apply.regate`). What is left is audited:

- **off cause**: an entry named by features excuses a cluster whose cause is none of its features
  (an entry about the peephole input P excusing "fails whenever input_forget is 1"): the entry is
  broader than its defect, and a new bug of the same runtime hides behind it. One warning per
  entry and cluster, with the count of pairs.
- **broad**: an entry whose features also cover pairs that pass, with the counts (an entry for
  "reverse" that covers 89 passing bidirectional pairs names a class wider than the defect).
- **stale**: an entry that covers pairs in this selection, none of them failing: it can go.
- **unmatched**: an entry whose targets ran, in a version it names, and that covers no pair: a
  warning in a run of a whole corpus (a typo, or a stale entry), a note for an entry named by a
  configuration this machine's targets do not compute in.
- **idle**: an entry that covers no pair of this selection (a ``-k`` or path slice of the corpus,
  another runtime, another version): nothing to say, and not a warning; counted only.

docs/gate.md ("An entry excuses a pair only for the defect it names") states the rules;
tests/unit/test_first_hour.py tests them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.compare.verdicts import FAILING
from conformance.gate.apply import causes_by_pair
from conformance.gate.entry import Entry, features_of

if TYPE_CHECKING:
    from conformance.gate.expectations import Expectations
    from conformance.results import Record


@dataclass
class Audit:
    #: (entry, cluster cause, pairs): an entry excusing a cluster whose cause it does not name
    off_cause: list = field(default_factory=list)
    #: (entry, passing pairs it covers, failing pairs it excuses)
    broad: list = field(default_factory=list)
    #: (entry, pairs it covers here, all passing)
    stale: list = field(default_factory=list)
    #: entries that cover no pair at all, though their targets ran in a version they name: a typo or
    #: a stale entry, where the selection is the whole corpus (in a slice, idle like the rest)
    unmatched: list = field(default_factory=list)
    #: entries with no pair in this selection (another runtime's, another version's, a slice's)
    idle: int = 0

    def lines(self, sliced: bool = False, each: bool = False) -> list[tuple[str, str]]:
        """(level, text) per finding, each entry once: ``warning`` or ``note``. In a slice (-k, case
        paths) a stale entry is a note: the slice may have left its failing pairs out. The broad
        entries are one line (the widest three named) unless ``each``."""
        out = []
        for entry, cause, n in self.off_cause:
            out.append(("warning", f"expectation at {entry.where} ({entry.reason[:80]}) excuses {n} pair"
                                   f"{'s' if n != 1 else ''} whose cause is not among its features: {cause}"))
        for entry in self.unmatched if not sliced else ():
            if entry.config:   # a configuration this machine's targets may simply not have
                out.append(("note", f"expectation at {entry.where} covers nothing here: no failing pair ran in its "
                                    f"configuration ({entry.config_text}) on this machine"))
            else:
                out.append(("warning", f"expectation at {entry.where} matches nothing ({entry.reason[:80]})"))
        for entry, n in self.stale:
            out.append(("note" if sliced else "warning",
                        f"expectation at {entry.where} covers {n} pair{'s' if n != 1 else ''} here and none fails"
                        f"{' in this selection' if sliced else ': it can go'} ({entry.reason[:80]})"))
        broad = sorted(self.broad, key=lambda b: (-b[1] / max(b[2], 1), str(b[0].where)))
        if broad and not each:
            widest = "; ".join(f"{e.where} covers {p} passing beside {f} failing" for e, p, f in broad[:3])
            out.append(("note", f"{len(broad)} expectation{'s' if len(broad) != 1 else ''} also cover passing pairs: "
                                f"their features name a wider class than their defect (the widest: {widest}; "
                                f"--verbose lists each, run.json's gate_audit has them)"))
        for entry, passing, failing in broad if each else ():
            out.append(("note", f"expectation at {entry.where} also covers {passing} passing pair"
                                f"{'s' if passing != 1 else ''} beside the {failing} failing one"
                                f"{'s' if failing != 1 else ''} it excuses: its features name a wider class "
                                f"than its defect"))
        return out

    def to_json(self) -> dict:
        return {"off_cause": [{"where": str(e.where), "reason": e.reason, "cause": c, "pairs": n}
                              for e, c, n in self.off_cause],
                "broad": [{"where": str(e.where), "reason": e.reason, "passing": p, "failing": f}
                          for e, p, f in self.broad],
                "stale": [{"where": str(e.where), "reason": e.reason, "pairs": n} for e, n in self.stale],
                "unmatched": [{"where": str(e.where), "reason": e.reason} for e in self.unmatched],
                "idle": self.idle}


def audit(records: list[Record], expectations: Expectations | None, clusters=None) -> Audit:
    """The audit of the gate's entries over the judged ``records`` (see the module's docstring):
    the pairs of this selection only, so an entry for what did not run is idle, not stale; one
    whose targets ran (in a version it names) and that covers nothing is ``unmatched``."""
    result = Audit()
    if expectations is None:
        return result
    cluster_of = causes_by_pair(clusters)
    off: Counter = Counter()
    excused: Counter = Counter()
    by_where = {str(e.where): e for e in expectations.entries}
    for r in records:
        entry = r.expected or {}
        if r.gate != "expected":
            continue
        excused[entry.get("where")] += 1
        if entry.get("names_cause") is False:
            c = cluster_of.get((r.case, r.target)) or {}
            off[(entry.get("where"), str(c.get("cause", "")))] += 1
    result.off_cause = [(by_where[w], cause, n) for (w, cause), n in sorted(off.items()) if w in by_where]
    covered: defaultdict = defaultdict(Counter)   # entry -> verdict class -> pairs it covers, any verdict
    by_target: defaultdict = defaultdict(list)
    for r in records:
        by_target[r.target].append(r)
    for entry in expectations.entries:
        if entry.tolerance is not None:
            continue
        for target, recs in by_target.items():
            if not any(p.match(target) for p in entry.targets):
                continue
            for r in recs:
                if _covers_any_verdict(entry, r):
                    covered[id(entry)]["failing" if r.verdict in FAILING else r.verdict] += 1
    ran = {id(e) for e in expectations.unused({r.target for r in records})}   # their targets ran
    for entry in expectations.entries:
        if entry.tolerance is not None:
            continue
        seen = covered.get(id(entry), Counter())
        n = excused.get(str(entry.where), 0)
        if n == 0:
            if sum(seen.values()) and not seen.get("failing"):
                result.stale.append((entry, sum(seen.values())))
            elif not sum(seen.values()) and id(entry) in ran:
                result.unmatched.append(entry)
            else:   # nothing of its class ran here, or another entry excused what it covers
                result.idle += 1
        elif entry.features and not entry.config and seen.get("pass"):
            result.broad.append((entry, seen["pass"], n))
    return result


def _covers_any_verdict(entry: Entry, record: Record) -> bool:
    """Whether the entry's cases, features, configuration and versions cover the record, whatever
    its verdict (``within`` is a verdict's condition, and left out; the caller matched the target)."""
    return entry.covers_pair(record.case, record.target, features_of(record), record.runtime_version,
                             record.effective)
