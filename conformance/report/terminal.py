"""The terminal summary printed after a run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from conformance.compare import VERDICTS

COLOURS = {"pass": "green", "fail": "red", "rejected": "red", "accepted-invalid": "magenta",
           "crash": "red bold", "timeout": "yellow", "not-expressible": "cyan", "unspecified": "blue",
           "error": "red reverse"}


def summary(console: Console, summary, load_errors, skipped, out_dir, max_failures: int = 15) -> None:
    table = Table(title="verdicts per target", show_lines=False)
    table.add_column("target")
    verdicts = [v for v in (*VERDICTS, "error") if summary.counts.get(v)]
    for v in verdicts:
        table.add_column(v, justify="right", style=COLOURS.get(v, ""))
    for target in sorted(summary.by_target):
        row = summary.by_target[target]
        table.add_row(target, *[str(row.get(v, 0) or "") for v in verdicts])
    if summary.by_target:
        console.print(table)
    for s in skipped:
        console.print(f"[yellow]skipped runtime[/] {s.runtime}: {s.reason}")
    for e in load_errors:
        console.print(f"[red]case error[/] {e}", highlight=False)
    if summary.failures:
        console.print(f"\n[bold]{len(summary.failures)} failing verdicts[/] (first {min(max_failures, len(summary.failures))}):")
        for rec in summary.failures[:max_failures]:
            console.print(f"[{COLOURS.get(rec['verdict'], '')}]{rec['verdict']}[/] {rec['case']} on {rec['target']}",
                          highlight=False)
            console.print(f"  {rec['message']}", highlight=False, markup=False, soft_wrap=True)
            console.print(f"  repro: {rec['repro']}", highlight=False, markup=False, soft_wrap=True)
    total = sum(summary.counts.values())
    parts = ", ".join(f"{summary.counts[v]} {v}" for v in (*VERDICTS, "error") if summary.counts.get(v))
    console.print(f"\n{total} verdicts ({parts or 'none new'}); {summary.skipped_pairs} pairs already done "
                  f"(resumed); {summary.wall_s:.1f} s; results in {out_dir}/results.jsonl", highlight=False)
