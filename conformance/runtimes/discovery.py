"""Target discovery, each runtime in a throwaway process of its own.

Finding a runtime's targets imports it (onnxruntime's providers, OpenVINO's devices, a plugin's
module). The main process, which judges, must never import a runtime: a plugin that patches numpy
at import could otherwise change every verdict. So every built-in adapter module and every plugin
is imported in its own short-lived process (:func:`conformance.run.workers.isolated`), in
parallel, and only the targets come back, as plain data.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from conformance.runtimes import Skipped, builtin_modules, builtin_targets, entry_point_paths, plugin_targets


class PluginError(Exception):
    """A plugin named on the command line could not be loaded (the message says why)."""


def discover(specs_by_format: dict, plugins=(), use_entry_points: bool = True, runtimes=()):
    """(targets, skipped) as :func:`conformance.runtimes.discover` finds them, each runtime
    imported in its own process. A plugin named in ``plugins`` that fails raises PluginError; an
    entry point that fails is skipped with the reason."""
    from conformance.run.workers import cpu_count, isolated
    modules = builtin_modules(runtimes)
    entry_points = [p for p in (entry_point_paths() if use_entry_points else []) if p not in plugins]
    paths = list(dict.fromkeys(plugins)) + entry_points
    with ThreadPoolExecutor(max_workers=max(2, min(8, cpu_count() * 2))) as pool:
        found = [pool.submit(isolated, builtin_targets, m, specs_by_format) for m in modules]
        loaded = [pool.submit(isolated, plugin_targets, p, specs_by_format) for p in paths]
        targets, skipped = [], []
        for module, future in zip(modules, found):
            try:
                got, gaps = future.result()
            except RuntimeError as exc:
                skipped.append(Skipped(module.rsplit(".", 1)[1], f"discovery failed: {exc}"))
                continue
            targets += got
            skipped += gaps
        for path, future in zip(paths, loaded):
            try:
                targets += future.result()
            except RuntimeError as exc:
                if path in plugins:
                    raise PluginError(f"--runtime-plugin {path}: {exc}") from None
                skipped.append(Skipped(path, f"plugin failed to load: {exc}"))
    return targets, skipped
