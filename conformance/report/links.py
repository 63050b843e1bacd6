"""Where a report's pages link to the bug reports written beside it (``OUT/bugreports/index.json``,
written by ``conformance bugreport`` and ``conformance report --bugreports``)."""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = "bugreports"


def read(out_dir, clusters: list | None = None) -> dict:
    """{"cluster": {cluster id: href}, "case": {case id: [href, ...]}}, hrefs relative to ``out_dir``
    (a report's ISSUE.md); empty where no report was written. A report of a cluster whose cause is
    not the cause of that cluster id in ``clusters`` (ids are positions: a later run numbers its own)
    is stale and left out."""
    causes = {str(c.get("id")): c.get("cause") for c in clusters or []}
    path = Path(out_dir) / FOLDER / "index.json"
    found: dict = {"cluster": {}, "case": {}}
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return found
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict) or not e.get("folder") or not e.get("reproduced"):
            continue
        if e.get("cluster") and causes and causes.get(str(e["cluster"])) != e.get("cause"):
            continue
        href = f"{FOLDER}/{e['folder']}/ISSUE.md"
        if e.get("cluster"):
            found["cluster"][str(e["cluster"])] = href
        for case in [e.get("case"), *(e.get("source_cases") or [])]:
            if case and href not in found["case"].setdefault(str(case), []):
                found["case"][str(case)].append(href)
    return found
