"""A Markdown summary for a CI job page (e.g. $GITHUB_STEP_SUMMARY): verdicts per target, the new
divergences with their repro commands, the expected and fixed counts, a runtime's devices side by
side, the clusters' causes."""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from pathlib import Path

from conformance.compare.verdicts import FAILING, SEVERITY, severity
from conformance.files import write_atomic
from conformance.report import engines_matrix
from conformance.report.causes import causes, cluster_status, split
from conformance.report.devices import differing, side_by_side
from conformance.report.view import (
    gate_summary,
    machines,
    natural_key,
    safe_link,
    setup_of_record,
    silent_table,
    spec_family,
    spec_key,
)
from conformance.results import Record
from conformance.runtimes.effective import describe_host
from conformance.runtimes.effective import summary as configuration_summary

MAX_LISTED = 50
#: the differing cases summary.md lists in "Devices side by side" (index.html has them all)
MAX_DEVICE_ROWS = 20


def text(value) -> str:
    """Plain text safe in Markdown (and in the HTML a CI page renders it to)."""
    s = str(value if value is not None else "").replace("\r", " ").replace("\n", " ")
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#!])", r"\\\1", s)


def code(value) -> str:
    """An inline code span that holds any text: a fence longer than any backtick run inside."""
    s = str(value if value is not None else "").replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _first_line(message) -> str:
    return str(message or "").strip().split("\n", 1)[0]


def _when(iso: str) -> str:
    try:
        return datetime.datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    except ValueError:
        return iso


def _runs(run_info) -> list[dict]:
    if not run_info:
        return []
    return [r for r in (run_info if isinstance(run_info, list) else [run_info]) if r]


def _target_order(record: Record):
    """Records by runtime, device and configuration, then spec version."""
    return setup_of_record(record), spec_key(str(record.spec), spec_family(record))


def summary(records: list[Record], run_info=None, clusters: list[dict] | None = None) -> str:
    runs = _runs(run_info)
    counts = Counter(r.verdict for r in records)
    targets = [r.target for r in sorted({r.target: r for r in records}.values(), key=_target_order)]
    gate = gate_summary(records)
    out = ["# RNN · GRU · LSTM conformance", ""]
    facts = [f"{len(records)} verdicts", f"{len({r.case for r in records})} cases", f"{len(targets)} targets"]
    if runs:
        suites = sorted({str(r.get("suite")) for r in runs if r.get("suite")})
        if suites:
            facts.insert(0, "suite " + ", ".join(suites))
        started = min((str(r.get("started")) for r in runs if r.get("started")), default="")
        finished = max((str(r.get("finished")) for r in runs if r.get("finished")), default="")
        if started:
            facts.append(f"ran {text(_when(started))} → {text(_when(finished)) if finished else 'unfinished'}")
    out.append(" · ".join(facts))
    out.append("")
    failing = sum(n for v, n in counts.items() if v in FAILING)
    if gate:
        new = gate["counts"].get("new", 0)
        out.append(f"**Gate: {new} new divergence{'s' if new != 1 else ''}** · "
                   f"{gate['counts'].get('expected', 0)} expected · {gate['counts'].get('fixed', 0)} fixed"
                   + (f" · {gate['counts']['baseline']} failing in the baseline too"
                      if gate["counts"].get("baseline") else ""))
    else:
        out.append(f"**{failing} divergent verdict{'s' if failing != 1 else ''}** (no gate applied: "
                   f"nothing separates known divergences from new ones)")
    out.append("")

    # what is new, and why: the divergences by cause, new first, then fixed, then the known ones (folded)
    parts = split(causes(records, clusters))
    title = "What is new, and why" if gate else "Divergences by cause (no gate: every divergence counts as new)"
    out += [f"## {title}", ""]
    if not parts["new"]:
        out.append("No new divergence.")
    for g in parts["new"][:MAX_LISTED]:
        out.append(_cause_line(g))
        if g["repro"]:
            out.append(f"  {code(g['repro'])}")
    if len(parts["new"]) > MAX_LISTED:
        out.append(f"- … and {len(parts['new']) - MAX_LISTED} more causes (see the HTML report)")
    for g in parts["fixed"]:
        out.append(_cause_line(g))
    out.append("")
    if parts["known"]:
        n = sum(len(g["records"]) for g in parts["known"])
        out += ["<details><summary>" + text(f"{n} known divergent pairs in {len(parts['known'])} causes "
                                            f"(expected, or failing in the baseline too)") + "</summary>", ""]
        for g in parts["known"]:
            link = safe_link(g["link"])
            out.append(_cause_line(g) + (f" — {text(g['kind'])}: {text(g['reason'])}" if g["reason"] else "")
                       + (f" ({link})" if link else ""))
        out += ["", "</details>", ""]

    # verdicts per target
    verdicts = [v for v in SEVERITY if counts.get(v)] + sorted(v for v in counts if v not in SEVERITY)
    by_target: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        by_target[r.target][r.verdict] += 1
    out += ["## Verdicts per target", "", "| target | " + " | ".join(verdicts) + " |",
            "|---|" + "---:|" * len(verdicts)]
    for t in targets:
        out.append(f"| {code(t)} | " + " | ".join(str(by_target[t].get(v, 0) or "") for v in verdicts) + " |")
    out.append("")

    # the flat list, one row per (case, verdict), folded
    if gate:
        listed, title = gate["new"], "New divergent pairs"
    else:
        listed = sorted((r for r in records if r.verdict in FAILING),
                        key=lambda r: (severity(r.verdict), natural_key(r.case), r.target))
        title = "Divergent pairs"
    groups = defaultdict(list)   # one entry per (case, verdict), naming every target it hit
    for r in listed:
        groups[(r.case, r.verdict)].append(r)
    if listed:
        out += ["<details><summary>" + text(f"{title}: {len(listed)} verdicts, {len(groups)} case × verdict")
                + "</summary>", ""]
        for (case, verdict), recs in list(groups.items())[:MAX_LISTED]:
            recs = sorted(recs, key=_target_order)
            first = recs[0]
            where = ", ".join(code(r.target) for r in recs)
            out.append(f"- **{text(verdict)}** {code(case)} on {where}: {text(_first_line(first.message))}")
            if first.repro:
                out.append(f"  {code(first.repro)}")
        if len(groups) > MAX_LISTED:
            out.append(f"- … and {len(groups) - MAX_LISTED} more (see the HTML report)")
        out += ["", "</details>", ""]

    out += _devices(records)
    features_table = engines_matrix.to_markdown(engines_matrix.build(records))
    if features_table:
        out += ["## Features × runtimes", "", "<details><summary>Which features each runtime implements correctly "
                "(per op and feature: the class of its verdicts, with counts)</summary>", "", *features_table, "",
                "</details>", ""]

    out += ["## Divergence clusters", ""]
    if clusters is None:
        out.append("No ablation run: divergences are not clustered by cause yet.")
    elif not clusters:
        out.append("The ablation step formed no cluster.")
    else:
        by_pair = {(r.case, r.target): r for r in records}
        marked = [(cluster_status(c, by_pair), c) for c in clusters]
        rank = {"new": 0, "fixed": 1, "baseline": 2, "expected": 3, "": 4}
        marked.sort(key=lambda mc: (rank.get(mc[0]["status"], 4), -len(mc[1].get("cases") or [])))
        out += [f"<details><summary>{len(clusters)} clusters, one per cause and runtime</summary>", ""]
        for m, c in marked:
            n = len(c.get("cases") or [])
            targets = c.get("targets") or [c.get("target", "?")]
            mark = f"**{m['status']}** " if m["status"] else ""
            out.append(f"- {mark}{text(c.get('runtime') or '')} **{text(c.get('cause') or '(no cause named)')}**: "
                       f"{n} case{'s' if n != 1 else ''}, {text(c.get('verdict', '?'))} on "
                       f"{len(targets)} target{'s' if len(targets) != 1 else ''}"
                       + (f" (expected: {text(', '.join(m['where']))})" if m["where"] else ""))
        out += ["", "</details>"]
    out.append("")

    table = silent_table(records)
    if table:
        out += ["## Where the specs are silent", "",
                "What each runtime put where its spec leaves the output undefined: the plausible reading it "
                "chose (pairs), or implausible, or garbage (oracles/silent.py lists the readings and sources).", "",
                "| silent point | " + " | ".join(code(c) for c in table["columns"]) + " |",
                "|---|" + "---|" * len(table["columns"])]
        for row in table["rows"]:
            cells = [", ".join(f"{text(i['reading'])} ({i['count']})" for i in cell["readings"]) if cell else "—"
                     for cell in row["cells"]]
            out.append(f"| {code(row['point'])} | " + " | ".join(cells) + " |")
        out.append("")

    configured = _configurations(runs)
    if configured:
        out += ["## Measured configurations", ""] + configured + [""]

    skipped = [s for r in runs for s in (r.get("skipped_runtimes") or [])]
    if skipped:
        out += ["## Skipped runtimes", ""]
        for s in skipped:
            out.append(f"- {code(s.get('runtime', '?'))}: {text(s.get('reason', ''))}")
        out.append("")
    return "\n".join(out)


def _devices(records: list[Record]) -> list[str]:
    """A runtime on several devices (conformance/report/devices.py): every two of its targets on
    different devices, the cases that agree and differ; then the cases that differ, the most severe
    first, capped. Nothing where no runtime ran on two devices."""
    groups = side_by_side(records)
    if not groups:
        return []
    out = ["## Devices side by side", "", "One runtime and spec version on several devices: how many cases agree "
           "between each two of its targets, and how many differ (by verdict pair); then the cases whose verdicts "
           "differ, the most severe first.", ""]
    for g in groups:
        for p in g.pairs:
            diffs = ", ".join(f"{text(a)} / {text(b)} {n}" for a, b, n in p.differences)
            out.append(f"- {code(g.label)}, {code(p.left.label)} vs {code(p.right.label)}: {p.n_agree} agree, "
                       f"{p.n_differ} differ" + (f" ({diffs})" if diffs else ""))
    rows = differing(groups)
    if rows:
        out += ["", "| worst | case | runtime | verdict on each device |", "|---|---|---|---|"]
        for g, row in rows[:MAX_DEVICE_ROWS]:
            cells = " · ".join(f"{_cell_code(c.label)} " + (f"**{text(r.verdict)}**" if r else "—")
                               for c, r in zip(g.columns, row.cells, strict=True))
            out.append(f"| {text(row.worst)} | {_cell_code(row.case)} | {_cell_code(g.label)} | {cells} |")
        if len(rows) > MAX_DEVICE_ROWS:
            out += ["", f"… and {len(rows) - MAX_DEVICE_ROWS} more (index.html, \"Devices side by side\")"]
    alike = sum(1 for g in groups for row in g.rows if not row.differ)
    if alike:
        out += ["", f"{alike} case{'s' if alike != 1 else ''} diverge{'s' if alike == 1 else ''} alike on every "
                f"device of {'their' if alike != 1 else 'its'} runtime (index.html lists them)"]
    return out + [""]


def _cell_code(value) -> str:
    """A code span in a table cell: it keeps its text, but a | in it would still end the cell."""
    return code(value).replace("|", "\\|")


def _configurations(runs: list[dict]) -> list[str]:
    """The host and each runtime configuration's measured configuration (once, not per spec)."""
    lines, seen = [], set()
    for run in runs:
        if run.get("host"):
            lines.append(f"- host: {text(describe_host(run['host']))}")
        for t in run.get("targets") or []:
            if not isinstance(t, dict) or not t.get("configuration"):
                continue
            name = setup_of_record(t)
            if name in seen:
                continue
            seen.add(name)
            where = machines(t["configuration"])
            lines.append(f"- {code(name)}: {text(configuration_summary(t['configuration']))}"
                         + (f" (ran on {text(where)})" if where else ""))
    return lines


def _cause_line(g: dict) -> str:
    """- **NEW** runtime: **the cause** — N cases, M pairs on targets; worst ...; file:line"""
    n = len(g["cases"])
    line = (f"- **{g['status'].upper()}** {text(g['runtime'])}: **{text(g['cause'])}** — "
            f"{n} case{'s' if n != 1 else ''}, "
            f"{len(g['records'])} pair{'s' if len(g['records']) != 1 else ''} on {text(g['targets_line'])}")
    if g["worst"]:
        line += f"; worst {text(g['worst'])}"
    if g["where"]:
        line += f" ({code(g['where'])}" + (": **an entry about another defect**" if g.get("off_cause") else "") + ")"
    return line


def write_markdown(records: list[Record], run_info, path, clusters: list[dict] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, summary(records, run_info, clusters))
    return path
