"""The devices side by side: one runtime (its name and version, one spec version, one converter) run
on two devices or more (torch on CPU and CUDA; onnxruntime's CPU and CUDA providers, OpenVINO's CPU
and GPU plugins, WebNN's cpu and gpu), and the cases whose verdicts part between them.

A *group* is such a runtime; its *columns* are its targets (device and configuration: CUDA in its
default configuration computing in tf32 and CUDA pinned to float32 are two columns of one device),
its *rows* the cases with verdicts on two of its devices or more where the verdicts differ or one
of them diverges, and its *pairs* every two columns on different devices with how many cases agree
and how many differ, by verdict pair. Everything comes from the records' own fields (``runtime``,
``runtime_version``, ``spec``, ``converter``, ``device``, ``config``): no id is parsed. The index
page, summary.md and each case's page lay it out (html.py, markdown.py); a run with no runtime on
two devices has no group, and the view is left out. What it shows, for a reader:
docs/outputs.md, "Devices side by side".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from conformance.compare.verdicts import FAILING, severity, worst
from conformance.report.view import config_of, natural_key, spec_family, spec_key
from conformance.results import Record


@dataclass(frozen=True)
class Column:
    """One target of a group: its device and configuration."""

    target: str
    device: str
    config: str   # the configuration's label (view.config_of): default, precision=pinned, precision=default→tf32

    @property
    def label(self) -> str:
        """The device and configuration as a target id writes them: ``CUDA/precision=default→tf32``."""
        return self.device + ("" if self.config == "default" else f"/{self.config}")

    def sort_key(self):
        """By device, the default configuration first (as the matrix orders a runtime's configurations)."""
        return (natural_key(self.device), not (self.config == "default" or self.config.startswith("precision=default")),
                self.config, self.target)


@dataclass
class Row:
    """One case of a group: its record on each column (None where that target has none)."""

    case: str
    op: str
    cells: list[Record | None]

    @property
    def records(self) -> list[Record]:
        return [r for r in self.cells if r is not None]

    @property
    def differ(self) -> bool:
        """Whether the verdicts are not all the same."""
        return len({r.verdict for r in self.records}) > 1

    @property
    def failing(self) -> bool:
        return any(r.verdict in FAILING for r in self.records)

    @property
    def worst(self) -> str:
        return worst([r.verdict for r in self.records])

    def sort_key(self):
        return (not self.differ, severity(self.worst), natural_key(self.case))


@dataclass
class Pair:
    """Two columns on different devices: the cases both have, agreeing (by verdict) or not (by pair)."""

    left: Column
    right: Column
    agree: Counter[str] = field(default_factory=Counter)
    differ: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def n_agree(self) -> int:
        return sum(self.agree.values())

    @property
    def n_differ(self) -> int:
        return sum(self.differ.values())

    @property
    def differences(self) -> list[tuple[str, str, int]]:
        """(left verdict, right verdict, cases), the most severe pair first, then the most cases."""
        return [(a, b, n) for (a, b), n in sorted(self.differ.items(), key=lambda kv: (
            min(severity(kv[0][0]), severity(kv[0][1])), -kv[1], kv[0]))]


@dataclass
class Group:
    """One runtime (name, version, spec version, converter) with targets on two devices or more."""

    runtime: str
    version: str
    spec: str
    spec_family: str
    converter: str
    columns: list[Column]
    rows: list[Row]
    pairs: list[Pair]

    @property
    def label(self) -> str:
        """``torch 2.11.0+cu130 @torch`` (``… via <converter>`` for a converter target)."""
        name = f"{self.runtime} {self.version}".strip() + f" @{self.spec}"
        return name + (f" via {self.converter}" if self.converter else "")

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(c.device for c in self.columns))

    def sort_key(self):
        return (self.runtime, natural_key(self.version), spec_key(self.spec, self.spec_family), self.converter)


def side_by_side(records: list[Record], every: bool = False) -> list[Group]:
    """The groups of ``records``: each runtime, spec version and converter whose targets ran on two
    devices or more. A group's rows are the cases with records on two of its devices or more whose
    verdicts differ or include a divergence (``every``: all of them, as a case's own page shows
    them), differing ones first, then the most severe; its pairs count every case both columns
    have. No group (an empty list) where no runtime ran on two devices."""
    by_group: dict[tuple[str, str, str, str], dict[str, dict[str, Record]]] = {}
    columns: dict[tuple[str, str, str, str], dict[str, Column]] = {}
    families: dict[tuple[str, str, str, str], str] = {}
    for r in records:
        if not (r.case and r.target and r.device and r.runtime):
            continue   # a record that does not say its device (a bare or foreign line) has no place here
        key = (str(r.runtime), str(r.runtime_version or ""), str(r.spec or ""), str(r.converter or ""))
        columns.setdefault(key, {}).setdefault(r.target, Column(r.target, str(r.device), config_of(r)))
        by_group.setdefault(key, {}).setdefault(r.case, {})[r.target] = r
        families.setdefault(key, spec_family(r))
    groups = []
    for key, cols in columns.items():
        if len({c.device for c in cols.values()}) < 2:
            continue
        ordered = sorted(cols.values(), key=Column.sort_key)
        pairs = [Pair(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:] if a.device != b.device]
        rows = []
        for case, by_target in by_group[key].items():
            cells = [by_target.get(c.target) for c in ordered]
            for pair in pairs:
                left, right = by_target.get(pair.left.target), by_target.get(pair.right.target)
                if left is None or right is None:
                    continue
                if left.verdict == right.verdict:
                    pair.agree[left.verdict] += 1
                else:
                    pair.differ[(left.verdict, right.verdict)] += 1
            if len({c.device for c, r in zip(ordered, cells, strict=True) if r is not None}) < 2:
                continue
            row = Row(case, str(next(r.op for r in cells if r is not None) or ""), cells)
            if every or row.differ or row.failing:
                rows.append(row)
        rows.sort(key=Row.sort_key)
        runtime, version, spec, converter = key
        groups.append(Group(runtime, version, spec, families[key], converter, ordered, rows, pairs))
    return sorted(groups, key=Group.sort_key)


def differing(groups: list[Group]) -> list[tuple[Group, Row]]:
    """Every group's rows whose verdicts differ between devices, the most severe first (the worst
    verdict of the row: conformance/compare/verdicts.py), then by case and runtime."""
    found = [(g, row) for g in groups for row in g.rows if row.differ]
    return sorted(found, key=lambda gr: (severity(gr[1].worst), natural_key(gr[1].case), gr[0].sort_key()))
