"""The report's matrix: its columns (targets, from the records' own fields), its rows (case
families, grouped by op) and its cells (the worst verdict of a family on a target)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance.case.model import case_family
from conformance.compare.verdicts import FAILING, severity, worst
from conformance.report.view import (
    _finite_max,
    clauses_of,
    config_of,
    error_measure,
    natural_key,
    setup_of_record,
    slug,
    spec_family,
    spec_key,
)
from conformance.results import Record
from conformance.runtimes.configuration import TargetConfig


class Target:
    """A column of the matrix, from the records' own fields (and run.json's target list)."""

    def __init__(self, rec: Record, index: int = 0):
        self.id = rec.target
        self.runtime = str(rec.runtime if rec.has("runtime") else "?")
        self.version = str(rec.runtime_version or "")
        self.device = str(rec.device or "")
        # the configuration asked for, and the precision it computes float32 in where not f32's
        self.config = config_of(rec)
        self.spec = str(rec.spec or "")
        self.spec_family = spec_family(rec)
        self.setup = setup_of_record(rec)
        self.plugin = bool(rec.plugin)
        self.description = ""   # a record does not describe its target: run.json does (html._run_targets)
        self.index = index

    @property
    def runtime_label(self) -> str:
        return f"{self.runtime} {self.version}".strip()

    @property
    def setup_label(self) -> str:
        return self.device + ("" if self.config == "default" else f" · {self.config}")

    @property
    def spec_version(self) -> str:
        return self.spec[len(self.spec_family) + 1:] if self.spec.startswith(self.spec_family + "-") else ""

    @property
    def without_spec(self) -> str:
        """The runtime, device and configuration (the target id without its spec version)."""
        return self.setup

    def sort_key(self):
        """A runtime's configurations side by side under each spec version: (runtime, version,
        device, spec, configuration), the default configuration first."""
        return (self.runtime, natural_key(self.version), self.device, spec_key(self.spec, self.spec_family),
                not (self.config == "default" or self.config.startswith("precision=default")), self.config)

    #: the two lines of the matrix's last header row (set by :func:`header_groups`)
    leaf_top = ""
    leaf_bottom = ""


def collect_targets(records: list[Record]) -> list[Target]:
    seen = {}
    for r in records:
        if r.target not in seen:
            seen[r.target] = Target(r)
    targets = sorted(seen.values(), key=Target.sort_key)
    for i, t in enumerate(targets):
        t.index = i
    return targets


def config_leaf(config: str) -> tuple[str, str]:
    """A configuration as the two lines of a matrix column's header, the values in bold, so that
    columns side by side differ where their configurations do: ``precision=default→bf16`` ->
    (precision, default→bf16); ``precision=pinned/threads=4`` -> (precision · threads, pinned · 4)."""
    if "=" not in config:
        return "configuration", config
    found = TargetConfig.parse(config)
    shown = [(k, v if v is not None else "") for k, v in found.items]
    if found.items and found.items[0][0] == "precision" and found.measured:   # precision=default→bf16
        shown[0] = ("precision", f"{found.items[0][1]}→{found.measured}")
    elif found.measured:
        shown.append((f"precision→{found.measured}", ""))
    return " · ".join(k for k, _ in shown), " · ".join(v or k for k, v in shown)


def header_groups(targets: list[Target]) -> tuple[list[dict], list[dict]]:
    """The two grouped header rows above the last one: the runtime (+version), then, for a runtime
    run in one configuration, its device (and configuration) over its spec versions; for one run
    in several (OpenVINO's default and pinned precision), its device and spec version over its
    configurations, side by side. Sets each target's ``leaf_top``/``leaf_bottom``."""
    configs: dict[tuple, set[str]] = {}
    for t in targets:
        configs.setdefault((t.runtime, t.version, t.device), set()).add(t.config)
    runtimes: list[dict[str, Any]] = []
    setups: list[dict[str, Any]] = []
    for t in targets:
        key = (t.runtime, t.version)
        if runtimes and runtimes[-1]["key"] == key:
            runtimes[-1]["cols"].append(t.index)
        else:
            runtimes.append({"key": key, "label": t.runtime, "version": t.version, "cols": [t.index],
                             "plugin": t.plugin})
        several = len(configs[(t.runtime, t.version, t.device)]) > 1
        if several:
            skey: tuple = (key, t.device, "spec", t.spec)
            label = f"{t.device} · {t.spec}" if t.device else t.spec
            t.leaf_top, t.leaf_bottom = config_leaf(t.config)
        else:
            skey = (key, t.device, "config", t.config)
            label = t.setup_label
            t.leaf_top, t.leaf_bottom = t.spec_family, t.spec_version or t.spec
        if setups and setups[-1]["key"] == skey:
            setups[-1]["cols"].append(t.index)
        else:
            setups.append({"key": skey, "label": label, "cols": [t.index], "by_config": several})
    return runtimes, setups


class Cell:
    def __init__(self, records: list[Record]):
        self.records = records
        self.counts = Counter(r.verdict for r in records)
        live = [r for r in records if r.gate != "expected"]
        self.verdict = worst(list(self.counts))
        live_worst = worst([r.verdict for r in live])
        # every record of the worst verdict is a known divergence: grey the cell, say so
        self.expected = bool(records) and (not live or severity(live_worst) > severity(self.verdict))
        self.shade = live_worst if (self.expected and live) else self.verdict
        self.gates = Counter(r.gate for r in records if r.gate)
        measures = [error_measure(r) for r in records if r.verdict not in ("pass",)] or \
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
    def __init__(self, name: str, records: list[Record], targets: list[Target]):
        self.name = name
        self.records = records
        first = records[0]
        self.op = str(first.op or name.split("/")[0].upper())
        self.invalid = any(r.expect == "invalid" for r in records)
        self.file = first.file or ""
        self.clauses = list(dict.fromkeys(c for r in records for c in clauses_of(r)))
        self.case_ids = sorted({r.case for r in records}, key=natural_key)
        by_target = defaultdict(list)
        for r in records:
            by_target[r.target].append(r)
        self.cells = [Cell(by_target[t.id]) if by_target.get(t.id) else None for t in targets]
        self.counts = Counter(r.verdict for r in records)
        self.verdict = worst(list(self.counts))
        self.slug = slug(name)
        self.specs = sorted({str(r.spec) for r in records}, key=spec_key)

    @property
    def search(self) -> str:
        return "\n".join([self.name, *self.case_ids]).lower()


def group_families(records: list[Record], targets: list[Target]) -> list[tuple[str, list[Family]]]:
    """Families grouped by op; inside an op, valid families first, then the invalid ones."""
    fams = defaultdict(list)
    for r in records:
        fams[case_family(r.case)].append(r)
    families = [Family(name, recs, targets) for name, recs in fams.items()]
    by_op = defaultdict(list)
    for f in families:
        by_op[f.op].append(f)
    out = []
    for op in sorted(by_op, key=lambda o: ({"RNN": 0, "GRU": 1, "LSTM": 2}.get(o, 3), o)):
        out.append((op, sorted(by_op[op], key=lambda f: (f.invalid, natural_key(f.name)))))
    return out


def totals(records: list[Record], targets: list[Target]) -> list[Cell]:
    by_target = defaultdict(list)
    for r in records:
        by_target[r.target].append(r)
    return [Cell(by_target[t.id]) for t in targets]
