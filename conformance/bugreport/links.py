"""Where a report's pages link to the bug reports written beside it (``OUT/bugreports/index.json``,
written by ``conformance bugreport`` and ``conformance report --bugreports``)."""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = "bugreports"


def read(out_dir) -> dict:
    """{"cluster": {cluster id: href}, "case": {case id: [href, ...]}}, hrefs relative to ``out_dir``
    (a report's ISSUE.md); empty where no report was written."""
    path = Path(out_dir) / FOLDER / "index.json"
    found: dict = {"cluster": {}, "case": {}}
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return found
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict) or not e.get("folder") or not e.get("reproduced"):
            continue
        href = f"{FOLDER}/{e['folder']}/ISSUE.md"
        if e.get("cluster"):
            found["cluster"][str(e["cluster"])] = href
        for case in [e.get("case"), *(e.get("source_cases") or [])]:
            if case and href not in found["case"].setdefault(str(case), []):
                found["case"][str(case)].append(href)
    return found
