"""Target discovery, each runtime in a throwaway process of its own.

Finding a runtime's targets imports it (onnxruntime's providers, OpenVINO's devices, a plugin's
module). The main process, which judges, must never import a runtime: a plugin that patches numpy
at import could otherwise change every verdict. So every built-in adapter module and every plugin
is imported in its own short-lived process (:func:`conformance.isolation.processes.isolated`), in
parallel, and only the targets come back, as plain data.

The built-in adapters whose targets follow from their installed packages alone
(:data:`PACKAGE_DETERMINED`) are found once per install: their targets are kept in the discovery
cache (:mod:`conformance.caches`, ``discovery/``; ``CONFORMANCE_DISCOVERY_CACHE=off`` turns it off),
keyed by the suite's adapter code, the Python and those packages' installed files. The others
(devices a machine has, a GPU, a browser) and every plugin are found afresh at every run, and every
target's arithmetic is measured at every run (conformance/run/probe.py). docs/startup.md.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance import caches
from conformance.isolation.processes import flush_streams as _flush
from conformance.runtimes import Skipped, builtin_modules, builtin_targets, entry_point_paths, plugin_targets

#: the most of what a runtime printed while it was found that is kept (its tail), and shown in an error
OUTPUT_KEPT, OUTPUT_SHOWN = 4000, 300
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

CACHE_ENV = "CONFORMANCE_DISCOVERY_CACHE"
#: the built-in adapter modules whose targets and gaps are a function of the packages named here (as
#: imported) and of the suite's code, nothing else: onnxruntime lists the execution providers built
#: into the installed package (no device is probed), the DirectML adapter the same list, the
#: reference evaluator and the engines are CPU only. OpenVINO (the devices a machine has), torch
#: (CUDA), WebNN (a browser) and plugins are not in it: they are found at every run.
PACKAGE_DETERMINED = {
    "conformance.runtimes.onnxruntime": ("onnxruntime",),
    "conformance.runtimes.reference": ("onnx",),
    "conformance.runtimes.directml": ("onnxruntime",),
    "conformance.runtimes.tract": ("tract",),
    "conformance.runtimes.mnn": ("MNN", "_tools"),
    "conformance.runtimes.iree": ("iree.compiler", "iree.runtime", "onnx"),
    "conformance.runtimes.tvm": ("tvm",),
}


class PluginError(Exception):
    """A plugin named on the command line could not be loaded (the message says why)."""


def discover(specs_by_format: dict, plugins=(), use_entry_points: bool = True, runtimes=()):
    """(targets, skipped) as :func:`conformance.runtimes.discover` finds them, each runtime
    imported in its own process. A plugin named in ``plugins`` that fails raises PluginError; an
    entry point that fails is skipped with the reason."""
    from conformance.isolation.processes import cpu_count, isolated
    modules = builtin_modules(runtimes)
    entry_points = [p for p in (entry_point_paths() if use_entry_points else []) if p not in plugins]
    paths = list(dict.fromkeys(plugins)) + entry_points
    entries = {m: _entry(m, specs_by_format) for m in modules}
    kept = {m: _recall(entry) for m, entry in entries.items() if entry is not None}
    with ThreadPoolExecutor(max_workers=max(2, min(8, cpu_count() * 2))) as pool:
        found = [None if kept.get(m) else pool.submit(isolated, captured, builtin_targets, m, specs_by_format)
                 for m in modules]
        loaded = [pool.submit(isolated, captured, plugin_targets, p, specs_by_format) for p in paths]
        targets, skipped = [], []
        for module, future in zip(modules, found):
            if future is None:
                got, gaps = kept[module]
            else:
                try:
                    (got, gaps), output = _result(future)
                except RuntimeError as exc:
                    skipped.append(Skipped(module.rsplit(".", 1)[1], f"discovery failed: {exc}"))
                    continue
                got = [dataclasses.replace(t, load_output=output) for t in got]
                entry = entries.get(module)
                if entry is not None and got:  # found, not a gap: an import that failed is tried again
                    caches.write(entry, entry.stem, (list(got), list(gaps)))
            targets += got
            skipped += gaps
        for path, future in zip(paths, loaded):
            try:
                got, output = _result(future)
                targets += [dataclasses.replace(t, load_output=output) for t in got]
            except RuntimeError as exc:
                if path in plugins:
                    raise PluginError(f"--runtime-plugin {path}: {exc}") from None
                skipped.append(Skipped(path, f"plugin failed to load: {exc}"))
    return targets, skipped


@functools.cache
def _code() -> str:
    """The adapters' code and this Python: what a kept discovery was made by, besides the packages."""
    from conformance import __version__
    return caches.digest(__version__, sys.executable, sys.version,
                         caches.source_digest(Path(__file__).resolve().parent))


def _entry(module: str, specs_by_format: dict) -> Path | None:
    """The discovery cache's entry of a built-in module's targets, or None where its discovery is
    not kept (not package-determined, or the cache is off)."""
    packages = PACKAGE_DETERMINED.get(module)
    folder = caches.folder("discovery", CACHE_ENV)
    if packages is None or folder is None:
        return None
    key = caches.digest(_code(), module, json.dumps(specs_by_format, sort_keys=True),
                        *(caches.installed(name) for name in packages))
    return folder / f"{key}.pickle"


_KEPT = frozenset({("conformance.runtimes.base", "Target"), ("conformance.runtimes.base", "RuntimeRef"),
                   ("conformance.runtimes", "Skipped")})


def _recall(entry: Path | None):
    """(targets, gaps) kept at ``entry``, or None."""
    if entry is None:
        return None
    from conformance.runtimes.base import Target
    value = caches.read(entry, entry.stem, lambda module, name: (module, name) in _KEPT)
    if (not isinstance(value, tuple) or len(value) != 2 or not value[0]
            or not all(isinstance(t, Target) for t in value[0]) or not all(isinstance(s, Skipped) for s in value[1])):
        return None
    return value


def captured(func, *args):
    """``(func(*args), what it printed)``, in the throwaway discovery process: file descriptors 1
    and 2 go to a file meanwhile, so a runtime's native output (onnxruntime's coloured log lines, a
    plugin's C library) is kept with its targets instead of reaching the terminal. A failure is
    returned as :class:`Failed`, with the tail of what was printed."""
    with tempfile.TemporaryFile() as log:
        saved = [os.dup(1), os.dup(2)]
        _flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            value = func(*args)
            error = None
        except Exception as exc:  # noqa: BLE001 - returned below with what was printed
            error = exc
        finally:
            _flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - OUTPUT_KEPT * 4))
        output = log.read().decode("utf-8", "replace")[-OUTPUT_KEPT:]
    if error is not None:
        shown = _ANSI.sub("", output).strip()[-OUTPUT_SHOWN:]
        return Failed(f"{type(error).__name__}: {error}" + (f" (it printed: {shown!r})" if shown else "")), output
    return value, output


@dataclasses.dataclass(frozen=True)
class Failed:
    """What :func:`captured` returns for a call that raised: the error, in words."""

    text: str


def _result(future):
    """(value, output) of a captured call in an isolated process; RuntimeError where it failed."""
    value, output = future.result()
    if isinstance(value, Failed):
        raise RuntimeError(value.text)
    return value, output

