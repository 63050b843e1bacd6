"""The converter targets present here: each converter of the table (conformance/converters/) whose
package is installed, with each of its option sets, on each runtime it feeds, for the spec it reads.

Converter targets are made only when asked for (``conformance run --converter NAME|all``): the
default run keeps its targets and its time. They come from the ``converters`` extra
(``pip install -c constraints.txt -e ".[runtimes,converters]"``, or ``nox -s conformance-converters``);
a converter whose package is missing is a declared gap. Like a built-in adapter module, this one is
imported in a throwaway process (conformance/runtimes/discovery.py).
"""

from __future__ import annotations

import importlib
import json
from importlib import metadata

from conformance.converters import matching

#: the configuration each runtime runs converted programs in: onnxruntime's plain one, OpenVINO with
#: the precision pinned to the model's type (float32 results on every CPU)
RUNTIME_CONFIG = {"onnxruntime": "default", "openvino": "precision=pinned"}
EXTRA = ("the converters extra: pip install -c constraints.txt -e '.[runtimes,converters]', "
         "or nox -s conformance-converters")


#: the corpus folder a torch exporter always runs in full (its slice elsewhere: ``sliced``)
FRAMEWORK_CASES = "torch/"


def sliced(target, case_id: str = "") -> bool:
    """Whether ``target`` runs only the representative slice of the selection (conformance/run/forms.py
    ``representative``), as the sliced execution forms do: a converter the table marks ``sliced`` (the
    torch exporters, seconds per case) outside the framework-level corpus (cases/torch/), which it runs
    whole. ``case_id`` empty: whether the target is sliced anywhere."""
    if not getattr(target, "converter", ""):
        return False
    from conformance.converters import resolve
    try:
        conv = resolve(dict(target.ref.kwargs).get("converter", target.family))
    except (ImportError, AttributeError, TypeError, KeyError):
        return False
    return conv.sliced and not case_id.startswith(FRAMEWORK_CASES) if case_id else conv.sliced


def _runtime_version(runtime: str) -> str:
    if runtime == "onnxruntime":
        import onnxruntime
        return str(onnxruntime.__version__)
    from conformance.runtimes.openvino import version
    return version()


def targets(specs_by_format: dict, wanted=("all",)):
    """(targets, gaps) of the converters ``wanted`` names (``--converter``)."""
    from conformance.converters.converted import converter_version
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.runtimes.forms import compose
    found, gaps = [], []
    for conv in matching(wanted):
        key = conv.ref or conv.name  # how the worker finds the converter again
        try:
            version = converter_version(key)
            for module in (conv.call.split(":")[0], *([conv.extra["also"]] if "also" in conv.extra else [])):
                importlib.import_module(module)
        except (ImportError, metadata.PackageNotFoundError) as exc:
            gaps.append((conv.name, f"not installed here ({exc}; {EXTRA})"))
            continue
        for runtime in conv.runtimes:
            try:
                runtime_version = _runtime_version(runtime)
            except ImportError as exc:
                gaps.append((f"{conv.name} → {runtime}", f"{runtime} not installed here ({exc})"))
                continue
            base = RUNTIME_CONFIG[runtime]
            for options in conv.variants:
                spec = "torch" if conv.reads == "torch" else f"onnx-{options['from']}"
                if spec not in specs_by_format.get(conv.reads, []):
                    continue
                configs = [base] + ([compose(base, {"shape": "dynamic"})]
                                    if options in conv.dynamic else [])
                for config in configs:
                    ref = RuntimeRef("conformance.converters.converted:Converted",
                                     (("converter", key), ("options", json.dumps(options, sort_keys=True)),
                                      ("runtime", runtime), ("config", base)))
                    found.append(Target(runtime, runtime_version, "CPU", config, spec, ref, format=conv.reads,
                                        description=f"{conv.meaning}; then {runtime}", family=conv.name,
                                        converter=conv.label(version, options),
                                        forms={"shape": ["dynamic"]} if conv.reads == "torch" else {}))
    return found, gaps


def discover(specs_by_format: dict, wanted) -> tuple[list, list]:
    """(targets, skipped) of the converters ``wanted`` names, found in a throwaway process of their own
    (the converters import torch, onnxruntime and OpenVINO; the suite's main process never does)."""
    from conformance.isolation.processes import isolated
    from conformance.runtimes import Skipped
    from conformance.runtimes.discovery import Failed, captured
    value, _ = isolated(captured, targets, specs_by_format, tuple(wanted))
    if isinstance(value, Failed):
        return [], [Skipped("converters", f"discovery failed: {value.text}")]
    found, gaps = value
    return list(found), [Skipped(*gap) for gap in gaps]
