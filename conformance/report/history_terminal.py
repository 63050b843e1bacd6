"""What `conformance history` prints at its end: the divergence classes with the releases they
first and last affect and the release that fixed them, the support boundaries, one warning for
the expectations that cover nothing, and the gate (why the exit status is what it is).

Versions and file names are never cut: in a terminal wide enough the classes are a table whose
class column wraps; elsewhere (a pipe, a CI log, a narrow terminal) each class is a short block.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance.report.history_classes import regression_text
from conformance.report.history_support import changes

#: the longest class name printed whole (history.html has every one)
NAME_CHARS = 120


def _clip(text: str, limit: int = NAME_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def class_rows(model: dict) -> list[dict]:
    """Per class and runtime: the first release it shows in on any line, the last it affects, the
    release that fixed it on every line ("" while one is open) and its regressions, in words."""
    rows = []
    for cls in model.get("classes", []):
        by_runtime: dict[str, list[dict]] = {}
        for line in cls["lines"]:
            by_runtime.setdefault(line["runtime"], []).append(line)
        for runtime, lines in sorted(by_runtime.items()):
            order = model["releases"].get(runtime, [])
            shown = [ln for ln in lines if ln.get("first")]
            if not shown:
                continue
            fixed = "" if any(ln.get("fixed") is None for ln in shown) else max(
                (ln["fixed"] for ln in shown), key=order.index)
            again = sorted({regression_text(r) for ln in shown for r in ln.get("regressions", [])})
            unstable = sorted({r for ln in shown for r in ln.get("unstable", [])}, key=order.index)
            rows.append({"class": _clip(cls["name"]), "runtime": runtime, "unstable": ", ".join(unstable),
                         "first": min((ln["first"] for ln in shown), key=order.index),
                         "last": max((ln["last"] for ln in shown), key=order.index),
                         "fixed": fixed, "regressions": "; ".join(again)})
    return rows


def _classes(console: Console, model: dict, limit: int) -> None:
    rows = class_rows(model)
    if not rows:
        console.print("no divergence class in any release", highlight=False)
        return
    shown = rows[:limit]
    table = Table(title="divergence classes across releases", show_lines=False)
    table.add_column("class", overflow="fold", ratio=1)
    table.add_column("runtime", no_wrap=True)
    for column, title in (("first", "first"), ("last", "last affected"), ("fixed", "fixed in")):
        table.add_column(title, no_wrap=True, min_width=max(len(title), *(len(r[column]) for r in shown)))
    table.add_column("regressions · unstable", overflow="fold")
    for r in shown:
        notes = "; ".join(x for x in (r["regressions"], f"unstable: {r['unstable']}" if r["unstable"] else "") if x)
        table.add_row(escape(r["class"]), r["runtime"], r["first"], r["last"], r["fixed"] or "—", escape(notes))
    wide = sum(max(len(c), *(len(r[c]) for r in shown)) + 3 for c in ("runtime", "first", "last", "fixed"))
    if console.is_terminal and wide + 40 <= console.width:
        console.print(table)
    else:   # a pipe, a CI log or a narrow terminal: one block per class, never cut
        console.print("divergence classes across releases:", highlight=False)
        for r in shown:
            console.print(f"- {r['class']}", highlight=False, markup=False, soft_wrap=True)
            facts = f"{r['runtime']}: first {r['first']} · last affected {r['last']} · fixed in {r['fixed'] or '—'}"
            console.print(f"    {facts}", highlight=False, markup=False, soft_wrap=True)
            if r["regressions"]:
                console.print(f"    regressions: {r['regressions']}", highlight=False, markup=False, soft_wrap=True)
            if r["unstable"]:
                console.print(f"    unstable (passed in one run, failed in another): {r['unstable']}", highlight=False,
                              markup=False, soft_wrap=True)
    if len(rows) > limit:
        console.print(f"... and {len(rows) - limit} more rows in history.html", highlight=False)


def _support(console: Console, model: dict) -> None:
    for runtime, rows in (model.get("support") or {}).items():
        for row in changes(rows):
            lines = ", ".join(row["lines"])
            if row["since"]:
                said = (f"accepted since {row['since']}"
                        + (f" (first {row['first']})" if row["first"] != row["since"] else ""))
            elif row["first"]:
                said = f"first accepted by {row['first']}, not by the newest release"
            else:
                said = "accepted by no release"
            refused = [r for r, st in zip(model["releases"][runtime], row["states"]) if st not in (None, "accepts")]
            console.print(f"support: {runtime} {row['spec']} {row['op']}: {said}"
                          + (f"; refused or crashed on {', '.join(refused)}" if refused else "") + f" [{lines}]",
                          highlight=False, markup=False, soft_wrap=True)


def _unused(console: Console, model: dict) -> None:
    """One warning for the entries that cover nothing on every release where they apply."""
    idle = [e for e in model.get("expectations") or []
            if e["covers_nothing"]
            and not any(r["status"] == "covers" for rows in e["releases"].values() for r in rows)]
    if idle:
        console.print(f"warning: {len(idle)} expectation entr{'y' if len(idle) == 1 else 'ies'} of the runtimes in "
                      f"this history cover no failing pair on any release they apply to (history.html, "
                      f"\"Expectations across releases\"): " + ", ".join(e["where"] for e in idle[:5])
                      + (", ..." if len(idle) > 5 else ""), highlight=False, markup=False, soft_wrap=True)


def _gate(console: Console, model: dict) -> None:
    gate = model.get("gate") or {}
    for runtime, nr in (gate.get("not_run") or {}).items():
        console.print(f"warning: {runtime} {nr['release']}, the newest release selected, has no pairs ({nr['why']}); "
                      f"the gate reads {gate['newest'].get(runtime, 'no release')}", highlight=False, markup=False,
                      soft_wrap=True)
    grouped: dict[tuple, list[dict]] = {}
    for u in gate.get("uncovered", []):
        grouped.setdefault((u["class"], u["runtime"], u["release"], u["name"]), []).append(u)
    for (_, runtime, release, name), found in grouped.items():
        where = found[0]["line"] if len(found) == 1 else f"{len(found)} lines"
        console.print(f"NEW on {runtime} {release} (the newest): {_clip(name)} ({sum(u['pairs'] for u in found)} "
                      f"pairs on {where})", highlight=False, markup=False, soft_wrap=True)
    for label, found in (("REGRESSION", gate.get("regressions", [])),
                         ("regression the expectations cover", gate.get("known_regressions", []))):
        by_class: dict[tuple, list[str]] = {}
        for r in found:
            by_class.setdefault((r["class"], r["name"], regression_text(r)), []).append(r["line"])
        for (_, name, said), lines in by_class.items():
            where = lines[0] if len(lines) == 1 else f"{len(lines)} lines"
            console.print(f"{label}: {_clip(name)} on {where}: {said}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"gate: exit status {gate.get('status', 0)} ({len(grouped)} classes new on the "
                  f"newest releases, {len(gate.get('regressions', []))} regressions the expectations do not cover)",
                  highlight=False, soft_wrap=True)


def print_history(console: Console, model: dict, limit: int = 40) -> None:
    _classes(console, model, limit)
    _support(console, model)
    _unused(console, model)
    _gate(console, model)
