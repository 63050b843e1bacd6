"""The HTML divergence report: ``index.html`` (run facts, gate, the family × target matrix, a
runtime's devices side by side, clusters, cross-spec differences), a page per case family and a
page per failing case.

Self-contained: every page opens from file:// with no network; CSS and JS are inline, plots are
SVG written in Python (conformance/report/svg.py). Jinja2 autoescapes everything; no data is ever
marked safe (only our own SVG, built with ``markupsafe.escape`` on every string in it).
"""

from __future__ import annotations

import datetime
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import jinja2

from conformance.case.model import case_family
from conformance.compare.verdicts import COLOURS, FAILING, MEANING, PAGED, SEVERITY, SHORT, severity, worst
from conformance.files import write_atomic
from conformance.report import causes, devices, differences, engines_matrix, matrix, view
from conformance.report.artifacts import keeps_detail
from conformance.report.svg import error_plot, series_of
from conformance.report.view import num
from conformance.results import Record
from conformance.runtimes.effective import describe_host, summary

TEMPLATES = Path(__file__).parent / "templates"

# --------------------------------------------------------------------------------------- formatting

def fmt_num(value, digits: int = 9) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    v = num(value)
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        return f"{v:.{digits}g}"
    return str(v)


def fmt_ratio(value) -> str:
    v = num(value)
    if v is None:
        return ""
    if isinstance(v, float) and math.isinf(v):
        return "×∞"
    if isinstance(v, float) and math.isnan(v):
        return "×NaN"
    return f"×{v:.2g}" if v < 10 else f"×{v:.2g}".replace("e+0", "e").replace("e+", "e")


def fmt_index(index) -> str:
    if isinstance(index, (list, tuple)):
        return "[" + ",".join(str(i) for i in index) + "]"
    return "" if index is None else str(index)


def first_line(text) -> str:
    return str(text or "").strip().split("\n", 1)[0]


def fmt_time(text) -> str:
    if not text:
        return "—"
    try:
        t = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return str(text)
    return t.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(num=fmt_num, ratio=fmt_ratio, index=fmt_index, first_line=first_line, time=fmt_time,
                       short=lambda v: SHORT.get(v, v), link=view.safe_link, sev=severity,
                       host=describe_host)
    env.globals.update(tokens=view.tokens, COLOURS=COLOURS, SEVERITY=SEVERITY, VERDICT_HELP=MEANING, SHORT=SHORT,
                       FAILING=FAILING)
    return env


# --------------------------------------------------------------------------------------- run facts

def _runs(run_info) -> list[dict]:
    if not run_info:
        return []
    return [dict(r) for r in (run_info if isinstance(run_info, list) else [run_info]) if r]


def _run_targets(runs: list[dict], targets: list[matrix.Target]) -> list[dict]:
    """Every target with its description: run.json's list, then any that only the records name."""
    described = {}
    for run in runs:
        for t in run.get("targets") or []:
            if isinstance(t, dict) and t.get("id"):
                described[t["id"]] = t
    out = []
    for t in targets:
        d = described.get(t.id, {})
        configuration = d.get("configuration") or {}
        out.append({"id": t.id, "runtime": t.runtime, "version": t.version, "device": t.device,
                    "config": d.get("config", t.config), "spec": t.spec, "plugin": t.plugin,
                    "description": d.get("description", ""), "configuration": configuration,
                    "measured": summary(configuration) if configuration else "not measured (no run.json entry)",
                    "machines": view.machines(configuration)})
    return out


# ---------------------------------------------------------------------------------------- case page

class CaseView:
    """Everything a failing case's page shows, from its records on every target."""

    def __init__(self, case_id: str, records: list[Record], order: dict, labels: dict):
        self.id = case_id
        self.records = sorted(records, key=lambda r: order.get(r.target, 1 << 30))
        self.family = case_family(case_id)
        self.slug = view.slug(case_id)
        first = self.records[0]
        self.first = first
        self.params = view.matrix_params(case_id)
        self.descriptions = list(dict.fromkeys(str(r.description) for r in self.records if r.description))
        self.clauses = list(dict.fromkeys(c for r in self.records for c in view.clauses_of(r)))
        self.by_severity = sorted(self.records, key=lambda r: severity(r.verdict))  # stable: target order within
        self.verdict = worst([r.verdict for r in self.records])
        lead = min(self.records, key=lambda r: (severity(r.verdict), r.gate == "expected",
                                               -(view.error_measure(r)[0] or 0)))
        self.lead = lead
        self.labels = labels
        self.plot = error_plot(self.records, labels)
        self.no_numbers = [r for r in self.records if series_of(r) is None]
        self.elements = self._elements()
        self.has_bound = any(e.get("bound") is not None for row in self.elements for e in row["elems"])
        self.tolerances = self._grouped("tolerance")
        self.oracles = self._grouped("oracle")
        self.notes = self._notes()
        self.unspecified = self._unspecified()
        self.any_step_data = any(isinstance(r.error_by_step, dict) for r in self.records)

    def _elements(self) -> list[dict]:
        """Per target, the worst elements (worst_elements when the record has them, else worst)."""
        rows = []
        for r in self.records:
            per_output = r.worst_elements
            items = []
            if isinstance(per_output, dict) and per_output:
                for output, elems in per_output.items():
                    for e in (elems or [])[:5]:
                        items.append(dict(e, output=output))
            elif isinstance(r.worst, dict):
                items.append(dict(r.worst))
            for e in items:
                e["over"] = (num(e.get("ratio")) or 0) > 1
            if items:
                rows.append({"record": r, "elems": items, "sev": severity(r.verdict)})
        return rows

    def _grouped(self, key: str) -> list[dict]:
        """Distinct values of a record field, each with the targets that share it. A tolerance's
        per-record figures (worst_bound, worst_allowed, ...) are left out: the rule is what is
        shared, and the worst elements table shows each target's figures."""
        groups: dict[str, dict[str, Any]] = {}
        for r in self.records:
            value = r.get(key)   # the field named by the caller: tolerance, oracle
            if not value:
                continue
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if not str(k).startswith("worst_")}
            k = json.dumps(value, sort_keys=True, default=str)
            groups.setdefault(k, {"value": value, "targets": [], "readings": set()})
            groups[k]["targets"].append(r.target)
            if r.reading:
                groups[k]["readings"].add(str(r.reading))
        return list(groups.values())

    def _notes(self) -> list[dict]:
        groups: dict[str, list[str]] = {}
        for r in self.records:
            for n in r.notes or []:
                groups.setdefault(str(n), []).append(r.target)
        return [{"note": n, "targets": t} for n, t in groups.items()]

    def _unspecified(self) -> list[dict]:
        """Elements the spec leaves undefined, compared across the targets that produced them."""
        per_output: defaultdict[str, dict[str, list]] = defaultdict(dict)  # output -> target -> values
        for r in self.records:
            values_by_output = r.unspecified_values
            for output, values in (values_by_output.items() if isinstance(values_by_output, dict) else ()):
                if isinstance(values, list) and values:
                    per_output[output][r.target] = values
        out = []
        for output, by_target in per_output.items():
            n = min(12, max(len(v) for v in by_target.values()))
            rows = []
            for k in range(n):
                vals = [num(v[k]) if k < len(v) else None for v in by_target.values()]
                finite = [v for v in vals if v is not None and math.isfinite(v)]
                spread = (max(finite) - min(finite)) if len(finite) > 1 else None
                rows.append({"k": k, "values": vals, "spread": spread})
            total = max(len(v) for v in by_target.values())
            out.append({"output": output, "targets": list(by_target), "rows": rows, "total": total})
        return out


# ---------------------------------------------------------------------------------------- render

GENERATOR = '<meta name="generator" content="rnn-conformance report">'


def _remove_stale_pages(out_dir: Path) -> None:
    """Pages an earlier report wrote (they carry our generator tag); nothing else is touched."""
    for sub in ("cases", "families"):
        for page in (out_dir / sub).glob("*.html"):
            try:
                with page.open(encoding="utf-8", errors="replace") as f:
                    head = f.read(600)
            except OSError:
                continue
            if GENERATOR in head:
                page.unlink()


def _write(path: Path, text: str) -> None:
    write_atomic(path, text)


#: which cases have a page of their own, as the report says it (--artifacts)
PAGED_WHY = {"failing": "a divergence the gate does not excuse (--artifacts full: every divergent case)",
             "full": "a verdict other than pass and not-expressible"}


def render(records: list[Record], run_info, out_dir: Path, clusters: list[dict] | None = None,
           artifacts: str = "failing") -> Path:
    """Write ``out_dir/index.html`` (self-contained), ``out_dir/families/*.html`` and
    ``out_dir/cases/*.html`` (with ``report.css`` and ``report.js`` beside index.html, which they
    share); returns the path of index.html. A case gets a page when one of its pairs diverges and
    the gate does not excuse it (``artifacts="failing"``, the default: see
    :mod:`conformance.report.artifacts`); with ``artifacts="full"``, every case with a verdict in
    fail, rejected, accepted-invalid, crash, timeout, error or unspecified gets one."""
    out_dir = Path(out_dir)
    env = _env()
    _remove_stale_pages(out_dir)
    records = [r for r in records if r.case and r.target]
    targets = matrix.collect_targets(records)
    order = {t.id: t.index for t in targets}
    runs = _runs(run_info)
    labels = {t.id: t.id for t in targets}

    by_case: defaultdict[str, list[Record]] = defaultdict(list)
    records_of_target: defaultdict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_case[r.case].append(r)
        records_of_target[r.target].append(r)
    if artifacts == "full":
        paged = {c for c, recs in by_case.items()
                 if any(r.verdict in PAGED or r.verdict not in SEVERITY
                        or (r.silent or {}).get("verdict") in ("implausible", "garbage") for r in recs)}
    else:
        paged = {c for c, recs in by_case.items() if any(keeps_detail(r) for r in recs)}
    case_href = {c: f"cases/{view.slug(c)}.html" for c in paged}

    ops = matrix.group_families(records, targets)
    runtimes, setups = matrix.header_groups(targets)
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    side_by_side = devices.side_by_side(records)
    common = {"targets": targets, "runtimes": runtimes, "setups": setups, "generated": generated,
              "has_devices": bool(side_by_side),
              "paged_why": PAGED_WHY[artifacts if artifacts in PAGED_WHY else "failing"]}

    from conformance.report import links
    bugreports = links.read(out_dir, clusters)
    clusters_view = None
    by_pair = {(r.case, r.target): r for r in records}
    if clusters is not None:
        clusters_view = []
        for c in clusters:
            c = dict(c)
            case_ids = [str(x) for x in (c.get("cases") or [])]
            seen_ops = {str(by_case[x][0].op) for x in case_ids if by_case.get(x)}
            target_ids = [str(t) for t in (c.get("targets") or [c.get("target") or "?"])]
            by_target = {t: next((r for r in records_of_target.get(t, ())), None) for t in target_ids}
            marker = causes.cluster_status(c, by_pair)
            c.update(cases=case_ids, op=seen_ops.pop() if len(seen_ops) == 1 else "", targets=target_ids,
                     targets_line=causes.fold_targets(by_target),
                     runtime=str(c.get("runtime") or next((view.runtime_family(r) for r in by_target.values() if r),
                                                          target_ids[0].split("/", 1)[0])),
                     specs=sorted({str(r.spec) for r in by_target.values() if r}, key=view.spec_key),
                     status=marker["status"], where=marker["where"])
            clusters_view.append(c)
        rank = {"new": 0, "fixed": 1, "baseline": 2, "expected": 3, "": 4}
        clusters_view.sort(key=lambda c: (rank.get(c["status"], 4), -len(c["cases"]), str(c.get("runtime", "")),
                                          str(c.get("cause", ""))))

    counts: defaultdict[str, int] = defaultdict(int)
    unexcused: defaultdict[str, int] = defaultdict(int)   # failing verdicts the gate does not excuse
    for r in records:
        counts[r.verdict] += 1
        if r.verdict in FAILING and r.gate not in ("expected", "baseline"):
            unexcused[r.verdict] += 1
    versions = differences.version_differences(records)
    ir = differences.ir_vs_frontend(records)
    spec_fams = differences.spec_family_differences(records)
    index = env.get_template("index.html.j2").render(
        **common, root="", runs=runs, run_targets=_run_targets(runs, targets), ops=ops,
        totals=matrix.totals(records, targets), counts=dict(counts), n_records=len(records),
        failing_total=sum(n for v, n in counts.items() if v in FAILING), unexcused=dict(unexcused),
        n_cases=len(by_case), n_paged=len(paged), case_href=case_href, gate=view.gate_summary(records),
        versions=versions, ir=ir, spec_fams=spec_fams, clusters=clusters_view,
        skipped=[s for run in runs for s in (run.get("skipped_runtimes") or [])],
        load_errors=sum(int(run.get("load_errors") or 0) for run in runs),
        specs=sorted({t.spec for t in targets}, key=view.spec_key),
        op_names=[op for op, _ in ops], silent=view.silent_table(records),
        parts=causes.split(causes.causes(records, clusters)),
        feature_matrix=engines_matrix.to_html(engines_matrix.build(records)), bugreports=bugreports,
        devices=side_by_side)
    index_path = out_dir / "index.html"
    _write(index_path, index)
    _write(out_dir / "differences.html", env.get_template("differences.html.j2").render(
        **common, root="", case_href=case_href, versions=versions, ir=ir, spec_fams=spec_fams,
        gate=view.gate_summary(records), specs=sorted({t.spec for t in targets}, key=view.spec_key),
        op_names=[op for op, _ in ops]))
    _write(out_dir / "report.css", env.get_template("report.css.j2").render())
    _write(out_dir / "report.js", env.get_template("report.js.j2").render())

    family_tpl = env.get_template("family.html.j2")
    for _, fams in ops:
        for fam in fams:
            cases = []
            for cid in fam.case_ids:
                recs = {r.target: r for r in by_case[cid]}
                cases.append({"id": cid, "params": view.matrix_params(cid), "href": case_href.get(cid),
                              "cells": [recs.get(t.id) for t in targets]})
            _write(out_dir / "families" / f"{fam.slug}.html",
                   family_tpl.render(**common, root="../", fam=fam, cases=cases, case_href=case_href))

    case_tpl = env.get_template("case.html.j2")
    for cid in sorted(paged):
        cv = CaseView(cid, by_case[cid], order, labels)
        fam_slug = view.slug(cv.family)
        _write(out_dir / case_href[cid],
               case_tpl.render(**common, root="../", case=cv, family_href=f"../families/{fam_slug}.html",
                               bugreports=bugreports["case"].get(cid, []),
                               devices=devices.side_by_side(by_case[cid], every=True)))
    return index_path
