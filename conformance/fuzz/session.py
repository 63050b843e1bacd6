"""One fuzz session: ``conformance fuzz``'s campaign on the targets it was given, here or one per
worker of a Dask cluster, then its summary, its line in ``OUT/campaigns.jsonl`` and the new
findings kept in the corpus where asked (docs/fuzzing.md).

``conformance fuzz`` parses its options, finds its targets (or opens its cluster), builds a
:class:`FuzzConfig` around the campaign's :class:`~conformance.fuzz.campaign.CampaignConfig` and
calls :func:`fuzz_session`; a program of one's own can do the same. Hypothesis is imported when the
session runs, not with this module.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.fuzz.campaign import CampaignConfig

#: the exit statuses: 1 when a new finding was written (2, a usage error, is the command line's)
EXIT_OK, EXIT_FINDINGS = 0, 1
#: where findings are written, and the repository's folders the fuzzer reads by default
OUT = Path("reports/fuzz")
REGRESSIONS = Path("cases/regressions")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_budget(text: str) -> float:
    """Seconds from ``90s``, ``10m``, ``1h``, ``1h30m`` or a bare number of seconds."""
    value = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        seconds = float(value)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise ValueError(f"budget {text!r} is not a duration; Consider 90s, 10m or 1h")
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"budget {text!r} must be > 0 s")
    return seconds


@dataclass
class FuzzConfig:
    """Everything a fuzz session needs: the campaign's config, and what ``conformance fuzz`` adds."""

    campaign: CampaignConfig
    keep: bool = False                # also copy the new findings into ``regressions``
    regressions: Path = REGRESSIONS   # the corpus' findings (the campaign's ``known`` names them too)
    quiet: bool = False               # no live display
    cluster: Any = None               # an open conformance.cluster.client grid (one campaign per worker), or None
    expectation_paths: tuple = ()     # the expectations' files and folders, named before the campaign


def fuzz_session(config: FuzzConfig, console=None, skipped=()) -> int:
    """Run the campaign ``config`` holds (on its cluster where it has one, closed when the campaigns
    end), print its summary, record it and keep its findings where asked: the exit status."""
    from rich.console import Console
    from rich.markup import escape

    from conformance.fuzz.campaign import Campaign
    from conformance.fuzz.display import LiveDisplay
    console = console or Console()
    campaign_config = config.campaign
    if config.expectation_paths:
        expectations = campaign_config.expectations
        console.print(f"expectations: {', '.join(map(str, config.expectation_paths))} "
                      f"({len(expectations.entries) if expectations else 0} "
                      f"entries): the divergences they cover are not findings (--no-expectations reports them)",
                      highlight=False, markup=False, soft_wrap=True)
    for s in skipped:
        console.print(f"[yellow]skipped runtime[/] {escape(s.runtime)}: {escape(s.reason)}", highlight=False)
    if config.cluster is not None:
        from conformance.fuzz.sharded import run_on_cluster
        campaign_config.jobs = config.cluster.slots
        with config.cluster:
            campaign, result, problems = run_on_cluster(config.cluster, campaign_config, console)
        summary(console, campaign, result, campaign_config)
        for problem in problems:
            console.print(f"warning: {problem}", highlight=False, markup=False, soft_wrap=True)
        keep_findings(console, result, config.keep, config.regressions)
        return EXIT_FINDINGS if result.written else EXIT_OK
    display = None if config.quiet else LiveDisplay(console, campaign_config.budget_s)
    campaign = Campaign(campaign_config, observer=display)
    if display:
        with display:
            result = campaign.run()
        console.line()
    else:
        result = campaign.run()
    summary(console, campaign, result, campaign_config)
    keep_findings(console, result, config.keep, config.regressions)
    return EXIT_FINDINGS if result.written else EXIT_OK


def keep_findings(console, result, keep: bool, regressions: Path) -> None:
    """``--keep``: the new findings copied into ``regressions``; without it, how to keep them."""
    if result.written and keep:
        from conformance.fuzz.reproducer import keep as keep_files
        copies = keep_files([w.path for w in result.written], regressions)
        console.print(f"kept: {len(copies)} findings copied into {regressions}", highlight=False, markup=False,
                      soft_wrap=True)
    elif result.written:
        console.print(f"to keep them in the corpus, copy them into {regressions}/ (--keep does it as they are "
                      f"written); to report one upstream: docs/bugreports.md, \"`conformance bugreport`\"",
                      highlight=False, markup=False, soft_wrap=True)


def record_campaign(result, config: CampaignConfig) -> Path:
    """One line per campaign in OUT/campaigns.jsonl, written whatever it found: its seed, scope,
    budget and counts, so a clean campaign leaves a record too (and its seed reruns it)."""
    import datetime
    import json
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    line = {"finished": datetime.datetime.now(datetime.UTC).isoformat(), "argv": sys.argv, "seed": result.seed,
            "budget_s": config.budget_s, "max_examples": config.max_examples, "elapsed_s": round(result.elapsed_s, 1),
            "ops": list(config.scope.ops), "dtypes": list(config.scope.dtypes),
            "targets": [t.id for t in config.targets], "examples": result.examples, "valid": result.valid,
            "invalid": result.invalid, "verdicts": {t: dict(c) for t, c in result.verdicts.items()},
            "new": len(result.written), "known": sum(result.known_by_target.values()),
            "expected": sum(result.expected_by_target.values()), "findings": [str(w.path) for w in result.written],
            "interrupted": result.interrupted}
    path = out / "campaigns.jsonl"
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    return path


def summary(console, campaign, result, config: CampaignConfig) -> None:
    """The campaign's summary: its throughput and seed, the findings written and what was known."""
    cores = config.jobs
    if result.interrupted:
        console.print("interrupted: the findings minimized so far are written", highlight=False, markup=False)
    console.print(f"{result.examples} cases ({result.valid} valid, {result.invalid} invalid) on "
                  f"{len(config.targets)} targets in {result.elapsed_s:.0f} s: {result.throughput:.2f} cases/s, "
                  f"{result.throughput / cores:.2f} cases/s per worker ({cores} workers; "
                  f"{result.searching_throughput / cores:.2f} after {result.ready_s:.1f} s of start-up); "
                  f"seed {result.seed}",
                  highlight=False, markup=False)
    known = sum(result.known_by_target.values())
    expected = sum(result.expected_by_target.values())
    record = record_campaign(result, config)
    console.print(f"{len(result.written)} new findings written to {config.out_dir}; {known} failing verdicts were "
                  f"known findings, {expected} expected by --expectations; the campaign's seed and counts: {record}",
                  highlight=False, markup=False, soft_wrap=True)
    for entry, n in result.expected_by_entry.most_common():
        console.print(f"  known: {n:6d} verdicts  {entry[:160]}", highlight=False, markup=False, soft_wrap=True)
    if result.reduction_runs:
        console.print(f"{result.reduction_runs} cases run to take unneeded features away from shrunk findings",
                      highlight=False, markup=False)
    for w in result.written:
        console.print(f"finding {w.path}  [{w.signature}]", highlight=False, markup=False, soft_wrap=True)
        console.print(f"  {w.finding.headline}", highlight=False, markup=False, soft_wrap=True)
        console.print(f"  repro: {w.repro}", highlight=False, markup=False, soft_wrap=True)
    for old, new, removed in result.superseded:
        what = "removed" if removed else "superseded; Consider removing it"
        console.print(f"{old}: {what} (the finding {new} needs fewer features)", highlight=False,
                      markup=False, soft_wrap=True)
    for problem in campaign.index.problems:
        console.print(f"warning: {problem}", highlight=False, markup=False, soft_wrap=True)
