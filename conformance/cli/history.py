"""`conformance history SELECTION...`: the corpus on several releases of a runtime, merged into one
results set with a history view (docs/history.md).

The options become a :class:`~conformance.history.session.HistoryConfig`; the history itself (each
release's environment, targets and run, the repeats, the bisection, the merge and the reports) is
:func:`conformance.history.session.history_session`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from conformance.history.versions import PYPI, VersionSpecError, parse


@click.command("history")
@click.argument("selections", nargs=-1, required=True)
@click.option("--cases", "case_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Case files or folders (repeatable); default: one file per feature class of ./cases.")
@click.option("--full", is_flag=True, help="The whole corpus (./cases) instead of one file per feature class.")
@click.option("-k", "expr", default="", help="Select cases by id, as `conformance run -k`.")
@click.option("--spec", "spec_filter", multiple=True, help="Only these spec versions (prefix match, repeatable).")
@click.option("--limit", default=0, type=click.IntRange(0), help="Keep at most N releases of each range (0: all).")
@click.option("--out", "out_dir", default=Path("reports/history"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256), help="Worker processes.")
@click.option("--timeout", default=60.0, show_default=True, type=float, help="Seconds one runtime call may take.")
@click.option("--expectations", "expectation_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Known divergences (files or folders, repeatable); their `versions:` ranges apply per release.")
@click.option("--fresh", is_flag=True, help="Run every release again instead of resuming its results.")
@click.option("--retry", is_flag=True, help="Try again to install the releases that failed before.")
@click.option("--allow-unsupported", is_flag=True,
              help="Also run releases outside the range the suite supports (the `runtimes` extra of "
                   "pyproject.toml); without it they are left out, with a warning.")
@click.option("--ablation/--no-ablation", default=True, show_default=True,
              help="Name the causes of each release's failures.")
@click.option("--bisect", "bisect_rounds", default=0, type=click.IntRange(0, 20), metavar="ROUNDS",
              help="Then narrow each change between two releases run (a class appears or is fixed, a spec "
                   "version's op becomes accepted or refused) by running the releases between them: at most "
                   "ROUNDS rounds, one middle release per gap each (0: off).")
@click.option("--repeat", "repeats", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Run again, this many times more, the cases of every class that comes back after a fix "
                   "(on each release) and of every class at its ends (the clean release before it shows, the "
                   "one that fixes it): a case that passes in one run of a release and fails in another marks "
                   "that release unstable for its class (0: off).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Only each release's targets in this configuration (repeatable: any of them), as `conformance "
                   "run --config` selects them; an execution form (shape=dynamic, weights=inputs, session=reused, "
                   "threads=4, relations=on; docs/forms.md) runs in the release itself. Default: forms=default "
                   "(the plain targets).")
@click.option("--index-url", default=PYPI, show_default=True, help="The package index's JSON API.")
def history_command(selections, case_paths, full, expr, spec_filter, limit, out_dir, jobs, timeout, expectation_paths,
                    fresh, retry, allow_unsupported, ablation, bisect_rounds, repeats, configs, index_url):
    """Run the corpus on every release SELECTIONS name and merge the runs: OUT/history.html shows for
    each divergence the first and last release it affects and the release that fixed it, for each
    spec version and op the releases that accept it, a timeline of verdicts per runtime and a strip
    of verdicts per case.

    SELECTIONS: NAME==LOW..HIGH[:N] (the newest patch of each minor release line in the range, N of
    them evenly spread), NAME==V1,V2 or NAME==V; NAME is onnxruntime or openvino. Exit status 1 when
    the newest release of a runtime has a divergence the expectations do not cover, or a class
    regresses where they do not excuse it (a CI job's gate); 2 on a usage error or a case file with
    an error; else 0.
    """
    from conformance.cli.options import case_limits
    from conformance.gate import Expectations, ExpectationsError
    from conformance.history.session import DEFAULT_CONFIGS, HistoryConfig, HistoryError, history_session
    from conformance.run import SelectError, compile_expression
    from conformance.selection import parse_config

    console = Console(stderr=False)
    configs = tuple(configs) or DEFAULT_CONFIGS
    for value in configs:
        parse_config(value)  # a malformed value fails before any release is installed
    try:
        chosen = [parse(s) for s in selections]
        select = compile_expression(expr)
        expectations = Expectations.load(expectation_paths) if expectation_paths else None
    except (VersionSpecError, SelectError, ExpectationsError) as exc:
        raise click.UsageError(str(exc)) from exc
    config = HistoryConfig(selections=chosen, out_dir=out_dir, case_paths=tuple(case_paths), full=full, select=select,
                           spec_filter=tuple(spec_filter), limit=limit, jobs=jobs, timeout=timeout,
                           expectations=expectations, fresh=fresh, retry=retry, allow_unsupported=allow_unsupported,
                           ablation=ablation, bisect_rounds=bisect_rounds, repeats=repeats, configs=configs,
                           index_url=index_url, limits=case_limits())
    try:
        code = history_session(config, console)
    except HistoryError as exc:
        raise click.UsageError(str(exc)) from exc
    sys.exit(code)
