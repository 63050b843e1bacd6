"""The converters × features table: per converter target (the converter, its options, the runtime and
its configuration), per feature of the one table (conformance/case/features.py), how many valid
cases passed, were refused, came out invalid or wrong (conformance/converters/outcomes.py): what a
converter author reads first. Rendered under the features × runtimes table (engines_matrix.py), in
index.html and summary.md.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict

from conformance.converters.outcomes import MEANING, OUTCOMES, column, outcome
from conformance.results import Record

ALL = "every valid case"
#: the cell's short letters after the pass count
SHORT = {"refused": "ref", "invalid": "inv", "wrong": "wrong", "crash": "crash"}


def build(records: list[Record]) -> dict:
    """``{"columns": [converter target label], "rows": [(feature, {label: Counter})]}``; empty where no
    record is a converter target's."""
    from conformance.report.engines_matrix import _rows_of
    cells: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for r in records:
        found = outcome(r)
        if found is None:
            continue
        label = column(r)
        for name in [ALL] + [n for n, _ in _rows_of(r.features or ())]:
            cells[name][label][found] += 1
    if not cells:
        return {"columns": [], "rows": []}
    columns = sorted({label for row in cells.values() for label in row})
    from conformance.report.engines_matrix import _ROWS
    order = {name: i for i, (name, _) in enumerate(_ROWS)}
    rows = sorted(cells.items(), key=lambda kv: -1 if kv[0] == ALL else order.get(kv[0], len(order)))
    return {"columns": columns, "rows": [(name, dict(by)) for name, by in rows]}


def cell_text(counts: Counter | None) -> str:
    """``12 pass · 3 ref · 1 inv · 2 wrong``; ``—`` where no pair."""
    if not counts:
        return "—"
    parts = [f"{counts.get('pass', 0)} pass"] + [f"{counts[o]} {SHORT[o]}" for o, _ in OUTCOMES[1:] if counts.get(o)]
    return " · ".join(parts)


def to_markdown(table: dict) -> list[str]:
    """One row per converter target, one column per feature."""
    if not table["columns"]:
        return []
    features = [name for name, _ in table["rows"]]
    out = ["| converter → runtime | " + " | ".join(features) + " |", "|---|" + "---|" * len(features)]
    for label in table["columns"]:
        cells = [cell_text(by.get(label)) for _, by in table["rows"]]
        out.append(f"| `{label}` | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "Outcomes: " + "; ".join(f"**{name}**: {meaning}" for name, meaning in OUTCOMES) + "."]
    return out


def to_html(table: dict) -> str:
    if not table["columns"]:
        return ""
    esc = html.escape
    features = [name for name, _ in table["rows"]]
    out = ['<h3 id="converters">Converters × features <small>per converter target, the valid cases that passed, '
           'were refused, came out invalid or wrong (docs/converters.md)</small></h3>',
           '<div class="scroll"><table class="tbl small converter-matrix"><thead><tr><th>converter → runtime</th>'
           + "".join(f"<th>{esc(f)}</th>" for f in features) + "</tr></thead><tbody>"]
    for label in table["columns"]:
        out.append(f'<tr><th class="mono">{esc(label)}</th>')
        for _, by in table["rows"]:
            counts = by.get(label)
            bad = sum(n for o, n in (counts or {}).items() if o != "pass")
            style = "" if not counts else (' style="background:#fde2e1"' if bad else ' style="background:#e3f6e5"')
            out.append(f"<td{style}>{esc(cell_text(counts))}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    out.append('<div class="legend-row small">' + " ".join(f"<span><b>{esc(n)}</b>: {esc(MEANING[n])}</span>"
                                                          for n, _ in OUTCOMES) + "</div>")
    return "\n".join(out)
