"""``conformance list`` (the cases the corpus expands to, or the targets present) and ``conformance schema``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from conformance.cli import main
from conformance.cli.options import (
    DEFAULT_CASES,
    EXIT_BAD_INPUT,
    EXIT_OK,
    case_limits,
    limit_options,
    selected,
    tier_option,
)
from conformance.run.select import SelectError, compile_expression
from conformance.selection import CONFIG_HELP, CONVERTER_HELP


@main.command("list")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("-k", "expr", default="", help="Select cases by id.")
@click.option("--targets", "show_targets", is_flag=True, help="List the targets present instead of cases.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help=CONFIG_HELP)
@click.option("--converter", "converters", multiple=True, metavar="NAME", help=CONVERTER_HELP)
@tier_option
@limit_options
def list_(paths, expr, show_targets, configs, converters, tier):
    """List the cases the corpus expands to (or the targets present), and any case-file errors."""
    if (configs or converters) and not show_targets:
        raise click.UsageError("--config and --converter select targets: use them with --targets")
    if show_targets:
        from conformance.isolation.workers import Pool
        from conformance.run.probe import measured
        from conformance.runtimes.discovery import discover
        from conformance.runtimes.effective import describe_host, host
        from conformance.runtimes.effective import summary as configuration_summary
        from conformance.selection import narrow, select_converters, specs_by_format
        if converters:
            targets, skipped = select_converters(specs_by_format(()), converters)
        else:
            targets, skipped = discover(specs_by_format(()), ())
        targets, warnings = narrow(targets, configs=configs, skipped=skipped) if configs else (targets, [])
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        click.echo(f"host: {describe_host(host())}")
        with Pool(1) as pool:
            targets = measured(targets, pool)
        for t in targets:
            click.echo(f"{t.id}\t{configuration_summary(t.configuration)}")
        forms_by_runtime = {}
        for t in targets:
            forms_by_runtime.setdefault(f"{t.runtime}-{t.version}" if t.version else t.runtime, t.forms)
        for name, taken in forms_by_runtime.items():
            said = ", ".join(f"{k}={'|'.join(v)}" for k, v in taken.items()) or "none beyond the defaults"
            click.echo(f"forms {name}: {said} (docs/forms.md)")
        for s in skipped:
            click.echo(f"skipped {s.runtime}: {s.reason}", err=True)
        return
    try:
        select = compile_expression(expr)
    except SelectError as exc:
        raise click.UsageError(str(exc)) from exc
    from conformance.case.load import load_paths
    cases, errors = load_paths(paths or DEFAULT_CASES, limits=case_limits(), materialize=False, tier=tier)
    for c in selected(cases, select, expr):
        click.echo(f"{c.id}\t{c.expect}\t{c.file}:{c.source.line}")
    for e in errors:
        click.echo(f"error: {e}", err=True)
    sys.exit(EXIT_BAD_INPUT if errors else EXIT_OK)


@main.command()
def schema():
    """Print the JSON Schema of the case-file format (for editors)."""
    from conformance.case.schema import SCHEMA
    click.echo(json.dumps(SCHEMA, indent=2))
