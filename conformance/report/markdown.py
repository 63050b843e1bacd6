"""A Markdown summary for a CI job page (e.g. $GITHUB_STEP_SUMMARY): verdicts per target, the new
divergences with their repro commands, the expected and fixed counts, the clusters' causes."""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from pathlib import Path

from conformance.compare.verdicts import FAILING, SEVERITY, severity
from conformance.report.view import gate_summary, natural_key, safe_link, silent_table, spec_key
from conformance.run.files import write_atomic
from conformance.runtimes.effective import describe_host
from conformance.runtimes.effective import summary as configuration_summary

MAX_LISTED = 50


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


def summary(records: list[dict], run_info=None, clusters: list[dict] | None = None) -> str:
    runs = _runs(run_info)
    counts = Counter(r["verdict"] for r in records)
    targets = sorted({r["target"] for r in records}, key=lambda t: (t.rsplit("@", 1)[0], spec_key(t.rsplit("@", 1)[-1])))
    gate = gate_summary(records)
    out = ["# RNN · GRU · LSTM conformance", ""]
    facts = [f"{len(records)} verdicts", f"{len({r['case'] for r in records})} cases", f"{len(targets)} targets"]
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
                   + (f" · {gate['counts']['baseline']} failing in the baseline too" if gate["counts"].get("baseline") else ""))
    else:
        out.append(f"**{failing} divergent verdict{'s' if failing != 1 else ''}** (no gate applied: "
                   f"nothing separates known divergences from new ones)")
    out.append("")

    # verdicts per target
    verdicts = [v for v in SEVERITY if counts.get(v)] + sorted(v for v in counts if v not in SEVERITY)
    by_target = defaultdict(Counter)
    for r in records:
        by_target[r["target"]][r["verdict"]] += 1
    out += ["## Verdicts per target", "", "| target | " + " | ".join(verdicts) + " |",
            "|---|" + "---:|" * len(verdicts)]
    for t in targets:
        out.append(f"| {code(t)} | " + " | ".join(str(by_target[t].get(v, 0) or "") for v in verdicts) + " |")
    out.append("")

    # the divergences that matter
    if gate:
        listed, title = gate["new"], "New divergences"
    else:
        listed = sorted((r for r in records if r["verdict"] in FAILING),
                        key=lambda r: (severity(r["verdict"]), natural_key(r["case"]), r["target"]))
        title = "Divergences"
    groups = defaultdict(list)   # one entry per (case, verdict), naming every target it hit
    for r in listed:
        groups[(r["case"], r["verdict"])].append(r)
    out += [f"## {title} ({len(listed)} verdicts, {len(groups)} case × verdict)", ""]
    if not listed:
        out.append("None.")
    for (case, verdict), recs in list(groups.items())[:MAX_LISTED]:
        recs = sorted(recs, key=lambda r: (r["target"].rsplit("@", 1)[0], spec_key(r["target"].rsplit("@", 1)[-1])))
        first = recs[0]
        where = ", ".join(code(r["target"]) for r in recs)
        out.append(f"- **{text(verdict)}** {code(case)} on {where}: {text(_first_line(first.get('message')))}")
        if first.get("repro"):
            out.append(f"  {code(first['repro'])}")
    if len(groups) > MAX_LISTED:
        out.append(f"- … and {len(groups) - MAX_LISTED} more (see the HTML report)")
    out.append("")

    if gate and (gate["expected"] or gate["fixed"]):
        out += ["## Known divergences", ""]
        for e in gate["expected"]:
            link = safe_link(e["link"])
            out.append(f"- {len(e['records'])} expected ({text(e['kind'])}): {text(e['reason'])}"
                       + (f" ({link})" if link else ""))
        if gate["fixed"]:
            out.append(f"- **{len(gate['fixed'])} fixed**: an expectation covers them but they pass now; "
                       f"the entry can go:")
            for r in gate["fixed"][:MAX_LISTED]:
                out.append(f"  - {code(r['case'])} on {code(r['target'])}")
        out.append("")

    out += ["## Divergence clusters", ""]
    if clusters is None:
        out.append("No ablation run: divergences are not clustered by cause yet.")
    elif not clusters:
        out.append("The ablation step formed no cluster.")
    else:
        for c in sorted(clusters, key=lambda c: -len(c.get("cases") or [])):
            n = len(c.get("cases") or [])
            out.append(f"- **{text(c.get('cause') or '(no cause named)')}**: {n} case{'s' if n != 1 else ''}, "
                       f"{text(c.get('verdict', '?'))} on {code(c.get('target', '?'))}")
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


def _configurations(runs: list[dict]) -> list[str]:
    """The host and each runtime configuration's measured configuration (once, not per spec)."""
    lines, seen = [], set()
    for run in runs:
        if run.get("host"):
            lines.append(f"- host: {text(describe_host(run['host']))}")
        for t in run.get("targets") or []:
            name = str(t.get("id", "?")).rsplit("@", 1)[0]
            if not isinstance(t, dict) or not t.get("configuration") or name in seen:
                continue
            seen.add(name)
            lines.append(f"- {code(name)}: {text(configuration_summary(t['configuration']))}")
    return lines


def write_markdown(records: list[dict], run_info, path, clusters: list[dict] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, summary(records, run_info, clusters))
    return path
