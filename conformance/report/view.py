"""What the report pages show, computed from results records: families, targets, worst verdicts,
the cross-spec differences. Plain data in, plain data out; the templates only lay it out.

A record is one line of results.jsonl (conformance/run/engine.py). Fields the report reads when
present and does without otherwise: ``gate`` and ``expected`` (conformance/gate.py),
``worst_elements`` and ``error_by_step`` (per output), ``attributes``, ``shape``, ``inputs``,
``semantics`` (the spec's semantics profile), ``runtime_family``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict

from conformance.compare.verdicts import FAILING, severity, worst
from conformance.runtimes.effective import config_label

GATES = ("new", "baseline", "expected", "fixed", "ok")


def family_of(case_id: str) -> str:
    """The case id without its matrix part: `gru/x[direction=reverse]` -> `gru/x`."""
    return case_id.split("[", 1)[0]


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
    return [tuple(p.split("=", 1)) if "=" in p else (p, "") for p in parts if p]


def clauses_of(rec: dict) -> list[str]:
    """A record's spec clauses (a list; a lone string is one clause)."""
    c = rec.get("clause") or []
    return [c] if isinstance(c, str) else [str(x) for x in c]


def natural_key(text: str):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(text)) if t]


SPEC_FAMILY_ORDER = ("onnx", "openvino", "directml", "torch")


def spec_family(spec: str) -> str:
    return str(spec).split("-", 1)[0]


def spec_key(spec: str):
    fam = spec_family(spec)
    rank = SPEC_FAMILY_ORDER.index(fam) if fam in SPEC_FAMILY_ORDER else len(SPEC_FAMILY_ORDER)
    return (rank, fam, natural_key(spec))


def runtime_family(rec: dict) -> str:
    """Runtimes that share an implementation under different program formats (OpenVINO reads ONNX
    and IR under one name; `onnxruntime-dml` is onnxruntime). A record may name it outright."""
    if rec.get("runtime_family"):
        return rec["runtime_family"]
    return re.sub(r"-(dml|ir)$", "", str(rec.get("runtime", "")))


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


def error_measure(rec: dict):
    """(value, kind) of a record's worst error: the ratio to the tolerance, else max_abs_err."""
    ratio = num(rec.get("ratio"))
    if ratio is not None:
        return ratio, "ratio"
    err = num(rec.get("max_abs_err"))
    if err is not None:
        return err, "abs"
    return None, ""


def _finite_max(values):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return max(vals) if vals else None


# ----------------------------------------------------------------------------------------- targets

class Target:
    """A column of the matrix, from the records' own fields (and run.json's target list)."""

    def __init__(self, rec: dict, index: int = 0):
        self.id = rec["target"]
        self.runtime = str(rec.get("runtime", "?"))
        self.version = str(rec.get("runtime_version") or rec.get("version") or "")
        self.device = str(rec.get("device") or "")
        # the configuration asked for, and the precision it computes float32 in where not f32's
        self.config = config_label(str(rec.get("config") or "default"), str(rec.get("target_precision") or ""))
        self.spec = str(rec.get("spec") or "")
        self.plugin = bool(rec.get("plugin"))
        self.description = str(rec.get("description_target") or "")
        self.index = index

    @property
    def runtime_label(self) -> str:
        return f"{self.runtime} {self.version}".strip()

    @property
    def setup_label(self) -> str:
        return self.device + ("" if self.config == "default" else f" · {self.config}")

    @property
    def spec_family(self) -> str:
        return spec_family(self.spec)

    @property
    def spec_version(self) -> str:
        return self.spec.partition("-")[2]

    @property
    def without_spec(self) -> str:
        """The target id with its spec version cut: the runtime, device and configuration."""
        return self.id.rsplit("@", 1)[0]

    def sort_key(self):
        return (self.runtime, natural_key(self.version), self.device, self.config != "default", self.config,
                spec_key(self.spec))


def collect_targets(records: list[dict]) -> list[Target]:
    seen = {}
    for r in records:
        if r["target"] not in seen:
            seen[r["target"]] = Target(r)
    targets = sorted(seen.values(), key=Target.sort_key)
    for i, t in enumerate(targets):
        t.index = i
    return targets


def header_groups(targets: list[Target]) -> tuple[list[dict], list[dict]]:
    """The two grouped header rows above the spec row: runtime (+version), then device/config."""
    runtimes, setups = [], []
    for t in targets:
        key = (t.runtime, t.version)
        if runtimes and runtimes[-1]["key"] == key:
            runtimes[-1]["cols"].append(t.index)
        else:
            runtimes.append({"key": key, "label": t.runtime, "version": t.version, "cols": [t.index],
                             "plugin": t.plugin})
        skey = (key, t.device, t.config)
        if setups and setups[-1]["key"] == skey:
            setups[-1]["cols"].append(t.index)
        else:
            setups.append({"key": skey, "label": t.setup_label, "cols": [t.index]})
    return runtimes, setups


# ------------------------------------------------------------------------------------------ matrix

class Cell:
    def __init__(self, records: list[dict]):
        self.records = records
        self.counts = Counter(r["verdict"] for r in records)
        live = [r for r in records if r.get("gate") != "expected"]
        self.verdict = worst(list(self.counts))
        live_worst = worst([r["verdict"] for r in live])
        # every record of the worst verdict is a known divergence: grey the cell, say so
        self.expected = bool(records) and (not live or severity(live_worst) > severity(self.verdict))
        self.shade = live_worst if (self.expected and live) else self.verdict
        self.gates = Counter(r.get("gate") for r in records if r.get("gate"))
        measures = [error_measure(r) for r in records if r["verdict"] not in ("pass",)] or \
                   [error_measure(r) for r in records]
        ratios = [v for v, k in measures if k == "ratio"]
        abss = [v for v, k in measures if k == "abs"]
        self.worst_ratio = _finite_max(ratios)
        self.worst_abs = _finite_max(abss) if self.worst_ratio is None else None

    @property
    def ordered_counts(self) -> list[tuple[str, int]]:
        return sorted(self.counts.items(), key=lambda kv: severity(kv[0]))

    @property
    def tokens(self) -> str:
        """For the client-side filter: the verdicts and gates present."""
        toks = set(self.counts) | {f"gate:{g}" for g in self.gates}
        if any(v in FAILING for v in self.counts):
            toks.add("failing")
        return " ".join(sorted(toks))


class Family:
    def __init__(self, name: str, records: list[dict], targets: list[Target]):
        self.name = name
        self.records = records
        first = records[0]
        self.op = str(first.get("op") or name.split("/")[0].upper())
        self.invalid = any(r.get("expect") == "invalid" for r in records)
        self.file = first.get("file") or ""
        self.clauses = list(dict.fromkeys(c for r in records for c in clauses_of(r)))
        self.case_ids = sorted({r["case"] for r in records}, key=natural_key)
        by_target = defaultdict(list)
        for r in records:
            by_target[r["target"]].append(r)
        self.cells = [Cell(by_target[t.id]) if by_target.get(t.id) else None for t in targets]
        self.counts = Counter(r["verdict"] for r in records)
        self.verdict = worst(list(self.counts))
        self.slug = slug(name)
        self.specs = sorted({str(r.get("spec")) for r in records}, key=spec_key)

    @property
    def search(self) -> str:
        return "\n".join([self.name, *self.case_ids]).lower()


def group_families(records: list[dict], targets: list[Target]) -> list[tuple[str, list[Family]]]:
    """Families grouped by op; inside an op, valid families first, then the invalid ones."""
    fams = defaultdict(list)
    for r in records:
        fams[family_of(r["case"])].append(r)
    families = [Family(name, recs, targets) for name, recs in fams.items()]
    by_op = defaultdict(list)
    for f in families:
        by_op[f.op].append(f)
    out = []
    for op in sorted(by_op, key=lambda o: ({"RNN": 0, "GRU": 1, "LSTM": 2}.get(o, 3), o)):
        out.append((op, sorted(by_op[op], key=lambda f: (f.invalid, natural_key(f.name)))))
    return out


def totals(records: list[dict], targets: list[Target]) -> list[Cell]:
    by_target = defaultdict(list)
    for r in records:
        by_target[r["target"]].append(r)
    return [Cell(by_target[t.id]) for t in targets]


# ------------------------------------------------------------------------------------- differences

def _diff_kind(verdicts) -> str:
    """'' when all agree; 'expressibility' when the only difference is a spec unable to say the
    case; 'verdict' otherwise."""
    vs = set(verdicts)
    if len(vs) <= 1:
        return ""
    return "verdict" if len(vs - {"not-expressible"}) > 1 else "expressibility"


def version_differences(records: list[dict]) -> dict:
    """The same case on the same runtime, device and configuration under different ONNX versions."""
    groups = defaultdict(dict)
    for r in records:
        if str(r.get("spec", "")).startswith("onnx-"):
            groups[(r["case"], r["target"].rsplit("@", 1)[0])][r["spec"]] = r
    specs = sorted({s for g in groups.values() for s in g}, key=spec_key)
    rows = {"verdict": [], "expressibility": []}
    for (case, where), by_spec in groups.items():
        kind = _diff_kind(r["verdict"] for r in by_spec.values())
        if kind:
            rows[kind].append({"case": case, "where": where, "by_spec": by_spec, "op": _op(by_spec)})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["where"]))
    return {"specs": specs, **rows}


def ir_vs_frontend(records: list[dict]) -> dict:
    """OpenVINO reading its own IR (specs openvino-*) against OpenVINO reading ONNX (specs onnx-*),
    for the same case, version, device and configuration."""
    groups = defaultdict(lambda: {"ir": {}, "onnx": {}})
    for r in records:
        if runtime_family(r) != "openvino":
            continue
        spec = str(r.get("spec", ""))
        path = "ir" if spec.startswith("openvino-") else "onnx" if spec.startswith("onnx-") else None
        if path:
            key = (r["case"], r["target"].split("@", 1)[0])
            groups[key][path][spec] = r
    ir_specs = sorted({s for g in groups.values() for s in g["ir"]}, key=spec_key)
    fe_specs = sorted({s for g in groups.values() for s in g["onnx"]}, key=spec_key)
    rows = {"verdict": [], "expressibility": []}
    for (case, where), g in groups.items():
        if not g["ir"] or not g["onnx"]:
            continue
        ir_v = {r["verdict"] for r in g["ir"].values()}
        fe_v = {r["verdict"] for r in g["onnx"].values()}
        if ir_v == fe_v:
            continue
        ir_s, fe_s = ir_v - {"not-expressible"}, fe_v - {"not-expressible"}
        kind = "verdict" if ir_s and fe_s and ir_s != fe_s else "expressibility"
        rows[kind].append({"case": case, "where": where, "ir": g["ir"], "onnx": g["onnx"],
                           "op": _op({**g["ir"], **g["onnx"]})})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["where"]))
    return {"ir_specs": ir_specs, "onnx_specs": fe_specs, "paired": sum(1 for g in groups.values()
                                                                          if g["ir"] and g["onnx"]), **rows}


def spec_family_differences(records: list[dict]) -> dict:
    """The same case on the same runtime family judged under different spec families (each under
    its own semantics profile): where the verdicts part, and which reading each one matched."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in records:
        groups[(r["case"], runtime_family(r))][spec_family(r.get("spec", ""))].append(r)
    families = sorted({f for g in groups.values() for f in g}, key=lambda f: spec_key(f + "-"))
    rows = {"verdict": [], "expressibility": []}
    for (case, rfam), by_fam in groups.items():
        if len(by_fam) < 2:
            continue
        sets = {f: frozenset(r["verdict"] for r in recs) for f, recs in by_fam.items()}
        if len(set(sets.values())) <= 1:
            continue
        stripped = {v - {"not-expressible"} for v in sets.values()}
        kind = "verdict" if len({s for s in stripped if s}) > 1 else "expressibility"
        cells = {}
        for f, recs in by_fam.items():
            cells[f] = {
                "verdicts": sorted(Counter(r["verdict"] for r in recs).items(), key=lambda kv: severity(kv[0])),
                "readings": sorted({str(r["reading"]) for r in recs if r.get("reading")}),
                "semantics": sorted({str(r.get("semantics") or (r.get("oracle") or {}).get("profile") or "")
                                     for r in recs} - {""}),
                "worst": min(recs, key=lambda r: severity(r["verdict"])),
            }
        rows[kind].append({"case": case, "runtime": rfam, "cells": cells,
                           "records": [r for recs in by_fam.values() for r in recs],
                           "op": _op({i: r for i, recs in enumerate(by_fam.values()) for r in recs})})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["runtime"]))
    return {"families": families, **rows}


def _op(by_key: dict) -> str:
    for r in by_key.values():
        return str(r.get("op", ""))
    return ""


# -------------------------------------------------------------------------------------------- gate

def tokens(records) -> str:
    """The filter tokens of a group of records: verdicts, `failing`, `gate:<gate>`."""
    toks = set()
    for r in records:
        toks.add(r["verdict"])
        if r["verdict"] in FAILING:
            toks.add("failing")
        if r.get("gate"):
            toks.add(f"gate:{r['gate']}")
    return " ".join(sorted(toks))


def gate_summary(records: list[dict]) -> dict | None:
    """New, expected, fixed and baseline-known records; None when no record went through a gate."""
    gated = [r for r in records if r.get("gate")]
    if not gated:
        return None
    counts = Counter(r["gate"] for r in gated)
    new = sorted((r for r in gated if r["gate"] == "new"), key=lambda r: (severity(r["verdict"]),
                                                                          natural_key(r["case"]), r["target"]))
    expected = defaultdict(list)
    for r in gated:
        if r["gate"] == "expected":
            e = r.get("expected") or {}
            expected[(str(e.get("kind", "")), str(e.get("reason", "")), str(e.get("link", "")))].append(r)
    fixed = [r for r in gated if r["gate"] == "fixed"]
    return {
        "counts": counts, "new": new, "fixed": sorted(fixed, key=lambda r: (natural_key(r["case"]), r["target"])),
        "expected": [{"kind": k, "reason": reason, "link": link, "records": recs,
                      "targets": sorted({r["target"] for r in recs})}
                     for (k, reason, link), recs in sorted(expected.items(), key=lambda kv: -len(kv[1]))],
        "baseline": [r for r in gated if r["gate"] == "baseline"],
    }


def safe_link(url) -> str | None:
    """Only http(s) links become hrefs; anything else (javascript:, data:) is shown as text."""
    url = str(url or "").strip()
    return url if re.match(r"https?://", url, re.IGNORECASE) else None


# -- where the specs are silent ---------------------------------------------------------------------

def silent_table(records: list[dict]) -> dict | None:
    """The spec-silent table: a row per silent point (the reason code of the unspecified elements),
    a column per runtime configuration (the target without its spec version), and in each cell what
    that runtime put there across its pairs: the plausible reading it chose (``zeros``,
    ``initial-state``, ...), or ``implausible`` or ``garbage``, with counts and an example case.
    None when no record has unspecified elements."""
    cells: dict = defaultdict(lambda: defaultdict(lambda: {"counts": Counter(), "example": {}}))
    columns = {}
    for r in records:
        silent = r.get("silent")
        if not silent:
            continue
        column = str(r["target"]).rsplit("@", 1)[0]
        columns.setdefault(column, (str(r.get("runtime", "")), natural_key(str(r.get("runtime_version", ""))), column))
        for point, entry in silent.get("points", {}).items():
            cell = cells[point][column]
            reading = str(entry.get("reading", "?"))
            cell["counts"][reading] += 1
            cell["example"].setdefault(reading, r["case"])
    if not cells:
        return None
    order = sorted(columns, key=lambda c: columns[c])
    rows = []
    for point in sorted(cells):
        row = []
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
