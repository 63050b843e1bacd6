"""`conformance bugreport`: verified standalone bug reports for a run's divergence clusters, one case ×
target of a run, or a fuzzer's finding; `--expectation` prints the expectations entry a cluster needs.

The options become a :class:`~conformance.bugreport.session.BugreportConfig`; the reports are
:func:`conformance.bugreport.session.bugreport_session`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from conformance.cli.options import DEFAULT_CASES, runtime_plugin_option


@click.command("bugreport")
@click.argument("results", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--cluster", "cluster_ids", multiple=True, metavar="ID",
              help="A cluster of the run's clusters.json (repeatable). Default: every new cluster.")
@click.option("--all", "every", is_flag=True, help="Every real divergence cluster, the known ones included.")
@click.option("--case", "case_id", default=None, help="A case id of the run (with --target).")
@click.option("--target", "target_id", default=None, help="A target id of the run (with --case).")
@click.option("--finding", "finding", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A fuzzer's finding file (conformance fuzz writes them), instead of RESULTS.")
@click.option("--expectation", is_flag=True,
              help="Print the expectations entry that would cover each cluster instead of writing reports.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the report folders go (default: RESULTS/bugreports, or reports/bugreports).")
@click.option("--verify", "mode", type=click.Choice(("auto", "venv", "isolated")), default="auto", show_default=True,
              help="How repro.py is run before a report is written: a fresh virtual environment with only the pinned "
                   "requirements (venv), this interpreter with the suite's packages hidden (isolated), or the first "
                   "that can be made (auto).")
@runtime_plugin_option
@click.option("--timeout", default=120.0, show_default=True, type=float, help="Seconds one runtime call may take.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 64), help="Worker processes.")
def bugreport_command(results, cluster_ids, every, case_id, target_id, finding, expectation, out_dir, mode, plugins,
                      timeout, jobs):
    """Write a verified bug report folder per divergence of RESULTS (a results.jsonl, or the folder
    `conformance run --out` wrote): the smallest failing case, its program, inputs and expected
    outputs with the allowed error per element, repro.py, requirements.txt and ISSUE.md. A report
    is written only when repro.py reproduces the divergence in a fresh interpreter; one that does
    not is an error with the reason (exit status 1)."""
    from conformance.bugreport.session import BugreportConfig, bugreport_session
    from conformance.bugreport.subject import SubjectError
    from conformance.report.merge import ReportInputError
    if finding is not None:
        if results or cluster_ids or case_id or target_id or expectation:
            raise click.UsageError("--finding stands alone (no RESULTS, --cluster, --case, --target or --expectation)")
    elif results is None:
        raise click.UsageError("name the RESULTS of a run (or --finding FILE)")
    config = BugreportConfig(results=results, finding=finding, cluster_ids=tuple(cluster_ids), every=every,
                             case_id=case_id, target_id=target_id, expectation=expectation, out_dir=out_dir,
                             mode=mode, plugins=tuple(plugins), timeout=timeout, jobs=jobs, corpus=DEFAULT_CASES)
    try:
        code = bugreport_session(config, click.echo)
    except (SubjectError, ReportInputError) as exc:
        raise click.UsageError(str(exc)) from exc
    sys.exit(code)
