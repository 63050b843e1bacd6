"""Runtime adapters, plugin loading and target discovery.

Built-in runtimes (``BUILTIN`` below): onnxruntime (one target per execution provider; the GPU ones in
their precision configurations), OpenVINO
through its ONNX frontend and reading its own IR (per device, default and pinned-precision
configurations), ``onnx.reference``, the DirectML descriptor interpreter and onnxruntime's DirectML
execution provider (Windows), torch, and WebNN in a real browser. Vendors add their own through
the entry-point group ``conformance.runtimes`` or ``conformance run --runtime-plugin module:attr``;
adding a built-in one: docs/extending.md.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

from conformance.runtimes.base import Runtime, RuntimeRef, RuntimeRejected, Target
from conformance.runtimes.forms import BY_KEY as FORM_KEYS
from conformance.runtimes.forms import CONFIGURATIONS, compose

ENTRY_POINT_GROUP = "conformance.runtimes"


@dataclass(frozen=True)
class Skipped:
    """A runtime that could not be a target here, and why (shown in the report)."""

    runtime: str
    reason: str


#: built-in adapter modules and the runtime names they provide; each module has
#: ``targets(specs_by_format) -> (list[Target], gaps)`` and raises ImportError when its runtime is
#: not installed here
BUILTIN = {
    "conformance.runtimes.onnxruntime": ("onnxruntime",),
    "conformance.runtimes.onnxruntime_gpu": ("onnxruntime",),
    "conformance.runtimes.openvino": ("openvino",),
    "conformance.runtimes.reference": ("onnx-reference",),
    "conformance.runtimes.openvino_ir": ("openvino",),
    "conformance.runtimes.openvino_memory": ("openvino",),
    "conformance.runtimes.directml": ("directml-interpreter", "onnxruntime-dml"),
    "conformance.runtimes.torch": ("torch",),
    "conformance.runtimes.webnn": ("webnn",),
    # the engines (the `engines` extra, `nox -s conformance-all`; docs/engines.md)
    "conformance.runtimes.tract": ("tract",),
    "conformance.runtimes.mnn": ("mnn",),
    "conformance.runtimes.iree": ("iree",),
    "conformance.runtimes.tvm": ("tvm",),
}


#: the package a built-in adapter needs, as a skipped runtime's reason names it (the error alone
#: names an inner module: MNN's converter is `_tools`), and the extra that installs it
PACKAGES = {
    "conformance.runtimes.tract": ("tract", "engines"),
    "conformance.runtimes.mnn": ("MNN", "engines"),
    "conformance.runtimes.iree": ("iree-base-compiler and iree-base-runtime", "engines"),
    "conformance.runtimes.tvm": ("apache-tvm", "engines"),
    "conformance.runtimes.torch": ("torch", "runtimes"),
    "conformance.runtimes.openvino": ("openvino", "runtimes"),
    "conformance.runtimes.openvino_ir": ("openvino", "runtimes"),
    "conformance.runtimes.openvino_memory": ("openvino", "runtimes"),
    "conformance.runtimes.onnxruntime": ("onnxruntime", "runtimes"),
    "conformance.runtimes.onnxruntime_gpu": ("onnxruntime-gpu", "runtimes-gpu"),
    "conformance.runtimes.reference": ("onnx", "runtimes"),
}


def not_installed(module_name: str, exc: ImportError) -> str:
    """Why a built-in runtime is missing, naming its package: "MNN is not installed here (No module
    named '_tools'); the `engines` extra installs it"."""
    package, extra = PACKAGES.get(module_name, ("", ""))
    if not package:
        return f"not installed here ({exc})"
    return (f"{package} {'are' if ' and ' in package else 'is'} not installed here ({exc}); the `{extra}` extra "
            f"installs {'them' if ' and ' in package else 'it'}: pip install -c constraints.txt -e \".[{extra}]\"")


def builtin_modules(wanted=None) -> list[str]:
    """The built-in adapter modules providing one of the ``wanted`` runtimes (all by default)."""
    return [m for m, names in BUILTIN.items() if not wanted or set(names) & set(wanted)]


def builtin_targets(module_name: str, specs_by_format: dict) -> tuple[list[Target], list[Skipped]]:
    """The targets of one built-in adapter module, or why it has none here."""
    try:
        module = importlib.import_module(module_name)
        found, gaps = module.targets(specs_by_format)
    except ImportError as exc:
        return [], [Skipped(module_name.rsplit(".", 1)[1], not_installed(module_name, exc))]
    return list(found), [Skipped(*gap) for gap in gaps]


def _builtin(specs_by_format: dict, wanted=None) -> tuple[list[Target], list[Skipped]]:
    targets, skipped = [], []
    for module_name in builtin_modules(wanted):
        found, gaps = builtin_targets(module_name, specs_by_format)
        targets += found
        skipped += gaps
    return targets, skipped


def plugin_targets(path: str, specs_by_format: dict) -> list[Target]:
    """Targets of a plugin given as ``module:attr`` (raises ImportError/AttributeError/TypeError).
    A module found nowhere else is imported from the current folder (:class:`RuntimeRef`'s ``cwd``)."""
    ref = RuntimeRef(path, cwd=os.getcwd())
    obj = ref.build()
    missing = [a for a in ("name", "format", "run") if not hasattr(obj, a)]
    if missing:
        raise TypeError(f"runtime plugin {path!r} lacks {', '.join(missing)}; a runtime needs `name`, "
                        f"`format` and `run(model, feeds)`")
    fmt = obj.format
    if fmt not in specs_by_format:
        raise TypeError(f"runtime plugin {path!r} has format {fmt!r}; supported: {sorted(specs_by_format)}")
    declared = plugin_forms(obj, path)
    base = str(getattr(obj, "config", "default"))
    configs = [base] + [compose(base, f) for f in CONFIGURATIONS
                        if all(v in declared.get(k, ()) for k, v in f.items())]
    return [Target(str(obj.name), str(getattr(obj, "version", "") or ""), str(getattr(obj, "device", "default")),
                   config, spec, ref, format=fmt, plugin=True,
                   description=str(getattr(obj, "description", "") or "runtime plugin"),
                   family=str(getattr(obj, "family", "") or ""),
                   batch=int(getattr(obj, "batch", 0) or 0) if callable(getattr(obj, "run_many", None)) else 0,
                   forms=declared)
            for config in configs for spec in specs_by_format[fmt]]


def plugin_forms(obj, path: str) -> dict[str, list[str]]:
    """The execution forms a plugin declares (its ``forms``: ``{"shape": ["dynamic"], ...}``), checked
    against the table (conformance/runtimes/forms.py); a form whose calls share one loaded model needs
    the plugin's ``load(model)``."""
    declared = getattr(obj, "forms", None) or {}
    if not isinstance(declared, dict):
        raise TypeError(f"runtime plugin {path!r}: forms must be a dict such as {{'shape': ['dynamic']}}")
    found: dict[str, list[str]] = {}
    for key, values in declared.items():
        values = [str(v) for v in ([values] if isinstance(values, str) else values)]
        if key not in FORM_KEYS or any(v not in (FORM_KEYS[key].default, FORM_KEYS[key].other) for v in values):
            raise TypeError(f"runtime plugin {path!r}: forms {key}={values}: the forms are "
                            + ", ".join(f"{f.key}={f.default}|{f.other}" for f in FORM_KEYS.values()))
        if FORM_KEYS[key].loaded and key != "relations" and not callable(getattr(obj, "load", None)):
            raise TypeError(f"runtime plugin {path!r} declares {key}={values[-1]}, whose calls share one loaded "
                            f"model: it needs load(model) returning an object with run(feeds)")
        found[key] = [v for v in values if v != FORM_KEYS[key].default]
    return found


def entry_point_paths() -> list[str]:
    return [ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]


def discover(specs_by_format: dict, plugins: Sequence[str] = (), use_entry_points: bool = True, runtimes=()
             ) -> tuple[list[Target], list[Skipped]]:
    """Every target present for the given specs; with ``runtimes``, only those runtimes' adapters
    are imported (a plugin's or entry point's name is known only once loaded, so they always are)."""
    targets, skipped = _builtin(specs_by_format, runtimes)
    paths = list(plugins) + (entry_point_paths() if use_entry_points else [])
    for path in paths:
        try:
            targets += plugin_targets(path, specs_by_format)
        except Exception as exc:  # a broken plugin costs its targets, reported, not the run
            skipped.append(Skipped(path, f"plugin failed to load: {type(exc).__name__}: {exc}"))
    return targets, skipped


__all__ = ["Runtime", "RuntimeRef", "RuntimeRejected", "Skipped", "Target", "discover", "plugin_targets"]
