"""Reading one or more results files for a report, and merging them.

Several runs (from several machines, or runtime versions) merge into one record per (case,
target): different targets are all kept; for the same target the newest run's record wins (runs
are ordered by run.json's ``started``, else by the file's modification time; within a file a later
line wins, as a resumed run appends).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from conformance.results import Record, read_records


class ReportInputError(ValueError):
    """A results path the report cannot read; the message says which and why."""


@dataclass
class Loaded:
    records: list[Record] = field(default_factory=list)
    runs: list = field(default_factory=list)        # run.json of each results file (with "source")
    warnings: list = field(default_factory=list)    # files beside the results that could not be read
    clusters: list | None = None                    # clusters.json found beside the results, if any
    sources: list = field(default_factory=list)     # the results files read, oldest run first


def results_path(path) -> Path:
    """A results file, or a folder holding results.jsonl."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.jsonl"
    if not p.is_file():
        raise ReportInputError(f"{path}: no results file there (expected a results.jsonl or a folder "
                               f"holding one, as `conformance run --out DIR` writes)")
    return p


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportInputError(f"{path}: cannot read JSON: {exc}") from exc


def load(paths, clusters_path=None) -> Loaded:
    runs = []
    warnings: list[str] = []
    for i, raw in enumerate(paths):
        res = results_path(raw)
        info_path = res.parent / "run.json"
        info = _beside(info_path, warnings, {})
        info = dict(info) if isinstance(info, dict) else {}
        info["source"] = str(res)
        order = (str(info.get("started") or ""), res.stat().st_mtime, i)
        runs.append((order, res, info))
    runs.sort(key=lambda item: item[0])
    latest: dict[tuple[str, str], Record] = {}
    clusters = None
    for _, res, _ in runs:
        for rec in read_records(res):
            if rec.has("case") and rec.has("target"):
                latest[(rec.case, rec.target)] = rec
        beside = res.parent / "clusters.json"
        if clusters_path is None and beside.is_file():
            found = _beside(beside, warnings, [])
            clusters = (clusters or []) + list(found if isinstance(found, list) else found.get("clusters", []))
    if clusters_path is not None:
        found = _read_json(Path(clusters_path))
        clusters = list(found if isinstance(found, list) else found.get("clusters", []))
    return Loaded(records=list(latest.values()), runs=[info for _, _, info in runs], clusters=clusters,
                  sources=[res for _, res, _ in runs], warnings=warnings)


def _beside(path: Path, warnings: list, default):
    """A run's side file (run.json, clusters.json): one that cannot be read (a run killed while
    writing it, before writes were atomic) costs what it holds, with a warning, not the report."""
    if not path.is_file():
        return default
    try:
        return _read_json(path)
    except ReportInputError as exc:
        warnings.append(f"{exc}; the report goes on without it")
        return default
