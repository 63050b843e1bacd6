"""Target selection shared by `conformance run`, `conformance list --targets` and `conformance fuzz`:
--spec, --runtime, --runtime-plugin, --device, --config and --tolerance, each bad value a usage
error naming what exists and the closest name."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence

import click

from conformance.compare.tolerance import policies
from conformance.runtimes import BUILTIN
from conformance.runtimes.configuration import TargetConfig, TargetName
from conformance.runtimes.discovery import PluginError, discover
from conformance.specs import SPECS


class NoMatch(click.UsageError):
    """A selection that leaves no target; the message lists what exists."""


def closest(word: str, names: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the name of ``names`` closest to ``word`` (difflib), or ""."""
    names = sorted(set(names))
    lowered = {n.lower(): n for n in names}
    hit = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.5)
    return f"; did you mean {lowered[hit[0]]!r}?" if hit else ""


def specs_by_format(spec_filter) -> dict:
    """Spec names per program format, limited to those matching --spec (prefix match)."""
    out: dict[str, list[str]] = {}
    unmatched = [s for s in spec_filter if not any(name == s or name.startswith(s) for name in SPECS)]
    for name, spec in SPECS.items():
        if spec_filter and not any(name == s or name.startswith(s) for s in spec_filter):
            continue
        out.setdefault(spec.format, []).append(name)
    if not out:
        raise NoMatch(f"--spec {' '.join(spec_filter)} matches no spec{closest(unmatched[0], SPECS)} "
                      f"Specs: {', '.join(SPECS)}")
    return out


def check_tolerance(policy: str | None) -> None:
    if policy and policy not in policies():
        raise click.UsageError(f"--tolerance {policy!r} is not a policy of policies.yaml"
                               f"{closest(policy, policies()) or ';'} Consider one of {', '.join(sorted(policies()))}")


# -- configurations -------------------------------------------------------------------------------

def config_pairs(config: str) -> dict[str, str]:
    """A target's configuration as KEY=VALUE pairs: ``precision=pinned`` → {precision: pinned};
    ``default`` → {} (every key at its default); the measured part after ``→`` left out
    (conformance/runtimes/configuration.py); a plugin's own word (``fast``) is ``{fast: on}``."""
    found = TargetConfig.parse(config)
    return {**found.pairs, **{word: "on" for word in found.words}}


def parse_config(value: str, option: str = "--config") -> dict[str, str]:
    """``KEY=VALUE`` (several joined by ``/`` or ``,``), or ``default``, as pairs; anything else is a
    usage error."""
    try:
        return TargetConfig.parse(value, labelled=False).pairs
    except ValueError:
        raise click.UsageError(f"{option} {value!r}: expected KEY=VALUE, e.g. precision=pinned or "
                               f"precision=default") from None


def has_config(target, wanted: dict[str, str]) -> bool:
    """Whether ``target`` runs in the configuration ``wanted`` names: every KEY=VALUE holds, a key
    the target does not set counting as ``default`` (``precision=default`` selects every target that
    leaves precision to the runtime), or, for an execution form, as that form's default
    (``shape=static`` selects every target whose shapes are static: conformance/runtimes/forms.py);
    ``forms=default`` selects the targets whose every form is at its default."""
    return _holds(config_pairs(target.config), wanted)


def _holds(mine: dict[str, str], wanted: dict[str, str]) -> bool:
    from conformance.runtimes.forms import BY_KEY
    for key, value in wanted.items():
        if key == "forms":  # forms=default: every execution form at its default (the plain targets)
            if value != "default" or any(k in BY_KEY and v != BY_KEY[k].default for k, v in mine.items()):
                return False
        elif key in mine:
            if mine[key] != value:
                return False
        elif value not in ("default", BY_KEY[key].default if key in BY_KEY else "default"):
            return False
    return True


def config_selecting(config: str, others) -> str:
    """The --config value that selects ``config`` and none of ``others`` (the configurations beside
    it: the same runtime, device and spec), for a repro command: '' where it is the only one;
    otherwise its KEY=VALUE pairs, with KEY=default for each key only the others that it would also
    select set (``precision=default`` for OpenVINO's default beside ``precision=pinned``), and
    ``forms=default`` for a plain target beside its execution forms (docs/forms.md)."""
    from conformance.runtimes.forms import BY_KEY
    mine = config_pairs(config)
    rivals = [config_pairs(o) for o in others if o != config and _holds(config_pairs(o), mine)]
    if not rivals:
        return "/".join(f"{k}={v}" for k, v in mine.items()) if any(o != config for o in others) else ""
    missing = sorted({k for r in rivals for k in r} - set(mine))
    forms = [k for k in missing if k in BY_KEY]
    wanted = {k: "default" for k in missing if k not in BY_KEY}
    if forms and not any(k in BY_KEY for k in mine):
        wanted["forms"] = "default"   # the plain target beside its execution forms
    else:
        wanted.update({k: BY_KEY[k].default for k in forms})
    wanted.update(mine)
    return "/".join(f"{k}={v}" for k, v in wanted.items())


def split_device(value: str) -> tuple[str, dict[str, str]]:
    """``CPU`` → (CPU, {}); ``CPU/precision=pinned`` → (CPU, {precision: pinned}), as the target id
    names them."""
    try:
        device, config = TargetName.device_part(value)
    except ValueError:
        raise click.UsageError(f"--device {value!r}: expected KEY=VALUE after the device, e.g. "
                               f"precision=pinned or precision=default") from None
    return device, config.pairs


# -- narrowing ------------------------------------------------------------------------------------

def narrow(targets: Sequence, runtimes: Sequence[str] = (), devices: Sequence[str] = (),
           configs: Sequence[str] = (), skipped: Sequence = ()) -> tuple[list, list[str]]:
    """(targets kept, warnings) for --runtime, --device and --config, applied in that order. A value
    that matches nothing is a warning naming the closest; a stage that leaves no target raises
    NoMatch listing what exists at that point."""
    device_sel = [(v, *split_device(v)) for v in devices]
    config_sel = [(v, parse_config(v)) for v in configs]
    gaps = {s.runtime: s.reason for s in skipped}
    known_runtimes = {n for names in BUILTIN.values() for n in names}

    def runtime_note(pool, value):
        plugins = sorted({t.runtime for t in pool if t.plugin})
        names = sorted(known_runtimes | {t.runtime for t in pool})
        if value in gaps:
            why = f"runtime {value!r} is not available here ({gaps[value]})."
        elif value in known_runtimes:
            why = f"runtime {value!r} has no target here" + (
                f" (not available here: {'; '.join(f'{k}: {r}' for k, r in gaps.items())})" if gaps else "") + "."
        else:
            why = f"no runtime is named {value!r}{closest(value, names) or '.'}"
        return (f"--runtime {value}: {why} Runtimes: {', '.join(sorted(known_runtimes))} (built in)"
                + (f", {', '.join(plugins)} (plugins)" if plugins else ""))

    def device_note(pool, value):
        device, wanted = split_device(value)
        devices_here = sorted({t.device for t in pool})
        if not any(t.device.lower() == device.lower() for t in pool):
            return (f"--device {value}: no selected target is on device {device!r}{closest(device, devices_here)} "
                    f"Devices present: {', '.join(devices_here) or 'none'}")
        return config_note([t for t in pool if t.device.lower() == device.lower()], value, wanted, "--device")

    def config_note(pool, value, wanted, option="--config"):
        labels = sorted({t.config for t in pool})
        by_label = ", ".join(f"{c} ({', '.join(sorted({t.runtime for t in pool if t.config == c}))})"
                             for c in labels)
        asked = "/".join(f"{k}={v}" for k, v in wanted.items())
        return (f"{option} {value}: no selected target runs in configuration {asked or 'default'!r}"
                f"{closest(asked, labels) or '.'} Configurations present: {by_label or 'none'}")

    stages: list[tuple[str, list, Callable, Callable]] = [
        ("--runtime", list(runtimes), lambda t, v: t.runtime == v, runtime_note),
        ("--device", device_sel, lambda t, v: t.device.lower() == v[1].lower() and has_config(t, v[2]),
         lambda pool, v: device_note(pool, v[0])),
        ("--config", config_sel, lambda t, v: has_config(t, v[1]), lambda pool, v: config_note(pool, v[0], v[1])),
    ]
    kept, warnings = list(targets), []
    for _option, values, matches, note in stages:
        if not values:
            continue
        notes = [note(kept, v) for v in values if not any(matches(t, v) for t in kept)]
        after = [t for t in kept if any(matches(t, v) for v in values)]
        if not after:
            raise NoMatch("no target matches: " + "\n".join(notes))
        warnings += notes
        kept = after
    if not kept:
        reasons = "; ".join(f"{s.runtime}: {s.reason}" for s in skipped) or "none found"
        raise NoMatch(f"no target is present here (runtimes not available: {reasons})")
    return kept, warnings


def select_targets(spec_filter, plugins, runtimes, devices, use_entry_points: bool = True, configs=(),
                   converters=(), plain: bool = False):
    """(targets, skipped runtimes, {plugin runtime name: MOD:ATTR}) for the given options.
    An explicitly named plugin that cannot load, or a selection matching nothing, is a usage error;
    a value that matches nothing beside others that do is a warning on stderr. With ``converters``
    (``--converter``), the converter targets they name (conformance/converters/targets.py): only them,
    or with ``plain`` (the fuzzer) beside the plain targets."""
    formats = specs_by_format(spec_filter)
    for value in configs:
        parse_config(value)  # a malformed value fails before anything is imported
    for value in devices:
        split_device(value)
    if converters and plain:
        found, gaps = select_converters(formats, converters)
        targets, skipped, names = select_targets(spec_filter, plugins, runtimes, devices, use_entry_points, configs)
        converted, _ = narrow(found, runtimes, devices, (), gaps)
        return targets + converted, skipped + gaps, names
    if converters:
        targets, skipped = select_converters(formats, converters)
        targets, warnings = narrow(targets, runtimes, devices, configs, skipped)
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        return targets, skipped, {}
    try:  # every runtime and plugin is imported in a process of its own, never in this one
        targets, skipped = discover(formats, plugins, use_entry_points=use_entry_points, runtimes=runtimes)
    except PluginError as exc:
        raise click.UsageError(str(exc)) from exc
    plugin_names = {t.runtime: t.ref.path for t in targets if t.plugin and t.ref.path in plugins}
    targets, warnings = narrow(targets, runtimes, devices, configs, skipped)
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    return targets, skipped, plugin_names


CONVERTER_HELP = ("Run converter targets instead (repeatable; a prefix of a converter's name, or all): the program "
                  "written by torch.onnx-torchscript, torch.onnx-dynamo, openvino.convert_model, "
                  "onnx.version_converter, onnxconverter-common.float16 or onnxsim, then run by a runtime "
                  "(docs/converters.md).")

CONFIG_HELP = ("Only targets in this configuration (repeatable: any of them), e.g. precision=pinned, "
               "precision=default, or an execution form: shape=dynamic|static, weights=inputs|constants, "
               "session=reused|fresh, threads=4|1, relations=on|off, or forms=default for the targets in the "
               "default form (docs/forms.md); as the target id names it, without the measured part after the arrow.")


def select_converters(specs_by_format: dict, wanted) -> tuple[list, list]:
    """The converter targets ``--converter`` names, or a usage error listing the converters."""
    from conformance.converters import CONVERTERS, matching
    from conformance.converters.targets import discover
    try:
        unknown = [w for w in wanted if w != "all" and not matching([w])]
    except (ImportError, AttributeError, TypeError, KeyError) as exc:
        raise click.UsageError(f"--converter: {exc}") from exc
    if unknown:
        names = [c.name for c in CONVERTERS]
        raise click.UsageError(f"--converter {unknown[0]}: no converter is named {unknown[0]!r}"
                               f"{closest(unknown[0], names) or '.'} Converters: {', '.join(names)}, or all")
    found, skipped = discover(specs_by_format, wanted)
    if not found:
        reasons = "; ".join(f"{s.runtime}: {s.reason}" for s in skipped) or "none of them reads the selected specs"
        raise NoMatch(f"--converter {' '.join(wanted)}: no converter target here ({reasons})")
    return found, skipped
