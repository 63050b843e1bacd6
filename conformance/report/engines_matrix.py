"""The cross-runtime feature matrix: op × feature × runtime, each cell the *class* of the verdicts
its pairs got (all pass, some fail, all fail, rejected, crashes, not expressible) with counts, so
that someone choosing an engine sees at a glance which attributes each implements correctly.

Rows are the rows of the one feature table (:data:`conformance.case.features.FEATURES`): a record
belongs to a row when one of its ``features`` tokens is one of the row's tokens (a key ending in
``=`` is a prefix). The first row of each op, *every valid case*, takes all its valid cases; the
last, *invalid cases*, the cases the spec forbids (``violates=...``), where a pass means the runtime
refused the case. Columns are runtimes (their version, spec family and configuration: OpenVINO's IR
and its ONNX frontend are two, its default configuration computing in bf16 and its pinned one are
two), merged across spec versions and devices. Verdicts and their
failing set, severity and colours come from :mod:`conformance.compare.verdicts`.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from conformance.case.features import FEATURES
from conformance.compare.verdicts import COLOURS, FAILING, SHORT, severity, worst
from conformance.report.view import config_of, natural_key, spec_family
from conformance.results import Record

#: the verdict classes, worst first: (name, what it means, the verdict whose colours it wears)
CLASSES: tuple[tuple[str, str, str], ...] = (
    ("crashes", "at least one pair crashed the runtime (or timed out)", "crash"),
    ("all fail", "every pair diverges, and not all by refusing the case", "fail"),
    ("rejected", "every divergent pair is a refusal of a valid case, and none passes", "rejected"),
    ("some fail", "some pairs pass, some diverge", "accepted-invalid"),
    ("all pass", "no pair diverges", "pass"),
    ("not expressible", "no pair could be run: the spec cannot say these cases", "not-expressible"),
)

MEANING = {name: meaning for name, meaning, _ in CLASSES}
VERDICT_OF_CLASS = {name: verdict for name, _, verdict in CLASSES}
#: tokens that are not features of a valid case's semantics (they get rows of their own, or none)
_NOT_ROWS = ("violates=", "direction=")
#: the pseudo-rows
ALL_VALID, INVALID = "every valid case", "invalid cases"


def verdict_class(counts: Counter) -> str:
    """The class of a cell's verdict counts (:data:`CLASSES`)."""
    ran = {v: n for v, n in counts.items() if v not in ("not-expressible", "unspecified")}
    if not ran:
        return "not expressible" if counts.get("not-expressible") else "all pass"
    failing = {v: n for v, n in ran.items() if v in FAILING}
    if not failing:
        return "all pass"
    if failing.get("crash") or failing.get("timeout"):
        return "crashes"
    if len(failing) == len(ran):   # nothing passed
        return "rejected" if set(failing) == {"rejected"} else "all fail"
    return "some fail"


@dataclass
class Column:
    key: tuple
    runtime: str
    version: str
    spec_family: str
    config: str = "default"
    converter: str = ""   # the converter that wrote the programs (the converters' column group)

    @property
    def label(self) -> str:
        through = f"{self.converter} → " if self.converter else ""
        return (through + f"{self.runtime} {self.version}".strip()
                + ("" if self.config == "default" else f" {self.config}"))


def column_key(record: Record) -> tuple:
    """A record's column: runtime, version, spec family, configuration label, and the converter that
    wrote its program (conformance/converters/), if any."""
    return (str(record.runtime or "?"), str(record.runtime_version or ""),
            spec_family(record), config_of(record), str(record.converter or ""))


@dataclass
class FCell:
    counts: Counter = field(default_factory=Counter)

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    @property
    def klass(self) -> str:
        return verdict_class(self.counts)

    @property
    def passed(self) -> int:
        return self.counts.get("pass", 0)

    @property
    def ran(self) -> int:
        return sum(n for v, n in self.counts.items() if v not in ("not-expressible", "unspecified"))

    @property
    def summary(self) -> str:
        """``12/40 pass · fail 20 · rej 8``: the passes among the pairs that ran, then each other
        verdict, worst first."""
        others = sorted(((v, n) for v, n in self.counts.items() if v != "pass"), key=lambda kv: severity(kv[0]))
        parts = [f"{self.passed}/{self.ran} pass"] if self.ran else []
        return " · ".join(parts + [f"{SHORT.get(v, v)} {n}" for v, n in others])

    @property
    def colours(self) -> tuple[str, str]:
        return COLOURS.get(VERDICT_OF_CLASS[self.klass], ("#ffffff", "#000000"))

    @property
    def worst(self) -> str:
        return worst(list(self.counts))


@dataclass
class Row:
    op: str
    name: str            # the feature table's row name, or ALL_VALID / INVALID
    tokens: str          # the tokens it covers, for the reader
    cells: list


def _feature_rows() -> list[tuple[str, tuple[str, ...]]]:
    """The feature table's rows as (name, token keys); rows whose tokens a record cannot tell
    apart (``zero_bias`` and ``B`` are both the token ``B``) are one row, named by both."""
    rows: dict[tuple[str, ...], list[str]] = {}
    for feature in FEATURES:
        keys = tuple(k for k in feature.tokens if not k.startswith(_NOT_ROWS))
        if keys:
            rows.setdefault(keys, []).append(feature.name)
    return [(" / ".join(names), keys) for keys, names in rows.items()]


_ROWS = _feature_rows()


def _rows_of(tokens) -> list[tuple[str, str]]:
    """The feature table's rows a record's tokens fall in: (name, the tokens shown)."""
    return [(name, ", ".join(k + ("*" if k.endswith("=") else "") for k in keys)) for name, keys in _ROWS
            if any(t == k or (k.endswith("=") and t.startswith(k)) for k in keys for t in tokens)]


def columns_of(records: list[Record]) -> list[Column]:
    seen: dict[tuple, Column] = {}
    for r in records:
        key = column_key(r)
        seen.setdefault(key, Column(key, *key))
    return sorted(seen.values(), key=lambda c: (bool(c.converter), c.converter, c.runtime, natural_key(c.version),
                                                c.spec_family, c.config))


def build(records: list[Record]) -> dict:
    """``{"columns": [Column], "ops": [(op, [Row])], "classes": CLASSES}``: one row per feature of
    the table that some record of the op has, in the table's order, after *every valid case*;
    *invalid cases* last. Records without ``features`` (results from before they were recorded) are
    left out."""
    records = [r for r in records if r.case and r.target and r.features is not None]
    columns = columns_of(records)
    index = {c.key: i for i, c in enumerate(columns)}
    cells: dict[tuple[str, str], list[FCell]] = defaultdict(lambda: [FCell() for _ in columns])
    shown: dict[tuple[str, str], str] = {}
    for r in records:
        op = str(r.op or "?")
        col = index[column_key(r)]
        tokens = list(r.features)
        invalid = r.expect == "invalid" or any(str(t).startswith("violates=") for t in tokens)
        names = [(INVALID, "violates=*")] if invalid else [(ALL_VALID, "")] + _rows_of(tokens)
        for name, shown_tokens in names:
            cells[(op, name)][col].counts[r.verdict] += 1
            shown[(op, name)] = shown_tokens
    order = {name: i for i, (name, _) in enumerate(_ROWS)}

    def rank(name: str) -> int:
        return -1 if name == ALL_VALID else len(order) if name == INVALID else order.get(name, len(order))

    ops = []
    for op in sorted({op for op, _ in cells}, key=lambda o: ({"RNN": 0, "GRU": 1, "LSTM": 2}.get(o, 3), o)):
        row_names = sorted((name for o, name in cells if o == op), key=rank)
        ops.append((op, [Row(op, name, shown[(op, name)], cells[(op, name)]) for name in row_names]))
    from conformance.report import converters
    return {"columns": columns, "ops": ops, "classes": CLASSES, "converters": converters.build(records)}


# -- rendering ------------------------------------------------------------------------------------

def to_html(matrix: dict) -> str:
    """The matrix as a self-contained HTML table (inline colours), for the index page."""
    columns, ops = matrix["columns"], matrix["ops"]
    if not columns:
        return ""
    esc = html.escape
    plain = sum(1 for c in columns if not c.converter)
    group = ""  # the converter targets' columns as a group of their own, after the runtimes'
    if plain < len(columns):
        group = (f'<tr><th></th><th colspan="{plain}">runtimes</th><th colspan="{len(columns) - plain}">'
                 f"through a converter (docs/converters.md)</th></tr>" if plain else "")
    out = ['<div class="scroll"><table class="tbl small feature-matrix" id="feature-matrix">',
           "<thead>" + group + "<tr><th>op · feature</th>"
           + "".join(f'<th class="mono">{esc(c.label)}<br><small>{esc(c.spec_family)}</small></th>' for c in columns)
           + "</tr></thead><tbody>"]
    for op, rows in ops:
        out.append(f'<tr class="op-row" data-op="{esc(op)}"><th colspan="{len(columns) + 1}">{esc(op)}</th></tr>')
        for row in rows:
            title = f' title="{esc(row.tokens)}"' if row.tokens else ""
            hint = f" <small>{esc(row.tokens)}</small>" if row.tokens not in ("", row.name) else ""
            out.append(f'<tr data-op="{esc(op)}"><th{title}>{esc(row.name)}{hint}</th>')
            for cell in row.cells:
                if not cell.n:
                    out.append('<td class="muted">—</td>')
                    continue
                bg, fg = cell.colours
                out.append(f'<td class="fm-cell" data-class="{esc(cell.klass)}" style="background:{bg};color:{fg}" '
                           f'title="{esc(MEANING[cell.klass])}"><b>{esc(cell.klass)}</b><br>'
                           f"<small>{esc(cell.summary)}</small></td>")
            out.append("</tr>")
    out.append("</tbody></table></div>")
    legend = " ".join(f'<span><span class="sw" style="background:{COLOURS[v][0]}"></span><b>{esc(name)}</b>: '
                      f"{esc(meaning)}</span>" for name, meaning, v in CLASSES)
    out.append(f'<div class="legend-row small">{legend}</div>')
    from conformance.report import converters
    out.append(converters.to_html(matrix.get("converters") or {"columns": []}))
    return "\n".join(out)


def to_markdown(matrix: dict) -> list[str]:
    """The matrix as a Markdown table (one per op), for summary.md."""
    columns, ops = matrix["columns"], matrix["ops"]
    if not columns:
        return []
    out = ["| op · feature | " + " | ".join(f"`{c.label}` {c.spec_family}" for c in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for op, rows in ops:
        for row in rows:
            cells = [f"**{cell.klass}** {cell.summary}" if cell.n else "—" for cell in row.cells]
            label = row.name if row.tokens in ("", row.name) else f"{row.name} (`{row.tokens}`)"
            out.append(f"| {op} · {label} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "Classes: " + "; ".join(f"**{name}**: {meaning}" for name, meaning, _ in CLASSES) + "."]
    from conformance.report import converters
    table = converters.to_markdown(matrix.get("converters") or {"columns": []})
    if table:
        out += ["", "**Converters × features** (valid cases per converter target: pass, refused, invalid, wrong)", "",
                *table]
    return out
