"""Target selection shared by `conformance run` and `conformance fuzz`: --spec, --runtime,
--runtime-plugin, --device and --tolerance, each bad value a usage error naming the fix."""

from __future__ import annotations

import click

from conformance.compare.tolerance import policies
from conformance.runtimes.discovery import PluginError, discover
from conformance.specs import SPECS


def specs_by_format(spec_filter) -> dict:
    """Spec names per program format, limited to those matching --spec (prefix match)."""
    out = {}
    for name, spec in SPECS.items():
        if spec_filter and not any(name == s or name.startswith(s) for s in spec_filter):
            continue
        out.setdefault(spec.format, []).append(name)
    return out


def check_tolerance(policy: str | None) -> None:
    if policy and policy not in policies():
        raise click.UsageError(f"--tolerance {policy!r} is not a policy of policies.yaml; "
                               f"Consider one of {', '.join(sorted(policies()))}")


def select_targets(spec_filter, plugins, runtimes, devices, use_entry_points: bool = True):
    """(targets, skipped runtimes, {plugin runtime name: MOD:ATTR}) for the given options.
    An explicitly named plugin that cannot load, or a selection matching nothing, is a usage error."""
    formats = specs_by_format(spec_filter)
    if not formats:
        raise click.UsageError(f"--spec {' '.join(spec_filter)} matches no spec; known: {', '.join(SPECS)}")
    try:  # every runtime and plugin is imported in a process of its own, never in this one
        targets, skipped = discover(formats, plugins, use_entry_points=use_entry_points, runtimes=runtimes)
    except PluginError as exc:
        raise click.UsageError(str(exc)) from exc
    plugin_names = {t.runtime: t.ref.path for t in targets if t.plugin and t.ref.path in plugins}
    if runtimes:
        targets = [t for t in targets if t.runtime in runtimes]
    if devices:
        targets = [t for t in targets if t.device in devices]
    if not targets:
        raise click.UsageError("no target matches the given --runtime/--device/--spec")
    return targets, skipped, plugin_names
