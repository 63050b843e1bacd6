"""What the report pages show, computed from results records: families, targets, worst verdicts,
the cross-spec differences. Plain data in, plain data out; the templates only lay it out.

A record is one line of results.jsonl, read back as a ``Record`` (conformance/results.py). Fields the report reads when
present and does without otherwise: ``gate`` and ``expected`` (conformance/gate/apply.py),
``worst_elements`` and ``error_by_step`` (per output), ``attributes``, ``shape``, ``inputs``,
``semantics`` (the spec's semantics profile), ``spec_family`` and ``runtime_family`` (from the Spec
and the Target: conformance/results.py ``Record``; the report never parses an id for them).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict

from conformance.case.vocabulary import SPEC_FAMILIES
from conformance.compare.verdicts import FAILING, severity
from conformance.results import Record
from conformance.runtimes.effective import config_label

GATES = ("new", "baseline", "expected", "fixed", "ok", "fallback")


def matrix_params(case_id: str) -> list[tuple[str, str]]:
    """The matrix values in a case id, split at top-level commas (values may hold [..] and {..})."""
    _, sep, rest = case_id.partition("[")
    if not sep or not rest.endswith("]"):
        return []
    body, parts, depth, cur = rest[:-1], [], 0, ""
    for ch in body:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [(p.split("=", 1)[0], p.split("=", 1)[1]) if "=" in p else (p, "") for p in parts if p]


def clauses_of(rec: Record) -> list[str]:
    """A record's spec clauses (a list; a lone string is one clause)."""
    c = rec.clause or []
    return [c] if isinstance(c, str) else [str(x) for x in c]


def natural_key(text: str):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(text)) if t]


def spec_family(rec: Record) -> str:
    """The record's spec family (``onnx``, ``openvino``, ...), as its Spec names it. Results written
    before records carried it give their spec's name."""
    return str(rec.spec_family or rec.spec)


def spec_key(spec: str, fam: str = ""):
    """Sorting specs: by family in SPEC_FAMILIES, then naturally by name."""
    fam = fam or next((f for f in SPEC_FAMILIES if str(spec) == f or str(spec).startswith(f + "-")), str(spec))
    rank = SPEC_FAMILIES.index(fam) if fam in SPEC_FAMILIES else len(SPEC_FAMILIES)
    return (rank, fam, natural_key(spec))


def runtime_and_device(rec: Record | dict) -> str:
    """``runtime-version/device`` of a record's target, from the record's fields (or of run.json's
    target entry, which names the version ``version``)."""
    version = str(rec.get("runtime_version") or rec.get("version") or "")
    return f"{rec.get('runtime', '?')}" + (f"-{version}" if version else "") + f"/{rec.get('device') or ''}"


def config_of(rec: Record | dict) -> str:
    """The label of a record's (or a run.json target entry's) configuration, as target ids and the
    matrix show it (``default``, ``precision=pinned``, ``precision=default→bf16``)."""
    return config_label(str(rec.get("config") or "default"),
                        str(rec.get("target_precision") or rec.get("precision") or ""))


def setup_of_record(rec: Record | dict) -> str:
    """The runtime, its version, the device and the configuration of a record's target (its id
    without the spec version), built from the record's own fields, not parsed from the id."""
    label = config_of(rec)
    return runtime_and_device(rec) + ("" if label == "default" else f"/{label}")


def machines(configuration: dict) -> str:
    """Where a cluster run's target ran: ``host (worker), ...`` from its ``configuration.workers``."""
    found = configuration.get("workers") or []
    return ", ".join(sorted({f"{w.get('host', '?')} ({w.get('worker', '?')})" for w in found if isinstance(w, dict)}))


def runtime_family(rec: Record) -> str:
    """Runtimes that share an implementation under different program formats (OpenVINO reads ONNX
    and IR under one name; `onnxruntime-dml` is onnxruntime). A record may name it outright."""
    return str(rec.runtime_family or rec.runtime)


def slug(text: str, limit: int = 80) -> str:
    """A file name for an id: readable, safe on every file system, unique through a short hash."""
    readable = re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_.")[:limit]
    return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def num(value):
    """A record's number: JSON has no inf/nan, so results.jsonl writes them as strings."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, bool):
        return None
    return value


def time_step_of(value):
    """`time step 3`, `final state after time step 2`, or an int -> 3 / 2; None when not stated."""
    if isinstance(value, int):
        return value
    m = re.search(r"(\d+)\s*$", str(value or ""))
    return int(m.group(1)) if m else None


def error_measure(rec: Record):
    """(value, kind) of a record's worst error: the ratio to the tolerance, else max_abs_err."""
    ratio = num(rec.ratio)
    if ratio is not None:
        return ratio, "ratio"
    err = num(rec.max_abs_err)
    if err is not None:
        return err, "abs"
    return None, ""


def _finite_max(values):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return max(vals) if vals else None


# -------------------------------------------------------------------------------------------- gate

def tokens(records: list[Record]) -> str:
    """The filter tokens of a group of records: verdicts, `failing`, `gate:<gate>`."""
    toks = set()
    for r in records:
        toks.add(r.verdict)
        if r.verdict in FAILING:
            toks.add("failing")
        if r.gate:
            toks.add(f"gate:{r.gate}")
    return " ".join(sorted(toks))


def gate_summary(records: list[Record]) -> dict | None:
    """New, expected, fixed and baseline-known records; None when no record went through a gate."""
    gated = [r for r in records if r.gate]
    if not gated:
        return None
    counts = Counter(r.gate for r in gated)
    new = sorted((r for r in gated if r.gate == "new"), key=lambda r: (severity(r.verdict),
                                                                       natural_key(r.case), r.target))
    expected = defaultdict(list)
    for r in gated:
        if r.gate == "expected":
            e = r.expected or {}
            expected[(str(e.get("kind", "")), str(e.get("reason", "")), str(e.get("link", "")))].append(r)
    fixed = [r for r in gated if r.gate == "fixed"]
    return {
        "counts": counts, "new": new, "fixed": sorted(fixed, key=lambda r: (natural_key(r.case), r.target)),
        "expected": [{"kind": k, "reason": reason, "link": link, "records": recs,
                      "targets": sorted({r.target for r in recs})}
                     for (k, reason, link), recs in sorted(expected.items(), key=lambda kv: -len(kv[1]))],
        "baseline": [r for r in gated if r.gate == "baseline"],
    }


def safe_link(url) -> str | None:
    """Only http(s) links become hrefs; anything else (javascript:, data:) is shown as text."""
    url = str(url or "").strip()
    return url if re.match(r"https?://", url, re.IGNORECASE) else None


# -- where the specs are silent ---------------------------------------------------------------------

def silent_table(records: list[Record]) -> dict | None:
    """The spec-silent table: a row per silent point (the reason code of the unspecified elements),
    a column per runtime configuration (the target without its spec version), and in each cell what
    that runtime put there across its pairs: the plausible reading it chose (``zeros``,
    ``initial-state``, ...), or ``implausible`` or ``garbage``, with counts and an example case.
    None when no record has unspecified elements."""
    cells: dict = defaultdict(lambda: defaultdict(lambda: {"counts": Counter(), "example": {}}))
    columns: dict[str, tuple] = {}  # column -> its sort key
    for r in records:
        silent = r.silent
        if not silent:
            continue
        column = setup_of_record(r)
        columns.setdefault(column, (str(r.runtime), natural_key(str(r.runtime_version)), column))
        for point, entry in silent.get("points", {}).items():
            cell = cells[point][column]
            reading = str(entry.get("reading", "?"))
            cell["counts"][reading] += 1
            cell["example"].setdefault(reading, r.case)
    if not cells:
        return None
    order = sorted(columns, key=lambda c: columns[c])
    rows = []
    for point in sorted(cells):
        row: list[dict | None] = []
        for column in order:
            cell = cells[point].get(column)
            if cell is None:
                row.append(None)
                continue
            ranked = sorted(cell["counts"].items(), key=lambda kv: (SILENT_RANK.get(kv[0], 0), -kv[1], kv[0]))
            worst = max((SILENT_RANK.get(k, 0) for k in cell["counts"]), default=0)
            row.append({"readings": [{"reading": k, "count": n, "example": cell["example"][k]} for k, n in ranked],
                        "worst": {1: "implausible", 2: "garbage"}.get(worst, "plausible")})
        rows.append({"point": point, "cells": row})
    return {"columns": order, "rows": rows}


#: the order a cell lists its readings in: plausible ones first, then implausible, then garbage
SILENT_RANK = {"implausible": 1, "garbage": 2}
