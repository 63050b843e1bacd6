"""The live view of a campaign (rich): cases tried, throughput, per-target verdicts and findings,
and each finding as it is written, with the command that reproduces it."""

from __future__ import annotations

import time

from rich.console import Console, Group
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from conformance.compare.verdicts import FAILING, SEVERITY, SHORT

#: not a finding: every verdict but the divergences
CLEAN = tuple(v for v in SEVERITY if v not in FAILING)
#: the divergences, worst first, as the display's columns
SHOWN = tuple(v for v in SEVERITY if v in FAILING)


class LiveDisplay:
    """A campaign observer that redraws a table at most ``fps`` times a second."""

    def __init__(self, console: Console, budget_s: float, fps: float = 4.0):
        self.console = console
        self.budget_s = budget_s
        self.live = Live(console=console, refresh_per_second=fps, transient=False)
        self.started = time.monotonic()
        self.last = 0.0
        self.min_interval = 1.0 / fps
        self.lines: list[Text] = []

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        return self.live.__exit__(*exc)

    # observer protocol
    def example(self, campaign, case, records, new) -> None:
        now = time.monotonic()
        if now - self.last >= self.min_interval:
            self.last = now
            self.live.update(self.render(campaign))

    def written(self, campaign, written) -> None:
        f = written.finding
        self.lines.append(Text.assemble(("new finding ", "bold red"), (f.records[0].target, "bold"),
                                        f" {f.verdict}: {written.path}\n  ", (written.repro, "cyan")))
        self.live.update(self.render(campaign))

    def chunk(self, campaign) -> None:
        self.live.update(self.render(campaign))

    def render(self, campaign):
        r = campaign.result
        elapsed = time.monotonic() - self.started
        rate = r.examples / elapsed if elapsed else 0.0
        head = Text.assemble(
            ("conformance fuzz ", "bold"), f"seed {r.seed}  ",
            f"{elapsed:,.0f}/{self.budget_s:,.0f} s  ",
            (f"{r.examples}", "bold"), f" cases ({r.valid} valid, {r.invalid} invalid)  ",
            (f"{rate:.2f}", "bold"), " cases/s  ",
            (f"{len(r.written)}", "bold red" if r.written else "bold green"), " new findings written  ",
            f"{len(campaign.index)} known")
        return Group(head, per_target(self.console, r), *self.lines[-8:])


def per_target(console: Console, r):
    """The verdicts per target: a table where it fits the console, else one line per target, so a
    target's name is never cut (a CI log or a narrow terminal)."""
    columns = ("clean", *(SHORT[v] for v in SHOWN), "new", "known", "expected")
    rows = []
    for target, counts in sorted(r.verdicts.items()):
        rows.append((target, [sum(counts[v] for v in CLEAN), *(counts[v] for v in SHOWN),
                              r.new_by_target[target], r.known_by_target[target], r.expected_by_target[target]]))
    table = Table(show_edge=False, pad_edge=False, expand=False)
    table.add_column("target", justify="left", no_wrap=True)
    for col in columns:
        table.add_column(col, justify="right", no_wrap=True)
    for target, values in rows:
        table.add_row(Text(target), str(values[0]), *(_n(v, "red" if col == "new" else "yellow")
                                                      for col, v in zip(columns[1:], values[1:])))
    # the table's own width, unbounded (console.measure clips it to the console's)
    if Measurement.get(console, console.options.update(max_width=1 << 16), table).maximum <= console.width:
        return table
    return Group(*(Text.assemble((target, "bold"), ": ", ", ".join(f"{v} {col}" for col, v in zip(columns, values)
                                                                   if v or col == "clean"))
                   for target, values in rows))


def _n(value: int, style: str = "yellow") -> Text:
    return Text(str(value), style=style if value else "dim")
