"""The terminal summary printed after a run: verdicts per target, then what is new and why (the
new divergences by cause, last, so that the end of a CI log names them), then the totals.

``verbosity`` -1 (``--quiet``): no per-target table; the causes, warnings and totals. 0: the table
too. 1 (``--verbose``): also every new pair with its message and repro, and the known causes.
The table never cuts a column: where it does not fit the width (a CI log is 80 columns to rich),
each target is one line instead.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from conformance.compare.verdicts import FAILING, TERMINAL, VERDICTS
from conformance.report import causes as causes_of
from conformance.results import Record

#: causes listed by name before "... and N more" (every one with --verbose)
MAX_CAUSES = 10


def _per_target(console: Console, by_target: dict, verdicts: list[str]) -> None:
    table = Table(title="verdicts per target")
    table.add_column("target", no_wrap=True)
    for v in verdicts:
        table.add_column(v, justify="right", style=TERMINAL.get(v, ""), no_wrap=True)
    for target in sorted(by_target):
        table.add_row(escape(target), *[str(by_target[target].get(v, 0) or "") for v in verdicts])
    # the table's own width, unbounded (console.measure clips it to the console's width)
    fits = console.is_terminal and Measurement.get(console, console.options.update(max_width=1 << 16),
                                                   table).maximum <= console.width
    if fits:
        console.print(table)
        return
    # not a terminal (nox, CI logs) or too narrow: one line per target, wrapped, never cut
    console.print("verdicts per target:", highlight=False)
    for target in sorted(by_target):
        counts = " · ".join(f"[{TERMINAL.get(v, '')}]{by_target[target][v]} {v}[/]" for v in verdicts
                            if by_target[target].get(v))
        console.print(f"  {escape(target)}: {counts}", highlight=False, soft_wrap=True)


def _cause(console: Console, g: dict, repro: bool = True) -> None:
    style = {"new": "bold red", "fixed": "green"}.get(g["status"], "dim")
    console.print(f"[{style}]{g['status'].upper()}[/] {escape(causes_of.line(g)[len(g['status']) + 1:])}",
                  highlight=False, soft_wrap=True)
    if g.get("reason") and g["status"] != "new":
        console.print(f"    {escape(g['kind'])}: {escape(g['reason'])}", highlight=False, soft_wrap=True)
    if repro and g["repro"]:
        console.print(f"    repro: {g['repro']}", highlight=False, markup=False, soft_wrap=True)


def summary(console: Console, records: list[Record], load_errors, skipped, out_dir, *, ran: int, resumed: int,
            wall_s: float, audit=None, sliced: bool = False, clusters=None, max_failures: int = 15,
            verbosity: int = 0) -> None:
    """``audit``: the gate's audit (conformance/gate/audit.py), each finding printed once; in a
    slice (``sliced``: -k or case paths), an entry that covers only passing pairs is a note, since
    the slice may have left its failing pairs out."""
    by_target: defaultdict[str, Counter[str]] = defaultdict(Counter)
    counts: Counter[str] = Counter()
    gates: Counter[str] = Counter()
    for r in records:
        by_target[r.target][r.verdict] += 1
        counts[r.verdict] += 1
        gates[r.gate or ("new" if r.verdict in FAILING else "ok")] += 1
    verdicts = [v for v in VERDICTS if counts.get(v)]
    if by_target and verbosity >= 0:
        _per_target(console, by_target, verdicts)
    for s in skipped:
        console.print(f"[yellow]skipped runtime[/] {escape(s.runtime)}: {escape(s.reason)}", highlight=False)
    for e in load_errors:
        console.print(f"[red]case error[/] {escape(str(e))}", highlight=False, soft_wrap=True)
    for level, text in audit.lines(sliced, each=verbosity >= 1) if audit is not None else ():
        if level == "note" and verbosity < 0:
            continue
        console.print(f"[{'yellow' if level == 'warning' else 'dim'}]{level}[/] {escape(text)}", highlight=False,
                      soft_wrap=True)
    if audit is not None and audit.idle and verbosity >= 1:
        console.print(f"{audit.idle} expectation{'s' if audit.idle != 1 else ''} had no pair of theirs in this "
                      f"selection", highlight=False)
    fixed = [r for r in records if r.gate == "fixed"]
    for r in fixed[:max_failures if verbosity < 1 else None]:
        console.print(f"[green]fixed[/] {escape(r.case)} on {escape(r.target)} now passes; its expectation "
                      f"({(r.expected or {}).get('where')}) can go", highlight=False, soft_wrap=True)
    if len(fixed) > max_failures and verbosity < 1:
        console.print(f"  ... and {len(fixed) - max_failures} more fixed (--verbose lists them)", highlight=False)
    new = [r for r in records if r.gate in ("", "new") and r.verdict in FAILING]
    if new and verbosity >= 1:
        console.print(f"\n[bold]the {len(new)} new failing verdicts, one by one:[/]")
        for rec in new:
            console.print(f"[{TERMINAL.get(rec.verdict, '')}]{rec.verdict}[/] {escape(rec.case)} on "
                          f"{escape(rec.target)}", highlight=False, soft_wrap=True)
            console.print(f"  {rec.message}", highlight=False, markup=False, soft_wrap=True)
            console.print(f"  repro: {rec.repro}", highlight=False, markup=False, soft_wrap=True)

    parts = causes_of.split(causes_of.causes(records, clusters))
    where = f"{out_dir}/clusters.json" if clusters is not None else "no ablation run"
    known_pairs = sum(len(g["records"]) for g in parts["known"])
    known_line = (f"{known_pairs} known divergent pairs in {len(parts['known'])} causes (expected or failing in the "
                  f"baseline too; they do not fail the gate)")
    if parts["known"] and verbosity >= 1:   # listed before the new ones, which end the log
        console.print(f"\n{known_line}:", highlight=False, soft_wrap=True)
        for g in parts["known"]:
            _cause(console, g, repro=False)
    for g in parts["fixed"]:
        _cause(console, g, repro=False)
    if new:
        shown = parts["new"] if verbosity >= 1 else parts["new"][:MAX_CAUSES]
        console.print(f"\n[bold]{len(new)} new failing verdicts in {len(parts['new'])} cause"
                      f"{'s' if len(parts['new']) != 1 else ''}[/] (divergence clusters: {escape(where)}; "
                      f"{escape(str(out_dir))}/index.html):", highlight=False, soft_wrap=True)
        for g in shown:
            _cause(console, g)
        if len(parts["new"]) > len(shown):
            console.print(f"  ... and {len(parts['new']) - len(shown)} more causes (summary.md, index.html, "
                          f"--verbose)", highlight=False)
    if parts["known"] and verbosity < 1:
        console.print(f"{known_line}; --verbose lists them", highlight=False, soft_wrap=True)
    parts_text = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v))
    gate = ", ".join(f"{gates[g]} {g}" for g in ("new", "expected", "baseline", "fixed", "fallback") if gates.get(g))
    errors = (f"; {len(load_errors)} case file error{'s' if len(load_errors) != 1 else ''} (exit status 2)"
              if load_errors else "")
    console.print(f"\n{len(records)} verdicts ({parts_text or 'none'}); gate: {gate or 'nothing to report'}{errors}; "
                  f"{ran} run now, {resumed} resumed from earlier; {wall_s:.1f} s; "
                  f"results in {out_dir}/results.jsonl", highlight=False, soft_wrap=True)
