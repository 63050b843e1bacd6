"""`conformance report RESULTS... [--out DIR]`: the HTML report, JUnit XML and a Markdown summary,
rebuilt from one or more results files (merged: see conformance/report/merge.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from conformance.cli.options import DEFAULT_CASES
from conformance.compare.verdicts import FAILING
from conformance.gate import Expectations, ExpectationsError, gated
from conformance.gate import expectation_paths as gate_paths
from conformance.gate.apply import regate
from conformance.gate.baseline import Baseline
from conformance.report.html import render
from conformance.report.junit import write_junit
from conformance.report.markdown import write_markdown
from conformance.report.merge import ReportInputError, load


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: the folder of the first RESULTS).")
@click.option("--clusters", "clusters_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The ablation step's clusters (JSON); default: clusters.json beside the results, if any.")
@click.option("--expectations", "expectation_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Judge the gate anew under these known divergences, with each pair's cluster cause (as `conformance "
                   "run --expectations`). Default: the gate each run judged, which is ./expectations/ where it "
                   "existed unless the run was told otherwise (run.json's `expectations`).")
@click.option("--no-expectations", is_flag=True,
              help="Judge the gate anew with no expectations: every divergence is new.")
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Judge the gate anew against this earlier results.jsonl.")
@click.option("--artifacts", type=click.Choice(("failing", "full")), default="failing", show_default=True,
              envvar="CONFORMANCE_ARTIFACTS",
              help="failing: a case page only for the cases with a divergence the gate does not excuse; full: for "
                   "every case with a divergent or unspecified verdict.")
@click.option("--bugreports", is_flag=True,
              help="Also write a verified bug report for every new divergence cluster into OUT/bugreports/ "
                   "(conformance bugreport; the pages link to them).")
def report_command(results, out_dir, clusters_path, expectation_paths, no_expectations, baseline, artifacts,
                   bugreports):
    """Write OUT/index.html (with OUT/cases/ and OUT/families/), OUT/junit.xml and OUT/summary.md
    from RESULTS: results.jsonl files, or the folders `conformance run --out` wrote them in.

    Several RESULTS merge (runs from several machines or runtime versions): every target is kept,
    and for the same (case, target) the newest run's record wins. The run.json beside each results
    file supplies the run's facts.
    """
    try:
        loaded = load(results, clusters_path)
    except ReportInputError as exc:
        raise click.UsageError(str(exc)) from exc
    if expectation_paths or no_expectations or baseline:   # else each record keeps the gate its run judged
        try:
            expectation_paths = gate_paths(expectation_paths, no_expectations)
            expectations = Expectations.load(expectation_paths) if expectation_paths else None
            base = Baseline.load(baseline) if baseline else None
        except ExpectationsError as exc:
            raise click.UsageError(str(exc)) from exc
        if base is not None and base.skipped:
            click.echo(f"warning: {baseline}: {base.skipped} line(s) that are not results skipped (the first at "
                       f"line {base.first_skipped})", err=True)
        if expectations is None and base is None:
            loaded.records = [gated(r, None) for r in loaded.records]
        else:
            loaded.records = regate(loaded.records, expectations, base, loaded.clusters)
    first = Path(results[0])
    out = out_dir or (first if first.is_dir() else first.parent)
    refused = []
    if bugreports:   # a report per new cluster, in OUT/bugreports; the refusals (printed)
        from conformance.bugreport.session import new_cluster_reports
        refused = new_cluster_reports(loaded.records, loaded.clusters, out, click.echo, DEFAULT_CASES)
    index = render(loaded.records, loaded.runs, out, loaded.clusters, artifacts)
    junit = write_junit(loaded.records, out / "junit.xml")
    summary = write_markdown(loaded.records, loaded.runs, out / "summary.md", loaded.clusters)
    counts = Counter(r.verdict for r in loaded.records)
    failing = sum(n for v, n in counts.items() if v in FAILING)
    click.echo(f"{len(loaded.records)} verdicts from {len(loaded.sources)} results file"
               f"{'s' if len(loaded.sources) != 1 else ''}, {failing} divergent")
    if not loaded.records:
        click.echo("warning: the results hold no verdicts; the report is empty", err=True)
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    for path in (index, junit, summary):
        click.echo(f"wrote {path}")
    if refused:
        raise SystemExit(1)
