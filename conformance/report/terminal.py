"""The terminal summary printed after a run: verdicts per target, then what the gate says."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance.compare.verdicts import FAILING, VERDICTS
from conformance.compare.verdicts import TERMINAL as COLOURS


def summary(console: Console, records: list, load_errors, skipped, out_dir, *, ran: int, resumed: int,
            wall_s: float, unused=(), clusters=None, max_failures: int = 15) -> None:
    by_target = defaultdict(Counter)
    counts, gates = Counter(), Counter()
    for r in records:
        by_target[r["target"]][r["verdict"]] += 1
        counts[r["verdict"]] += 1
        gates[r.get("gate", "new" if r["verdict"] in FAILING else "ok")] += 1
    verdicts = [v for v in VERDICTS if counts.get(v)]
    table = Table(title="verdicts per target")
    table.add_column("target", overflow="fold", min_width=30)
    for v in verdicts:
        table.add_column(v, justify="right", style=COLOURS.get(v, ""))
    for target in sorted(by_target):
        table.add_row(escape(target), *[str(by_target[target].get(v, 0) or "") for v in verdicts])
    if by_target:
        console.print(table)
    for s in skipped:
        console.print(f"[yellow]skipped runtime[/] {escape(s.runtime)}: {escape(s.reason)}", highlight=False)
    for e in load_errors:
        console.print(f"[red]case error[/] {escape(str(e))}", highlight=False, soft_wrap=True)
    for entry in unused:
        if entry.config:  # a configuration this machine's targets may simply not have
            console.print(f"expectation at {entry.where} covers nothing here: no failing pair ran in its "
                          f"configuration ({escape(entry.config_text)}) on this machine", highlight=False,
                          soft_wrap=True)
            continue
        console.print(f"[yellow]warning[/] expectation at {entry.where} matches nothing ({escape(entry.reason)})",
                      highlight=False, soft_wrap=True)
    fixed = [r for r in records if r.get("gate") == "fixed"]
    for r in fixed[:max_failures]:
        console.print(f"[green]fixed[/] {escape(r['case'])} on {escape(r['target'])} now passes; its expectation "
                      f"({r['expected']['where']}) can go", highlight=False, soft_wrap=True)
    new = [r for r in records if r.get("gate", "new") == "new" and r["verdict"] in FAILING]
    if new:
        console.print(f"\n[bold]{len(new)} new failing verdicts[/] (first {min(max_failures, len(new))}):")
        for rec in new[:max_failures]:
            console.print(f"[{COLOURS.get(rec['verdict'], '')}]{rec['verdict']}[/] {escape(rec['case'])} on {escape(rec['target'])}",
                          highlight=False, soft_wrap=True)
            console.print(f"  {rec['message']}", highlight=False, markup=False, soft_wrap=True)
            console.print(f"  repro: {rec['repro']}", highlight=False, markup=False, soft_wrap=True)
    if clusters:
        console.print(f"\n[bold]divergence clusters[/] ({len(clusters)}; OUT/clusters.json):")
        for c in clusters[:max_failures]:
            console.print(f"  {c['size']:4d} {escape(c['verdict'])} on {escape(c['target'])}: {escape(c['cause'])}",
                          highlight=False, soft_wrap=True)
    parts = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v))
    gate = ", ".join(f"{gates[g]} {g}" for g in ("new", "expected", "baseline", "fixed") if gates.get(g))
    console.print(f"\n{len(records)} verdicts ({parts or 'none'}); gate: {gate or 'nothing to report'}; "
                  f"{ran} run now, {resumed} resumed from earlier; {wall_s:.1f} s; "
                  f"results in {out_dir}/results.jsonl", highlight=False, soft_wrap=True)
