"""Artifacts sized for CI (``conformance run --artifacts failing``, the default).

A pair *keeps its detail* when it diverges and the gate does not excuse it (``new``, or any
divergence when no gate ran). After a run:

- ``results.jsonl`` is rewritten with the newest line of every pair: the full record for such a
  pair; for the others a summary (``"detail": "summary"``) holding what the gate, a baseline, the
  resume index (``pair_digest``) and the report's matrix, causes, clusters and difference views
  read, without the per-element detail (worst elements, the oracle's certificate, the tolerance's
  derivation, the repro command, which the case id and the target rebuild). A known divergence's
  summary keeps its message's first line; the other targets of a case with a page keep its plot
  (errors per time step) and their worst element, since the page compares every target.
- ``programs/`` keeps the programs of the spec versions that such pairs ran; the rest, and the
  ablation's scratch folder, go.
- the report writes a case page only for the cases with such a pair (conformance/report/html.py).

``--artifacts full`` keeps everything, as the run wrote it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

from conformance.compare.verdicts import FAILING, SEVERITY
from conformance.files import write_atomic
from conformance.results import Record, _clean

MODES = ("failing", "full")

#: what every summary line keeps: the pair, its target, its verdict and what the gate, a baseline,
#: the resume index and the report's index page read
SUMMARY = ("case", "target", "spec", "spec_family", "runtime", "runtime_family", "runtime_version", "device",
           "config", "converter", "target_precision", "plugin", "op", "expect", "features", "pair_digest", "verdict",
           "ratio", "max_abs_err", "max_ulp", "reading", "gate", "elapsed_s")
#: kept even where they are null: a reader of any line may index them
ALWAYS = ("max_abs_err", "max_ulp")
#: and a known divergence's summary: its message (clipped), as JUnit shows it
KNOWN = ("message",)
#: a message is clipped to this many characters in a summary
MESSAGE_CHARS = 120
#: fields a summary leaves out where they hold what a reader assumes without them
DEFAULTS = {"config": "default", "plugin": False, "target_precision": "f32"}
#: what a passing pair's summary keeps of its effective configuration: the machine that ran it
#: (``--cluster``: conformance/cluster/worker.py)
MACHINE = ("host", "worker")
#: what the other targets of a case with a page keep: its plot and its worst element
COMPANION = ("worst", "error_by_step")


def keeps_detail(record: Record) -> bool:
    """A divergence the gate does not excuse (or a verdict this version does not know)."""
    verdict = record.verdict
    if verdict not in FAILING and verdict in SEVERITY:
        return False
    return record.gate in (None, "", "new")


def summarize(record: Record) -> dict:
    """The summary line of a pair that does not keep its detail (picked by field name from the
    record's line, keys and order as results.jsonl has them)."""
    line = record.as_dict()
    out = {k: line[k] for k in SUMMARY if k in line and (line[k] is not None or k in ALWAYS)
           and DEFAULTS.get(k, ...) != line[k]}
    if out.get("runtime_family") == out.get("runtime"):   # readers fall back to the runtime
        out.pop("runtime_family")
    if record.verdict in FAILING:
        out.update({k: line[k] for k in KNOWN if k in line})
        if isinstance(out.get("message"), str):
            first = out["message"].strip().split("\n", 1)[0]
            out["message"] = first if len(first) <= MESSAGE_CHARS else first[:MESSAGE_CHARS - 1] + "…"
    expected = record.expected
    if isinstance(expected, dict):     # the entry's file:line says the rest
        out["expected"] = {k: expected[k] for k in ("where", "kind", "reason") if k in expected}
    effective = record.effective
    if isinstance(effective, dict):    # the gate's `config:` reads its keys; `source` is prose
        if record.verdict in FAILING:   # a passing pair is `ok` whatever its configuration
            out["effective"] = {k: v for k, v in effective.items() if k != "source"}
        elif any(k in effective for k in MACHINE):   # a cluster run: the machine that produced the pair
            out["effective"] = {k: effective[k] for k in MACHINE if k in effective}
    batch = record.batch
    if isinstance(batch, dict) and "alone" in batch:   # why a batched pair was run again alone
        out["batch"] = batch
    declared = record.declared
    if isinstance(declared, dict):     # the gate's `within: declared` reads its verdict
        out["declared"] = {k: declared[k] for k in ("precision", "verdict", "ratio", "judged_by") if k in declared}
    if isinstance(record.silent, dict):   # the report's spec-silent table reads the readings chosen
        out["silent"] = record.silent
    out["detail"] = "summary"
    return out


def _program_folder(record: Record) -> str:
    """The folder conformance/run/engine.py writes a case's programs in."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{record.case}-{str(record.case_digest)[:8]}")[:150]


def finish(out_dir, records: list[Record], mode: str = "failing") -> dict[tuple[str, str], Record]:
    """Trim results.jsonl and prune programs/ for ``mode`` (nothing for ``full``); ``records``
    are the newest record of every pair in the results file, gated. Returns {(case, target): the
    line written} (empty for ``full``), so that the reports are written from what the file holds."""
    out_dir = Path(out_dir)
    if mode == "full":
        return {}
    lines: list[dict] = []
    kept: defaultdict[str, set[str]] = defaultdict(set)   # program folder -> the specs whose programs stay
    folders: dict[str, set[str]] = {}
    paged = {r.case for r in records if keeps_detail(r)}   # their pages show every target in full
    for r in records:
        folder = _program_folder(r)
        folders.setdefault(folder, set()).add(str(r.spec))
        if keeps_detail(r):
            kept[folder].add(str(r.spec))
        if keeps_detail(r) or r.detail == "summary":
            lines.append(r.as_dict())
        elif r.case in paged:
            lines.append(dict(summarize(r), **{k: r.extra[k] for k in COMPANION if k in r.extra}))
        else:
            lines.append(summarize(r))
    results = out_dir / "results.jsonl"
    write_atomic(results, "".join(json.dumps(_clean(r), separators=(",", ":")) + "\n" for r in lines))
    programs = out_dir / "programs"
    for folder, specs in folders.items():
        path = programs / folder
        if not path.is_dir():
            continue
        if not kept.get(folder):
            shutil.rmtree(path, ignore_errors=True)
            continue
        for f in path.iterdir():
            if any(f.name.startswith(spec + ".") for spec in specs - kept[folder]):
                f.unlink(missing_ok=True)
    shutil.rmtree(out_dir / "ablation", ignore_errors=True)
    written = [Record.from_dict(line) for line in lines]
    return {(r.case, r.target): r for r in written}
