"""What a bug report is about: a divergence cluster of a run, one case × target of a run, or a
fuzzer's finding; and which of a run's clusters are real divergences.

A cluster spans targets (spec versions, configurations, ways into one runtime); its report is made
on one of them: one that computes in the model's own type where the cluster has one (its bound is
the spec's), else the one with the most of the cluster's cases, and among equals the one in the
fewest execution forms, an ONNX program and the newest spec version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.report.causes import VERB
from conformance.report.view import natural_key
from conformance.runtimes.configuration import TargetName
from conformance.runtimes.forms import asked


class SubjectError(ValueError):
    """What was asked for is not in the run (or not a divergence): the message says why."""


@dataclass
class Subject:
    kind: str                        # cluster | pair | finding
    name: str                        # the report folder's name
    target_id: str
    verdict: str                     # the verdict the report shows: fail | rejected | accepted-invalid | ...
    cause: str                       # the cause sentence (the ablation's, or the finding's)
    cases: list                      # the candidate cases (a cluster's on that target; one otherwise)
    records: list = field(default_factory=list)   # the run's records of those pairs
    cause_features: list = field(default_factory=list)
    cluster: dict | None = None
    finding: dict | None = None
    #: the pairs are judged against the narrower precision their target computes in (``declared``)
    against_declared: bool = False
    #: reduce the case further (a cluster's); a finding's case is reduced already
    reduce: bool = True


def _narrower(record: Record | None) -> bool:
    return record is not None and bool(record.declared)


def choose_target(cluster: dict, by_pair: dict) -> str:
    """The target a cluster's report is made on (the module docstring says how)."""
    def key(target: str):
        records = [by_pair.get((c, target)) for c in cluster["cases_by_target"][target]]
        # a configuration that computes narrower than the model's type, as its id says or its pairs' judgements
        name = TargetName.parse(target)
        narrower = bool(name.config.measured) or (all(_narrower(r) for r in records) if records else True)
        spec = name.spec
        forms = len(asked(name.config.asked))   # the fewest calls around it: the plainest form
        return (narrower, -len(records), forms, not spec.startswith("onnx-"), [-p for p in _numbers(spec)])
    return min(cluster["cases_by_target"], key=key)


def _numbers(text: str) -> list[int]:
    return [int(p) for p in natural_key(text) if isinstance(p, int)] or [0]


def is_real(cluster: dict, by_pair: dict) -> tuple[bool, str]:
    """Whether the cluster is a divergence to report: not when every pair of it is within the precision
    its configuration computes in by design (the gate judged it by that declaration, kind ``declared``, or an
    expectation of kind reduced-precision covers it)."""
    kinds = set()
    for target, ids in cluster.get("cases_by_target", {}).items():
        for case in ids:
            record = by_pair.get((case, target))
            kinds.add(str(((record.expected if record is not None else None) or {}).get("kind") or "new"))
    if kinds and kinds <= {"reduced-precision", "declared"}:
        return False, ("every pair of it is within the precision its configuration computes in by design "
                       "(judged by its configuration's declaration): nothing to report upstream")
    return True, ""


def from_cluster(cluster: dict, by_pair: dict, load_case) -> Subject:
    target = choose_target(cluster, by_pair)
    ids = list(cluster["cases_by_target"][target])
    records = [by_pair[(c, target)] for c in ids if (c, target) in by_pair]
    cases = [case for case in (load_case(r) for r in records) if case is not None]
    if not cases:
        raise SubjectError(f"cluster {cluster['id']}: none of its cases on {target} could be loaded from its case file")
    against_declared = bool(records) and all(_narrower(r) and (r.declared or {}).get("verdict") == "fail"
                                             for r in records)
    features = [f for f in cluster.get("features") or [] if f != "configuration"]
    return Subject("cluster", f"{cluster['id']}-{cluster['runtime']}", target, cluster["verdict"], cluster["cause"],
                   cases, records, features, cluster=cluster, against_declared=against_declared)


#: verdicts a report reproduces: wrong numbers, a refused valid model, a forbidden model run
REPORTED = ("fail", "rejected", "accepted-invalid")


def pair_folder(record: Record) -> str:
    """A case x target report's folder name: the runtime, the case's family and a digest of the pair,
    so that reports of several pairs (two cases, or one case on two targets) share an --out folder
    without one replacing another: ``pair-openvino-invalid-gru-hidden_size-1f0c2a9b``."""
    family = re.sub(r"[^A-Za-z0-9_]+", "-", str(record.case).split("[", 1)[0]).strip("-")
    digest = hashlib.sha256(f"{record.case}\n{record.target}".encode()).hexdigest()[:8]
    return f"pair-{record.runtime}-{family}-{digest}"


def from_pair(record: Record, case) -> Subject:
    if record.verdict not in REPORTED:
        why = ("a crash or a hang is not reproduced by repro.py (run the suite's repro command)"
               if record.verdict in ("crash", "timeout") else "nothing diverges to report")
        raise SubjectError(f"{record.case} on {record.target} is {record.verdict or 'not run'}: {why}")
    return Subject("pair", pair_folder(record), record.target, record.verdict,
                   f"{record.verdict} on {record.case}", [case], [record], [],
                   against_declared=(record.declared or {}).get("verdict") == "fail", reduce=False)


def from_finding(path: Path) -> Subject:
    """A fuzzer's finding file (``conformance fuzz`` writes them): its case, and its ``finding:``."""
    import yaml

    from conformance.case.load import load_file
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    finding = raw.get("finding") if isinstance(raw, dict) else None
    if not isinstance(finding, dict) or "target" not in finding:
        raise SubjectError(f"{path}: no `finding:` with a target (is it a file `conformance fuzz` wrote?)")
    cases, errors = load_file(path)
    if errors or len(cases) != 1:
        raise SubjectError(f"{path}: " + ("; ".join(map(str, errors)) if errors else "not one case"))
    needs = [t for t in str(finding.get("signature", "")).rsplit("|", 1)[-1].split(",") if t]
    verdict = str(finding.get("verdict", "fail"))
    verb = VERB.get(verdict, verdict)
    cause = (f"{verb} whenever the case has {', '.join(needs)}" if needs else f"{verb} on the plain path") + \
        " (the fuzzer's finding, every other feature removed)"
    return Subject("finding", f"finding-{Path(path).stem}", str(finding["target"]), str(finding.get("verdict", "fail")),
                   cause, cases, [], [], finding=finding, reduce=False)
