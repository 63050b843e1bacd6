"""``conformance fuzz``: a differential fuzzing campaign under a time budget.

Hypothesis is imported only when the command runs, so ``conformance run`` needs no hypothesis.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from conformance.cli.options import GATE_HELP, runtime_plugin_option

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
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


class _Budget(click.ParamType):
    name = "duration"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_budget(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@click.command("fuzz")
@click.option("--budget", default="10m", show_default=True, type=_Budget(), help="How long to search: 90s, 10m, 1h.")
@click.option("--runtime", "runtimes", multiple=True, help="Only targets of this runtime (repeatable).")
@runtime_plugin_option
@click.option("--spec", "spec_filter", multiple=True, help="Only these spec versions (prefix match, repeatable).")
@click.option("--device", "devices", multiple=True,
              help="Only targets on this device (repeatable), e.g. CPU or CPU/precision=pinned.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Only targets in this configuration (repeatable), e.g. precision=pinned.")
@click.option("--converter", "converters", multiple=True, metavar="NAME",
              help="Also the converter targets of this converter (repeatable; a prefix of its name, or all): each "
                   "drawn case runs through one drawn converter besides the plain targets (docs/converters.md).")
@click.option("--op", "ops", multiple=True, type=click.Choice(["RNN", "GRU", "LSTM"]),
              help="Only these operators (repeatable).")
@click.option("--dtype", "dtypes", multiple=True, type=click.Choice(["float32", "float16", "float64", "bfloat16"]),
              help="Only these dtypes (repeatable).")
@click.option("--jobs", "-j", default=None, type=click.IntRange(1, 256),
              help="Worker processes (default: one per core).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="One campaign per worker of a Dask cluster of `conformance worker`s (tcp://HOST:8786), or of a "
                   "LocalCluster of this machine (local), each with its own seed; findings are merged here.")
@click.option("--workers", default=None, type=click.IntRange(1, 1024),
              help="With --cluster local: how many workers (default 2), each with --jobs worker processes (default: "
                   "the cores shared); with an address: wait for this many workers (default 1).")
@click.option("--seed", type=int, default=None,
              help="Make the draws reproducible (hypothesis seed); with --no-database, an exact rerun.")
@click.option("--out", "out_dir", default=OUT, show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Where findings are written as case files.")
@click.option("--keep", is_flag=True,
              help="Also copy the new findings into --regressions (the corpus' cases/regressions/), to commit them.")
@click.option("--regressions", default=REGRESSIONS, show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="The corpus' findings: an example one of them covers is known, not new; --keep copies into it.")
@click.option("--expectations", "expectation_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help=GATE_HELP + " A finding they cover is known, not new.")
@click.option("--no-expectations", is_flag=True, help="Report every divergence, the known ones of expectations/ too.")
@click.option("--database", default=Path(".hypothesis/conformance-fuzz"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Hypothesis example database: a campaign continues where the last stopped.")
@click.option("--no-database", is_flag=True, help="Start from nothing and save nothing.")
@click.option("--max-examples", type=click.IntRange(1), default=None, help="Also stop after this many cases.")
@click.option("--timeout", default=20.0, show_default=True, type=float, help="Seconds one runtime call may take.")
@click.option("--tolerance", "tolerance_policy", default=None, metavar="POLICY",
              help="Judge with a named policy of conformance/compare/policies.yaml instead of the derived bound.")
@click.option("--no-shrink", is_flag=True, help="Report findings unminimized (faster; for throughput runs).")
@click.option("--no-entry-points", is_flag=True, help="Ignore runtimes registered as entry points.")
@click.option("--quiet", "-q", is_flag=True, help="No live display.")
@click.option("--production-sizes", is_flag=True,
              help="Draw shapes up to the production tier's (500 steps, batch 64, input and hidden 1024), mostly "
                   "at SIMD/GEMM edges (docs/production.md); raise --timeout with it.")
def fuzz_command(budget, runtimes, plugins, spec_filter, devices, configs, converters, ops, dtypes, jobs, seed,
                 out_dir, keep, regressions, expectation_paths, no_expectations, database, no_database, max_examples,
                 timeout, tolerance_policy, no_shrink, no_entry_points, quiet, production_sizes, cluster=None,
                 workers=None):
    """Search for divergences the corpus does not cover; write each, minimized, to OUT as a case file.

    Every drawn case runs on every target (worker processes: a crash costs one verdict). A fail,
    rejected valid case, accepted invalid case, crash, timeout or suite error is a finding unless
    an expectations entry (./expectations/ by default) or a case file already in OUT or in
    cases/regressions/ covers it. --keep copies the new findings into cases/regressions/. Findings are de-duplicated
    by signature (target without versions, verdict, op, and the features the minimized case needs).

    Exit status: 0 when no new finding was written, 1 when one was, 2 on a usage error.
    """
    started = time.monotonic()  # the budget counts from here: start-up, search, shrinking and writing
    try:
        import hypothesis  # noqa: F401
    except ImportError as exc:
        raise click.UsageError("conformance fuzz needs hypothesis; Consider `pip install -c constraints.txt -e "
                               "'.[runtimes]'` (or `python3 -m nox -s fuzz`)") from exc
    from rich.console import Console
    from rich.markup import escape

    from conformance.fuzz.campaign import Campaign, CampaignConfig
    from conformance.fuzz.display import LiveDisplay
    from conformance.fuzz.scope import PRODUCTION_LIMITS, Limits, Scope
    from conformance.gate import Expectations, ExpectationsError
    from conformance.gate import expectation_paths as gate_paths
    from conformance.isolation.processes import cpu_count
    from conformance.selection import check_tolerance, select_targets

    check_tolerance(tolerance_policy)
    try:
        expectation_paths = gate_paths(expectation_paths, no_expectations)   # as `conformance run` does
        expectations = Expectations.load(expectation_paths) if expectation_paths else None
    except ExpectationsError as exc:
        raise click.UsageError(str(exc)) from exc
    grid = None
    if cluster and converters:
        raise click.UsageError("--converter runs on this machine: a cluster's workers do not make converter targets "
                               "(docs/converters.md)")
    if cluster:
        from conformance.cluster.client import open_cluster
        workers = workers or (2 if cluster == "local" else 1)
        jobs = jobs or (max(1, cpu_count() // workers) if cluster == "local" else None)
        grid = open_cluster(cluster, workers, jobs or 1, None, spec_filter, plugins, runtimes, devices,
                            not no_entry_points, configs, measure=False)
        targets, skipped = grid.targets, grid.skipped
        plugin_names = {t.runtime: t.ref.path for t in targets if t.plugin}
    else:
        targets, skipped, plugin_names = select_targets(spec_filter, plugins, runtimes, devices, not no_entry_points,
                                                        configs, converters, plain=True)

    scope = Scope(ops=tuple(ops) or Scope().ops, dtypes=tuple(dtypes) or Scope().dtypes,
                  limits=PRODUCTION_LIMITS if production_sizes else Limits())
    config = CampaignConfig(
        targets=targets, out_dir=out_dir, budget_s=budget, jobs=jobs or cpu_count(), seed=seed, started=started,
        expectations=expectations, database=None if no_database else database, timeout=timeout, scope=scope,
        max_examples=max_examples, shrink=not no_shrink, plugins=plugin_names, tolerance=tolerance_policy,
        known=(regressions,))
    console = Console()
    if expectation_paths:
        console.print(f"expectations: {', '.join(map(str, expectation_paths))} ({len(expectations.entries)} "
                      f"entries): the divergences they cover are not findings (--no-expectations reports them)",
                      highlight=False, markup=False, soft_wrap=True)
    for s in skipped:
        console.print(f"[yellow]skipped runtime[/] {escape(s.runtime)}: {escape(s.reason)}", highlight=False)
    if grid is not None:
        from conformance.fuzz.sharded import run_on_cluster
        config.jobs = grid.slots
        with grid:
            campaign, result, problems = run_on_cluster(grid, config, console)
        _summary(console, campaign, result, config)
        for problem in problems:
            console.print(f"warning: {problem}", highlight=False, markup=False, soft_wrap=True)
        _keep(console, result, keep, regressions)
        sys.exit(EXIT_FINDINGS if result.written else EXIT_OK)
    display = None if quiet else LiveDisplay(console, budget)
    campaign = Campaign(config, observer=display)
    if display:
        with display:
            result = campaign.run()
        console.line()
    else:
        result = campaign.run()
    _summary(console, campaign, result, config)
    _keep(console, result, keep, regressions)
    sys.exit(EXIT_FINDINGS if result.written else EXIT_OK)


def _keep(console, result, keep: bool, regressions: Path) -> None:
    if result.written and keep:
        from conformance.fuzz.reproducer import keep as keep_findings
        copies = keep_findings([w.path for w in result.written], regressions)
        console.print(f"kept: {len(copies)} findings copied into {regressions}", highlight=False, markup=False,
                      soft_wrap=True)
    elif result.written:
        console.print(f"to keep them in the corpus, copy them into {regressions}/ (--keep does it as they are "
                      f"written); to report one upstream: docs/bugreports.md, \"`conformance bugreport`\"",
                      highlight=False, markup=False, soft_wrap=True)


def _record(result, config) -> Path:
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


def _summary(console, campaign, result, config) -> None:
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
    record = _record(result, config)
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
