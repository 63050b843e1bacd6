"""What is new, and why: the divergences grouped by cause, for the top of every report.

A *cause* is one divergence cluster of the ablation step (conformance/run/ablation.py: one per
runtime family, verdict and cause sentence, merged across spec versions and configurations), or,
for failing pairs no cluster explains (crashes, timeouts, accepted invalid cases, or a run without
ablation), their runtime family, verdict and case family (the constraint broken, for an invalid
case). Each cause is split by what the gate says of its pairs: ``new`` (fails the gate; every
failure when no gate ran), ``baseline`` (failing in the baseline too), ``expected`` (an
expectation covers it: its file:line, kind, reason and link) and ``fixed`` (an expectation covers
it and it passes now). New comes first, then fixed, then the known ones.

Plain data in, plain data out: the HTML, Markdown and terminal reports lay it out.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from conformance.case.model import case_family
from conformance.compare.verdicts import FAILING, severity, worst
from conformance.report.view import (
    config_of,
    error_measure,
    natural_key,
    runtime_and_device,
    runtime_family,
    spec_key,
)
from conformance.results import Record
from conformance.runtimes.configuration import TargetName

STATUS_ORDER = ("new", "fixed", "baseline", "expected")
VERB = {"fail": "fails", "rejected": "rejects the case", "accepted-invalid": "runs a case the spec forbids",
        "crash": "crashes", "timeout": "times out", "error": "the suite itself failed (a suite bug to report)"}


def status_of(record: Record) -> str:
    """new | baseline | expected | fixed | '' (passing, nothing to say) for one record."""
    gate = record.gate
    if gate in ("expected", "baseline", "fixed"):
        return str(gate)
    if record.verdict in FAILING and gate in (None, "", "new"):
        return "new"
    return ""


def setup_of(record: Record) -> tuple[str, str]:
    """(runtime-version/device, configuration) of a record's target, from the record's fields."""
    return runtime_and_device(record).rstrip("/"), config_of(record)


def fold_targets(records_by_target: dict[str, Record] | dict[str, Record | None]) -> str:
    """Targets folded into one line: the spec versions and configurations of one runtime and
    device share it. ``onnxruntime-1.32.0/CPU @ onnx-7, onnx-14 · openvino-2026.4.1/CPU
    [default→bf16, precision=pinned] @ onnx-14``."""
    specs: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for target, rec in records_by_target.items():
        name = TargetName.parse(target)
        head, config = setup_of(rec) if rec else (name.without_spec, "default")
        specs[(head, config)].add(str(rec.spec or name.spec) if rec else name.spec)
    # configurations of one runtime/device with the same spec versions share a part
    parts: defaultdict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (head, config), found in specs.items():
        parts[(head, tuple(sorted(found, key=spec_key)))].append(config)
    out = []
    for (head, spec_list), configs in sorted(parts.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        configs = sorted(configs, key=lambda c: (c != "default" and not c.startswith("precision=default"), c))
        label = head if configs == ["default"] else f"{head} [{', '.join(configs)}]"
        out.append(f"{label} @ {', '.join(spec_list)}")
    return " · ".join(out)


def _unclustered_key(record: Record, ablated: bool) -> tuple[str, str]:
    """(group key, cause sentence) for a failing record no cluster explains."""
    verdict = str(record.verdict)
    if verdict == "accepted-invalid":
        broken = sorted(f.split("=", 1)[1] for f in record.features or [] if str(f).startswith("violates="))
        what = ", ".join(broken) or case_family(record.case)
        return what, f"runs a case the spec forbids ({what})"
    fam = case_family(record.case)
    why = {"crash": "crashes are not ablated", "timeout": "timeouts are not ablated",
           "error": "a suite error"}.get(verdict, "" if ablated else "no ablation run")
    return fam, f"{VERB.get(verdict, verdict)} in {fam}" + (f" ({why})" if why else "")


def _pairs(cluster: dict) -> list[tuple[str, str]]:
    by_target = cluster.get("cases_by_target")
    if isinstance(by_target, dict):
        return [(str(c), str(t)) for t, ids in by_target.items() for c in ids or []]
    target = str(cluster.get("target") or "")      # a one-target cluster (clusters.json before the merge)
    return [(str(c), target) for c in cluster.get("cases") or []]


def cluster_status(cluster: dict, by_pair: dict) -> dict:
    """A cluster's marker from its pairs' records today: new where any is new, else expected
    (with the expectations' file:line) or baseline, else fixed where its pairs pass now."""
    statuses: Counter[str] = Counter()
    where: list[str] = []
    for pair in _pairs(cluster):
        rec = by_pair.get(pair)
        if rec is None:
            continue
        s = status_of(rec)
        statuses[s] += 1
        w = (rec.expected or {}).get("where")
        if s in ("expected", "fixed") and w and w not in where:
            where.append(str(w))
    status = next((s for s in ("new", "expected", "baseline", "fixed") if statuses.get(s)), "")
    return {"status": status, "where": where, "counts": dict(statuses)}


def causes(records: list[Record], clusters: list[dict] | None) -> list[dict]:
    """The cause groups, new first (by severity, then size), then fixed, baseline and expected."""
    cluster_of: dict[tuple[str, str], dict] = {}
    for c in clusters or []:
        for pair in _pairs(c):
            cluster_of.setdefault(pair, c)
    groups: dict[tuple, dict] = {}
    for r in records:
        status = status_of(r)
        if not status:
            continue
        entry = r.expected or {}
        where = str(entry.get("where") or "") if status in ("expected", "fixed") else ""
        cluster = cluster_of.get((r.case, r.target)) if status != "fixed" else None
        if cluster is not None:
            key: tuple = (status, "cluster", str(cluster.get("id", id(cluster))), where)
            cause = str(cluster.get("cause") or "(no cause named)")
        elif status == "fixed":
            key = (status, runtime_family(r), where)
            cause = f"passes now: {entry.get('reason') or 'an expectation covers it'}"
        else:
            sub, cause = _unclustered_key(r, clusters is not None)
            key = (status, runtime_family(r), str(r.verdict), sub, where)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"status": status, "cause": cause, "runtime": runtime_family(r),
                               "cluster": cluster.get("id") if cluster else None,
                               "features": list(cluster.get("features") or []) if cluster else [],
                               "where": where, "kind": str(entry.get("kind") or ""),
                               "reason": str(entry.get("reason") or ""), "link": str(entry.get("link") or ""),
                               "records": [], "off_cause": False}
        g["records"].append(r)
        if entry.get("names_cause") is False:   # excused by an entry about another defect (conformance/gate/audit.py)
            g["off_cause"] = True
    out = []
    for g in groups.values():
        recs = g["records"]
        by_target: dict[str, Record] = {}
        for r in recs:
            by_target.setdefault(r.target, r)
        g["targets"] = sorted(by_target)
        g["targets_line"] = fold_targets(by_target)
        g["cases"] = sorted({r.case for r in recs}, key=natural_key)
        g["verdicts"] = sorted(Counter(r.verdict for r in recs).items(), key=lambda kv: severity(kv[0]))
        g["verdict"] = worst([r.verdict for r in recs])
        g["ops"] = sorted({str(r.op) for r in recs})
        g["specs"] = sorted({str(r.spec) for r in recs}, key=spec_key)
        lead = max(recs, key=lambda r: (-severity(r.verdict), error_measure(r)[0] or 0))
        g["lead"] = lead
        value, kind = error_measure(lead)
        g["worst"] = _worst_text(value, kind)
        g["repro"] = str(lead.repro or "")
        g["message"] = str(lead.message or "").strip().split("\n", 1)[0]
        out.append(g)
    out.sort(key=lambda g: (STATUS_ORDER.index(g["status"]), severity(g["verdict"]) if g["status"] == "new" else 0,
                            -len(g["records"]), g["runtime"], g["cause"]))
    return out


def _worst_text(value, kind: str) -> str:
    if value is None:
        return ""
    if kind == "ratio":
        return f"{value:.3g}× the tolerance"
    return f"abs error {value:.3g}"


def split(groups: list[dict]) -> dict[str, list[dict]]:
    """{new, fixed, known (baseline and expected)} of :func:`causes`."""
    return {"new": [g for g in groups if g["status"] == "new"],
            "fixed": [g for g in groups if g["status"] == "fixed"],
            "known": [g for g in groups if g["status"] in ("baseline", "expected")]}


def line(g: dict) -> str:
    """One line naming a cause: ``NEW onnxruntime: fails whenever clip is set — 24 cases on ...``."""
    n = len(g["cases"])
    head = f"{g['status'].upper()} {g['runtime']}: {g['cause']}"
    tail = f" — {n} case{'s' if n != 1 else ''}, {len(g['records'])} pair{'s' if len(g['records']) != 1 else ''}"
    tail += f" on {g['targets_line']}"
    if g["worst"]:
        tail += f"; worst {g['worst']}"
    if g["where"]:
        tail += f" ({g['where']}" + (": an entry about another defect" if g.get("off_cause") else "") + ")"
    return head + tail
