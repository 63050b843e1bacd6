"""``conformance fuzz``: a differential fuzzing campaign under a time budget.

The options become a :class:`~conformance.fuzz.session.FuzzConfig` (the campaign's config, with
the targets found here or on the cluster); the campaign, its summary and its record are
:func:`conformance.fuzz.session.fuzz_session`. Hypothesis is imported only when the command runs,
so ``conformance run`` needs no hypothesis.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from conformance.cli.options import GATE_HELP, runtime_plugin_option
from conformance.fuzz.session import OUT, REGRESSIONS, parse_budget


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

    from conformance.fuzz.campaign import CampaignConfig
    from conformance.fuzz.scope import PRODUCTION_LIMITS, Limits, Scope
    from conformance.fuzz.session import FuzzConfig, fuzz_session
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
    fuzz = FuzzConfig(campaign=config, keep=keep, regressions=regressions, quiet=quiet, cluster=grid,
                      expectation_paths=tuple(expectation_paths))
    sys.exit(fuzz_session(fuzz, console, skipped))
