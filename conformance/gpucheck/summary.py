"""What a GPU check found, per target and stage: the verdicts, the gate (new, expected by an entry,
judged by the configuration's declaration), the second judgement, the measured configuration and
activations, the time, and the exit status (docs/gpu.md, "Reading the check").
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from conformance.compare.verdicts import FAILING
from conformance.files import write_atomic
from conformance.gate.apply import DECLARED
from conformance.results import read_records
from conformance.runtimes.effective import activations_label, summary


def _records(folder: Path) -> list:
    out = []
    for path in sorted(folder.glob("**/results.jsonl")):
        if "report" in path.parts:
            continue
        out += read_records(path)
    return out


def _targets(folder: Path) -> dict:
    """{target id: its run.json entry} of every run under ``folder``."""
    found: dict = {}
    for path in sorted(folder.glob("**/run.json")):
        try:
            for t in json.loads(path.read_text()).get("targets", []):
                found.setdefault(t["id"], t)
        except (OSError, ValueError, KeyError):
            continue
    return found


def _campaign(log: Path) -> str:
    """The fuzz command's own account of its campaign ('461 cases (...) in 16 s: 29.53 cases/s, ...'),
    from its log."""
    try:
        text = " ".join(log.read_text(errors="replace").split())
    except OSError:
        return ""
    found = re.search(r"\d+ cases \(\d+ valid, \d+ invalid\) on \d+ targets? in [^;]*", text)
    return found.group(0) if found else ""


def per_target(records) -> dict:
    """{target: {verdicts, gate, declared}} counts."""
    rows: dict = defaultdict(lambda: {"verdicts": Counter(), "gate": Counter(), "declared": Counter()})
    for r in records:
        row = rows[r.target]
        row["verdicts"][r.verdict] += 1
        if r.verdict in FAILING:
            kind = (r.expected or {}).get("kind")
            row["gate"]["declared" if r.gate == "expected" and kind == DECLARED else r.gate or "new"] += 1
        if r.declared:
            row["declared"][r.declared.get("verdict", "?")] += 1
    return rows


def summarize(out: Path, stages, manifest: dict, gpu: list, skipped: list) -> dict:
    """check.json and check.md in ``out``: the facts, and the exit status (1 where any stage found a
    new divergence or was stopped, 2 where a stage could not run its input)."""
    found: dict = {"bundle": {k: manifest.get(k) for k in ("created", "specs", "results", "bytes",
                                                             "production_files", "production_left_out")},
                   "gpu_targets": [t.id for t in gpu], "skipped": [list(s) for s in skipped], "stages": {}}
    statuses = []
    for stage in stages:
        records = _records(stage.out)
        targets = _targets(stage.out)
        rows = per_target(records)
        entry = {"status": stage.status, "seconds": round(stage.seconds, 1), "shards": stage.shards,
                 "targets": {t: {"verdicts": dict(row["verdicts"]), "gate": dict(row["gate"]),
                                 "declared": dict(row["declared"]),
                                 "configuration": summary((targets.get(t) or {}).get("configuration") or {}),
                                 "activations": activations_label(((targets.get(t) or {}).get("configuration") or {})
                                                                  .get("activations"))}
                             for t, row in sorted(rows.items())}}
        if stage.name == "fuzz":
            entry["findings"] = sorted(p.name for p in (stage.out / "findings").glob("**/*.yaml"))
            entry["campaign"] = _campaign(stage.out / "command.log")
        found["stages"][stage.name] = entry
        statuses.append(1 if stage.status is None else stage.status)
    found["status"] = 2 if 2 in statuses else 1 if any(statuses) else 0
    write_atomic(Path(out) / "check.json", json.dumps(found, indent=2, default=str) + "\n")
    write_atomic(Path(out) / "check.md", markdown(found))
    return found


def markdown(found: dict) -> str:
    lines = ["# GPU check", "", f"Exit status {found['status']} (0: no new divergence; docs/gpu.md).", ""]
    if not found["gpu_targets"]:
        lines += ["No GPU target present. Gaps:", ""] + [f"- {name}: {why}" for name, why in found["skipped"]]
        return "\n".join(lines) + "\n"
    bundle = found["bundle"]
    lines += [f"Bundle: {bundle.get('results')} oracle results ({(bundle.get('bytes') or 0) / 2**20:.1f} MiB), "
              f"{len(bundle.get('production_files') or [])} production files, "
              f"{len(bundle.get('production_left_out') or [])} left out.", ""]
    for name, stage in found["stages"].items():
        status = "stopped at its limit" if stage["status"] is None else f"exit {stage['status']}"
        lines += [f"## {name}: {status}, {stage['seconds']} s", "",
                  "| target | verdicts | gate of the failing | declared judgement | activations |",
                  "|---|---|---|---|---|"]
        for target, row in stage["targets"].items():
            def said(counts):
                return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "—"
            lines.append(f"| `{target}` | {said(row['verdicts'])} | {said(row['gate'])} | {said(row['declared'])} | "
                         f"{row['activations'] or '—'} |")
        if name == "fuzz":
            lines += ["", f"Campaign: {stage.get('campaign') or '(its log says nothing)'}; "
                          f"{len(stage.get('findings', []))} new findings" + (": " + ", ".join(stage["findings"][:20])
                                                                               if stage.get("findings") else ".")]
        lines.append("")
    return "\n".join(lines)
