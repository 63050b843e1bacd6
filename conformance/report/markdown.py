"""A Markdown summary for a CI job page (e.g. $GITHUB_STEP_SUMMARY): verdicts per target, the new
divergences with their repro commands, the expected and fixed counts, a runtime's devices side by
side, the clusters' causes. The page is templates/summary.md.j2 (as the HTML pages are templates:
conformance/report/html.py); this module gathers what it shows, and ``text`` and ``code`` make any
value safe in it."""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from pathlib import Path

import jinja2

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

TEMPLATES = Path(__file__).parent / "templates"
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


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(text=text, code=code, cell_code=_cell_code, first_line=_first_line, link=safe_link,
                       s=lambda n: "" if n == 1 else "s", host=describe_host, configuration=configuration_summary)
    return env


def summary(records: list[Record], run_info=None, clusters: list[dict] | None = None) -> str:
    """summary.md (templates/summary.md.j2)."""
    runs = _runs(run_info)
    counts = Counter(r.verdict for r in records)
    targets = [r.target for r in sorted({r.target: r for r in records}.values(), key=_target_order)]
    gate = gate_summary(records)
    facts = [f"{len(records)} verdicts", f"{len({r.case for r in records})} cases", f"{len(targets)} targets"]
    suites = sorted({str(r.get("suite")) for r in runs if r.get("suite")})
    if suites:
        facts.insert(0, "suite " + ", ".join(suites))
    started = min((str(r.get("started")) for r in runs if r.get("started")), default="")
    finished = max((str(r.get("finished")) for r in runs if r.get("finished")), default="")
    if started:
        facts.append(f"ran {text(_when(started))} → {text(_when(finished)) if finished else 'unfinished'}")
    by_target: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        by_target[r.target][r.verdict] += 1
    if gate:
        listed, listed_title = gate["new"], "New divergent pairs"
    else:
        listed = sorted((r for r in records if r.verdict in FAILING),
                        key=lambda r: (severity(r.verdict), natural_key(r.case), r.target))
        listed_title = "Divergent pairs"
    groups = defaultdict(list)   # one entry per (case, verdict), naming every target it hit
    for r in listed:
        groups[(r.case, r.verdict)].append(r)
    devices = side_by_side(records)
    by_pair = {(r.case, r.target): r for r in records}
    rank = {"new": 0, "fixed": 1, "baseline": 2, "expected": 3, "": 4}
    marked = sorted(((cluster_status(c, by_pair), c) for c in clusters or []),
                    key=lambda mc: (rank.get(mc[0]["status"], 4), -len(mc[1].get("cases") or [])))
    return _env().get_template("summary.md.j2").render(
        facts=facts, gate=gate, failing=sum(n for v, n in counts.items() if v in FAILING),
        causes=split(causes(records, clusters)), targets=targets, by_target=by_target,
        verdicts=[v for v in SEVERITY if counts.get(v)] + sorted(v for v in counts if v not in SEVERITY),
        listed=listed, listed_title=listed_title,
        groups=[(key, sorted(recs, key=_target_order)) for key, recs in groups.items()],
        devices=devices, device_rows=differing(devices) if devices else [],
        alike=sum(1 for g in devices for row in g.rows if not row.differ),
        features=engines_matrix.to_markdown(engines_matrix.build(records)), clusters=clusters, marked=marked,
        silent=silent_table(records), configured=_configurations(runs),
        skipped=[s for r in runs for s in (r.get("skipped_runtimes") or [])],
        MAX_LISTED=MAX_LISTED, MAX_DEVICE_ROWS=MAX_DEVICE_ROWS)


def _cell_code(value) -> str:
    """A code span in a table cell: it keeps its text, but a | in it would still end the cell."""
    return code(value).replace("|", "\\|")


def _configurations(runs: list[dict]) -> list[dict]:
    """The host and each runtime configuration's measured configuration (once, not per spec)."""
    found, seen = [], set()
    for run in runs:
        if run.get("host"):
            found.append({"host": run["host"]})
        for t in run.get("targets") or []:
            if not isinstance(t, dict) or not t.get("configuration"):
                continue
            name = setup_of_record(t)
            if name in seen:
                continue
            seen.add(name)
            found.append({"host": None, "name": name, "configuration": t["configuration"],
                          "where": machines(t["configuration"])})
    return found


def write_markdown(records: list[Record], run_info, path, clusters: list[dict] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, summary(records, run_info, clusters))
    return path
