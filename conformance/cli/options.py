"""What the commands share: the exit statuses, the case paths, --max-elements/--max-macs, --tier,
sizes (--memory-limit) and the -k selection of cases."""

from __future__ import annotations

import re
from pathlib import Path

import click

GATE_HELP = ("Known divergences (a YAML file or a folder of them, repeatable): covered failures do not fail the run. "
             "Default: ./expectations/ where it exists (run and fuzz alike; report keeps the gate each run judged); "
             "--no-expectations for none.")

DEFAULT_CASES = ("cases",)
EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2
#: a case file with an error (reported with file:line; the other files' cases still run): as a usage error
EXIT_BAD_INPUT = EXIT_USAGE
UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1 << 10, "m": 1e6, "mb": 1e6, "mib": 1 << 20, "g": 1e9,
         "gb": 1e9, "gib": 1 << 30, "t": 1e12, "tb": 1e12, "tib": 1 << 40}



#: the option every command that builds targets has: a runtime plugin's ``module:attr`` (docs/plugins.md)
runtime_plugin_option = click.option("--runtime-plugin", "plugins", multiple=True, metavar="MOD:ATTR",
                                     help="Load a runtime plugin (repeatable).")


def parse_size(text) -> int | None:
    """'4GiB', '500MB', '1e9' -> bytes; None -> None (the default); '0' -> 0 (no limit)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", str(text).lower())
    if not m or m.group(2) not in UNITS:
        raise click.BadParameter(f"{text!r} is not a size; write it like 4GiB, 500MB or 0 (no limit)")
    return int(float(m.group(1)) * UNITS[m.group(2)])


def limit_options(command):
    """--max-elements and --max-macs (conformance.case.limits), kept in the context, not passed on."""
    def store(field):
        def callback(ctx, _param, value):
            if value is not None:
                ctx.meta.setdefault("case_limits", {})[field] = value
        return callback
    command = click.option("--max-elements", type=click.IntRange(1), default=None, metavar="N", expose_value=False,
                           callback=store("max_elements"),
                           help="Most tensor elements one case may have (default 2**27); a case over it is a "
                                "case-file error.")(command)
    return click.option("--max-macs", type=click.IntRange(1), default=None, metavar="N", expose_value=False,
                        callback=store("max_macs"),
                        help="Most multiply-adds one case may need (default 1e12); a case over it is a "
                             "case-file error.")(command)


def tier_option(command):
    """--tier: which case folders a folder path brings in (conformance.case.load.TIERS)."""
    from conformance.case.load import TIERS
    return click.option("--tier", type=click.Choice(TIERS), default="default", show_default=True,
                        help="default: the corpus, without tier folders such as cases/production/; production: only "
                             "those (production shapes, docs/production.md); all: both. A named tier folder is "
                             "always read.")(command)


def case_limits():
    """The case-loading limits of this command: the defaults, with --max-elements/--max-macs."""
    import dataclasses

    from conformance.case.limits import DEFAULT_LIMITS
    return dataclasses.replace(DEFAULT_LIMITS, **click.get_current_context().meta.get("case_limits", {}))


#: the commands of their own modules, each imported when it is named (``--help`` imports them all)


def is_slice(paths, expr: str, default_gate: bool = True) -> bool:
    """Whether a run covers part of what its expectations were written for: a -k, a path inside
    ./cases, or, under the default gate (./expectations/, written for ./cases), any other corpus; a
    corpus of one's own gated on expectations named with --expectations is whole."""
    roots = {Path(p).resolve() for p in DEFAULT_CASES if Path(p).exists()}
    resolved = {Path(p).resolve() for p in paths}
    if expr or any(r in p.parents for p in resolved for r in roots):
        return True
    return default_gate and bool(resolved) and resolved != roots


def selected(cases, select, expr: str) -> list:
    """The cases `-k` selects; selecting none of them is a usage error naming the closest ids."""
    chosen = [c for c in cases if select(c.id)]
    if cases and not chosen:
        from conformance.run.select import closest_ids
        notes, near = closest_ids(expr, [c.id for c in cases])
        raise click.UsageError(f"-k {expr!r} selects none of the {len(cases)} cases" +
                               (f": {', '.join(notes)}" if notes else "") +
                               (f"; the closest ids: {', '.join(near)}" if near else ""))
    return chosen
